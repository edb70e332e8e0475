//! kvcache_trace in the runner: the trace replayed on every engine, in every key design
//! and lookup it can run, at three capacities, each replay on a fresh store (the index
//! starts empty, as a serving system's does), producing one record per replay.
//!
//! What runs: every method at unlimited, 50 % and 10 % capacity with one client thread,
//! and at 10 % (the capacity with the most evictions) with `TRACE_THREADS` threads too.
//! With `--rate` every replay is open-loop at that rate.

use std::path::{Path, PathBuf};

use aimeta_adapters::{EngineKind, KvEngine};
use aimeta_reports::{Dataset, IoPerOp, Record, Status, TraceStats};

use super::measure::latency;
use super::session::{open_engine, Store};
use super::{base_record, BudgetMode, CgroupGuard, Progress, RunError, RunOptions, Variant};
use super::{settle_file_system, Workload, CGROUP_OVERHEAD_BYTES};
use crate::scale::TraceReplays;
use crate::trace::{
    committed_trace_path, longest_key, path_root, prepare, read_trace, replay_with, ReplayError,
    ReplayInputs, ReplayOptions, Schedule, TraceMethod, BLOCK_VALUE_LEN, PATH_SEGMENT_LEN,
};

/// Client thread counts of the replay: one, and this many at the smallest capacity.
pub const TRACE_THREADS: [u32; 2] = [1, 8];

/// Capacities replayed, as a percentage of the distinct blocks (None: unlimited).
pub fn trace_capacities() -> [Option<u32>; 3] {
    [None, Some(50), Some(10)]
}

/// The methods `kind` runs: the native lookups only where it has one (aimeta's boundary
/// lookup only on aimeta), the emulations and chained keys everywhere.
pub fn trace_methods(kind: EngineKind) -> Vec<TraceMethod> {
    TraceMethod::ALL
        .into_iter()
        .filter(|m| *m != TraceMethod::PathNativeBoundary || kind == EngineKind::Aimeta)
        .collect()
}

/// The method each engine replays at a scale with `TraceReplays::Featured`: its fastest
/// key design and lookup in the committed quick run (results/kvcache_trace-quick.json, 10 %
/// capacity, one thread; docs/performance.md, 2026-12-01): this engine's native lookup on
/// path keys; for the others, whichever emulation and key design was fastest for them.
pub fn featured_trace_method(kind: EngineKind) -> TraceMethod {
    match kind {
        EngineKind::Aimeta => TraceMethod::PathNative,
        EngineKind::RocksDb | EngineKind::Postgres => TraceMethod::ChainedBisect,
        EngineKind::Sqlite => TraceMethod::PathBisect,
        // SQLite tuned, LMDB, redb, and any engine added later until it is measured.
        _ => TraceMethod::PathPredecessorSeek,
    }
}

/// The results name of a replay: the trace's first word, tenants, capacity.
pub(crate) fn dataset_name(trace: &Path, tenants: u32, capacity: Option<u32>) -> String {
    let stem = trace
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.split(['_', '.', '-']).next())
        .filter(|s| !s.is_empty())
        .unwrap_or("trace");
    let cap = capacity.map_or("all".to_string(), |p| p.to_string());
    format!("{stem}_x{tenants}_cap{cap}")
}

/// Bytes of keys and values the chained design holds when full (the smaller design: a
/// store beyond the budget in this design is beyond it in both).
fn chained_bytes(blocks: u64) -> u64 {
    blocks * (32 + BLOCK_VALUE_LEN as u64)
}

/// Bytes of keys and values of every block of the path design: what LMDB's map is
/// sized from.
fn path_bytes(schedule: &Schedule) -> u64 {
    let root = path_root(&Schedule::model_name(0)).len() as u64;
    let mut depth = vec![0u32; schedule.parents.len()];
    let mut total = 0u64;
    for (id, parent) in schedule.parents.iter().enumerate() {
        depth[id] = parent.map_or(1, |p| depth[p as usize] + 1);
        total += root + PATH_SEGMENT_LEN as u64 * u64::from(depth[id]) + BLOCK_VALUE_LEN as u64;
    }
    total * u64::from(schedule.tenants)
}

