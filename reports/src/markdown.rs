//! docs/benchmarks/results.md: every number of a results file in tables, one per
//! workload, with the provenance needed to trust them.

use std::fmt::Write as _;

use crate::format::{self, md_cell};
use crate::ingest_table::ingest_tables;
use crate::merge::{self, Merged, Source};
use crate::order;
use crate::results::{Record, Results, Status, WorkingSetSource};
use crate::trace::{is_headline_setting, TRACE_WORKLOAD};
use crate::trace_table::{trace_table, TableScope, EXPLANATION};
use crate::working_set::Span;

fn raw(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        "N/A".to_string()
    }
}

fn size(b: Option<u64>) -> String {
    match b {
        Some(b) => format!("{} ({b})", format::bytes(b as f64)),
        None => "N/A".to_string(),
    }
}

/// The optional column groups of a workload's table: each is shown when any of its
/// records carries the numbers.
#[derive(Debug, Clone, Copy, Default)]
struct Columns {
    /// The engine's I/O counters per operation.
    io: bool,
    /// The working set of the timed operations.
    working_set: bool,
    /// Heap allocations per operation.
    alloc: bool,
}

impl Columns {
    fn of(recs: &[&Record]) -> Columns {
        Columns {
            io: recs.iter().any(|r| r.io_per_op.is_some()),
            working_set: recs.iter().any(|r| r.working_set.is_some()),
            alloc: recs.iter().any(|r| r.alloc_per_op.is_some()),
        }
    }
}

/// A working set as its table cell: "41 MiB (2.56× the budget, beyond; key layout)".
fn working_set_cell(r: &Record) -> String {
    match &r.working_set {
        Some(ws) => format!(
            "{} ({}× the budget, {}; {})",
            format::bytes(ws.bytes as f64),
            raw(ws.ratio_to_budget, 2),
            if ws.beyond_budget() { "beyond" } else { "fits" },
            match ws.source {
                WorkingSetSource::KeyLayout => "key layout",
                WorkingSetSource::EngineCounters => "engine counters",
            }
        ),
        None => String::new(),
    }
}

/// One table row of a record.
fn record_row(r: &Record, columns: Columns) -> String {
    let na = r.status != Status::Ok;
    let l = &r.ns_per_op;
    let cell = |x: f64, d: usize| if na { "N/A".to_string() } else { raw(x, d) };
    let mut cells = vec![
        md_cell(&r.dataset),
        md_cell(&r.engine),
        md_cell(r.variant.as_deref().unwrap_or("")),
        r.status.name().to_string(),
        cell(l.mean, 1),
        cell(l.p50, 1),
        cell(l.p99, 1),
        cell(l.p999, 1),
        cell(r.ops_per_sec, 1),
        if na {
            "N/A".to_string()
        } else {
            r.ops.to_string()
        },
        if na {
            "N/A".to_string()
        } else {
            r.threads.to_string()
        },
        size(r.size_on_disk_bytes),
    ];
    if columns.io {
        match (&r.io_per_op, na) {
            (Some(io), false) => cells.extend(
                [
                    io.pages_read,
                    io.page_hits,
                    io.page_misses,
                    io.full_frame_reads,
                    io.bytes_read,
                    io.readahead_pages,
                ]
                .map(|x| raw(x, 2)),
            ),
            _ => cells.extend(std::iter::repeat_n("N/A".to_string(), 6)),
        }
    }
    if columns.working_set {
        cells.push(working_set_cell(r));
    }
    if columns.alloc {
        match (&r.alloc_per_op, na) {
            (Some(a), false) => cells.extend([raw(a.bytes, 1), raw(a.allocations, 2)]),
            _ => cells.extend([String::new(), String::new()]),
        }
    }
    cells.push(md_cell(r.note.as_deref().unwrap_or("")));
    format!("| {} |", cells.join(" | "))
}

fn header(out: &mut String, columns: Columns) {
    let mut cols = vec![
        "data set",
        "engine",
        "variant",
        "status",
        "mean ns",
        "p50 ns",
        "p99 ns",
        "p99.9 ns",
        "ops/s",
        "ops",
        "threads",
        "store size (bytes)",
    ];
    if columns.io {
        cols.extend([
            "pages read/op",
            "page hits/op",
            "page misses/op",
            "full-frame reads/op",
            "bytes read/op",
            "readahead pages/op",
        ]);
    }
    if columns.working_set {
        cols.push("working set");
    }
    if columns.alloc {
        cols.extend(["alloc bytes/op", "allocations/op"]);
    }
    cols.push("note");
    let _ = writeln!(out, "| {} |", cols.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(cols.len()));
}

