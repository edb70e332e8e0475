//! The performance gate's measurements: this engine and LMDB loaded with the same data in
//! one process, timed in alternating rounds (ratios), and this engine's deterministic I/O
//! counters on a cold pool. The verdicts against the checked-in baseline are
//! `aimeta_reports::gate`'s; this module only measures.

use aimeta_adapters::EngineKind;
use aimeta_reports::gate::{median, CounterMeasured, RatioMeasured};

use crate::run::{dataset_name, plan_datasets, Data, Planned, Progress, Replay, RunError};
use crate::run::{RunOptions, Session, Variant, Workload};
use crate::trace::{committed_trace_path, read_trace, Schedule, TraceMethod};

/// The trace replay's capacity in the gate: 10 % of the distinct blocks, where evictions
/// are most frequent.
pub const TRACE_CAPACITY_PERCENT: u32 = 10;

/// This engine's method in the gate's trace checks: path keys and its native lookup.
pub const TRACE_MINE: TraceMethod = TraceMethod::PathNative;

/// LMDB's methods; the ratio is taken against the fastest of them in each round.
pub const TRACE_LMDB: [TraceMethod; 4] = [
    TraceMethod::PathPredecessorSeek,
    TraceMethod::PathBisect,
    TraceMethod::ChainedProbe,
    TraceMethod::ChainedBisect,
];

/// Share of each side's operations in a round that its ratio keeps: the fastest 99 %.
pub const TRIM_KEEP: f64 = 0.99;

/// Mean of the fastest [`TRIM_KEEP`] of `nanos` (sorted in place), 0 when empty.
///
/// The slowest 1 % are dropped because on this project's virtual machines they are the
/// host's stalls (a page whose backing the host reclaimed costs 100-500 us to touch,
/// against 0.3-5 us for an operation): in a round of 3,000 operations, 30 such stalls
/// doubled a mean and moved the ratios by up to 3x between runs (docs/gate.md). A
/// regression confined to fewer than 1 % of the operations is left to the counters.
pub fn trimmed_mean(nanos: &mut [u64]) -> f64 {
    if nanos.is_empty() {
        return 0.0;
    }
    nanos.sort_unstable();
    let keep = ((nanos.len() as f64 * TRIM_KEEP).ceil() as usize).clamp(1, nanos.len());
    nanos[..keep].iter().map(|&n| n as f64).sum::<f64>() / keep as f64
}

/// Operations per counter check, each on a freshly opened (cold) pool.
pub const COLD_OPS: u64 = 50;

/// The workloads the gate runs (both variants of each data set, fits and beyond).
pub const GATE_WORKLOADS: [Workload; 7] = [
    Workload::ManifestScan,
    Workload::ManifestRange100,
    Workload::ManifestGet,
    Workload::ManifestList,
    Workload::ManifestCount8000,
    Workload::ManifestCas,
    Workload::KvchainLpm,
];

/// What to measure.
#[derive(Debug, Clone)]
pub struct GateOptions {
    /// Scale, work directory, seed and durability (engines and workloads are the gate's).
    pub run: RunOptions,
    /// Alternating rounds per ratio.
    pub rounds: u32,
    /// Timed operations per engine per round.
    pub ops_per_round: u64,
    /// Open this engine in its full-frame reproduction mode: a self-test that the gate
    /// fails when the seed report's bug comes back.
    pub full_frame: bool,
    /// Print each round of each ratio on stderr: both sides' trimmed means in ns and
    /// their ratio, to tell which engine moved when a ratio does.
    pub show_rounds: bool,
}

/// Which of the two loaded engines a side of a ratio is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Mine,
    Lmdb,
}

/// A timed check: mean of `a` over mean of `b`, on one data set.
#[derive(Debug, Clone)]
struct RatioSpec {
    check: String,
    what: String,
    pair: usize,
    workload: Workload,
    a: (Side, Option<Variant>),
    b: (Side, Option<Variant>),
    cap: Option<f64>,
}

/// One data set loaded into both engines.
struct Pair {
    planned: Planned,
    mine: Session,
    lmdb: Session,
}

