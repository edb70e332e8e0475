//! The results JSON: what one `ai-meta run` (or `cargo bench --bench ai_meta`, or
//! `ai-meta repro`, or `ai-meta gate`) measured, with the provenance needed to trust it.
//! `schema_version` changes whenever a field changes meaning; readers refuse versions they
//! do not know.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::merge::MergeError;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// Why a results file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid results JSON.
    #[error("{path} is not a results file: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The JSON error, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The file's schema version is not one this build reads.
    #[error("{path} has schema_version {found}; this build reads version {supported}: regenerate it with this build's `ai-meta run`")]
    Schema {
        /// The file.
        path: PathBuf,
        /// Version found.
        found: u32,
        /// Version supported.
        supported: u32,
    },
    /// The file holds no measurement.
    #[error("{path} holds no records: run `ai-meta run` to produce measurements")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The README's Performance section cannot be found: its marker comments are
    /// missing, repeated or out of order. Nothing was written.
    #[error("{path} {problem}; put `<!-- performance:begin -->` and `<!-- performance:end -->` (once each) where the Performance section goes")]
    Readme {
        /// The README.
        path: PathBuf,
        /// What is wrong with its markers.
        problem: String,
    },
    /// The results files cannot be drawn together (see [`MergeError`]). Nothing was
    /// written.
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// An output file could not be written (the input was fine).
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

impl ReportError {
    /// The exit code `ai-meta report` gives for this error: 2 for bad input (a missing
    /// or unreadable results file or README, an unknown schema, no records, files that
    /// cannot be drawn together, README markers), 1 when writing the outputs failed. (The command line itself is the
    /// binary's to parse; it refuses bad flags with the same code 2.)
    pub fn exit_code(&self) -> i32 {
        match self {
            ReportError::Write { .. } => 1,
            _ => 2,
        }
    }
}

/// Where and how a run was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// Host description (CPU model, cores, memory).
    pub machine: String,
    /// Logical cores.
    pub cores: u32,
    /// Physical memory in bytes.
    pub memory_bytes: u64,
    /// Operating system and kernel.
    pub os: String,
    /// Git commit of the harness, with `-dirty` when the tree had changes.
    pub commit: String,
    /// UTC time the run started, RFC 3339.
    pub date: String,
    /// rustc version.
    pub rustc: String,
    /// The command line that produced the file.
    pub command: String,
    /// File system type of the directory the stores lived in.
    #[serde(default)]
    pub filesystem: String,
    /// Versions of the engine crates the harness was built with (from Cargo.lock).
    #[serde(default)]
    pub engine_versions: std::collections::BTreeMap<String, String>,
}

/// The run's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// Scale name: ci, quick or seed.
    pub scale: String,
    /// Cache budget given to every engine, in bytes.
    pub budget_bytes: u64,
    /// How the budget was applied: "engine" (each engine's cache knob) or "cgroup"
    /// (a memory cgroup that bounds the page cache too).
    pub budget_mode: String,
    /// Durability mode every engine ran in: none, async or sync.
    pub durability: String,
    /// Seed of the data and query generators.
    pub seed: u64,
    /// Timed operations per measurement.
    pub ops: u64,
    /// What an `ai-meta sweep` varied (None: a run at one scale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepConfig>,
}

/// The settings of an `ai-meta sweep`: the same workloads on manifests of several sizes
/// at one budget, and the thread counts of its parallel gets and scans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepConfig {
    /// Manifest sizes in keys, ascending; each is a data set named `manifest_<keys>`
    /// (for example `manifest_1e5`, `manifest_5e7`).
    pub sizes: Vec<u64>,
    /// Reader thread counts of the parallel workloads, ascending.
    pub threads: Vec<u32>,
    /// The data set the thread counts ran on (the largest size).
    pub threads_dataset: String,
}

/// A data set the workloads ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    /// Name, e.g. `manifest_beyond`, `manifest_fits`, `kvchain_beyond`.
    pub name: String,
    /// Generator family: manifest, kvchain or chain_graph.
    pub family: String,
    /// Keys stored.
    pub keys: u64,
    /// Bytes of keys and values.
    pub data_bytes: u64,
    /// Whether it fits the cache budget (false: a beyond-the-pool store).
    pub fits_budget: bool,
    /// Logical data bytes divided by the budget.
    pub ratio_to_budget: f64,
}

