//! The trace replay's table: one row per replay (engine, key design, lookup method,
//! capacity, threads, mode) with its per-request, lookup, insert and evict latencies,
//! throughput, hit rate (checked against the harness's model), final keys and size; N/A
//! rows with their reason. results.md holds every replay, the README the featured ones.

use std::fmt::Write as _;

use crate::chart::Cell;
use crate::format::{self, md_cell};
use crate::results::{Latency, Record, Results};
use crate::rows::{cell, missing_text};
use crate::trace::{
    at_setting, capacity_label, featured, split_variant, trace_records, Setting, TraceRecord,
};

/// Which replays a table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableScope {
    /// Every replay (results.md).
    Every,
    /// The replays at the setting the charts feature (the README).
    Featured,
}

const COLUMNS: [&str; 22] = [
    "tenants",
    "capacity",
    "threads",
    "mode",
    "engine",
    "design",
    "lookup method",
    "status",
    "request mean",
    "request p99",
    "lookup p50",
    "lookup p99",
    "insert p50",
    "insert p99",
    "evict p50",
    "evict p99",
    "requests/s",
    "hit rate",
    "engine hits = model hits",
    "final keys",
    "final size",
    "note",
];

/// What the table's columns mean, for the text above it.
pub(crate) const EXPLANATION: &str = "Per request: the longest cached prefix lookup, the insert \
     batch of the missing blocks and the evict batch, engine calls only (the cache manager's \
     bookkeeping is not timed). Insert and evict times are per batch, over the requests that \
     had one (none: no request did, as nothing is evicted at unlimited capacity). Hit rate: \
     blocks found cached by the engine's lookups ÷ blocks requested, checked against the \
     harness's own cache model. Final size: the store on disk after the replay.";

/// p50 and p99 of `l`, or "none" twice when no batch was timed.
fn pair(l: &Latency, batches: u64) -> [String; 2] {
    if batches == 0 {
        return ["none".to_string(), "none".to_string()];
    }
    [format::duration(l.p50), format::duration(l.p99)]
}

/// One replay's row.
fn row(t: &TraceRecord<'_>) -> String {
    let r: &Record = t.record;
    let (design, method) = split_variant(r.variant.as_deref());
    let unknown = || "?".to_string();
    let setting = t.setting;
    let mut cells = vec![
        setting.map_or_else(unknown, |s| s.shape.tenants.to_string()),
        setting.map_or_else(unknown, |s| capacity_label(s.shape.capacity_percent)),
        r.threads.to_string(),
        setting.map_or_else(unknown, |s| s.mode.label()),
        md_cell(&r.engine),
        md_cell(design.map_or("", |d| d.name())),
        md_cell(method),
        r.status.name().to_string(),
    ];
    let measured = matches!(cell(r), Cell::Value(_));
    match (&r.trace, measured) {
        (Some(s), true) => {
            let hits_check = if s.hits == s.model_hits {
                "yes".to_string()
            } else {
                format!(
                    "NO: engine {}, model {}",
                    format::thousands(s.hits),
                    format::thousands(s.model_hits)
                )
            };
            cells.extend([
                format::duration(r.ns_per_op.mean),
                format::duration(r.ns_per_op.p99),
                format::duration(s.lookup.p50),
                format::duration(s.lookup.p99),
            ]);
            cells.extend(pair(&s.insert, s.insert_batches));
            cells.extend(pair(&s.evict, s.evict_batches));
            cells.extend([
                format::thousands(r.ops_per_sec.max(0.0).round() as u64),
                format!(
                    "{} ({} of {})",
                    format::percent(s.hit_rate),
                    format::thousands(s.hits),
                    format::thousands(s.blocks_requested)
                ),
                hits_check,
                format::thousands(s.final_keys),
                r.size_on_disk_bytes
                    .map_or_else(|| "N/A".to_string(), |b| format::bytes(b as f64)),
            ]);
            cells.push(md_cell(r.note.as_deref().unwrap_or("")));
        }
        _ => {
            cells.extend(std::iter::repeat_n("N/A".to_string(), 13));
            let why = match (&r.trace, measured) {
                (None, true) => "N/A: no trace stats recorded".to_string(),
                _ => missing_text(r),
            };
            cells.push(md_cell(&why));
        }
    }
    format!("| {} |", cells.join(" | "))
}

