//! KV-cache chain indexes: `chains` chains of uniform random depth `min..=max`; chain c's
//! level j key is `kv/llama70b/<h0>/<h1>/.../<hj>` (9 bytes per level: '/' and 8 hex
//! digits); every level of every chain is stored, so the key set is prefix-closed. Values
//! are 40 bytes derived from (chain, level).

use rand::RngExt as _;

use super::{derive_seed, seeded};

/// Bytes each level adds to a key.
pub const LEVEL_BYTES: usize = 9;
/// The root every chain key starts with.
pub const ROOT: &[u8] = b"kv/llama70b";
/// Bytes of a value.
pub const VALUE_LEN: usize = 40;

/// A set of chains.
#[derive(Debug, Clone)]
pub struct KvChain {
    /// The full-depth key of each chain.
    pub chains: Vec<Vec<u8>>,
    seed: u64,
}

/// A longest-prefix query and its expected answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvQuery {
    /// The query key.
    pub key: Vec<u8>,
    /// Length of the longest stored prefix (None for a miss).
    pub expect_len: Option<usize>,
}

impl KvChain {
    /// Generates `chains` chains with depths in `min_depth..=max_depth`.
    pub fn generate(chains: u32, min_depth: u32, max_depth: u32, seed: u64) -> Self {
        let mut rng = seeded(seed);
        let mut out = Vec::with_capacity(chains as usize);
        for _ in 0..chains {
            let depth = rng.random_range(min_depth..=max_depth);
            let mut key = ROOT.to_vec();
            for _ in 0..depth {
                key.extend_from_slice(format!("/{:08x}", rng.random::<u32>()).as_bytes());
            }
            out.push(key);
        }
        KvChain { chains: out, seed }
    }

    /// The seed's shape: depths 4..=32.
    pub fn seed_shape(chains: u32, seed: u64) -> Self {
        Self::generate(chains, 4, 32, seed)
    }

    /// Levels of chain `c`.
    pub fn depth(&self, c: usize) -> usize {
        (self.chains[c].len() - ROOT.len()) / LEVEL_BYTES
    }

    /// Total keys (every level of every chain; hash collisions between chains are so
    /// unlikely at 32 bits per level that they are ignored, and `sorted_pairs` dedups).
    pub fn keys(&self) -> u64 {
        (0..self.chains.len()).map(|c| self.depth(c) as u64).sum()
    }

    /// The value of level `level` of chain `c`.
    pub fn value(c: usize, level: usize) -> [u8; VALUE_LEN] {
        let mut v = [0u8; VALUE_LEN];
        v[..8].copy_from_slice(&(c as u64).to_le_bytes());
        v[8..16].copy_from_slice(&(level as u64).to_le_bytes());
        let block = (c as u64) << 20 | level as u64;
        v[16..24].copy_from_slice(&block.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes());
        v
    }

    /// Every stored pair in ascending key order, duplicates removed.
    pub fn sorted_pairs(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut pairs = Vec::with_capacity(self.keys() as usize);
        for (c, key) in self.chains.iter().enumerate() {
            for level in 1..=self.depth(c) {
                pairs.push((
                    key[..ROOT.len() + level * LEVEL_BYTES].to_vec(),
                    Self::value(c, level).to_vec(),
                ));
            }
        }
        pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        pairs.dedup_by(|a, b| a.0 == b.0);
        pairs
    }

    /// Bytes of keys and values (before dedup).
    pub fn data_bytes(&self) -> u64 {
        (0..self.chains.len())
            .map(|c| {
                let d = self.depth(c);
                (1..=d)
                    .map(|l| (ROOT.len() + l * LEVEL_BYTES + VALUE_LEN) as u64)
                    .sum::<u64>()
            })
            .sum()
    }

    /// `n` queries: 80 % extend a stored full chain by two phantom levels (the answer is
    /// that chain's full key), 20 % name a chain that does not exist (no answer).
    pub fn queries(&self, n: usize) -> Vec<KvQuery> {
        let mut rng = seeded(derive_seed(self.seed, &[b"queries"]));
        let first_levels: std::collections::HashSet<&[u8]> = self
            .chains
            .iter()
            .map(|k| &k[..ROOT.len() + LEVEL_BYTES])
            .collect();
        (0..n)
            .map(|_| {
                if rng.random_range(0..100u32) < 80 {
                    let c = rng.random_range(0..self.chains.len() as u64) as usize;
                    let mut key = self.chains[c].clone();
                    let full = key.len();
                    for _ in 0..2 {
                        key.extend_from_slice(format!("/{:08x}", rng.random::<u32>()).as_bytes());
                    }
                    KvQuery {
                        key,
                        expect_len: Some(full),
                    }
                } else {
                    // A first segment no chain has: the query falls between stored chains.
                    let mut key = ROOT.to_vec();
                    loop {
                        key.truncate(ROOT.len());
                        key.extend_from_slice(format!("/{:08x}", rng.random::<u32>()).as_bytes());
                        if !first_levels.contains(key.as_slice()) {
                            break;
                        }
                    }
                    key.extend_from_slice(format!("/{:08x}", rng.random::<u32>()).as_bytes());
                    KvQuery {
                        key,
                        expect_len: None,
                    }
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn chains_are_prefix_closed_with_the_seed_shape() {
        let kv = KvChain::seed_shape(300, 7);
        let pairs = kv.sorted_pairs();
        let keys: BTreeSet<&[u8]> = pairs.iter().map(|(k, _)| k.as_slice()).collect();
        for (k, v) in &pairs {
            assert_eq!(v.len(), VALUE_LEN);
            assert!(k.starts_with(b"kv/llama70b/"));
            assert_eq!((k.len() - ROOT.len()) % LEVEL_BYTES, 0);
            // Prefix-closed: every shorter level is stored too.
            let mut l = k.len() - LEVEL_BYTES;
            while l > ROOT.len() {
                assert!(
                    keys.contains(&k[..l]),
                    "missing ancestor of {}",
                    String::from_utf8_lossy(k)
                );
                l -= LEVEL_BYTES;
            }
        }
        for c in 0..kv.chains.len() {
            assert!((4..=32).contains(&kv.depth(c)));
        }
        assert_eq!(pairs.len() as u64, kv.keys());
        assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn queries_mix_80_percent_hits_and_their_answers_hold() {
        let kv = KvChain::seed_shape(500, 11);
        let pairs = kv.sorted_pairs();
        let keys: BTreeSet<&[u8]> = pairs.iter().map(|(k, _)| k.as_slice()).collect();
        let qs = kv.queries(10_000);
        let hits = qs.iter().filter(|q| q.expect_len.is_some()).count();
        assert!((7_700..=8_300).contains(&hits), "{hits} hits of 10000");
        for q in qs.iter().take(2_000) {
            let brute = (1..=q.key.len())
                .rev()
                .find(|&l| keys.contains(&q.key[..l]));
            assert_eq!(brute, q.expect_len, "{}", String::from_utf8_lossy(&q.key));
        }
        assert_eq!(kv.queries(50), KvChain::seed_shape(500, 11).queries(50));
    }
}
