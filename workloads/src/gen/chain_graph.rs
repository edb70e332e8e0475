//! Chain graphs (seed 002): nodes whose value names the next node's key. In the linear
//! layout node i points to node i+1, so a walk follows key order; in the shuffled layout
//! the walk order is a random permutation, so consecutive hops land anywhere in the store.

use rand::RngExt as _;

use super::seeded;

/// How the walk order relates to key order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Node i -> node i+1.
    Linear,
    /// A random permutation.
    Shuffled,
}

/// Bytes of padding after the next-node key in each value (a small adjacency record).
pub const PAYLOAD: usize = 32;

/// A chain graph of `nodes` nodes.
#[derive(Debug, Clone)]
pub struct ChainGraph {
    /// Node count.
    pub nodes: u32,
    /// Layout.
    pub layout: Layout,
    next: Vec<u32>,
}

impl ChainGraph {
    /// Builds the successor table (the last node points back to the first).
    pub fn generate(nodes: u32, layout: Layout, seed: u64) -> Self {
        let order: Vec<u32> = match layout {
            Layout::Linear => (0..nodes).collect(),
            Layout::Shuffled => {
                let mut v: Vec<u32> = (0..nodes).collect();
                let mut rng = seeded(seed);
                for i in (1..v.len()).rev() {
                    // u64, not usize: the draw is then the same on 32- and 64-bit machines.
                    let j = rng.random_range(0..=i as u64) as usize;
                    v.swap(i, j);
                }
                v
            }
        };
        let mut next = vec![0u32; nodes as usize];
        for w in 0..order.len() {
            next[order[w] as usize] = order[(w + 1) % order.len()];
        }
        ChainGraph {
            nodes,
            layout,
            next,
        }
    }

    /// The key of node `id`.
    pub fn key(id: u32) -> Vec<u8> {
        format!("graph/node-{id:09}").into_bytes()
    }

    /// The value of node `id`: the next node's key, then a payload.
    pub fn value(&self, id: u32) -> Vec<u8> {
        let mut v = Self::key(self.next[id as usize]);
        v.extend(std::iter::repeat_n((id % 251) as u8, PAYLOAD));
        v
    }

    /// The next node's key named in a stored value.
    pub fn next_key(value: &[u8]) -> &[u8] {
        &value[..value.len().saturating_sub(PAYLOAD)]
    }

    /// Every pair in ascending key order.
    pub fn pairs(&self) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> + '_ {
        (0..self.nodes).map(move |id| (Self::key(id), self.value(id)))
    }

    /// Bytes of keys and values.
    pub fn data_bytes(&self) -> u64 {
        u64::from(self.nodes) * (2 * Self::key(0).len() + PAYLOAD) as u64
    }

    /// The node `hops` steps after `start`.
    pub fn walk(&self, start: u32, hops: u32) -> u32 {
        (0..hops).fold(start, |at, _| self.next[at as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_name_the_next_node_in_each_layout() {
        let lin = ChainGraph::generate(1000, Layout::Linear, 1);
        assert_eq!(
            ChainGraph::next_key(&lin.value(5)),
            ChainGraph::key(6).as_slice()
        );
        assert_eq!(lin.walk(10, 500), 510);
        let sh = ChainGraph::generate(1000, Layout::Shuffled, 1);
        let mut seen = std::collections::HashSet::new();
        let mut at = 0u32;
        for _ in 0..1000 {
            assert!(seen.insert(at), "the shuffled walk revisits a node early");
            at = sh.walk(at, 1);
        }
        assert_eq!(at, 0, "the walk is one cycle through every node");
        assert_eq!(
            ChainGraph::generate(1000, Layout::Shuffled, 1).value(3),
            sh.value(3)
        );
        assert!(lin
            .pairs()
            .collect::<Vec<_>>()
            .windows(2)
            .all(|w| w[0].0 < w[1].0));
    }
}