impl Pair {
    fn side(&mut self, s: Side) -> &mut Session {
        match s {
            Side::Mine => &mut self.mine,
            Side::Lmdb => &mut self.lmdb,
        }
    }
}

/// Both engines loaded with every data set of the gate, and the trace replay's schedule
/// (each replay runs on a fresh store).
pub struct Gate {
    o: GateOptions,
    pairs: Vec<Pair>,
    specs: Vec<RatioSpec>,
    trace: Schedule,
    trace_dataset: String,
}

fn ratio_specs(pairs: &[Pair]) -> Vec<RatioSpec> {
    let mut out = Vec::new();
    for (i, p) in pairs.iter().enumerate() {
        let ds = &p.planned.meta.name;
        match p.planned.data {
            Data::Manifest(_) => {
                // The swaps come last: they change values (not their lengths) that the
                // reads before them check.
                for w in [
                    Workload::ManifestScan,
                    Workload::ManifestRange100,
                    Workload::ManifestGet,
                    Workload::ManifestList,
                    Workload::ManifestCount8000,
                    Workload::ManifestCas,
                ] {
                    out.push(RatioSpec {
                        check: format!("{}/{ds}", w.name()),
                        what: format!(
                            "{} on {ds}: aimeta / lmdb, trimmed mean ns per op",
                            w.name()
                        ),
                        pair: i,
                        workload: w,
                        a: (Side::Mine, None),
                        b: (Side::Lmdb, None),
                        cap: None,
                    });
                }
            }
            Data::KvChain(_) => {
                let w = Workload::KvchainLpm;
                out.push(RatioSpec {
                    check: format!("kvchain_lpm/{ds}"),
                    what: format!(
                        "kvchain_lpm on {ds}: aimeta native / lmdb predecessor seek, trimmed mean ns per op"
                    ),
                    pair: i,
                    workload: w,
                    a: (Side::Mine, Some(Variant::Native)),
                    b: (Side::Lmdb, Some(Variant::PredecessorSeek)),
                    cap: None,
                });
                for other in [Variant::Bisect, Variant::PredecessorSeek] {
                    out.push(RatioSpec {
                        check: format!("kvchain_lpm_native_vs_{other}/{ds}"),
                        what: format!(
                            "kvchain_lpm on {ds}: aimeta native / aimeta {other}; must stay below 1"
                        ),
                        pair: i,
                        workload: w,
                        a: (Side::Mine, Some(Variant::Native)),
                        b: (Side::Mine, Some(other)),
                        cap: Some(1.0),
                    });
                }
            }
            Data::Graph(_) => {}
        }
    }
    out
}

fn load(
    o: &RunOptions,
    kind: EngineKind,
    p: &Planned,
    full_frame: bool,
    progress: &dyn Progress,
) -> Result<Session, RunError> {
    Session::load(o, kind, p, full_frame, progress)?.map_err(|not| RunError::Unavailable {
        engine: kind.name().to_string(),
        detail: not.why,
    })
}

impl Gate {
    /// Loads every data set of the gate into this engine and LMDB.
    pub fn load(o: GateOptions, progress: &dyn Progress) -> Result<Gate, RunError> {
        let mut run = o.run.clone();
        run.workloads = GATE_WORKLOADS.to_vec();
        run.engines = vec![EngineKind::Aimeta, EngineKind::Lmdb];
        let o = GateOptions { run, ..o };
        std::fs::create_dir_all(&o.run.work_dir).map_err(|source| RunError::WorkDir {
            path: o.run.work_dir.clone(),
            source,
        })?;
        let mut pairs = Vec::new();
        for planned in plan_datasets(&o.run) {
            let mine = load(&o.run, EngineKind::Aimeta, &planned, o.full_frame, progress)?;
            let lmdb = load(&o.run, EngineKind::Lmdb, &planned, false, progress)?;
            pairs.push(Pair {
                planned,
                mine,
                lmdb,
            });
        }
        let specs = ratio_specs(&pairs);
        let path = committed_trace_path();
        let tenants = o.run.scale.trace_tenants;
        let trace = Schedule::new(&read_trace(&path)?, tenants, Some(TRACE_CAPACITY_PERCENT))
            .map_err(|source| RunError::Schedule {
                path: path.clone(),
                source,
            })?;
        let trace_dataset = dataset_name(&path, tenants, Some(TRACE_CAPACITY_PERCENT));
        Ok(Gate {
            o,
            pairs,
            specs,
            trace,
            trace_dataset,
        })
    }

