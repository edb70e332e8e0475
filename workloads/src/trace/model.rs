//! The cache manager's bookkeeping, as vLLM, SGLang and LMCache keep it: which blocks are
//! cached, how recently each was used, and which to evict. Per request it finds the
//! longest cached prefix of the request's chain, inserts the missing blocks and, when the
//! cache holds more than its capacity, evicts least-recently-used *leaves* (a block is
//! not evicted while a cached block extends it), so the cached set stays prefix-closed.
//!
//! The replay keeps this model outside the timed engine calls; it also gives the hit
//! count every engine's lookups must agree with exactly.

use std::collections::{BTreeSet, HashMap};

/// One cached block.
#[derive(Debug, Clone, Copy)]
struct Cached {
    /// The block it extends (None: a chain root).
    parent: Option<u64>,
    /// Cached blocks that extend it; it may be evicted only at zero.
    cached_children: u32,
    /// When it was last used (a counter that grows with every block touched).
    last_use: u64,
}

/// What one request did to the cache.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestOutcome {
    /// Leading blocks of the request's chain that were cached (the prefix hit).
    pub hits: usize,
    /// The blocks inserted (the rest of the chain), root first.
    pub inserted: Vec<u64>,
    /// The blocks evicted afterwards, in eviction order.
    pub evicted: Vec<u64>,
}

/// A prefix cache of block chains with LRU, leaves-first eviction.
#[derive(Debug, Clone)]
pub struct CacheModel {
    capacity: Option<usize>,
    blocks: HashMap<u64, Cached>,
    /// Evictable blocks (no cached child), oldest first: (last use, block).
    leaves: BTreeSet<(u64, u64)>,
    clock: u64,
}

impl CacheModel {
    /// A cache holding at most `capacity` blocks (None: unlimited).
    pub fn new(capacity: Option<usize>) -> CacheModel {
        CacheModel {
            capacity,
            blocks: HashMap::new(),
            leaves: BTreeSet::new(),
            clock: 0,
        }
    }

    /// Blocks cached now.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether no block is cached.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Whether `block` is cached.
    pub fn contains(&self, block: u64) -> bool {
        self.blocks.contains_key(&block)
    }

    /// The leading blocks of `chain` that are cached, without using them.
    pub fn cached_prefix(&self, chain: &[u64]) -> usize {
        chain
            .iter()
            .take_while(|b| self.blocks.contains_key(b))
            .count()
    }

    /// Serves one request whose prompt is `chain` (root first): the prefix hit is used,
    /// the rest inserted, then leaves are evicted down to the capacity. The request's
    /// own blocks are the most recent, so they go last.
    pub fn request(&mut self, chain: &[u64]) -> RequestOutcome {
        let hits = self.cached_prefix(chain);
        for &block in &chain[..hits] {
            self.touch(block);
        }
        let mut parent = hits.checked_sub(1).map(|i| chain[i]);
        let inserted = chain[hits..].to_vec();
        for &block in &inserted {
            self.insert(block, parent);
            parent = Some(block);
        }
        let mut evicted = Vec::new();
        while self.capacity.is_some_and(|c| self.blocks.len() > c) {
            let Some(block) = self.evict_one() else {
                break;
            };
            evicted.push(block);
        }
        RequestOutcome {
            hits,
            inserted,
            evicted,
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Marks a cached block used now.
    fn touch(&mut self, block: u64) {
        let now = self.tick();
        if let Some(cached) = self.blocks.get_mut(&block) {
            if self.leaves.remove(&(cached.last_use, block)) {
                self.leaves.insert((now, block));
            }
            cached.last_use = now;
        }
    }

    /// Caches `block` below `parent` (cached, or None for a root), used now.
    fn insert(&mut self, block: u64, parent: Option<u64>) {
        let now = self.tick();
        if let Some(id) = parent {
            if let Some(cached) = self.blocks.get_mut(&id) {
                // The parent is extended now: no longer evictable.
                if cached.cached_children == 0 {
                    self.leaves.remove(&(cached.last_use, id));
                }
                cached.cached_children += 1;
            }
        }
        self.blocks.insert(
            block,
            Cached {
                parent,
                cached_children: 0,
                last_use: now,
            },
        );
        self.leaves.insert((now, block));
    }

    /// Evicts the least recently used leaf; its parent may become a leaf.
    fn evict_one(&mut self) -> Option<u64> {
        let (_, block) = self.leaves.pop_first()?;
        let cached = self.blocks.remove(&block)?;
        if let Some(parent) = cached.parent {
            if let Some(p) = self.blocks.get_mut(&parent) {
                p.cached_children -= 1;
                if p.cached_children == 0 {
                    self.leaves.insert((p.last_use, parent));
                }
            }
        }
        Some(block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{committed_trace_path, read_trace, Trace};

    fn committed_trace() -> Trace {
        read_trace(&committed_trace_path()).expect("the committed trace parses")
    }

    /// Total prefix hits of a replay at `capacity`, checking the cache's invariants after
    /// every request: within capacity, prefix-closed.
    fn replay(trace: &Trace, capacity: Option<usize>) -> u64 {
        let mut cache = CacheModel::new(capacity);
        let mut hits = 0;
        for r in &trace.requests {
            let out = cache.request(&r.blocks);
            hits += out.hits as u64;
            assert_eq!(out.hits + out.inserted.len(), r.blocks.len());
            if let Some(c) = capacity {
                assert!(cache.len() <= c);
            }
            for b in &out.evicted {
                assert!(!cache.contains(*b));
            }
        }
        for (block, cached) in &cache.blocks {
            if let Some(p) = cached.parent {
                assert!(
                    cache.contains(p),
                    "block {block} cached without its parent {p}"
                );
            }
        }
        hits
    }

    #[test]
    fn the_committed_trace_has_the_documented_shape_and_hit_count() {
        let trace = committed_trace();
        assert_eq!(trace.requests.len(), 12_031);
        assert_eq!(trace.blocks_requested(), 288_500);
        assert_eq!(trace.distinct_blocks(), 182_790);
        assert_eq!(trace.longest_chain(), 247);
        assert_eq!(replay(&trace, None), 105_710);
    }

    #[test]
    fn smaller_caches_hit_less_and_stay_within_capacity() {
        let trace = committed_trace();
        let distinct = trace.distinct_blocks();
        let half = replay(&trace, Some(distinct / 2));
        let tenth = replay(&trace, Some(distinct / 10));
        assert!(
            tenth < half && half < 105_710,
            "10 %: {tenth}, 50 %: {half}"
        );
    }

    #[test]
    fn eviction_takes_the_oldest_leaf_and_never_a_parent_first() {
        let mut cache = CacheModel::new(Some(3));
        assert_eq!(cache.request(&[1, 2]).inserted, vec![1, 2]);
        // 3 extends 1; the cache is full at 3 blocks.
        let out = cache.request(&[1, 3]);
        assert_eq!((out.hits, out.evicted.len()), (1, 0));
        // A new root: the oldest leaf is 2 (1 is older but extended by 3).
        let out = cache.request(&[9]);
        assert_eq!(out.evicted, vec![2]);
        // Using 3 makes 9 the oldest leaf.
        assert_eq!(cache.request(&[1, 3]).hits, 2);
        assert_eq!(cache.request(&[7]).evicted, vec![9]);
        assert_eq!(cache.cached_prefix(&[1, 3, 4]), 2);
    }
}