/// Replays the trace `o` names on every engine of `o`; returns the replays' data sets
/// and records.
pub fn run_trace(
    o: &RunOptions,
    progress: &dyn Progress,
) -> Result<(Vec<Dataset>, Vec<Record>), RunError> {
    let path = o.trace.clone().unwrap_or_else(committed_trace_path);
    let trace = read_trace(&path)?;
    let tenants = o.scale.trace_tenants;
    let mut datasets = Vec::new();
    let mut records = Vec::new();
    let featured = o.scale.trace_replays == TraceReplays::Featured;
    // Replays of 16 tenants (the seed and large scales) run with each engine's own cache
    // as the budget even in cgroup mode: in a cgroup of 64 + 48 MiB the OOM killer stopped
    // this engine's replay twice (its memory beyond its page budget under this
    // write-heavy trace: docs/performance.md), and in one of 16 + 48 MiB RocksDB's (66 MB
    // of anonymous memory at the kill), and a killed process ends the whole run.
    let outside = outside_cgroup(o);
    let engine_mode;
    let o = if outside {
        engine_mode = RunOptions {
            budget_mode: BudgetMode::Engine,
            ..o.clone()
        };
        &engine_mode
    } else {
        o
    };
    let capacities: Vec<Option<u32>> = if featured {
        vec![Some(10)]
    } else {
        trace_capacities().to_vec()
    };
    for capacity in capacities {
        let schedule =
            Schedule::new(&trace, tenants, capacity).map_err(|source| RunError::Schedule {
                path: path.clone(),
                source,
            })?;
        let name = dataset_name(&path, tenants, capacity);
        let held =
            schedule.capacity_blocks.unwrap_or(schedule.distinct_blocks) * u64::from(tenants);
        let bytes = chained_bytes(held);
        datasets.push(Dataset {
            name: name.clone(),
            family: "kvcache_trace".into(),
            keys: held,
            data_bytes: bytes,
            fits_budget: bytes < o.scale.budget_bytes,
            ratio_to_budget: bytes as f64 / o.scale.budget_bytes as f64,
        });
        let threads: &[u32] = if capacity == Some(10) && !featured {
            &TRACE_THREADS
        } else {
            &TRACE_THREADS[..1]
        };
        for &kind in &o.engines {
            let methods = if featured {
                vec![featured_trace_method(kind)]
            } else {
                trace_methods(kind)
            };
            for method in methods {
                for &n in threads {
                    let replay = Replay {
                        o,
                        kind,
                        method,
                        threads: n,
                        schedule: &schedule,
                        path: &path,
                        dataset: &name,
                    };
                    records.push(replay.run(progress)?);
                }
            }
        }
    }
    Ok((datasets, records))
}

/// Tenants from which a replay runs outside the memory cgroup (see `outside_cgroup`).
const TENANTS_OUTSIDE_CGROUP: u32 = 16;

/// True when the replays of `o` run with each engine's own cache as the budget although
/// the run is in the cgroup mode: replays of 16 tenants (the seed and large scales).
fn outside_cgroup(o: &RunOptions) -> bool {
    o.budget_mode == BudgetMode::Cgroup && o.scale.trace_tenants >= TENANTS_OUTSIDE_CGROUP
}

/// One replay to run (the runner's and the gate's).
pub(crate) struct Replay<'a> {
    /// Budget, durability, work directory, rate.
    pub(crate) o: &'a RunOptions,
    /// The engine.
    pub(crate) kind: EngineKind,
    /// Key design and lookup.
    pub(crate) method: TraceMethod,
    /// Client threads.
    pub(crate) threads: u32,
    /// What to replay.
    pub(crate) schedule: &'a Schedule,
    /// The trace file, for the record.
    pub(crate) path: &'a Path,
    /// The replay's data set name.
    pub(crate) dataset: &'a str,
}

