//! What a replay will do, worked out before any engine is touched: the trace's block ids
//! renumbered densely, each block's parent, the cache model's outcome of every request,
//! the order in which the tenants' requests arrive, and each tenant's chained keys.
//!
//! Tenants replay the same trace with their own ids (their own model entry in path
//! keys, salted ids in chained keys), each with its own cache of `capacity` percent of
//! its distinct blocks, as a serving system keeps one prefix cache per model instance.
//! Every tenant's cache therefore evolves alike, so the model runs once per trace
//! request, and the hit count is deterministic however the requests are dealt to
//! threads. Tenant `t`'s timestamps are shifted by `t / T` of the trace's span, so the
//! tenants arrive staggered and overlap, interleaved by shifted timestamp.

use std::collections::HashMap;

use super::keys::{chained_key, ChainedKey, PATH_BLOCK_LIMIT};
use super::model::CacheModel;
use super::parse::Trace;

/// Why a trace cannot be scheduled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The trace has more distinct blocks than a path segment holds.
    #[error("the trace has {distinct} distinct blocks; path keys hold at most {limit} (6 hex digits a block): split the trace")]
    TooManyBlocks {
        /// Distinct blocks in the trace.
        distinct: u64,
        /// The limit.
        limit: u64,
    },
    /// No tenant to replay.
    #[error("a replay needs at least one tenant")]
    NoTenants,
    /// A capacity above 100 %.
    #[error("capacity {percent} % of the distinct blocks is not a capacity; give 1 to 100, or none for unlimited")]
    BadCapacity {
        /// The percentage given.
        percent: u32,
    },
}

/// One request as a tenant issues it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// The tenant.
    pub tenant: u32,
    /// Index of the request in the trace.
    pub request: u32,
    /// Shifted arrival time, milliseconds from the start of the replay.
    pub at_ms: u64,
}

/// The model's outcome of one trace request, in dense ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Planned {
    /// The request's chain, dense ids, root first.
    pub chain: Vec<u32>,
    /// Leading blocks found cached.
    pub hits: usize,
    /// Blocks evicted after the insert, in eviction order (leaves first).
    pub evicted: Vec<u32>,
}

/// A replay worked out in advance.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Tenants replayed at once.
    pub tenants: u32,
    /// Capacity per tenant in blocks (None: unlimited).
    pub capacity_blocks: Option<u64>,
    /// The percentage it was derived from (None: unlimited).
    pub capacity_percent: Option<u32>,
    /// Distinct blocks of the trace (one tenant).
    pub distinct_blocks: u64,
    /// Each dense block's parent (None: a root).
    pub parents: Vec<Option<u32>>,
    /// Each trace request's chain and model outcome.
    pub requests: Vec<Planned>,
    /// Every tenant's requests in arrival order.
    pub arrivals: Vec<Arrival>,
    /// The longest chain, in blocks.
    pub longest_chain: usize,
    /// The span of the shifted arrival times, milliseconds.
    pub span_ms: u64,
}

impl Schedule {
    /// Works out the replay of `trace` for `tenants` tenants, each with a cache of
    /// `capacity_percent` of the trace's distinct blocks (None: unlimited).
    pub fn new(
        trace: &Trace,
        tenants: u32,
        capacity_percent: Option<u32>,
    ) -> Result<Schedule, ScheduleError> {
        if tenants == 0 {
            return Err(ScheduleError::NoTenants);
        }
        if let Some(percent) = capacity_percent.filter(|p| *p == 0 || *p > 100) {
            return Err(ScheduleError::BadCapacity { percent });
        }
        let mut dense: HashMap<u64, u32> = HashMap::new();
        let mut parents: Vec<Option<u32>> = Vec::new();
        let mut chains = Vec::with_capacity(trace.requests.len());
        for request in &trace.requests {
            let mut chain = Vec::with_capacity(request.blocks.len());
            let mut parent = None;
            for &block in &request.blocks {
                let next = parents.len();
                let id = *dense.entry(block).or_insert_with(|| {
                    // The parse refused a block whose parent changes, so the first
                    // parent seen is every later one too.
                    parents.push(parent);
                    next as u32
                });
                chain.push(id);
                parent = Some(id);
            }
            if parents.len() as u64 > PATH_BLOCK_LIMIT {
                return Err(ScheduleError::TooManyBlocks {
                    distinct: parents.len() as u64,
                    limit: PATH_BLOCK_LIMIT,
                });
            }
            chains.push(chain);
        }
        let distinct_blocks = parents.len() as u64;
        let capacity_blocks =
            capacity_percent.map(|p| (distinct_blocks * u64::from(p) / 100).max(1));
        let mut model = CacheModel::new(capacity_blocks.map(|c| c as usize));
        let requests: Vec<Planned> = chains
            .into_iter()
            .map(|chain| {
                let wide: Vec<u64> = chain.iter().map(|&b| u64::from(b)).collect();
                let outcome = model.request(&wide);
                Planned {
                    hits: outcome.hits,
                    evicted: outcome.evicted.iter().map(|&b| b as u32).collect(),
                    chain,
                }
            })
            .collect();
        let first = trace.requests.first().map_or(0, |r| r.timestamp_ms);
        let last = trace
            .requests
            .iter()
            .map(|r| r.timestamp_ms)
            .max()
            .unwrap_or(0);
        let trace_span = last.saturating_sub(first);
        let mut arrivals: Vec<Arrival> = (0..tenants)
            .flat_map(|tenant| {
                let shift = trace_span * u64::from(tenant) / u64::from(tenants);
                trace
                    .requests
                    .iter()
                    .enumerate()
                    .map(move |(i, r)| Arrival {
                        tenant,
                        request: i as u32,
                        at_ms: r.timestamp_ms.saturating_sub(first) + shift,
                    })
            })
            .collect();
        // Stable: a tenant's own requests keep their trace order on equal timestamps.
        arrivals.sort_by_key(|a| (a.at_ms, a.tenant, a.request));
        let span_ms = arrivals.last().map_or(0, |a| a.at_ms);
        let longest_chain = requests.iter().map(|r| r.chain.len()).max().unwrap_or(0);
        Ok(Schedule {
            tenants,
            capacity_blocks,
            capacity_percent,
            distinct_blocks,
            parents,
            requests,
            arrivals,
            longest_chain,
            span_ms,
        })
    }