/// Latency summary in nanoseconds per operation.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Latency {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Fastest.
    pub min: f64,
    /// Slowest.
    pub max: f64,
}

/// An engine's own I/O counters, per operation (only engines that count them).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct IoPerOp {
    /// Pages (or blocks) read from storage.
    pub pages_read: f64,
    /// Page accesses served from the cache.
    pub page_hits: f64,
    /// Page accesses that missed the cache.
    pub page_misses: f64,
    /// Whole-frame reads (the reproduction mode of the seed report's bug).
    pub full_frame_reads: f64,
    /// Bytes read from storage.
    pub bytes_read: f64,
    /// Pages fetched by readahead.
    pub readahead_pages: f64,
    /// Bytes this process read from storage (not the page cache), from /proc/self/io;
    /// PostgreSQL's reads happen in its server and are not counted here.
    #[serde(default)]
    pub os_read_bytes: f64,
}

/// Whether a measurement exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Measured.
    Ok,
    /// The engine cannot do this (shown as N/A).
    Unsupported,
    /// The engine was not available on this machine (for example no PostgreSQL server).
    Skipped,
    /// The measurement failed; `note` says why.
    Error,
}

impl Status {
    /// The status as the results file and the tables spell it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Unsupported => "unsupported",
            Status::Skipped => "skipped",
            Status::Error => "error",
        }
    }
}

/// One measurement: a workload on a data set with an engine (and a variant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Workload: manifest_scan, manifest_get, manifest_list, manifest_range100,
    /// manifest_count8000, manifest_get_par8, manifest_cas, kvchain_lpm, chain_walk500,
    /// or bulk_load.
    pub workload: String,
    /// Data set name (see `Results::datasets`).
    pub dataset: String,
    /// Engine name: aimeta, rocksdb, sqlite, sqlite-tuned, lmdb, redb, postgres, etcd, etcd-1.
    pub engine: String,
    /// Variant, when the workload has several: paged / full_frame for the engine's scan
    /// modes; native / predecessor_seek / bisect for longest-prefix lookups.
    pub variant: Option<String>,
    /// Whether there is a measurement.
    pub status: Status,
    /// Why not, or anything a reader must know about this number.
    pub note: Option<String>,
    /// Timed operations.
    pub ops: u64,
    /// Threads issuing them.
    pub threads: u32,
    /// Latency per operation (per thread for parallel workloads).
    pub ns_per_op: Latency,
    /// Throughput over all threads.
    pub ops_per_sec: f64,
    /// The store's size on disk after loading.
    pub size_on_disk_bytes: Option<u64>,
    /// The engine's I/O counters per operation, where it has them.
    pub io_per_op: Option<IoPerOp>,
    /// Seconds the engine took to load the data set (the bulk_load record's total).
    #[serde(default)]
    pub load_secs: Option<f64>,
    /// What a trace replay (`kvcache_trace`) measured besides the per-request latency in
    /// `ns_per_op`; absent for the other workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceStats>,
    /// The working set the timed operations touched, against the budget; absent where
    /// it was not computed (bulk loads, trace replays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_set: Option<WorkingSet>,
    /// Heap allocations per timed operation in the harness's process (engine, adapter
    /// and workload code together; PostgreSQL's server allocates in its own processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_per_op: Option<AllocPerOp>,
    /// The device's latency beside these operations: random 4 KiB reads of a probe file
    /// that bypass the page cache, one right after each timed operation, outside its time.
    /// A get past the budget compares with it (times its page misses) rather than with
    /// the floor measured before the run, minutes away on a device that drifts. Recorded
    /// for single-threaded point gets on data past the budget, when the device is measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_beside: Option<Latency>,
}

/// How a working set was worked out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkingSetSource {
    /// From the keys the timed operations read, packed into 4 KiB pages in key order:
    /// a lower bound for every engine (none stores a page of keys in less).
    KeyLayout,
    /// Distinct pages counted by the engine itself.
    EngineCounters,
}