impl Replay<'_> {
    fn record(&self) -> Record {
        Record {
            threads: self.threads,
            ..base_record(
                Workload::KvcacheTrace,
                self.dataset,
                self.kind,
                Some(Variant::Trace(self.method)),
            )
        }
    }

    /// A record saying why this replay has no measurement.
    fn not_measured(&self, status: Status, why: String) -> Record {
        Record {
            status,
            note: Some(why),
            ..self.record()
        }
    }

    fn engine_error(&self, step: &str) -> impl FnOnce(aimeta_adapters::Error) -> RunError {
        let (engine, dataset, step) = (
            self.kind.name().to_string(),
            self.dataset.to_string(),
            step.to_string(),
        );
        move |source| RunError::Engine {
            engine,
            dataset,
            step,
            source: Box::new(source),
        }
    }

    fn dir(&self) -> PathBuf {
        self.o.work_dir.join(self.dataset).join(format!(
            "{}-{}-t{}",
            self.kind.name(),
            self.method.name(),
            self.threads
        ))
    }

    /// Opens a fresh store, replays, and removes the store.
    pub(crate) fn run(&self, progress: &dyn Progress) -> Result<Record, RunError> {
        let dir = self.dir();
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|source| RunError::WorkDir {
            path: dir.clone(),
            source,
        })?;
        let result = self.run_in(&dir, progress);
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    fn run_in(&self, dir: &Path, progress: &dyn Progress) -> Result<Record, RunError> {
        let o = self.o;
        let schedule = self.schedule;
        // Known before the engine is opened: a mode etcd lacks starts no cluster.
        if let Some(why) =
            super::durability_not_offered(self.kind, self.kind.durabilities(), o.durability)
        {
            return Ok(self.not_measured(Status::Unsupported, why));
        }
        // The replay's inputs (arrivals, chained keys) are the harness's, built outside
        // the cgroup; in cgroup mode the engine's own cache is allocated inside it.
        let inputs = ReplayInputs::new(schedule, self.method, self.threads);
        // As before every timed phase: nothing written before the replay is still being
        // written back during it.
        settle_file_system(&o.work_dir).map_err(|source| RunError::WorkDir {
            path: o.work_dir.clone(),
            source,
        })?;
        let guard = match o.budget_mode {
            BudgetMode::Cgroup if !self.kind.is_server() => Some(CgroupGuard::enter(
                o.scale.budget_bytes + CGROUP_OVERHEAD_BYTES,
            )?),
            _ => None,
        };
        let engine = match open_engine(o, self.kind, dir, Store::of(path_bytes(schedule)), false) {
            Ok(e) => e,
            Err(e) => match super::NotLoaded::from_error(&e) {
                Some(not) => return Ok(self.not_measured(not.status, not.why)),
                None => return Err(self.engine_error("open")(e)),
            },
        };
        let engine: &dyn KvEngine = engine.as_ref();
        let caps = engine.capabilities();
        if let Some(why) = super::durability_not_offered(self.kind, caps.durability, o.durability) {
            return Ok(self.not_measured(Status::Unsupported, why));
        }
        if self.method.lpm_method() == Some(aimeta_adapters::LpmMethod::Native)
            && !caps.native_longest_prefix
        {
            return Ok(self.not_measured(
                Status::Unsupported,
                format!("{} has no native longest-prefix lookup", self.kind.name()),
            ));
        }
        let design = self.method.design();
        let longest = longest_key(schedule, design);
        if let Some(max) = caps.max_key_len.filter(|max| *max < longest) {
            return Ok(self.not_measured(
                Status::Unsupported,
                format!(
                    "{} holds keys up to {max} bytes; this trace's longest path key is {longest} bytes",
                    self.kind.name()
                ),
            ));
        }
        let replay_error = |source: ReplayError| RunError::Replay {
            engine: self.kind.name().to_string(),
            dataset: self.dataset.to_string(),
            variant: self.method.name().to_string(),
            source: Box::new(source),
        };
        prepare(engine, schedule, design).map_err(replay_error)?;
        let options = ReplayOptions {
            threads: self.threads,
            rate: o.rate,
        };
        progress.begin(
            &format!(
                "{} {} {} x{}",
                self.kind.name(),
                self.dataset,
                self.method.name(),
                self.threads
            ),
            schedule.arrivals.len() as u64,
        );
        let outcome = replay_with(engine, schedule, self.method, inputs, &options, &|n| {
            progress.advance(n)
        });
        progress.end();
        let outcome = match outcome {
            Ok(out) => out,
            Err(ReplayError::Engine {
                source: source @ aimeta_adapters::Error::InvalidKey { .. },
                ..
            }) => {
                return Ok(self.not_measured(
                    Status::Unsupported,
                    format!(
                        "{} refused a key of this design: {source}",
                        self.kind.name()
                    ),
                ))
            }
            Err(e) => return Err(replay_error(e)),
        };
        let model_hits = schedule.model_hits();
        if outcome.hits != model_hits {
            return Err(RunError::WrongAnswer {
                engine: self.kind.name().into(),
                workload: format!("kvcache_trace {}", self.method.name()),
                detail: format!(
                    "{} blocks found cached, the cache model {model_hits}",
                    outcome.hits
                ),
            });
        }
        engine
            .checkpoint()
            .map_err(self.engine_error("checkpoint after the replay"))?;
        let size = engine
            .size_on_disk()
            .map_err(self.engine_error("size on disk"))?;
        let lookups = outcome.requests.max(1) as f64;
        let lookup_io = outcome.lookup_io.map(|c| IoPerOp {
            pages_read: c.pages_read as f64 / lookups,
            page_hits: c.cache_hits as f64 / lookups,
            page_misses: c.cache_misses as f64 / lookups,
            full_frame_reads: c.full_frame_reads as f64 / lookups,
            bytes_read: c.bytes_read as f64 / lookups,
            readahead_pages: c.readahead_pages as f64 / lookups,
            os_read_bytes: 0.0,
        });
        let requested = schedule.blocks_requested();
        let seconds = match o.rate {
            Some(_) => outcome.wall.as_secs_f64(),
            None => outcome.busy.as_secs_f64(),
        };
        let stats = TraceStats {
            trace: self.path.display().to_string(),
            tenants: schedule.tenants,
            capacity_percent: schedule.capacity_percent,
            capacity_blocks: schedule.capacity_blocks,
            distinct_blocks: schedule.distinct_blocks * u64::from(schedule.tenants),
            blocks_requested: requested,
            hits: outcome.hits,
            model_hits,
            hit_rate: outcome.hits as f64 / requested.max(1) as f64,
            inserted: outcome.inserted,
            evicted: outcome.evicted,
            final_keys: outcome.inserted - outcome.evicted,
            lookup: latency(&outcome.lookup),
            insert: latency(&outcome.insert),
            insert_batches: outcome.insert.len(),
            evict: latency(&outcome.evict),
            evict_batches: outcome.evict.len(),
            lookup_io,
            open_loop_rate: o.rate,
        };
        let mut note = match o.rate {
            Some(rate) => format!("open loop at {rate} requests/s: latencies from each request's intended start"),
            None => "closed loop: ns_per_op is the request's time inside engine calls (lookup + insert batch + evict batch)".into(),
        };
        if o.scale.trace_tenants >= TENANTS_OUTSIDE_CGROUP {
            note.push_str(&format!(
                "; replayed with each engine's own cache as the {} MiB budget ({} budget mode), not in the memory cgroup",
                o.scale.budget_bytes >> 20,
                o.budget_mode.name()
            ));
        }
        let mut record = Record {
            ops: outcome.requests,
            ns_per_op: latency(&outcome.request),
            ops_per_sec: outcome.requests as f64 / seconds.max(1e-9),
            size_on_disk_bytes: Some(size),
            io_per_op: lookup_io,
            note: Some(note),
            trace: Some(stats),
            ..self.record()
        };
        super::cgroup::mark_over_budget(guard.as_ref(), std::slice::from_mut(&mut record));
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_are_named_by_trace_tenants_and_capacity() {
        let committed = committed_trace_path();
        assert_eq!(dataset_name(&committed, 1, None), "mooncake_x1_capall");
        assert_eq!(dataset_name(&committed, 16, Some(10)), "mooncake_x16_cap10");
        assert_eq!(
            dataset_name(Path::new("/x/.jsonl"), 4, Some(50)),
            "trace_x4_cap50"
        );
        assert_eq!(trace_methods(EngineKind::Aimeta).len(), 6);
        assert!(!trace_methods(EngineKind::Lmdb).contains(&TraceMethod::PathNativeBoundary));
        assert!(trace_methods(EngineKind::Lmdb).contains(&TraceMethod::PathNative));
    }
}