    /// One replay of the gate's trace on a fresh store: its record.
    fn replay(
        &self,
        kind: EngineKind,
        method: TraceMethod,
        progress: &dyn Progress,
    ) -> Result<aimeta_reports::Record, RunError> {
        let path = committed_trace_path();
        let record = Replay {
            o: &self.o.run,
            kind,
            method,
            threads: 1,
            schedule: &self.trace,
            path: &path,
            dataset: &self.trace_dataset,
        }
        .run(progress)?;
        match record.status {
            aimeta_reports::Status::Ok => Ok(record),
            _ => Err(RunError::Unavailable {
                engine: kind.name().to_string(),
                detail: format!(
                    "{} on {}: {}",
                    method.name(),
                    self.trace_dataset,
                    record.note.unwrap_or_default()
                ),
            }),
        }
    }

    /// The trace's deterministic counters, from one replay of this engine's path-key
    /// native lookup on a fresh store (its pool starts empty): how far its hits are from
    /// the cache model's (0: the replay refuses to finish otherwise, so this guards the
    /// check itself), the blocks it missed (exact: fewer or more means the workload
    /// changed), and the pages its lookups read.
    pub fn trace_counters(&self) -> Result<Vec<CounterMeasured>, RunError> {
        let record = self.replay(EngineKind::Aimeta, TRACE_MINE, &crate::run::NoProgress)?;
        let ds = &self.trace_dataset;
        let Some(t) = record.trace else {
            return Ok(Vec::new());
        };
        let pages = t.lookup_io.map_or(f64::NAN, |io| io.pages_read);
        Ok(vec![
            CounterMeasured {
                check: format!("trace_hits_off_model/{ds}"),
                what: format!("|aimeta's prefix hits - the cache model's| over the replay of {ds}"),
                value: t.hits.abs_diff(t.model_hits) as f64,
                slack: None,
            },
            CounterMeasured {
                check: format!("trace_blocks_missed/{ds}"),
                what: format!(
                    "blocks requested but not cached over the replay of {ds} ({} requested); a change either way is a change of the workload",
                    t.blocks_requested
                ),
                value: (t.blocks_requested - t.hits) as f64,
                slack: None,
            },
            CounterMeasured {
                check: format!("pages_per_trace_lookup_cold/{ds}"),
                what: format!(
                    "pages aimeta reads per longest-prefix lookup (path keys, native) replaying {ds} from an empty store and pool"
                ),
                value: pages,
                // Not exactly repeatable: which pages the pool can evict at a given moment
                // depends on what the log writer and the checkpointer hold then, so three
                // replays read 10,634 to 10,636 pages in all (0.02 %); 1 % still fails a
                // lookup that reads one more page in a hundred.
                slack: Some(0.01),
            },
        ])
    }

