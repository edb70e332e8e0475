//! `ai-meta ratios`: this engine's ratios to LMDB, to the best other engine of each run
//! (the target form of the performance issues) and to its own emulations, per run and as
//! the median over several runs, from results files alone. The performance log records
//! these tables; lower is better everywhere (time per operation, bytes on disk).

use std::fmt::Write as _;

use crate::order::{self, is_bug_repro, shape_of};
use crate::trace::is_headline_setting;
use crate::{Record, Results, Status};

const ENGINE: &str = "aimeta";
const LMDB: &str = "lmdb";
/// Engines whose memory a cgroup-mode run does not bound: PostgreSQL's server and etcd's
/// members run in their own processes, outside the harness's memory cgroup
/// (docs/fairness.md).
const UNBOUNDED_IN_CGROUP: &[&str] = &["postgres", "etcd", "etcd-1"];

/// Which other engines a ratio compares against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Others {
    /// Every other engine of the run.
    All,
    /// Those the run held to the same memory: in cgroup mode, the engines inside the
    /// cgroup; None (no ratio) for an engine-mode run, where it would equal `All`.
    EqualMemory,
}

/// Whether `engine` counts among `others`.
fn counts_as(engine: &str, others: Others) -> bool {
    match others {
        Others::All => true,
        Others::EqualMemory => !UNBOUNDED_IN_CGROUP.contains(&engine),
    }
}

/// One ratio, per run and its median.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioRow {
    /// Workload (or `size_on_disk`).
    pub workload: String,
    /// Data set.
    pub dataset: String,
    /// What is divided by what.
    pub what: String,
    /// One value per results file (NaN where a file lacks a side).
    pub per_run: Vec<f64>,
}

impl RatioRow {
    /// The median of the runs that have a value.
    pub fn median(&self) -> f64 {
        crate::gate::median(&self.per_run)
    }
}

fn ok_mean(r: &Record) -> Option<f64> {
    (r.status == Status::Ok && r.ns_per_op.mean > 0.0).then_some(r.ns_per_op.mean)
}

/// Mean of `engine`'s fastest real variant of the plain shape (bug reproductions and
/// variants that are other shapes, such as scans from random offsets, left out; of the
/// trace, the 1-thread closed-loop replays only).
fn best(results: &Results, workload: &str, dataset: &str, engine: &str) -> Option<f64> {
    best_of_shape(results, workload, dataset, engine, None)
}

/// Mean of `engine`'s fastest real variant of `shape` (see [`shape_of`]).
fn best_of_shape(
    results: &Results,
    workload: &str,
    dataset: &str,
    engine: &str,
    shape: Option<&str>,
) -> Option<f64> {
    results
        .records
        .iter()
        .filter(|r| r.workload == workload && r.dataset == dataset && r.engine == engine)
        .filter(|r| !is_bug_repro(r.variant.as_deref()))
        .filter(|r| shape_of(r.variant.as_deref()) == shape)
        .filter(|r| is_headline_setting(r))
        .filter_map(ok_mean)
        .min_by(f64::total_cmp)
}

