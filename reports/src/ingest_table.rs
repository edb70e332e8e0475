//! results.md's tables of writes beside reads: the readers' latency percentiles alone
//! and beside a writer appending shards (per engine, readers' operation, reader count and
//! durability) with the writer's keys per second, and single puts committed with an
//! fsync each by 1 and 8 writers (where group commit shows).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::format::{self, md_cell};
use crate::order;
use crate::results::{Record, Results, Status};

/// The readers' workloads and the operation each names.
pub(crate) const READERS: [(&str, &str); 2] = [
    ("manifest_ingest_get", "get"),
    ("manifest_ingest_scan", "scan"),
];
/// The writer's workload (its `ops_per_sec`: keys per second).
pub(crate) const WRITER: &str = "manifest_ingest_write";
/// Single synchronous puts (its `ops_per_sec`: commits per second over all writers).
const SYNC_PUT: &str = "sync_put";

/// Whether the readers ran alone or beside the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Company {
    /// No writer ran.
    Alone,
    /// Beside the writer.
    Writer,
}

/// A reader variant: `r4_alone_async` is (4, Alone, "async").
pub(crate) fn reader_variant(v: &str) -> Option<(u32, Company, &str)> {
    let rest = v.strip_prefix('r')?;
    let (readers, rest) = rest.split_once('_')?;
    let (company, durability) = rest.split_once('_')?;
    let company = match company {
        "alone" => Company::Alone,
        "writer" => Company::Writer,
        _ => return None,
    };
    Some((readers.parse().ok()?, company, durability))
}

/// A writer variant: `r4_async` is (4, "async").
pub(crate) fn writer_variant(v: &str) -> Option<(u32, &str)> {
    let (readers, durability) = v.strip_prefix('r')?.split_once('_')?;
    Some((readers.parse().ok()?, durability))
}

/// A `t8` variant's thread count.
fn threads_variant(r: &Record) -> Option<u32> {
    r.variant.as_deref()?.strip_prefix('t')?.parse().ok()
}

/// One row's key: engine, data set, readers' operation, readers, durability.
type RowKey<'a> = (&'a str, &'a str, &'a str, u32, &'a str);

/// Three latency cells of `r` (p50, p99, p99.9), "N/A" without a measurement, "-"
/// without a record.
fn percentiles(r: Option<&Record>) -> [String; 3] {
    match r {
        Some(r) if r.status == Status::Ok => {
            let l = &r.ns_per_op;
            [l.p50, l.p99, l.p999].map(format::duration)
        }
        Some(_) => std::array::from_fn(|_| "N/A".to_string()),
        None => std::array::from_fn(|_| "-".to_string()),
    }
}

/// The notes of the records of a row that have no measurement.
fn notes(recs: &[Option<&Record>]) -> String {
    let v: Vec<String> = recs
        .iter()
        .flatten()
        .filter(|r| r.status != Status::Ok)
        .map(|r| {
            let why = r.note.as_deref().unwrap_or("").trim();
            let variant = r.variant.as_deref().unwrap_or("");
            format!("{variant}: {} {why}", r.status.name())
                .trim()
                .to_string()
        })
        .collect();
    md_cell(&v.join("; "))
}

fn rate(r: Option<&Record>) -> String {
    match r {
        Some(r) if r.status == Status::Ok && r.ops_per_sec.is_finite() => {
            format::thousands(r.ops_per_sec.round().max(0.0) as u64)
        }
        Some(_) => "N/A".to_string(),
        None => "-".to_string(),
    }
}

