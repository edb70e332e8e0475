//! The three trace story charts, first in the README since the trace replay is the
//! closest to real use: per-request time by engine and key design, hit rate against
//! capacity, and lookup latency percentiles. None is drawn when the results hold no
//! `kvcache_trace` record.

use crate::chart::{Cell, Chart, Row, Section, Tail, ValueAxis};
use crate::format;
use crate::merge::Merged;
use crate::order::{self, engine_colour};
use crate::results::{Record, Results, Status};
use crate::rows::{missing_text, record_row, subtitle_without_ops};
use crate::trace::{
    at_setting, capacity_label, featured, split_variant, tenants_label, threads_label,
    trace_records, KeyDesign, Setting, TraceRecord, TRACE_WORKLOAD,
};
use crate::trace_hit_rate;

/// File stems of the trace charts, in the order they are shown.
pub(crate) const STEMS: [&str; 3] = [
    "trace_request_time",
    "trace_hit_rate",
    "trace_lookup_percentiles",
];

/// The trace charts (empty without trace records).
/// Their subtitles name the run (or runs) the trace records came from, whatever the
/// other records' runs.
pub(crate) fn trace_charts(merged: &Merged) -> Vec<Chart> {
    let records = trace_records(merged.results());
    if records.is_empty() {
        return Vec::new();
    }
    let setting = featured(&records);
    vec![
        request_time(merged, &records, setting),
        trace_hit_rate::hit_rate(merged, &records),
        lookup_percentiles(merged, &records, setting),
    ]
}

/// The subtitle lines of the trace replays' run(s).
pub(crate) fn trace_subtitle(merged: &Merged) -> Vec<String> {
    subtitle_without_ops(merged, |r| r.workload == TRACE_WORKLOAD)
}

/// The records at `setting` (all of them when no record says its setting), by engine.
fn by_engine<'a>(
    results: &'a Results,
    records: &[TraceRecord<'a>],
    setting: Option<Setting>,
) -> Vec<(&'a str, Vec<&'a Record>)> {
    let at: Vec<&Record> = match setting {
        Some(s) => at_setting(records, &s).iter().map(|t| t.record).collect(),
        None => records.iter().map(|t| t.record).collect(),
    };
    results
        .engines()
        .into_iter()
        .map(|e| {
            let mut mine: Vec<&Record> = at.iter().copied().filter(|r| r.engine == e).collect();
            mine.sort_by(|a, b| cmp_variant(a, b).then_with(|| a.threads.cmp(&b.threads)));
            (e, mine)
        })
        .filter(|(_, mine)| !mine.is_empty())
        .collect()
}

/// The first usable replay's stats among `recs`.
fn first_stats<'a>(recs: &[&'a Record]) -> Option<&'a crate::TraceStats> {
    recs.iter()
        .filter(|r| r.status == Status::Ok)
        .find_map(|r| r.trace.as_ref())
}

/// " (N blocks)" for one tenant, " (N blocks a tenant)" for several: the capacity is each
/// tenant's own cache.
pub(crate) fn capacity_blocks_label(blocks: u64, tenants: u32) -> String {
    let per = if tenants > 1 { " a tenant" } else { "" };
    format!(" ({} blocks{per})", format::thousands(blocks))
}

/// The subtitle line describing the featured setting and its hit rate.
fn setting_line(setting: Option<Setting>, recs: &[&Record]) -> String {
    let Some(s) = setting else {
        return "No replay recorded its setting: every record is N/A.".to_string();
    };
    let stats = first_stats(recs);
    let mut capacity = capacity_label(s.shape.capacity_percent);
    if let Some(blocks) = stats.and_then(|t| t.capacity_blocks) {
        capacity.push_str(&capacity_blocks_label(
            blocks,
            stats.map_or(1, |t| t.tenants),
        ));
    }
    let mut line = format!(
        "Mooncake trace: {} · capacity {capacity} · {} · {}",
        tenants_label(s.shape.tenants),
        threads_label(s.threads),
        s.mode.label()
    );
    if let Some(t) = stats {
        let requests = recs.iter().find(|r| r.status == Status::Ok).map(|r| r.ops);
        line.push_str(&format!(
            " · hit rate {} ({} of {} blocks) · {} requests",
            format::percent(t.hit_rate),
            format::thousands(t.hits),
            format::thousands(t.blocks_requested),
            format::thousands(requests.unwrap_or(0))
        ));
    }
    line
}

/// A key design's row label: its name, or the whole variant when it is of neither design.
fn design_label(design: Option<KeyDesign>, method: &str) -> String {
    match design {
        Some(d) => d.name().to_string(),
        None if method.is_empty() => "default".to_string(),
        None => method.to_string(),
    }
}