    /// The trace's timed check: per-request time of this engine's path-key native lookup
    /// over LMDB's fastest method, each replay on a fresh store, `rounds` times with the
    /// order swapped every round. LMDB's fastest method is the one with the lowest median
    /// over the rounds, and each round's ratio is taken against that method's replay of
    /// the round: one replay against one. (Taking the fastest of LMDB's four replays in
    /// each round compared one sample with the least of four, and a replay's time varies
    /// by about 20 % from one to the next here, so that minimum alone moved the ratio by
    /// about 0.1: docs/gate.md.)
    fn trace_ratio(&self, progress: &dyn Progress) -> Result<RatioMeasured, RunError> {
        let mean = |r: aimeta_reports::Record| r.ns_per_op.mean;
        let mut mine = Vec::new();
        let mut lmdb: Vec<Vec<f64>> = vec![Vec::new(); TRACE_LMDB.len()];
        let replay_mine = || -> Result<f64, RunError> {
            Ok(mean(self.replay(
                EngineKind::Aimeta,
                TRACE_MINE,
                progress,
            )?))
        };
        for round in 0..self.o.rounds {
            let mine_first = round % 2 == 0;
            if mine_first {
                mine.push(replay_mine()?);
            }
            for (times, method) in lmdb.iter_mut().zip(TRACE_LMDB) {
                times.push(mean(self.replay(EngineKind::Lmdb, method, progress)?));
            }
            if !mine_first {
                mine.push(replay_mine()?);
            }
        }
        let fastest = lmdb
            .iter()
            .min_by(|a, b| median(a).total_cmp(&median(b)))
            .map_or(&[][..], Vec::as_slice);
        let rounds = mine
            .iter()
            .zip(fastest)
            .map(|(m, l)| m / l.max(1e-9))
            .collect();
        let ds = &self.trace_dataset;
        Ok(RatioMeasured {
            check: format!("kvcache_trace/{ds}"),
            what: format!(
                "kvcache_trace on {ds}: aimeta path_native / lmdb's fastest method, mean ns per request"
            ),
            rounds,
            cap: None,
        })
    }

    /// The deterministic counters: `COLD_OPS` scans, gets or longest-prefix lookups with
    /// the gate's seed, each on this engine freshly reopened (its pool empty), and the
    /// pages they read per operation. Call before `ratios`, whose operations warm the pool.
    pub fn counters(&mut self) -> Result<Vec<CounterMeasured>, RunError> {
        let mut out = Vec::new();
        for p in &mut self.pairs {
            let ds = p.planned.meta.name.clone();
            let cold: &[(Workload, Option<Variant>, &str)] = match p.planned.data {
                Data::Manifest(_) => &[
                    (Workload::ManifestScan, None, "scan"),
                    (Workload::ManifestGet, None, "get"),
                ],
                Data::KvChain(_) => &[(Workload::KvchainLpm, Some(Variant::Native), "lpm")],
                Data::Graph(_) => &[],
            };
            for &(w, v, short) in cold {
                let mut pages = 0;
                for i in 0..COLD_OPS {
                    p.mine.reopen(&self.o.run)?;
                    let before = p.mine.engine()?.io_counters().unwrap_or_default();
                    p.mine.op(w, v, i)?;
                    let after = p.mine.engine()?.io_counters().unwrap_or_default();
                    // The pages the operation needed: a store that fits the pool also
                    // warms the pages around each miss, which are not its cost.
                    pages += (after.pages_read - before.pages_read)
                        - (after.readaround_pages - before.readaround_pages);
                }
                out.push(CounterMeasured {
                    check: format!("pages_per_{short}_cold/{ds}"),
                    what: format!(
                        "pages aimeta reads per {}{} on {ds}, each of {COLD_OPS} operations on a freshly opened pool (fill read-around not counted)",
                        w.name(),
                        v.map(|v| format!(" ({v})")).unwrap_or_default()
                    ),
                    value: pages as f64 / COLD_OPS as f64,
                    slack: None,
                });
            }
        }
        Ok(out)
    }

    /// Whole-frame reads this engine made since its last reopen, over every data set: zero
    /// in its normal (paged) mode.
    pub fn full_frame_reads(&self) -> Result<CounterMeasured, RunError> {
        let mut total = 0;
        for p in &self.pairs {
            total += p
                .mine
                .engine()?
                .io_counters()
                .unwrap_or_default()
                .full_frame_reads;
        }
        Ok(CounterMeasured {
            check: "full_frame_reads/all".to_string(),
            what: "whole 512 KiB frame reads by aimeta over every gate operation (paged mode reads pages only)".to_string(),
            value: total as f64,
            slack: None,
        })
    }