    /// The model's prefix hits over the whole replay (all tenants).
    pub fn model_hits(&self) -> u64 {
        let per_tenant: u64 = self.requests.iter().map(|r| r.hits as u64).sum();
        per_tenant * u64::from(self.tenants)
    }

    /// Blocks the replay's requests ask for (all tenants).
    pub fn blocks_requested(&self) -> u64 {
        let per_tenant: u64 = self.requests.iter().map(|r| r.chain.len() as u64).sum();
        per_tenant * u64::from(self.tenants)
    }

    /// The model name of `tenant` in path keys: 8 characters (`tenant00` ...) up to 100
    /// tenants, so the longest key does not depend on the tenant.
    pub fn model_name(tenant: u32) -> String {
        format!("tenant{tenant:02}")
    }

    /// The chain of `block` from its root, root first.
    pub fn chain_of(&self, block: u32, out: &mut Vec<u32>) {
        out.clear();
        let mut at = Some(block);
        while let Some(b) = at {
            out.push(b);
            at = self.parents.get(b as usize).copied().flatten();
        }
        out.reverse();
    }

    /// Every block's chained key for `tenant` (indexed by dense id): SHA-256 chains
    /// salted with the tenant, computed parent before child (dense ids are assigned in
    /// first-appearance order, so a parent's id is always the smaller).
    pub fn chained_keys(&self, tenant: u32) -> Vec<ChainedKey> {
        let salt = u64::from(tenant) << 32;
        let mut keys: Vec<ChainedKey> = Vec::with_capacity(self.parents.len());
        for (id, parent) in self.parents.iter().enumerate() {
            let parent_key = parent.and_then(|p| keys.get(p as usize)).copied();
            keys.push(chained_key(parent_key.as_ref(), salt | id as u64));
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{committed_trace_path, parse_trace, read_trace};
    use std::path::Path;

    fn small() -> Trace {
        let text = r#"{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [10, 11]}
{"timestamp": 5, "input_length": 1, "output_length": 1, "hash_ids": [10, 12]}
{"timestamp": 9, "input_length": 1, "output_length": 1, "hash_ids": [10, 11, 13]}"#;
        parse_trace(Path::new("small.jsonl"), text).expect("valid")
    }

    #[test]
    fn ids_are_dense_parents_first_and_tenants_interleave_by_shifted_time(
    ) -> Result<(), ScheduleError> {
        let s = Schedule::new(&small(), 2, None)?;
        assert_eq!(s.parents, vec![None, Some(0), Some(0), Some(1)]);
        assert_eq!(s.requests[2].chain, vec![0, 1, 3]);
        assert_eq!(s.requests[2].hits, 2);
        let order: Vec<(u32, u32, u64)> = s
            .arrivals
            .iter()
            .map(|a| (a.tenant, a.request, a.at_ms))
            .collect();
        // Tenant 1 is shifted by half of the 9 ms span (4 ms).
        assert_eq!(
            order,
            vec![
                (0, 0, 0),
                (1, 0, 4),
                (0, 1, 5),
                (0, 2, 9),
                (1, 1, 9),
                (1, 2, 13)
            ]
        );
        assert_eq!(s.model_hits(), 2 * 3);
        assert_eq!(s.blocks_requested(), 2 * 7);
        let mut chain = Vec::new();
        s.chain_of(3, &mut chain);
        assert_eq!(chain, vec![0, 1, 3]);
        let (a, b) = (s.chained_keys(0), s.chained_keys(1));
        assert_eq!(a[1], chained_key(Some(&a[0]), 1));
        assert_ne!(a[0], b[0]);
        Ok(())
    }

    #[test]
    fn the_committed_trace_schedules_with_its_documented_hits() -> Result<(), ScheduleError> {
        let trace = read_trace(&committed_trace_path()).expect("the committed trace parses");
        let s = Schedule::new(&trace, 1, None)?;
        assert_eq!((s.model_hits(), s.blocks_requested()), (105_710, 288_500));
        assert_eq!((s.distinct_blocks, s.longest_chain), (182_790, 247));
        let tenth = Schedule::new(&trace, 1, Some(10))?;
        assert_eq!(tenth.capacity_blocks, Some(18_279));
        assert!(tenth.model_hits() < 105_710);
        Ok(())
    }

    #[test]
    fn bad_settings_are_refused() {
        assert_eq!(
            Schedule::new(&small(), 0, None).err(),
            Some(ScheduleError::NoTenants)
        );
        assert_eq!(
            Schedule::new(&small(), 1, Some(0)).err(),
            Some(ScheduleError::BadCapacity { percent: 0 })
        );
    }
}
