//! The tables of `ai-meta repro`, shaped like the seed report's: its two symptoms, each
//! with this engine in its full-frame reproduction mode and in its paged mode, beside the
//! other engines, from a results file alone.

use std::fmt::Write as _;

use crate::format::{duration, ratio, thousands};
use crate::{Record, Results, Status};

const ENGINE: &str = "aimeta";

fn mean(r: Option<&Record>) -> Option<f64> {
    r.filter(|r| r.status == Status::Ok)
        .map(|r| r.ns_per_op.mean)
}

fn time(ns: Option<f64>) -> String {
    ns.map_or_else(|| "-".to_string(), duration)
}

fn per(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => ratio(a / b),
        _ => "-".to_string(),
    }
}

/// Whole-frame reads and page-cache hits per operation, as the seed's counters name them.
fn counters(r: Option<&Record>) -> (String, String) {
    match r.and_then(|r| r.io_per_op.filter(|_| r.engine == ENGINE)) {
        Some(io) => (
            format!("{:.2}", io.full_frame_reads),
            format!("{:.1}", io.page_hits),
        ),
        None => ("-".to_string(), "-".to_string()),
    }
}

/// Engines in the file, this engine first.
fn engines(results: &Results) -> Vec<&str> {
    let mut v: Vec<&str> = Vec::new();
    for r in &results.records {
        if !v.contains(&r.engine.as_str()) {
            v.push(&r.engine);
        }
    }
    v.sort_by_key(|e| *e != ENGINE);
    v
}

fn datasets<'a>(results: &'a Results, family: &str) -> Vec<&'a crate::Dataset> {
    let mut v: Vec<&crate::Dataset> = results
        .datasets
        .iter()
        .filter(|d| d.family == family)
        .collect();
    // Beyond the budget first: that is where the symptoms are.
    v.sort_by_key(|d| d.fits_budget);
    v
}

fn dataset_label(d: &crate::Dataset) -> String {
    format!(
        "{} ({} keys, {:.1}x budget)",
        d.name,
        thousands(d.keys),
        d.ratio_to_budget
    )
}