fn readers_table(results: &Results) -> Option<String> {
    let find = |workload: &str, engine: &str, dataset: &str, variant: String| {
        results.find(workload, dataset, engine, Some(&variant))
    };
    let mut keys: BTreeSet<RowKey<'_>> = BTreeSet::new();
    for r in &results.records {
        let Some(v) = r.variant.as_deref() else {
            continue;
        };
        if let Some((_, op)) = READERS.iter().find(|(w, _)| *w == r.workload) {
            if let Some((readers, _, durability)) = reader_variant(v) {
                keys.insert((&r.engine, &r.dataset, op, readers, durability));
            }
        } else if r.workload == WRITER {
            if let Some((readers, durability)) = writer_variant(v) {
                let has_readers = results.records.iter().any(|o| {
                    o.engine == r.engine
                        && o.dataset == r.dataset
                        && READERS.iter().any(|(w, _)| *w == o.workload)
                        && o.variant
                            .as_deref()
                            .and_then(reader_variant)
                            .is_some_and(|(n, _, d)| n == readers && d == durability)
                });
                if !has_readers {
                    keys.insert((&r.engine, &r.dataset, "-", readers, durability));
                }
            }
        }
    }
    if keys.is_empty() {
        return None;
    }
    let mut keys: Vec<RowKey<'_>> = keys.into_iter().collect();
    keys.sort_by(|a, b| {
        order::cmp_engine(a.0, b.0)
            .then_with(|| order::cmp_dataset(results, a.1, b.1))
            .then_with(|| (a.2, a.4, a.3).cmp(&(b.2, b.4, b.3)))
    });
    let mut out = String::new();
    out.push_str("## Ingest beside readers\n\n");
    out.push_str(
        "Reader threads get or scan while one writer appends new shards in batches of 10,000 \
         samples: each reader's latency percentiles alone and beside the writer, at each \
         durability, and the writer's keys per second beside the readers. A dash: not \
         measured.\n\n",
    );
    out.push_str(
        "| engine | data set | readers' operation | readers | durability | alone p50 | alone p99 \
         | alone p99.9 | beside the writer p50 | beside the writer p99 | beside the writer p99.9 \
         | p99 beside ÷ alone | writer keys/s | note |\n",
    );
    out.push_str(&format!("|{}\n", " --- |".repeat(14)));
    for (engine, dataset, op, readers, durability) in keys {
        let workload = READERS.iter().find(|(_, o)| *o == op).map(|(w, _)| *w);
        let reader = |company: &str| {
            workload.and_then(|w| {
                find(
                    w,
                    engine,
                    dataset,
                    format!("r{readers}_{company}_{durability}"),
                )
            })
        };
        let (alone, beside) = (reader("alone"), reader("writer"));
        let writer = find(WRITER, engine, dataset, format!("r{readers}_{durability}"));
        let p99 = |r: Option<&Record>| {
            r.filter(|r| r.status == Status::Ok)
                .map(|r| r.ns_per_op.p99)
        };
        let ratio = match (p99(alone), p99(beside)) {
            (Some(a), Some(b)) if a > 0.0 => format::ratio(b / a),
            _ => "-".to_string(),
        };
        let [a50, a99, a999] = percentiles(alone);
        let [b50, b99, b999] = percentiles(beside);
        let _ = writeln!(
            out,
            "| {} | {} | {op} | {readers} | {} | {a50} | {a99} | {a999} | {b50} | {b99} | {b999} \
             | {ratio} | {} | {} |",
            md_cell(engine),
            md_cell(dataset),
            md_cell(durability),
            rate(writer),
            notes(&[alone, beside, writer])
        );
    }
    out.push('\n');
    Some(out)
}