/// The headline table: aimeta's mean over LMDB's, per workload and data set.
fn headline(out: &mut String, results: &Results) {
    let mut lines = Vec::new();
    for w in results.workloads() {
        for ds in results.datasets_of(w) {
            let recs = results.records_of(w, ds);
            let fastest = |engine: &str| {
                recs.iter()
                    .filter(|r| r.engine == engine && !order::is_bug_repro(r.variant.as_deref()))
                    .filter(|r| is_headline_setting(r))
                    .filter_map(|r| r.mean_ns().map(|m| (m, *r)))
                    .min_by(|a, b| a.0.total_cmp(&b.0))
            };
            if let (Some((a, ar)), Some((l, lr))) = (fastest("aimeta"), fastest("lmdb")) {
                let ratio = if l > 0.0 {
                    raw(a / l, 3)
                } else {
                    "N/A".to_string()
                };
                let v = |r: &Record| md_cell(r.variant.as_deref().unwrap_or(""));
                lines.push(format!(
                    "| {} | {} | {} | {} | {} | {} | {ratio} |",
                    md_cell(w),
                    md_cell(ds),
                    raw(a, 1),
                    v(ar),
                    raw(l, 1),
                    v(lr)
                ));
            }
        }
    }
    if lines.is_empty() {
        return;
    }
    out.push_str("## aimeta ÷ LMDB\n\n");
    out.push_str(
        "Each engine's fastest variant (aimeta's full_frame bug reproduction left out; of the \
         trace replay, the 1-thread closed-loop replays); a ratio below 1 means aimeta is \
         faster.\n\n",
    );
    out.push_str("| workload | data set | aimeta mean ns | aimeta variant | LMDB mean ns | LMDB variant | ratio |\n");
    out.push_str("| --- | --- | --- | --- | --- | --- | --- |\n");
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    out.push('\n');
}