    /// Times the ratio checks named in `only` (all when None), one check after the other:
    /// untimed operations on both sides, then for each round `ops_per_round` operations on
    /// one side then the other, the order swapped every round, and the ratio of the two
    /// sides' [`trimmed_mean`]s.
    ///
    /// A check's rounds run back to back, right after its warm-up. On the virtual machines
    /// this runs on, touching memory left alone for a tenth of a second or more stalls 100
    /// to 500 us on a few percent of its pages (the host has taken their backing; see
    /// docs/gate.md). With the rounds of every check interleaved, each check's memory sat
    /// idle for a second between its rounds, and those stalls, not the engines, decided
    /// the means; the slowest operations of each side are dropped for the same reason.
    pub fn ratios(
        &mut self,
        only: Option<&[String]>,
        progress: &dyn Progress,
    ) -> Result<Vec<RatioMeasured>, RunError> {
        let specs: Vec<RatioSpec> = self
            .specs
            .iter()
            .filter(|s| only.is_none_or(|o| o.contains(&s.check)))
            .cloned()
            .collect();
        let ops = self.o.ops_per_round.max(1);
        let mut rounds: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
        let mut sorted = Vec::new();
        progress.begin("gate rounds", u64::from(self.o.rounds) * specs.len() as u64);
        for (k, s) in specs.iter().enumerate() {
            self.warm_up(s)?;
            let p = &mut self.pairs[s.pair];
            for r in 0..self.o.rounds {
                let order = if r % 2 == 0 { [s.a, s.b] } else { [s.b, s.a] };
                let mut mean = [0.0; 2];
                for (side, v) in order {
                    let session = p.side(side);
                    session.time_iters(s.workload, v, ops)?;
                    let at = usize::from((side, v) != s.a);
                    sorted.clear();
                    sorted.extend_from_slice(session.last_op_nanos());
                    mean[at] = trimmed_mean(&mut sorted);
                }
                rounds[k].push(mean[0] / mean[1].max(1e-9));
                if self.o.show_rounds {
                    eprintln!(
                        "{} round {r}: {:.0} ns / {:.0} ns = {:.3}",
                        s.check,
                        mean[0],
                        mean[1],
                        mean[0] / mean[1].max(1e-9)
                    );
                }
                progress.advance(1);
            }
        }
        progress.end();
        let mut measured: Vec<RatioMeasured> = specs
            .into_iter()
            .zip(rounds)
            .map(|(s, rounds)| RatioMeasured {
                check: s.check,
                what: s.what,
                rounds,
                cap: s.cap,
            })
            .collect();
        let trace_check = format!("kvcache_trace/{}", self.trace_dataset);
        if only.is_none_or(|o| o.contains(&trace_check)) {
            measured.push(self.trace_ratio(progress)?);
        }
        Ok(measured)
    }

    /// Untimed operations on both sides of one check, so that its pools reach their
    /// steady state and its memory is warm before the first round.
    fn warm_up(&mut self, s: &RatioSpec) -> Result<(), RunError> {
        let n = self.o.run.scale.warmup.max(self.o.ops_per_round);
        let p = &mut self.pairs[s.pair];
        for (side, v) in [s.a, s.b] {
            let session = p.side(side);
            for i in 0..n {
                session.op(s.workload, v, i)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trimmed_mean_drops_the_slowest_hundredth_and_keeps_the_rest() {
        // 99 operations of 1 us and one host stall of 400 us: the stall is dropped.
        let mut ns: Vec<u64> = std::iter::repeat_n(1_000, 99).chain([400_000]).collect();
        assert_eq!(trimmed_mean(&mut ns), 1_000.0);
        // A slowdown of more than the slowest hundredth still shows in full.
        let mut ns: Vec<u64> = (0..100)
            .map(|i| if i < 50 { 1_000 } else { 3_000 })
            .collect();
        assert_eq!(
            trimmed_mean(&mut ns),
            (50.0 * 1_000.0 + 49.0 * 3_000.0) / 99.0
        );
        // Too few operations to drop any: all are kept, and none is no time.
        assert_eq!(trimmed_mean(&mut [5, 7]), 6.0);
        assert_eq!(trimmed_mean(&mut []), 0.0);
    }
}