/// The fastest other engine on `workload` and `dataset` in `results` at `shape` (each at
/// its best real variant of it): its name and mean.
fn best_other(
    results: &Results,
    workload: &str,
    dataset: &str,
    shape: Option<&str>,
    others: Others,
) -> Option<(String, f64)> {
    let mut engines: Vec<&str> = results
        .records
        .iter()
        .filter(|r| r.workload == workload && r.dataset == dataset && r.engine != ENGINE)
        .map(|r| r.engine.as_str())
        .filter(|e| counts_as(e, others))
        .collect();
    engines.sort_unstable();
    engines.dedup();
    engines
        .into_iter()
        .filter_map(|e| {
            best_of_shape(results, workload, dataset, e, shape).map(|ns| (e.to_string(), ns))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// This engine's best over the best other engine's best, at `shape`.
fn to_best_other(
    results: &Results,
    workload: &str,
    dataset: &str,
    shape: Option<&str>,
    others: Others,
) -> Option<f64> {
    if others == Others::EqualMemory && results.config.budget_mode != "cgroup" {
        return None;
    }
    div(
        best_of_shape(results, workload, dataset, ENGINE, shape),
        best_other(results, workload, dataset, shape, others).map(|(_, ns)| ns),
    )
}

fn variant(results: &Results, w: &str, ds: &str, engine: &str, v: Option<&str>) -> Option<f64> {
    results.find(w, ds, engine, v).and_then(ok_mean)
}

/// Which device latency a get past the budget is held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeviceReads {
    /// The probe's reads beside the gets, in the same timed phase (`device_beside`).
    Beside,
    /// The floor measured before the run (`device.read_4k_qd1`).
    BeforeTheRun,
}

/// This engine's get over the device's 4 KiB read times the pool's misses per get: 1.0
/// is nothing but the disk. None on a data set that fits the budget, where the record
/// has no misses, or where the file has no such device latency.
fn to_device(results: &Results, ds: &str, reads: DeviceReads) -> Option<f64> {
    let past_the_budget = results
        .datasets
        .iter()
        .any(|d| d.name == ds && !d.fits_budget);
    if !past_the_budget {
        // A get on data that fits misses a page now and then (a cold start): the ratio
        // would weigh a handful of reads against thousands of hits.
        return None;
    }
    let r = results.find("manifest_get", ds, ENGINE, None)?;
    let misses = r.io_per_op.map(|io| io.page_misses).filter(|m| *m > 0.0)?;
    let device = match reads {
        DeviceReads::Beside => r.device_beside.map(|l| l.mean),
        DeviceReads::BeforeTheRun => results.device.as_ref().map(|d| d.read_4k_qd1.mean),
    }?;
    div(ok_mean(r), Some(device * misses))
}

fn size(results: &Results, ds: &str, engine: &str) -> Option<f64> {
    results
        .find("bulk_load", ds, engine, None)
        .and_then(|r| r.size_on_disk_bytes)
        .map(|b| b as f64)
}

type Ratio = (String, Box<dyn Fn(&Results, &str) -> Option<f64>>);

fn div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The ratios measured for `workload` on `dataset` in `runs`: those to LMDB and this
/// engine's own, then the ratio to the best other engine for each shape the runs hold
/// (the plain one first), each followed by its equal-memory form. The flag marks a ratio
/// that only restates the one before it where their values agree.
fn ratios_of(workload: &str, dataset: &str, runs: &[Results]) -> Vec<(Ratio, bool)> {
    let mut ratios: Vec<(Ratio, bool)> = ratios_to_lmdb(workload)
        .into_iter()
        .map(|r| (r, false))
        .collect();
    let mut shapes: Vec<Option<String>> = vec![None];
    for rec in runs.iter().flat_map(|r| &r.records) {
        let shape = shape_of(rec.variant.as_deref()).map(str::to_string);
        if rec.workload == workload && rec.dataset == dataset && !shapes.contains(&shape) {
            shapes.push(shape);
        }
    }
    for shape in shapes {
        for others in [Others::All, Others::EqualMemory] {
            let w = workload.to_string();
            let whom = match others {
                Others::All => "best other engine",
                Others::EqualMemory => "best other engine at equal memory",
            };
            let what = match &shape {
                None => format!("aimeta / {whom}"),
                Some(s) => format!("aimeta / {whom}, {s}"),
            };
            let shape = shape.clone();
            ratios.push((
                (
                    what,
                    Box::new(move |r: &Results, ds: &str| {
                        to_best_other(r, &w, ds, shape.as_deref(), others)
                    }),
                ),
                others == Others::EqualMemory,
            ));
        }
    }
    ratios
}

/// The ratios to LMDB and to this engine's own methods for `workload`.
fn ratios_to_lmdb(workload: &str) -> Vec<Ratio> {
    let w = workload.to_string();
    match workload {
        "kvchain_lpm" => vec![
            (
                "native / lmdb's best emulation".into(),
                Box::new(move |r: &Results, ds: &str| {
                    div(
                        variant(r, &w, ds, ENGINE, Some("native")),
                        best(r, &w, ds, LMDB),
                    )
                }),
            ),
            (
                "native at '/' / lmdb's best emulation".into(),
                Box::new(|r: &Results, ds: &str| {
                    div(
                        variant(r, "kvchain_lpm", ds, ENGINE, Some("native_boundary")),
                        best(r, "kvchain_lpm", ds, LMDB),
                    )
                }),
            ),
            (
                "native / own bisect".into(),
                Box::new(|r: &Results, ds: &str| {
                    div(
                        variant(r, "kvchain_lpm", ds, ENGINE, Some("native")),
                        variant(r, "kvchain_lpm", ds, ENGINE, Some("bisect")),
                    )
                }),
            ),
            (
                "native / own kvchain_get".into(),
                Box::new(|r: &Results, ds: &str| {
                    div(
                        variant(r, "kvchain_lpm", ds, ENGINE, Some("native")),
                        variant(r, "kvchain_get", ds, ENGINE, None),
                    )
                }),
            ),
        ],
        "kvcache_trace" => vec![(
            "request time (best design, 1 thread, closed loop) / lmdb's".into(),
            Box::new(move |r: &Results, ds: &str| {
                div(best(r, &w, ds, ENGINE), best(r, &w, ds, LMDB))
            }),
        )],
        "bulk_load" => vec![
            (
                "time per key / lmdb's".into(),
                Box::new(move |r: &Results, ds: &str| {
                    div(best(r, &w, ds, ENGINE), best(r, &w, ds, LMDB))
                }),
            ),
            (
                "size on disk / lmdb's".into(),
                Box::new(|r: &Results, ds: &str| div(size(r, ds, ENGINE), size(r, ds, LMDB))),
            ),
        ],
        "manifest_get" => vec![
            (
                "aimeta / lmdb".into(),
                Box::new(move |r: &Results, ds: &str| {
                    div(best(r, &w, ds, ENGINE), best(r, &w, ds, LMDB))
                }),
            ),
            (
                "aimeta / (device beside it x misses)".into(),
                Box::new(|r: &Results, ds: &str| to_device(r, ds, DeviceReads::Beside)),
            ),
            (
                "aimeta / (device before the run x misses)".into(),
                Box::new(|r: &Results, ds: &str| to_device(r, ds, DeviceReads::BeforeTheRun)),
            ),
        ],
        _ => vec![(
            "aimeta / lmdb".into(),
            Box::new(move |r: &Results, ds: &str| {
                div(best(r, &w, ds, ENGINE), best(r, &w, ds, LMDB))
            }),
        )],
    }
}

/// Every ratio of this engine to LMDB the runs hold, per run; workloads and data sets in
/// report order.
pub fn ratio_rows(runs: &[Results]) -> Vec<RatioRow> {
    let mut workloads: Vec<&str> = Vec::new();
    let mut datasets: Vec<(&str, &str)> = Vec::new();
    for r in runs {
        for rec in &r.records {
            if !workloads.contains(&rec.workload.as_str()) {
                workloads.push(&rec.workload);
            }
            if !datasets.contains(&(rec.workload.as_str(), rec.dataset.as_str())) {
                datasets.push((&rec.workload, &rec.dataset));
            }
        }
    }
    workloads.sort_by(|a, b| order::cmp_workload(a, b));
    let mut out = Vec::new();
    for w in workloads {
        for &(_, ds) in datasets.iter().filter(|(dw, _)| *dw == w) {
            let mut previous: Option<Vec<f64>> = None;
            for ((what, f), restates_previous) in ratios_of(w, ds, runs) {
                let per_run: Vec<f64> = runs.iter().map(|r| f(r, ds).unwrap_or(f64::NAN)).collect();
                let same_as_previous = previous.as_ref().is_some_and(|p| {
                    p.iter()
                        .zip(&per_run)
                        .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()))
                });
                previous = Some(per_run.clone());
                if per_run.iter().all(|x| x.is_nan()) {
                    continue;
                }
                // The equal-memory ratio follows the one against every engine: where the
                // best other engine was a memory-bounded one in every run, it says nothing
                // new and is left out.
                if same_as_previous && restates_previous {
                    continue;
                }
                out.push(RatioRow {
                    workload: w.to_string(),
                    dataset: ds.to_string(),
                    what,
                    per_run,
                });
            }
        }
    }
    out
}

