//! The ingest story chart: per engine, each reader setting's median latency with its
//! p99 and p99.9 behind it, alone and beside a writer appending shards, the writer's keys
//! per second printed after its readers' bar. Not drawn without ingest records.

use crate::chart::{Cell, Chart, Row, Section, Tail, ValueAxis};
use crate::format;
use crate::ingest_table::{reader_variant, Company, READERS, WRITER};
use crate::merge::Merged;
use crate::order;
use crate::results::{Record, Status};
use crate::rows::{record_row, subtitle};

/// The chart's file stem.
pub(crate) const STEM: &str = "ingest_readers";

/// A reader record with its parsed variant (readers, company, durability) and its
/// operation.
type Reader<'a> = (&'a Record, (u32, Company, &'a str), &'static str);

/// The order of an engine's rows: durability, readers, operation, alone first.
fn row_order<'a>(x: &Reader<'a>) -> (&'a str, u32, &'static str, Company) {
    let (_, (count, company, durability), op) = *x;
    (durability, count, op, company)
}

/// A reader setting's bar: its median, with p99 and p99.9 behind it; faded alone.
fn reader_row(r: &Record, op: &str, company: Company) -> Row {
    let with = match company {
        Company::Alone => "alone",
        Company::Writer => "beside the writer",
    };
    let mut row = record_row(r, format!("{op} {with}"), company == Company::Alone);
    if let Cell::Value(_) = row.cell {
        let l = &r.ns_per_op;
        row.cell = Cell::Value(l.p50);
        row.tails = vec![
            Tail {
                name: "p99",
                value: l.p99,
            },
            Tail {
                name: "p99.9",
                value: l.p999,
            },
        ];
    }
    row
}

/// The readers' chart, when the results hold reader records of the ingest workloads.
pub(crate) fn ingest_chart(merged: &Merged) -> Option<Chart> {
    let results = merged.results();
    let is_reader = |r: &Record| READERS.iter().any(|(w, _)| *w == r.workload);
    let readers: Vec<Reader<'_>> = results
        .records
        .iter()
        .filter(|r| is_reader(r))
        .filter_map(|r| {
            let parsed = reader_variant(r.variant.as_deref()?)?;
            let op = READERS.iter().find(|(w, _)| *w == r.workload)?.1;
            Some((r, parsed, op))
        })
        .collect();
    if readers.is_empty() {
        return None;
    }
    let mut sections = Vec::new();
    for engine in results.engines() {
        let mut mine: Vec<_> = readers
            .iter()
            .filter(|(r, ..)| r.engine == engine)
            .collect();
        if mine.is_empty() {
            continue;
        }
        mine.sort_by(|a, b| {
            row_order(a)
                .cmp(&row_order(b))
                .then_with(|| order::cmp_dataset(results, &a.0.dataset, &b.0.dataset))
        });
        // A section per reader count and durability, headed by the writer's rate.
        let mut settings: Vec<(&str, u32)> = mine.iter().map(|x| (x.1 .2, x.1 .0)).collect();
        settings.dedup();
        for (durability, count) in settings {
            let rows = mine
                .iter()
                .filter(|x| x.1 .2 == durability && x.1 .0 == count)
                .map(|(r, (_, company, _), op)| reader_row(r, op, *company))
                .collect();
            let variant = format!("r{count}_{durability}");
            let dataset = mine.first().map_or("", |x| x.0.dataset.as_str());
            let writer = match results.find(WRITER, dataset, engine, Some(&variant)) {
                Some(w) if w.status == Status::Ok => {
                    let keys = format::rate(w.ops_per_sec).replace("/s", " keys/s");
                    format!(" · writer {keys}")
                }
                _ => String::new(),
            };
            sections.push(Section {
                header: Some(format!(
                    "{engine} · {count} {} · {durability}{writer}",
                    if count == 1 { "reader" } else { "readers" }
                )),
                rows,
            });
        }
    }
    let footnotes = vec![
        "Each reader's median time per operation (solid; lighter bars behind it: p99 and \
         p99.9), alone (faded) and while one writer appends shards in batches of 10,000 \
         samples; each heading gives the writer's keys per second beside those readers. Every \
         number: results.md, Ingest beside readers."
            .to_string(),
    ];
    let pick = |r: &Record| is_reader(r) || r.workload == WRITER;
    Some(Chart::new(
        STEM,
        "Readers beside an ingesting writer: latency alone and during appends".to_string(),
        subtitle(merged, pick),
        ValueAxis::times("time per reader operation"),
        sections,
        footnotes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Latency;
    use crate::svg::LIGHT;
    use crate::testing::{assert_contains_all, trace_record, trace_results, TestResult};

    fn rec(workload: &str, variant: &str, p50: f64, ops_per_sec: f64) -> Record {
        let mut r = trace_record("lmdb", variant, None, 4);
        (r.workload, r.dataset, r.trace) = (workload.into(), "manifest_beyond".into(), None);
        r.ns_per_op = Latency {
            mean: p50,
            p50,
            p99: p50 * 4.0,
            p999: p50 * 10.0,
            ..Latency::default()
        };
        r.ops_per_sec = ops_per_sec;
        r
    }

    #[test]
    fn readers_alone_and_beside_the_writer_with_tails_and_its_rate() -> TestResult {
        let merged = Merged::single(trace_results(vec![
            rec("manifest_ingest_get", "r4_writer_async", 3_000.0, 1.0),
            rec("manifest_ingest_get", "r4_alone_async", 1_000.0, 1.0),
            rec("manifest_ingest_scan", "r4_alone_async", 5_000.0, 1.0),
            rec("manifest_ingest_get", "r1_alone_async", 900.0, 1.0),
            rec(WRITER, "r4_async", 1.0, 812_345.0),
        ]));
        let chart = ingest_chart(&merged).ok_or("no chart")?;
        let svg = chart.render(&LIGHT);
        let needles = [
            ">lmdb · 4 readers · async · writer 812 k keys/s</text>",
            ">get alone</text>",
            ">get beside the writer</text>",
            ">1.00 µs · p99 4.00 µs · p99.9 10.0 µs</text>",
            ">3.00 µs · p99 12.0 µs · p99.9 30.0 µs</text>",
        ];
        assert_contains_all(&svg, &needles);
        // Alone first, whatever the records' order; one section per setting.
        assert!(svg.find(">get alone<") < svg.find(">get beside the writer<"));
        assert_eq!(svg.matches(">lmdb · 4 readers · async").count(), 1);
        assert!(svg.find(">lmdb · 1 reader · async</text>") < svg.find(">lmdb · 4 readers"));
        assert!(svg.contains(">scan alone</text>"));
        let none = Merged::single(trace_results(vec![rec(WRITER, "r4_async", 1.0, 1.0)]));
        assert!(ingest_chart(&none).is_none());
        Ok(())
    }
}