/// The working set of one measurement: the distinct 4 KiB pages its access pattern
/// reaches (its support: every page for keys chosen uniformly over the data set, the
/// first entries of each shard for the seed's start-of-shard scans), and how many of
/// them its timed operations did touch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorkingSet {
    /// Distinct 4 KiB pages the access pattern reaches.
    pub pages: u64,
    /// `pages` x 4096.
    pub bytes: u64,
    /// `bytes` divided by the run's budget: above 1 the measurement is beyond the
    /// budget in working set, not only in data size.
    pub ratio_to_budget: f64,
    /// How it was worked out.
    pub source: WorkingSetSource,
    /// Distinct pages the timed operations touched (at most `pages`: a few thousand
    /// operations reach only part of a large support).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub touched_pages: Option<u64>,
}

impl WorkingSet {
    /// True when the working set is larger than the budget.
    pub fn beyond_budget(&self) -> bool {
        self.ratio_to_budget > 1.0
    }
}

/// Heap allocations per timed operation, as a counting global allocator saw them.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct AllocPerOp {
    /// Bytes allocated (reallocations count their new size).
    pub bytes: f64,
    /// Calls to the allocator (alloc, alloc_zeroed and realloc).
    pub allocations: f64,
}

/// The storage device's own floor under the work directory, measured at the start of a
/// run: what no engine's read from disk can beat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceFloor {
    /// The directory measured (where the stores lived).
    pub path: String,
    /// Size of the file read, in bytes (larger than any cache the measurement could hit).
    pub file_bytes: u64,
    /// Whether the reads bypassed the page cache (O_DIRECT); false where the file system
    /// refused it, and then the numbers are an upper bound of the device's speed.
    pub direct: bool,
    /// Latency of one random 4 KiB read at queue depth 1, in nanoseconds.
    pub read_4k_qd1: Latency,
    /// Random 4 KiB reads per second at queue depth 1.
    pub iops_qd1: f64,
    /// Random 4 KiB reads per second at queue depth 8 (8 threads, one read each in
    /// flight).
    pub iops_qd8: f64,
    /// Seconds the measurement took.
    pub secs: f64,
}

/// One replay of a KV-cache request trace on one engine, key design and lookup method
/// (the record's `variant`, e.g. `path_native` or `chained_probe`), at one capacity
/// (the record's `dataset`, e.g. `mooncake_x1_cap10`). The record's `ops` are requests,
/// its `ns_per_op` the per-request total of the engine calls (lookup + insert batch +
/// evict batch), its `ops_per_sec` requests per second over the whole replay.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TraceStats {
    /// The trace file replayed, as given.
    pub trace: String,
    /// Tenants replayed at once (block ids salted per tenant, requests interleaved by
    /// timestamp).
    pub tenants: u32,
    /// Capacity as a percentage of each tenant's distinct blocks; `None`: unlimited.
    pub capacity_percent: Option<u32>,
    /// Each tenant's cache capacity in blocks (every tenant has its own); `None`:
    /// unlimited.
    pub capacity_blocks: Option<u64>,
    /// Distinct blocks over the whole replay (all tenants).
    pub distinct_blocks: u64,
    /// Blocks the requests asked for, repeats included.
    pub blocks_requested: u64,
    /// Blocks found cached by the engine's lookups (the longest cached prefix of each
    /// request, summed).
    pub hits: u64,
    /// The same count from the harness's own cache model; a replay whose `hits` differ
    /// is an error, not a record.
    pub model_hits: u64,
    /// `hits / blocks_requested`.
    pub hit_rate: f64,
    /// Blocks inserted (one write batch per request that missed any).
    pub inserted: u64,
    /// Blocks evicted (one delete batch per request that overflowed the capacity).
    pub evicted: u64,
    /// Keys stored at the end (blocks cached).
    pub final_keys: u64,
    /// Longest-prefix lookups: one per request.
    pub lookup: Latency,
    /// Insert batches (only requests that inserted something).
    pub insert: Latency,
    /// Insert batches timed.
    pub insert_batches: u64,
    /// Evict batches (only requests that evicted something).
    pub evict: Latency,
    /// Evict batches timed.
    pub evict_batches: u64,
    /// The engine's I/O counters per lookup, where it has them.
    pub lookup_io: Option<IoPerOp>,
    /// Open-loop replays: the intended request rate per second (timestamps scaled to
    /// it); each latency is measured from the request's intended start, queueing
    /// included. `None`: closed loop (each request starts when the previous one ends).
    pub open_loop_rate: Option<f64>,
}