/// The provenance table: one value column per results file, headed by its path and
/// with the workloads it measured when there are several.
fn provenance(out: &mut String, merged: &Merged) {
    let sources = merged.sources();
    let schema = merged.results().schema_version.to_string();
    let column = |s: &Source| -> [(&'static str, String); 14] {
        let (p, c) = (&s.provenance, &s.config);
        [
            ("machine", p.machine.clone()),
            ("cores", p.cores.to_string()),
            ("memory", format::bytes(p.memory_bytes as f64)),
            ("os", p.os.clone()),
            ("commit", format!("`{}`", p.commit)),
            ("date", p.date.clone()),
            ("rustc", p.rustc.clone()),
            ("command", format!("`{}`", p.command)),
            ("schema version", schema.clone()),
            ("scale", c.scale.clone()),
            (
                "cache budget",
                format!(
                    "{} ({} bytes), {} mode",
                    format::bytes(c.budget_bytes as f64),
                    c.budget_bytes,
                    c.budget_mode
                ),
            ),
            ("durability", c.durability.clone()),
            ("seed", c.seed.to_string()),
            ("timed operations per measurement", c.ops.to_string()),
        ]
    };
    let columns: Vec<_> = sources.iter().map(column).collect();
    out.push_str("## Provenance\n\n");
    if let [_] = sources {
        out.push_str("| | |\n");
    } else {
        let paths: Vec<String> = sources
            .iter()
            .map(|s| md_cell(&format!("`{}`", merge::display_path(&s.path))))
            .collect();
        let _ = writeln!(out, "| | {} |", paths.join(" | "));
    }
    let _ = writeln!(out, "|{}", " --- |".repeat(sources.len() + 1));
    if sources.len() > 1 {
        let workloads: Vec<String> = (0..sources.len())
            .map(|i| md_cell(&merged.workloads_of(i, |_| true).join(", ")))
            .collect();
        let _ = writeln!(out, "| workloads | {} |", workloads.join(" | "));
    }
    for row in 0..14 {
        let key = columns.first().map_or("", |c| c[row].0);
        let values: Vec<String> = columns.iter().map(|c| md_cell(&c[row].1)).collect();
        let _ = writeln!(out, "| {key} | {} |", values.join(" | "));
    }
    out.push('\n');
}

/// The data sets table: each data set's size against the budget, and, where its records
/// carry them, the working sets its measurements touched (a data set is beyond the
/// budget in the charts only where they are).
fn datasets(out: &mut String, results: &Results) {
    let with_ws = results.records.iter().any(|r| r.working_set.is_some());
    out.push_str("## Data sets\n\n");
    if with_ws {
        out.push_str(
            "Working set: the distinct 4 KiB pages the timed operations of a data set's \
             measurements touched, smallest to largest over its workloads and engines (from \
             the keys read packed in key order, a lower bound for every engine, or from the \
             engine's own page counters; each table below says which). A data set is called \
             beyond the budget only where its working set is.\n\n",
        );
        out.push_str("| data set | family | keys | data | data fits the budget | data ÷ budget | working set |\n");
        out.push_str("| --- | --- | --- | --- | --- | --- | --- |\n");
    } else {
        out.push_str("| data set | family | keys | data | fits the budget | data ÷ budget |\n");
        out.push_str("| --- | --- | --- | --- | --- | --- |\n");
    }
    let mut ds: Vec<_> = results.datasets.iter().collect();
    ds.sort_by(|a, b| order::cmp_dataset(results, &a.name, &b.name));
    for d in ds {
        let mut line = format!(
            "| {} | {} | {} | {} | {} | {} |",
            md_cell(&d.name),
            md_cell(&d.family),
            d.keys,
            size(Some(d.data_bytes)),
            if d.fits_budget { "yes" } else { "no" },
            raw(d.ratio_to_budget, 2)
        );
        if with_ws {
            let mine = results.records.iter().filter(|r| r.dataset == d.name);
            let text = Span::of(mine).map_or_else(String::new, |s| s.text());
            line.push_str(&format!(" {} |", md_cell(&text)));
        }
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
}

/// The whole of results.md; `fairness` is the link to docs/fairness.md from it.
pub(crate) fn results_md(merged: &Merged, fairness: &str) -> String {
    let results = merged.results();
    let mut out = String::new();
    out.push_str("# Benchmark results\n\n");
    let from = match merged.sources() {
        [_] => "a results file",
        _ => "several results files (one column each below)",
    };
    let _ = write!(
        out,
        "Generated by `ai-meta report` from {from}; do not edit by hand. Latencies are \
         nanoseconds per operation (per key for bulk_load, per thread for parallel workloads). \
         How the engines are configured and what is held equal: [fairness]({fairness}).\n\n",
    );
    provenance(&mut out, merged);

    if !results.datasets.is_empty() {
        datasets(&mut out, results);
    }

    headline(&mut out, results);
    if let Some(tables) = ingest_tables(results) {
        out.push_str(&tables);
    }

    for w in results.workloads() {
        let _ = writeln!(out, "## {w}\n");
        if let Some(d) = order::workload_description(w) {
            let _ = writeln!(out, "{}.\n", capitalise(d));
        }
        if merged.sources().len() > 1 {
            let _ = writeln!(out, "{}\n", measured_in(merged, w));
        }
        if w == TRACE_WORKLOAD {
            let _ = writeln!(out, "{EXPLANATION}\n");
            if let Some(table) = trace_table(results, TableScope::Every) {
                out.push_str(&table);
            }
            out.push('\n');
            continue;
        }
        let mut recs: Vec<&Record> = results.records.iter().filter(|r| r.workload == w).collect();
        recs.sort_by(|a, b| order::cmp_record(results, a, b));
        let columns = Columns::of(&recs);
        header(&mut out, columns);
        for r in recs {
            out.push_str(&record_row(r, columns));
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

/// Which file(s), and so which run's settings, `workload`'s records come from.
fn measured_in(merged: &Merged, workload: &str) -> String {
    let runs: Vec<String> = merged
        .sources_of(|r| r.workload == workload)
        .into_iter()
        .map(|i| {
            let s = &merged.sources()[i];
            format!(
                "`{}` (scale {}, cache budget {}, commit `{}`)",
                md_cell(&merge::display_path(&s.path)),
                md_cell(&s.config.scale),
                format::bytes(s.config.budget_bytes as f64),
                md_cell(&s.provenance.commit)
            )
        })
        .collect();
    format!("Measured in {}.", runs.join(" and "))
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{IoPerOp, Latency};
    use crate::testing::TestResult;

    fn rec(status: Status, io: Option<IoPerOp>) -> Record {
        Record {
            workload: "manifest_get".into(),
            dataset: "manifest_fits".into(),
            engine: "redb".into(),
            variant: None,
            status,
            note: Some("a | b\nc".into()),
            ops: 10,
            threads: 1,
            ns_per_op: Latency {
                mean: 1234.56,
                ..Latency::default()
            },
            ops_per_sec: 810.0,
            size_on_disk_bytes: Some(4096),
            io_per_op: io,
            load_secs: None,
            trace: None,
            working_set: None,
            alloc_per_op: None,
            device_beside: None,
        }
    }

    #[test]
    fn the_trace_gets_its_own_table_and_only_its_headline_setting_is_compared() -> TestResult {
        use crate::testing::{trace_record, trace_results};
        let mut eight = trace_record("lmdb", "chained_probe", Some(10), 8);
        eight.ns_per_op.mean = 1.0;
        let results = trace_results(vec![
            trace_record("aimeta", "path_native", Some(10), 1),
            trace_record("lmdb", "chained_probe", Some(10), 1),
            eight,
        ]);
        let md = results_md(&Merged::single(results), "../fairness.md");
        let needles = [
            "## kvcache_trace\n\nReplay of a KV-cache request trace",
            "| tenants | capacity | threads | mode | engine | design | lookup method |",
            "| 1 | 10 % | 8 | closed loop | lmdb | chained | probe | ok | 1.00 ns |",
            // 28 µs ÷ 56 µs, not ÷ the 8-thread replay's 1 ns.
            "| kvcache_trace | mooncake_x1_cap10 | 28000.0 | path_native | 56000.0 | chained_probe | 0.500 |",
        ];
        crate::testing::assert_contains_all(&md, &needles);
        assert!(!md.contains("| mean ns | p50 ns |"), "no generic table");
        Ok(())
    }

    #[test]
    fn rows_escape_notes_and_say_na_without_a_measurement() -> TestResult {
        let io_columns = Columns {
            io: true,
            ..Columns::default()
        };
        let ok = record_row(&rec(Status::Ok, None), io_columns);
        assert!(ok.contains("| 1234.6 |"), "{ok}");
        assert!(ok.contains("| 4 KiB (4096) |"));
        assert!(ok.ends_with("| N/A | a \\| b c |"), "{ok}");
        let io = IoPerOp {
            pages_read: 1.5,
            ..IoPerOp::default()
        };
        assert!(record_row(&rec(Status::Ok, Some(io)), io_columns).contains("| 1.50 | 0.00 |"));
        let skipped = record_row(&rec(Status::Skipped, None), Columns::default());
        assert!(skipped.contains("| skipped | N/A | N/A | N/A | N/A | N/A | N/A | N/A |"));
        assert!(!skipped.contains("1234"));
        Ok(())
    }

    #[test]
    fn allocations_and_working_sets_get_columns_only_where_records_carry_them() -> TestResult {
        use crate::results::{AllocPerOp, WorkingSet};
        let mut counted = rec(Status::Ok, None);
        counted.alloc_per_op = Some(AllocPerOp {
            bytes: 171.88,
            allocations: 2.5,
        });
        counted.working_set = Some(WorkingSet {
            pages: 10_496,
            bytes: 10_496 * 4096,
            ratio_to_budget: 2.5625,
            source: WorkingSetSource::KeyLayout,
            touched_pages: None,
        });
        let mut other = rec(Status::Ok, None);
        other.engine = "lmdb".into();
        let mut bare = rec(Status::Ok, None);
        bare.workload = "manifest_scan".into();
        let mut results = crate::testing::trace_results(vec![counted, other, bare]);
        results.datasets.clear();
        let md = results_md(&Merged::single(results), "../fairness.md");
        let needles = [
            "| threads | store size (bytes) | working set | alloc bytes/op | allocations/op | note |",
            "| 41 MiB (2.56× the budget, beyond; key layout) | 171.9 | 2.50 | a \\| b c |",
            // lmdb carries neither: empty cells, not zeros.
            "| 4 KiB (4096) |  |  |  | a \\| b c |",
        ];
        crate::testing::assert_contains_all(&md, &needles);
        // manifest_scan's table has no record with either: no such columns.
        let at = |h: &str| md.find(h).ok_or(format!("no {h}"));
        let scan = &md[at("## manifest_scan")?..at("## manifest_get")?];
        assert!(
            !scan.contains("alloc bytes/op") && !scan.contains("working set"),
            "{scan}"
        );
        Ok(())
    }
}