/// The table of `scope`'s replays, `None` when there is none. The featured scope says
/// which setting it shows.
pub(crate) fn trace_table(results: &Results, scope: TableScope) -> Option<String> {
    let records = trace_records(results);
    let featured_setting: Option<Setting> = featured(&records);
    let chosen: Vec<TraceRecord<'_>> = match (scope, featured_setting) {
        (TableScope::Featured, Some(s)) => at_setting(&records, &s),
        (TableScope::Every, _) | (TableScope::Featured, None) => records,
    };
    if chosen.is_empty() {
        return None;
    }
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", COLUMNS.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(COLUMNS.len()));
    for t in &chosen {
        out.push_str(&row(t));
        out.push('\n');
    }
    Some(out)
}

/// A line naming the featured setting, for the README above its table.
pub(crate) fn featured_label(results: &Results) -> Option<String> {
    featured(&trace_records(results)).map(|s| s.label())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Status;
    use crate::testing::{trace_record as rec, trace_results, TestResult};

    fn results() -> Results {
        let mut na = rec("lmdb", "path_bisect", Some(10), 1);
        (na.status, na.note, na.trace) = (
            Status::Unsupported,
            Some("key of 1,740 bytes | over 511".into()),
            None,
        );
        let mut open = rec("aimeta", "path_native", Some(10), 1);
        if let Some(t) = open.trace.as_mut() {
            t.open_loop_rate = Some(2_000.0);
        }
        let mut wrong = rec("lmdb", "chained_probe", Some(10), 1);
        if let Some(t) = wrong.trace.as_mut() {
            t.model_hits += 2;
        }
        trace_results(vec![
            rec("aimeta", "path_native", None, 1),
            open,
            rec("aimeta", "path_native", Some(10), 8),
            na,
            wrong,
            rec("aimeta", "path_native", Some(10), 1),
        ])
    }

    #[test]
    fn every_replay_has_a_row_in_setting_order() -> TestResult {
        let t = trace_table(&results(), TableScope::Every).ok_or("no table")?;
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2 + 6, "{t}");
        assert_eq!(lines[0].matches(" | ").count(), COLUMNS.len() - 1);
        let want = [
            // aimeta path_native at 10 %: 28 µs mean and 84 µs p99 per request, lookups of
            // 7 µs on average, insert batches of 16.8 µs, evict batches of 8.4 µs.
            "| 1 | 10 % | 1 | closed loop | aimeta | path | native | ok | 28.0 µs | 84.0 µs | \
             5.60 µs | 21.0 µs | 13.4 µs | 50.4 µs | 6.72 µs | 25.2 µs | 35,714 | \
             14.2 % (41,000 of 288,500) | yes | 18,279 | 24 MiB |  |",
            "| 1 | 10 % | 1 | any | lmdb | path | bisect | unsupported | N/A |",
            "| 1 | 10 % | 1 | closed loop | lmdb | chained | probe | ok | 56.0 µs |",
            "| 1 | 10 % | 1 | open loop at 2,000 requests/s | aimeta | path | native | ok |",
            "| 1 | 10 % | 8 | closed loop | aimeta | path | native | ok |",
            "| 1 | unlimited | 1 | closed loop | aimeta | path | native | ok |",
        ];
        for (line, want) in lines[2..].iter().zip(want) {
            assert!(line.starts_with(want), "{line}\nwanted {want}");
        }
        // The N/A row says why, escaped; the unlimited replay evicted nothing.
        assert!(lines[3].ends_with("| N/A: unsupported: key of 1,740 bytes \\| over 511 |"));
        assert!(lines[7].contains("| none | none |"), "{}", lines[7]);
        assert!(lines[4].contains("| NO: engine 41,000, model 41,002 |"));
        Ok(())
    }

    #[test]
    fn the_featured_table_holds_one_setting() -> TestResult {
        let r = results();
        let t = trace_table(&r, TableScope::Featured).ok_or("no table")?;
        assert_eq!(t.lines().count(), 2 + 3, "{t}");
        assert!(t.lines().skip(2).all(|l| l.starts_with("| 1 | 10 % | 1 |")));
        assert_eq!(
            featured_label(&r).as_deref(),
            Some("1 tenant · capacity 10 % · 1 thread · closed loop")
        );
        let mut none = r.clone();
        none.records
            .iter_mut()
            .for_each(|x| x.workload = "manifest_get".into());
        assert_eq!(trace_table(&none, TableScope::Every), None);
        Ok(())
    }
}
