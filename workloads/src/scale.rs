//! Scales: how big the data sets are, the cache budget and the operation counts. Each
//! scale's budget is chosen so that its beyond-the-pool stores hold at least four times
//! the budget in keys and values, and its fits variants at most three quarters of it.

use crate::gen::{KvChain, Manifest};

/// A named size of the whole benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    /// ci, quick or seed.
    pub name: &'static str,
    /// Cache budget given to every engine, in bytes.
    pub budget_bytes: u64,
    /// The beyond-the-pool manifest.
    pub manifest_beyond: Manifest,
    /// The manifest that fits the budget.
    pub manifest_fits: Manifest,
    /// Chains of the beyond-the-pool kv-cache index.
    pub kvchain_beyond: u32,
    /// Chains of the kv-cache index that fits.
    pub kvchain_fits: u32,
    /// Nodes of the chain graphs.
    pub graph_nodes: u32,
    /// Timed operations per measurement.
    pub ops: u64,
    /// Untimed operations before timing.
    pub warmup: u64,
    /// Tenants of the KV-cache trace replay (each the whole trace with its own ids).
    pub trace_tenants: u32,
    /// Which replays of the trace run.
    pub trace_replays: TraceReplays,
}

/// Which replays of the KV-cache trace a scale runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceReplays {
    /// Every key design and lookup at unlimited, 50 % and 10 % capacity, and 8 client
    /// threads at 10 %.
    Every,
    /// Each engine's fastest method at 10 % capacity with one client thread: what fits
    /// the large scale's hour with 16 tenants (see `run::featured_trace_method`).
    Featured,
}

/// Every engine and workload in under 3 minutes on 2 cores.
pub const CI: Scale = Scale {
    name: "ci",
    budget_bytes: 1 << 20,
    manifest_beyond: Manifest {
        shards: 40,
        per_shard: 2_000,
    },
    manifest_fits: Manifest {
        shards: 4,
        per_shard: 2_000,
    },
    kvchain_beyond: 1_800,
    kvchain_fits: 100,
    graph_nodes: 20_000,
    ops: 1_000,
    warmup: 200,
    trace_tenants: 1,
    trace_replays: TraceReplays::Every,
};

/// The default of a plain `cargo bench`: under 20 minutes, plus about 55 for the trace
/// replay (4 tenants, every engine; docs/performance.md).
pub const QUICK: Scale = Scale {
    name: "quick",
    budget_bytes: 6 << 20,
    manifest_beyond: Manifest {
        shards: 60,
        per_shard: 10_000,
    },
    manifest_fits: Manifest {
        shards: 6,
        per_shard: 10_000,
    },
    kvchain_beyond: 12_000,
    kvchain_fits: 600,
    graph_nodes: 200_000,
    ops: 10_000,
    warmup: 2_000,
    trace_tenants: 4,
    trace_replays: TraceReplays::Every,
};

/// The seed report's sizes: 2 M manifest keys (200 shards x 10 000), 200 k in the fits
/// variant; 30 k chains (~540 k keys), 2 k in the fits variant. The seed ran a 256 MiB
/// pool; 16 MiB keeps its stores four times beyond the budget with these key counts.
pub const SEED: Scale = Scale {
    name: "seed",
    budget_bytes: 16 << 20,
    manifest_beyond: Manifest {
        shards: 200,
        per_shard: 10_000,
    },
    manifest_fits: Manifest {
        shards: 20,
        per_shard: 10_000,
    },
    kvchain_beyond: 30_000,
    kvchain_fits: 2_000,
    graph_nodes: 1_000_000,
    ops: 20_000,
    warmup: 5_000,
    trace_tenants: 16,
    trace_replays: TraceReplays::Every,
};

/// Production scale, past memory (issue 15): 50 M manifest keys (5,000 shards x 10,000
/// samples, LAION's shard size), run in the memory cgroup by default with a 64 MiB budget
/// (112 MiB with the overhead), so that every engine's store is at least ten times the
/// memory the timed phases have and reads really go to the disk. Fewer timed operations
/// than the seed scale: most of them wait on the disk.
pub const LARGE: Scale = Scale {
    name: "large",
    budget_bytes: 64 << 20,
    manifest_beyond: Manifest {
        shards: 5_000,
        per_shard: 10_000,
    },
    manifest_fits: Manifest {
        shards: 80,
        per_shard: 10_000,
    },
    kvchain_beyond: 120_000,
    kvchain_fits: 8_000,
    graph_nodes: 4_000_000,
    ops: 5_000,
    warmup: 1_000,
    trace_tenants: 16,
    trace_replays: TraceReplays::Featured,
};

/// Every scale.
pub const SCALES: [Scale; 4] = [CI, QUICK, SEED, LARGE];

impl Scale {
    /// The scale named `name`.
    pub fn by_name(name: &str) -> Option<Scale> {
        SCALES.iter().copied().find(|s| s.name == name)
    }

    /// Average bytes of keys and values per kv-chain key (depth 4..=32 uniform).
    pub fn kvchain_bytes(chains: u32) -> u64 {
        KvChain::seed_shape(chains.min(2_000), 1).data_bytes() * u64::from(chains)
            / u64::from(chains.clamp(1, 2_000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_stores_are_four_times_the_budget_and_fits_stores_fit() {
        for s in SCALES {
            let b = s.budget_bytes;
            assert!(
                s.manifest_beyond.data_bytes() >= 4 * b,
                "{}: manifest beyond",
                s.name
            );
            assert!(
                s.manifest_fits.data_bytes() * 4 <= 3 * b,
                "{}: manifest fits",
                s.name
            );
            assert!(
                Scale::kvchain_bytes(s.kvchain_beyond) >= 4 * b,
                "{}: kvchain beyond",
                s.name
            );
            assert!(
                Scale::kvchain_bytes(s.kvchain_fits) * 4 <= 3 * b,
                "{}: kvchain fits",
                s.name
            );
        }
        assert_eq!(Scale::by_name("seed"), Some(SEED));
        assert_eq!(SEED.manifest_beyond.keys(), 2_000_000);
        assert_eq!(SEED.manifest_fits.keys(), 200_000);
        assert!(Scale::by_name("huge").is_none());
        // The large scale's manifest is 3 GB of keys and values: past the machine's
        // memory cgroup of budget + overhead many times over.
        assert_eq!(LARGE.manifest_beyond.keys(), 50_000_000);
        assert!(
            LARGE.manifest_beyond.data_bytes()
                >= 10 * (LARGE.budget_bytes + crate::run::CGROUP_OVERHEAD_BYTES)
        );
    }
}