/// One of the report's tables: an operation `a` against an operation `b` on the same
/// store, per engine (this engine in both modes), with `a`'s ratio to LMDB.
struct Symptom {
    title: &'static str,
    family: &'static str,
    /// Column names of `a`, `b` and `a / b`.
    columns: [&'static str; 3],
    a: &'static str,
    b: &'static str,
    /// This engine's rows: mode, `a`'s variant, `b`'s variant.
    ours: [(&'static str, Option<&'static str>, Option<&'static str>); 2],
    /// The other engines' variants of `a` and `b` (LMDB's `a` is the reference).
    others: (Option<&'static str>, Option<&'static str>),
}

const SYMPTOMS: [Symptom; 2] = [
    Symptom {
        title: "Symptom 1: prefix scan of 100 entries with values (manifest_scan) against a \
                point get (manifest_get) on the same store",
        family: "manifest",
        columns: ["scan/op", "get/op", "scan/get"],
        a: "manifest_scan",
        b: "manifest_get",
        ours: [
            ("full_frame", Some("full_frame"), Some("full_frame")),
            ("paged", Some("paged"), None),
        ],
        others: (None, None),
    },
    Symptom {
        title: "Symptom 2: longest stored prefix of a chain query (kvchain_lpm): native lookup \
                (other engines: their predecessor seek) against bisecting with gets",
        family: "kvchain",
        columns: ["lookup/op", "bisect/op", "lookup/bisect"],
        a: "kvchain_lpm",
        b: "kvchain_lpm",
        ours: [
            (
                "full_frame",
                Some("native_full_frame"),
                Some("bisect_full_frame"),
            ),
            ("paged", Some("native"), Some("bisect")),
        ],
        others: (Some("predecessor_seek"), Some("bisect")),
    },
];

fn row(out: &mut String, cells: [&str; 8]) {
    let [e, mode, a, b, ab, lmdb, frames, hits] = cells;
    let _ = writeln!(
        out,
        "{e:<10} {mode:<11} {a:>11} {b:>11} {ab:>13} {lmdb:>9} {frames:>18} {hits:>16}"
    );
}

fn symptom(results: &Results, s: &Symptom, out: &mut String) {
    let _ = writeln!(out, "{}", s.title);
    let [a_col, b_col, ab_col] = s.columns;
    row(
        out,
        [
            "engine",
            "mode",
            a_col,
            b_col,
            ab_col,
            "vs lmdb",
            "full_blob_reads/op",
            "page_hits/op",
        ],
    );
    for d in datasets(results, s.family) {
        let _ = writeln!(out, "-- {}", dataset_label(d));
        let lmdb = mean(results.find(s.a, &d.name, "lmdb", s.others.0));
        for e in engines(results) {
            let others = [("-", s.others.0, s.others.1)];
            let modes: &[_] = if e == ENGINE { &s.ours } else { &others };
            for &(mode, a_v, b_v) in modes {
                let rec = results.find(s.a, &d.name, e, a_v);
                let a = mean(rec);
                let b = mean(results.find(s.b, &d.name, e, b_v));
                if a.is_none() && b.is_none() {
                    continue;
                }
                let (frames, hits) = counters(rec);
                row(
                    out,
                    [
                        e,
                        mode,
                        &time(a),
                        &time(b),
                        &per(a, b),
                        &per(a, lmdb),
                        &frames,
                        &hits,
                    ],
                );
            }
        }
    }
}

/// The two symptom tables of the seed report, from `results` (an `ai-meta repro` file).
pub fn repro_tables(results: &Results) -> String {
    let mut out = String::new();
    let c = &results.config;
    let _ = writeln!(
        out,
        "Seed report reproduction: scale {}, {} MiB cache budget ({} mode), durability {}, \
         {} timed ops each; mean time per operation",
        c.scale,
        c.budget_bytes >> 20,
        c.budget_mode,
        c.durability,
        c.ops
    );
    for s in &SYMPTOMS {
        out.push('\n');
        symptom(results, s, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dataset, IoPerOp, Latency, Provenance, RunConfig, SCHEMA_VERSION};

    fn rec(w: &str, ds: &str, e: &str, v: Option<&str>, ns: f64, frames: f64) -> Record {
        Record {
            workload: w.into(),
            dataset: ds.into(),
            engine: e.into(),
            variant: v.map(str::to_string),
            status: Status::Ok,
            note: None,
            ops: 10,
            threads: 1,
            ns_per_op: Latency {
                mean: ns,
                ..Latency::default()
            },
            ops_per_sec: 1.0,
            size_on_disk_bytes: None,
            io_per_op: Some(IoPerOp {
                full_frame_reads: frames,
                page_hits: 3.0,
                ..IoPerOp::default()
            }),
            load_secs: None,
            trace: None,
            working_set: None,
            alloc_per_op: None,
            device_beside: None,
        }
    }

    #[test]
    fn tables_show_the_cliff_and_its_absence() {
        let ds = |name: &str, family: &str, fits: bool| Dataset {
            name: name.into(),
            family: family.into(),
            keys: 2_000_000,
            data_bytes: 1,
            fits_budget: fits,
            ratio_to_budget: if fits { 0.5 } else { 6.0 },
        };
        let r = Results {
            schema_version: SCHEMA_VERSION,
            device: None,
            provenance: Provenance {
                machine: "m".into(),
                cores: 2,
                memory_bytes: 1,
                os: "linux".into(),
                commit: "c".into(),
                date: "d".into(),
                rustc: "r".into(),
                command: "ai-meta repro".into(),
                filesystem: "ext4".into(),
                engine_versions: Default::default(),
            },
            config: RunConfig {
                scale: "seed".into(),
                budget_bytes: 16 << 20,
                budget_mode: "engine".into(),
                durability: "async".into(),
                seed: 42,
                ops: 10,
                sweep: None,
            },
            datasets: vec![
                ds("manifest_fits", "manifest", true),
                ds("manifest_beyond", "manifest", false),
                ds("kvchain_beyond", "kvchain", false),
            ],
            records: vec![
                rec(
                    "manifest_scan",
                    "manifest_beyond",
                    "aimeta",
                    Some("full_frame"),
                    150_000.0,
                    0.8,
                ),
                rec(
                    "manifest_get",
                    "manifest_beyond",
                    "aimeta",
                    Some("full_frame"),
                    2_000.0,
                    0.0,
                ),
                rec(
                    "manifest_scan",
                    "manifest_beyond",
                    "aimeta",
                    Some("paged"),
                    2_600.0,
                    0.0,
                ),
                rec(
                    "manifest_get",
                    "manifest_beyond",
                    "aimeta",
                    None,
                    2_000.0,
                    0.0,
                ),
                rec(
                    "manifest_scan",
                    "manifest_beyond",
                    "lmdb",
                    None,
                    2_600.0,
                    0.0,
                ),
                rec(
                    "kvchain_lpm",
                    "kvchain_beyond",
                    "aimeta",
                    Some("native_full_frame"),
                    130_000.0,
                    1.0,
                ),
                rec(
                    "kvchain_lpm",
                    "kvchain_beyond",
                    "aimeta",
                    Some("bisect_full_frame"),
                    7_000.0,
                    0.0,
                ),
                rec(
                    "kvchain_lpm",
                    "kvchain_beyond",
                    "lmdb",
                    Some("predecessor_seek"),
                    3_000.0,
                    0.0,
                ),
                rec(
                    "kvchain_lpm",
                    "kvchain_beyond",
                    "lmdb",
                    Some("bisect"),
                    5_000.0,
                    0.0,
                ),
            ],
        };
        let t = repro_tables(&r);
        let row = |cells: &[&str]| {
            t.lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .find(|l| l.starts_with(cells))
                .unwrap_or_default()
                .join(" ")
        };
        // Each row is found by its first three cells, then compared whole.
        for want in [
            "aimeta full_frame 150 µs 2.00 µs 75× 58× 0.80 3.0",
            "aimeta paged 2.60 µs 2.00 µs 1.3× 1.0× 0.00 3.0",
            "aimeta full_frame 130 µs 7.00 µs 19× 43× 1.00 3.0",
            // LMDB has no whole-frame counter: shown as "-", not 0.
            "lmdb - 3.00 µs 5.00 µs 0.60× 1.0× - -",
        ] {
            let cells: Vec<&str> = want.split_whitespace().take(3).collect();
            assert_eq!(row(&cells), want, "{t}");
        }
        // The fits data set has no records: it is listed with no rows.
        assert!(t.contains("-- manifest_fits"), "{t}");
    }
}