/// A whole results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// Schema version (`SCHEMA_VERSION`).
    pub schema_version: u32,
    /// Where and how the run was made.
    pub provenance: Provenance,
    /// The run's settings.
    pub config: RunConfig,
    /// Data sets measured.
    pub datasets: Vec<Dataset>,
    /// Measurements.
    pub records: Vec<Record>,
    /// The device's floor under the work directory, where the run measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceFloor>,
}

impl Results {
    /// Reads and checks a results file: it must parse, have a known schema version and
    /// hold at least one record.
    pub fn load(path: &Path) -> Result<Results, ReportError> {
        use crate::atomic::{read_json_versioned, ReadFailure};
        let path_buf = || path.to_path_buf();
        let results: Results = read_json_versioned(path, SCHEMA_VERSION).map_err(|f| match f {
            ReadFailure::Io(source) => ReportError::Io {
                path: path_buf(),
                source,
            },
            ReadFailure::Parse(source) => ReportError::Parse {
                path: path_buf(),
                source,
            },
            ReadFailure::Version(found) => ReportError::Schema {
                path: path_buf(),
                found,
                supported: SCHEMA_VERSION,
            },
        })?;
        if results.records.is_empty() {
            return Err(ReportError::Empty { path: path_buf() });
        }
        Ok(results)
    }

    /// Writes the file atomically, pretty-printed.
    pub fn save(&self, path: &Path) -> Result<(), ReportError> {
        crate::atomic::write_json(path, self).map_err(|source| ReportError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The record for (workload, dataset, engine, variant), if measured.
    pub fn find(
        &self,
        workload: &str,
        dataset: &str,
        engine: &str,
        variant: Option<&str>,
    ) -> Option<&Record> {
        self.records.iter().find(|r| {
            r.workload == workload
                && r.dataset == dataset
                && r.engine == engine
                && r.variant.as_deref() == variant
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_are_the_files_spelling() -> Result<(), serde_json::Error> {
        for s in [
            Status::Ok,
            Status::Unsupported,
            Status::Skipped,
            Status::Error,
        ] {
            assert_eq!(serde_json::to_string(&s)?, format!("\"{}\"", s.name()));
        }
        Ok(())
    }

    fn sample() -> Results {
        Results {
            schema_version: SCHEMA_VERSION,
            device: None,
            provenance: crate::testing::provenance("rustc 1.95.0", "ai-meta run"),
            config: RunConfig {
                scale: "ci".into(),
                budget_bytes: 1 << 20,
                budget_mode: "engine".into(),
                durability: "async".into(),
                seed: 1,
                ops: 100,
                sweep: None,
            },
            datasets: vec![],
            records: vec![Record {
                workload: "manifest_get".into(),
                dataset: "manifest_fits".into(),
                engine: "aimeta".into(),
                variant: None,
                status: Status::Ok,
                note: None,
                ops: 100,
                threads: 1,
                ns_per_op: Latency::default(),
                ops_per_sec: 1.0,
                size_on_disk_bytes: Some(4096),
                io_per_op: None,
                load_secs: None,
                trace: None,
                working_set: None,
                alloc_per_op: None,
                device_beside: None,
            }],
        }
    }

    #[test]
    fn round_trip_and_refusals() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let p = dir.path().join("r.json");
        let r = sample();
        r.save(&p)?;
        assert_eq!(Results::load(&p)?, r);
        assert!(r
            .find("manifest_get", "manifest_fits", "aimeta", None)
            .is_some());
        let mut newer = serde_json::to_value(&r)?;
        newer["schema_version"] = 99.into();
        std::fs::write(&p, serde_json::to_vec(&newer)?)?;
        assert!(matches!(
            Results::load(&p),
            Err(ReportError::Schema { found: 99, .. })
        ));
        let mut empty = r.clone();
        empty.records.clear();
        empty.save(&p)?;
        assert!(matches!(Results::load(&p), Err(ReportError::Empty { .. })));
        assert!(matches!(
            Results::load(&dir.path().join("missing.json")),
            Err(ReportError::Io { .. })
        ));
        std::fs::write(&p, b"{not json")?;
        assert!(matches!(Results::load(&p), Err(ReportError::Parse { .. })));
        Ok(())
    }
}