/// (a) Per engine and key design, the fastest lookup method's mean time per request.
fn request_time(merged: &Merged, records: &[TraceRecord<'_>], setting: Option<Setting>) -> Chart {
    let engines = by_engine(merged.results(), records, setting);
    let all: Vec<&Record> = engines
        .iter()
        .flat_map(|(_, r)| r.iter().copied())
        .collect();
    let mut sections = Vec::new();
    for (engine, mine) in &engines {
        let mut designs: Vec<(Option<KeyDesign>, &str)> = Vec::new();
        for r in mine {
            let (design, method) = split_variant(r.variant.as_deref());
            let key = (design, if design.is_some() { "" } else { method });
            if !designs.contains(&key) {
                designs.push(key);
            }
        }
        let rows = designs
            .iter()
            .map(|&(design, raw)| {
                let of_design: Vec<&Record> = mine
                    .iter()
                    .copied()
                    .filter(|r| {
                        let (d, m) = split_variant(r.variant.as_deref());
                        d == design && (design.is_some() || m == raw)
                    })
                    .collect();
                design_row(engine, design, raw, &of_design)
            })
            .collect();
        sections.push(Section {
            header: Some(engine.to_string()),
            rows,
        });
    }
    let mut sub = trace_subtitle(merged);
    sub.push(setting_line(setting, &all));
    let footnotes = vec![
        "Per request: the longest cached prefix lookup, the insert batch of the missing blocks \
         and the evict batch, engine calls only (the cache manager's bookkeeping is not timed). \
         Each key design with its fastest lookup method; every method, capacity, thread count \
         and open-loop replay is in results.md."
            .to_string(),
    ];
    Chart::new(
        STEMS[0],
        "Per-request time on the Mooncake trace".to_string(),
        sub,
        ValueAxis::times("mean time per request"),
        sections,
        footnotes,
    )
}

/// One design's bar: its fastest usable method, or why there is none.
fn design_row(engine: &str, design: Option<KeyDesign>, raw: &str, recs: &[&Record]) -> Row {
    let label = design_label(design, raw);
    let usable: Vec<(f64, &Record)> = recs
        .iter()
        .filter_map(|r| r.mean_ns().map(|m| (m, *r)))
        .collect();
    let fastest = usable
        .iter()
        .copied()
        .min_by(|a, b| a.0.total_cmp(&b.0).then_with(|| cmp_variant(a.1, b.1)));
    match (fastest, recs.first()) {
        (Some((_, r)), _) => {
            let mut row = record_row(r, label, false);
            let method = split_variant(r.variant.as_deref()).1;
            row.annotation = Some(match usable.len() {
                1 => method.to_string(),
                n => format!("{method}, fastest of {n} methods"),
            });
            row
        }
        (None, first) => Row {
            what: format!("{engine} {label}"),
            label,
            colour: engine_colour(engine),
            faded: false,
            cell: Cell::Missing(first.map_or_else(|| "N/A".to_string(), |r| missing_text(r))),
            annotation: None,
            tails: vec![],
        },
    }
}

fn cmp_variant(a: &Record, b: &Record) -> std::cmp::Ordering {
    order::cmp_variant(a.variant.as_deref(), b.variant.as_deref())
}

/// (c) The lookups' p50, p99 and p99.9 per engine and variant, at the featured setting.
fn lookup_percentiles(
    merged: &Merged,
    records: &[TraceRecord<'_>],
    setting: Option<Setting>,
) -> Chart {
    let engines = by_engine(merged.results(), records, setting);
    let all: Vec<&Record> = engines
        .iter()
        .flat_map(|(_, r)| r.iter().copied())
        .collect();
    let sections = engines
        .iter()
        .map(|(engine, mine)| Section {
            header: Some(engine.to_string()),
            rows: merge_missing(mine.iter().map(|r| (*r, percentile_row(r))).collect()),
        })
        .collect();
    let mut sub = trace_subtitle(merged);
    sub.push(setting_line(setting, &all));
    let footnotes = vec![
        "One longest-prefix lookup per request. Solid bar and first value: the median (p50); \
         lighter bars: p99 and p99.9, printed after it."
            .to_string(),
    ];
    Chart::new(
        STEMS[2],
        "Lookup latency percentiles on the Mooncake trace".to_string(),
        sub,
        ValueAxis::times("time per lookup"),
        sections,
        footnotes,
    )
}

/// One engine's rows with the N/A rows of the same reason merged into one (the first's
/// place), so that a design an engine cannot hold takes one row, not one per method.
fn merge_missing(rows: Vec<(&Record, Row)>) -> Vec<Row> {
    let mut out: Vec<(Vec<&Record>, Row)> = Vec::new();
    for (r, row) in rows {
        let Cell::Missing(why) = &row.cell else {
            out.push((vec![r], row));
            continue;
        };
        let same = out
            .iter_mut()
            .find(|(_, o)| matches!(&o.cell, Cell::Missing(w) if w == why));
        match same {
            Some((merged, _)) => merged.push(r),
            None => out.push((vec![r], row)),
        }
    }
    out.into_iter()
        .map(|(merged, mut row)| {
            if merged.len() > 1 {
                let split: Vec<_> = merged
                    .iter()
                    .map(|r| split_variant(r.variant.as_deref()))
                    .collect();
                let design = split[0].0;
                row.label = match design {
                    Some(d) if split.iter().all(|(x, _)| *x == design) => {
                        let methods: Vec<&str> = split.iter().map(|(_, m)| *m).collect();
                        format!("{} · {}", d.name(), methods.join(", "))
                    }
                    _ => format!("{} variants", merged.len()),
                };
            }
            row
        })
        .collect()
}

/// A variant's lookup bar: p50, with p99 and p99.9 as tails.
fn percentile_row(r: &Record) -> Row {
    let (design, method) = split_variant(r.variant.as_deref());
    let label = match design {
        Some(d) => format!("{} · {method}", d.name()),
        None => design_label(None, method),
    };
    let mut row = record_row(r, label, false);
    match (&row.cell, &r.trace) {
        (Cell::Value(_), Some(t)) => {
            row.cell = Cell::Value(t.lookup.p50);
            row.tails = vec![
                Tail {
                    name: "p99",
                    value: t.lookup.p99,
                },
                Tail {
                    name: "p99.9",
                    value: t.lookup.p999,
                },
            ];
        }
        (Cell::Value(_), None) => {
            row.cell = Cell::Missing("N/A: no lookup latencies recorded".to_string());
        }
        (Cell::Missing(_), _) => {}
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capacity_says_it_is_each_tenants_when_there_are_several() {
        assert_eq!(capacity_blocks_label(18_279, 1), " (18,279 blocks)");
        assert_eq!(
            capacity_blocks_label(18_279, 4),
            " (18,279 blocks a tenant)"
        );
    }
    use crate::svg::LIGHT;
    use crate::testing::{
        assert_contains_all, trace_mix, trace_record as rec, trace_results, TestResult,
    };

    fn chart(results: &Results, stem: &str) -> Result<String, String> {
        trace_charts(&Merged::single(results.clone()))
            .iter()
            .find(|c| c.stem == stem)
            .map(|c| c.render(&LIGHT))
            .ok_or_else(|| format!("no {stem} chart"))
    }

    #[test]
    fn request_time_shows_each_design_at_the_featured_setting() -> TestResult {
        let svg = chart(&trace_mix(), STEMS[0])?;
        let needles = [
            ">Per-request time on the Mooncake trace</text>",
            "Mooncake trace: 1 tenant · capacity 10 % (18,279 blocks) · 1 thread · closed loop",
            "hit rate 14.2 % (41,000 of 288,500 blocks)",
            // aimeta's path design: native (28 µs) beats bisect (36.4 µs).
            ">28.0 µs · native, fastest of 2 methods</text>",
            ">39.2 µs · probe</text>",
            ">56.0 µs · probe</text>",
            // lmdb's path design: N/A with the reason, though one record has no stats.
            "N/A: unsupported: the trace&apos;s longest path key is 1,740 bytes",
            ">path</text>",
            ">chained</text>",
        ];
        assert_contains_all(&svg, &needles);
        // The 8-thread, open-loop and other-capacity replays are not drawn here.
        for absent in [">1 ns", ">2 ns", "36.6 %"] {
            assert!(!svg.contains(absent), "{absent}");
        }
        Ok(())
    }

    #[test]
    fn lookup_percentiles_per_engine_and_variant() -> TestResult {
        let svg = chart(&trace_mix(), STEMS[2])?;
        let needles = [
            ">path · native</text>",
            ">path · bisect</text>",
            ">chained · probe</text>",
            // aimeta path_native: lookup mean 7 µs, p50 5.6 µs, p99 21 µs, p99.9 42 µs.
            ">5.60 µs · p99 21.0 µs · p99.9 42.0 µs</text>",
            "<title>aimeta path_native on mooncake_x1_cap10 p99.9: 42.0 µs</title>",
            "N/A: unsupported: the trace&apos;s longest path key",
        ];
        assert_contains_all(&svg, &needles);
        // Variants in the report's order within an engine, whatever the records' order.
        let lmdb = &svg[svg.find(">lmdb</text>").ok_or("no lmdb section")?..];
        let at = |n: &str| lmdb.find(n).unwrap_or(usize::MAX);
        assert!(at(">path · predecessor_seek, bisect<") < at(">chained · probe<"));
        // lmdb's two N/A path methods share their reason: one row.
        assert_eq!(svg.matches("longest path key is 1,740").count(), 1);
        assert_eq!(
            svg.matches("fill-opacity").count(),
            2 * 4,
            "two tails per bar"
        );
        Ok(())
    }

    #[test]
    fn no_trace_records_no_trace_charts_and_all_na_says_so() -> TestResult {
        let mut other = rec("aimeta", "path_native", Some(10), 1);
        other.workload = "manifest_get".into();
        assert!(trace_charts(&Merged::single(trace_results(vec![other]))).is_empty());
        let mut na = rec("lmdb", "path_native", Some(10), 1);
        (na.status, na.note, na.trace) = (Status::Skipped, Some("no server".into()), None);
        let results = trace_results(vec![na]);
        let stems: Vec<String> = trace_charts(&Merged::single(results.clone()))
            .into_iter()
            .map(|c| c.stem)
            .collect();
        assert_eq!(stems, STEMS);
        let svg = chart(&results, STEMS[0])?;
        assert_contains_all(&svg, &["every record is N/A", "N/A: skipped: no server"]);
        Ok(())
    }
}