fn sync_table(results: &Results) -> Option<String> {
    let recs: Vec<&Record> = results
        .records
        .iter()
        .filter(|r| r.workload == SYNC_PUT && threads_variant(r).is_some())
        .collect();
    if recs.is_empty() {
        return None;
    }
    let counts: BTreeSet<u32> = recs.iter().filter_map(|r| threads_variant(r)).collect();
    let counts: Vec<u32> = counts.into_iter().collect();
    let mut rows: Vec<(&str, &str)> = recs
        .iter()
        .map(|r| (r.engine.as_str(), r.dataset.as_str()))
        .collect();
    rows.sort_by(|a, b| {
        order::cmp_engine(a.0, b.0).then_with(|| order::cmp_dataset(results, a.1, b.1))
    });
    rows.dedup();
    let writers = |n: u32| if n == 1 { "writer" } else { "writers" };
    let mut cols = vec!["engine".to_string(), "data set".to_string()];
    cols.extend(
        counts
            .iter()
            .map(|n| format!("commits/s, {n} {}", writers(*n))),
    );
    let scaling = counts.len() > 1;
    if let (true, Some(first), Some(last)) = (scaling, counts.first(), counts.last()) {
        cols.push(format!("{last} ÷ {first} {}", writers(*first)));
    }
    cols.push("note".to_string());
    let mut out = String::new();
    out.push_str("## Synchronous commits\n\n");
    out.push_str(
        "Single puts, each committed with an fsync before the next, by one writer and by \
         several at once: commits per second over all writers. Several writers above one \
         writer's rate are group commit at work.\n\n",
    );
    let _ = writeln!(out, "| {} |", cols.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(cols.len()));
    for (engine, dataset) in rows {
        let at: Vec<Option<&Record>> = counts
            .iter()
            .map(|n| {
                recs.iter().copied().find(|r| {
                    r.engine == engine && r.dataset == dataset && threads_variant(r) == Some(*n)
                })
            })
            .collect();
        let mut cells = vec![md_cell(engine), md_cell(dataset)];
        cells.extend(at.iter().map(|r| rate(*r)));
        if scaling {
            let ok = |r: &Option<&Record>| {
                r.filter(|r| r.status == Status::Ok && r.ops_per_sec > 0.0)
                    .map(|r| r.ops_per_sec)
            };
            cells.push(match (at.first().and_then(ok), at.last().and_then(ok)) {
                (Some(a), Some(b)) => format::ratio(b / a),
                _ => "-".to_string(),
            });
        }
        cells.push(notes(&at));
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
    Some(out)
}

/// The ingest and synchronous-commit tables, when the results hold those workloads.
pub(crate) fn ingest_tables(results: &Results) -> Option<String> {
    let tables: Vec<String> = [readers_table(results), sync_table(results)]
        .into_iter()
        .flatten()
        .collect();
    (!tables.is_empty()).then(|| tables.concat())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Latency;
    use crate::testing::{assert_contains_all, trace_record, trace_results, TestResult};

    fn rec(workload: &str, engine: &str, variant: &str, p99_us: f64, ops_per_sec: f64) -> Record {
        let mut r = trace_record(engine, variant, None, 4);
        (r.workload, r.dataset, r.trace) = (workload.into(), "manifest_beyond".into(), None);
        r.ns_per_op = Latency {
            mean: p99_us * 300.0,
            p50: p99_us * 250.0,
            p99: p99_us * 1000.0,
            p999: p99_us * 3000.0,
            ..Latency::default()
        };
        r.ops_per_sec = ops_per_sec;
        r
    }

    #[test]
    fn readers_alone_and_beside_the_writer_with_its_rate() -> TestResult {
        let mut skipped = rec(SYNC_PUT, "postgres", "t8", 1.0, 0.0);
        (skipped.status, skipped.note) = (Status::Skipped, Some("no server".into()));
        let results = trace_results(vec![
            rec("manifest_ingest_get", "lmdb", "r4_alone_async", 10.0, 1.0),
            rec("manifest_ingest_get", "lmdb", "r4_writer_async", 25.0, 1.0),
            rec(WRITER, "lmdb", "r4_async", 1.0, 812_345.4),
            rec("manifest_ingest_get", "aimeta", "r4_alone_sync", 8.0, 1.0),
            rec(SYNC_PUT, "aimeta", "t1", 1.0, 410.0),
            rec(SYNC_PUT, "aimeta", "t8", 1.0, 2_050.0),
            rec(SYNC_PUT, "postgres", "t1", 1.0, 300.0),
            skipped,
        ]);
        let md = ingest_tables(&results).ok_or("no tables")?;
        let needles = [
            "## Ingest beside readers",
            "| lmdb | manifest_beyond | get | 4 | async | 2.50 µs | 10.0 µs | 30.0 µs | 6.25 µs \
             | 25.0 µs | 75.0 µs | 2.5× | 812,345 |  |",
            // aimeta: alone only, no writer measured.
            "| aimeta | manifest_beyond | get | 4 | sync | 2.00 µs | 8.00 µs | 24.0 µs | - | - | - \
             | - | - |  |",
            "## Synchronous commits",
            "| engine | data set | commits/s, 1 writer | commits/s, 8 writers | 8 ÷ 1 writer | note |",
            "| aimeta | manifest_beyond | 410 | 2,050 | 5.0× |  |",
            "| postgres | manifest_beyond | 300 | N/A | - | t8: skipped no server |",
        ];
        assert_contains_all(&md, &needles);
        // Engines in the report's order: aimeta's rows before lmdb's.
        assert!(md.find("| aimeta |") < md.find("| lmdb |"));
        Ok(())
    }

    #[test]
    fn no_ingest_records_no_tables_and_odd_variants_are_ignored() {
        let results = trace_results(vec![rec("manifest_ingest_get", "lmdb", "four", 1.0, 1.0)]);
        assert_eq!(ingest_tables(&results), None);
        assert_eq!(
            reader_variant("r8_writer_none"),
            Some((8, Company::Writer, "none"))
        );
        assert_eq!(reader_variant("r8_beside_none"), None);
        assert_eq!(writer_variant("r1_sync"), Some((1, "sync")));
    }
}