/// The rows as a markdown table: one column per run, then the median.
pub fn render_ratios(runs: &[Results], rows: &[RatioRow]) -> String {
    let mut out = String::new();
    let _ = write!(out, "| workload | data set | ratio |");
    for i in 1..=runs.len() {
        let _ = write!(out, " run {i} |");
    }
    let _ = writeln!(out, " median |");
    let _ = write!(out, "|---|---|---|");
    for _ in 0..=runs.len() {
        out.push_str("---|");
    }
    out.push('\n');
    let cell = |x: f64| {
        if x.is_nan() {
            "-".to_string()
        } else {
            format!("{x:.2}")
        }
    };
    for r in rows {
        let _ = write!(out, "| {} | {} | {} |", r.workload, r.dataset, r.what);
        for x in &r.per_run {
            let _ = write!(out, " {} |", cell(*x));
        }
        let _ = writeln!(out, " {} |", cell(r.median()));
    }
    let _ = writeln!(out);
    for (i, r) in runs.iter().enumerate() {
        let p = &r.provenance;
        let c = &r.config;
        let _ = writeln!(
            out,
            "run {}: commit {}, {}, scale {}, {} budget mode, {} ops",
            i + 1,
            p.commit,
            p.date,
            c.scale,
            c.budget_mode,
            c.ops
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dataset, Latency, Provenance, RunConfig, SCHEMA_VERSION};

    fn rec(w: &str, e: &str, v: Option<&str>, ns: f64) -> Record {
        Record {
            workload: w.into(),
            dataset: "d".into(),
            engine: e.into(),
            variant: v.map(str::to_string),
            status: Status::Ok,
            note: None,
            ops: 1,
            threads: 1,
            ns_per_op: Latency {
                mean: ns,
                ..Latency::default()
            },
            ops_per_sec: 1.0,
            size_on_disk_bytes: Some(ns as u64),
            io_per_op: None,
            load_secs: None,
            trace: None,
            working_set: None,
            alloc_per_op: None,
            device_beside: None,
        }
    }

    fn run(scan: f64, native: f64) -> Results {
        Results {
            schema_version: SCHEMA_VERSION,
            device: None,
            provenance: Provenance {
                machine: "m".into(),
                cores: 2,
                memory_bytes: 1,
                os: "o".into(),
                commit: "c".into(),
                date: "d".into(),
                rustc: "r".into(),
                command: "ai-meta run".into(),
                filesystem: "ext4".into(),
                engine_versions: Default::default(),
            },
            config: RunConfig {
                scale: "quick".into(),
                budget_bytes: 1,
                budget_mode: "engine".into(),
                durability: "async".into(),
                seed: 1,
                ops: 1,
                sweep: None,
            },
            datasets: vec![Dataset {
                name: "d".into(),
                family: "x".into(),
                keys: 1,
                data_bytes: 1,
                fits_budget: true,
                ratio_to_budget: 0.5,
            }],
            records: vec![
                rec("manifest_scan", "aimeta", Some("paged"), scan),
                rec("manifest_scan", "aimeta", Some("full_frame"), 1.0),
                rec("manifest_scan", "lmdb", None, 10.0),
                rec("kvchain_lpm", "aimeta", Some("native"), native),
                rec("kvchain_lpm", "aimeta", Some("bisect"), 20.0),
                rec("kvchain_lpm", "lmdb", Some("predecessor_seek"), 10.0),
                rec("kvchain_lpm", "lmdb", Some("bisect"), 5.0),
                rec("bulk_load", "aimeta", None, 4.0),
                rec("bulk_load", "lmdb", None, 8.0),
            ],
        }
    }

    #[test]
    fn medians_leave_out_the_bug_reproduction_and_use_lmdbs_best() {
        let runs = [run(5.0, 5.0), run(20.0, 10.0), run(10.0, 15.0)];
        let rows = ratio_rows(&runs);
        let find = |w: &str, what: &str| {
            rows.iter()
                .find(|r| r.workload == w && r.what == what)
                .map(RatioRow::median)
        };
        // 0.5, 2.0, 1.0: median 1.0; the full_frame variant (1.0 ns) is not "best".
        assert_eq!(find("manifest_scan", "aimeta / lmdb"), Some(1.0));
        // LMDB's best emulation is its bisect (5 ns): 1, 2, 3.
        assert_eq!(
            find("kvchain_lpm", "native / lmdb's best emulation"),
            Some(2.0)
        );
        assert_eq!(find("kvchain_lpm", "native / own bisect"), Some(0.5));
        assert_eq!(find("bulk_load", "size on disk / lmdb's"), Some(0.5));
        // No kvchain_get measured: the row is left out, not shown as zero.
        assert_eq!(find("kvchain_lpm", "native / own kvchain_get"), None);
        let t = render_ratios(&runs, &rows);
        assert!(
            t.contains("| manifest_scan | d | aimeta / lmdb | 0.50 | 2.00 | 1.00 | 1.00 |"),
            "{t}"
        );
        assert!(t.contains("run 3: commit c"), "{t}");
    }

    #[test]
    fn the_trace_ratio_compares_one_thread_closed_loop_replays() {
        use crate::testing::{trace_record, trace_results};
        let mut eight = trace_record("lmdb", "chained_probe", Some(10), 8);
        eight.ns_per_op.mean = 1.0;
        let runs = [trace_results(vec![
            trace_record("aimeta", "path_native", Some(10), 1),
            trace_record("lmdb", "chained_probe", Some(10), 1),
            eight,
        ])];
        let rows = ratio_rows(&runs);
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert!(rows[0].what.starts_with("request time"), "{rows:?}");
        // 28 µs ÷ 56 µs, not ÷ the 8-thread replay's 1 ns; LMDB is the only other engine.
        assert_eq!(rows[0].median(), 0.5);
        assert_eq!(rows[1].what, "aimeta / best other engine");
        assert_eq!(rows[1].median(), 0.5);
    }

    #[test]
    fn the_best_other_engine_is_taken_per_run_at_its_best_variant() {
        let mut fast_rocks = run(5.0, 5.0);
        fast_rocks
            .records
            .push(rec("manifest_scan", "rocksdb", None, 2.5));
        fast_rocks
            .records
            .push(rec("manifest_scan", "rocksdb", Some("full_frame"), 0.1));
        // Scans from random offsets are another shape: compared only with each other.
        fast_rocks
            .records
            .push(rec("manifest_scan", "aimeta", Some("offset_uniform"), 1.0));
        fast_rocks
            .records
            .push(rec("manifest_scan", "lmdb", Some("offset_uniform"), 4.0));
        let runs = [fast_rocks, run(20.0, 10.0), run(10.0, 15.0)];
        let rows = ratio_rows(&runs);
        let row = rows
            .iter()
            .find(|r| r.workload == "manifest_scan" && r.what == "aimeta / best other engine")
            .ok_or("no best-other row")
            .unwrap_or_else(|e| panic!("{e}: {rows:?}"));
        // Run 1: RocksDB's 2.5 (its bug-reproduction variant left out); runs 2 and 3: LMDB.
        assert_eq!(row.per_run, vec![2.0, 2.0, 1.0]);
        assert_eq!(row.median(), 2.0);
        let offset = rows
            .iter()
            .find(|r| r.what == "aimeta / best other engine, offset_uniform")
            .map(RatioRow::median);
        assert_eq!(offset, Some(0.25), "{rows:?}");
    }

    #[test]
    fn a_get_past_the_budget_is_held_against_the_device_beside_it_and_before_the_run() {
        let mut r = run(1.0, 1.0);
        let mut get = rec("manifest_get", "aimeta", None, 99_000.0);
        get.io_per_op = Some(crate::IoPerOp {
            page_misses: 0.99,
            ..Default::default()
        });
        get.device_beside = Some(Latency {
            mean: 50_000.0,
            ..Latency::default()
        });
        r.records.push(get);
        r.records.push(rec("manifest_get", "lmdb", None, 99_000.0));
        // No device ratio on data that fits, whatever the misses.
        assert_eq!(
            ratio_rows(std::slice::from_ref(&r))
                .iter()
                .filter(|row| row.what.contains("device"))
                .count(),
            0
        );
        r.datasets[0].fits_budget = false;
        let ratio = |r: &Results, what: &str| {
            ratio_rows(std::slice::from_ref(r))
                .into_iter()
                .find(|row| row.workload == "manifest_get" && row.what == what)
                .map(|row| row.median())
        };
        let beside = ratio(&r, "aimeta / (device beside it x misses)");
        assert!(beside.is_some_and(|x| (x - 2.0).abs() < 1e-9), "{beside:?}");
        // No floor measured before this run: no such row.
        assert_eq!(ratio(&r, "aimeta / (device before the run x misses)"), None);
        r.device = Some(crate::DeviceFloor {
            path: "/w".into(),
            file_bytes: 1,
            direct: true,
            read_4k_qd1: Latency {
                mean: 100_000.0,
                ..Latency::default()
            },
            iops_qd1: 1.0,
            iops_qd8: 1.0,
            secs: 1.0,
        });
        let before = ratio(&r, "aimeta / (device before the run x misses)");
        assert!(before.is_some_and(|x| (x - 1.0).abs() < 1e-9), "{before:?}");
        // On data that fits a get misses nothing: no device ratio at all.
        if let Some(get) = r.records.iter_mut().find(|x| x.workload == "manifest_get") {
            get.io_per_op = Some(crate::IoPerOp::default());
        }
        assert_eq!(ratio(&r, "aimeta / (device beside it x misses)"), None);
    }

    #[test]
    fn at_equal_memory_a_cgroup_run_leaves_out_the_unbounded_server() {
        let mut cgroup = run(5.0, 5.0);
        cgroup.config.budget_mode = "cgroup".into();
        cgroup
            .records
            .push(rec("manifest_scan", "postgres", None, 2.5));
        let mut engine_mode = run(5.0, 5.0);
        engine_mode
            .records
            .push(rec("manifest_scan", "postgres", None, 2.5));
        let find = |rows: &[RatioRow], what: &str| {
            rows.iter()
                .find(|r| r.workload == "manifest_scan" && r.what == what)
                .map(RatioRow::median)
        };
        let rows = ratio_rows(std::slice::from_ref(&cgroup));
        // Against everything: PostgreSQL's 2.5; at equal memory: LMDB's 10.
        assert_eq!(find(&rows, "aimeta / best other engine"), Some(2.0));
        assert_eq!(
            find(&rows, "aimeta / best other engine at equal memory"),
            Some(0.5)
        );
        // Where a memory-bounded engine is the best other one, the second row would say
        // the same: left out.
        let mut bounded_best = cgroup.clone();
        bounded_best
            .records
            .push(rec("manifest_scan", "rocksdb", None, 2.5));
        bounded_best.records.retain(|r| r.engine != "postgres");
        let rows = ratio_rows(std::slice::from_ref(&bounded_best));
        assert_eq!(find(&rows, "aimeta / best other engine"), Some(2.0));
        assert_eq!(
            find(&rows, "aimeta / best other engine at equal memory"),
            None
        );
        // In the engine mode every engine has the same cache: no second row.
        let rows = ratio_rows(std::slice::from_ref(&engine_mode));
        assert_eq!(find(&rows, "aimeta / best other engine"), Some(2.0));
        assert_eq!(
            find(&rows, "aimeta / best other engine at equal memory"),
            None
        );
    }
}
