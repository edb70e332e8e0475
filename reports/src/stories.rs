//! The three story charts: aimeta's ratio to LMDB per workload (the headline), the scan
//! cliff (manifest_scan when the data fits the cache budget and when it does not), and
//! the longest-prefix lookup strategies.

use crate::chart::{Cell, Chart, Reference, Row, Section, ValueAxis, ValueKind};
use crate::format;
use crate::merge::Merged;
use crate::order::{self, engine_colour};
use crate::results::Record;
use crate::rows::{
    dataset_header, dataset_tag, full_frame_note, missing_text, record_row, subtitle,
};
use crate::trace::is_headline_setting;

/// The engine the headline compares, and the one it compares against.
const HERO: &str = "aimeta";
const BASELINE: &str = "lmdb";

/// Scan workload of the scan cliff chart.
const SCAN: &str = "manifest_scan";
/// Workload of the longest-prefix chart.
const LPM: &str = "kvchain_lpm";

/// The fastest usable record of `engine` (bug reproductions excluded), and why there is
/// none otherwise.
fn best<'a>(recs: &[&'a Record], engine: &str) -> Result<&'a Record, String> {
    let mine: Vec<&Record> = recs
        .iter()
        .copied()
        .filter(|r| r.engine == engine && !order::is_bug_repro(r.variant.as_deref()))
        .filter(|r| is_headline_setting(r))
        .collect();
    mine.iter()
        .copied()
        .filter_map(|r| r.mean_ns().map(|m| (m, r)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, r)| r)
        .ok_or_else(|| match mine.first() {
            Some(r) => format!(
                "N/A: {engine}: {}",
                missing_text(r).trim_start_matches("N/A: ")
            ),
            None => format!("N/A: {engine} not measured"),
        })
}

/// (c) aimeta's mean time divided by LMDB's, per workload and data set, on a log axis
/// with a reference line at 1.
pub(crate) fn headline(merged: &Merged) -> Chart {
    let results = merged.results();
    let mut rows = Vec::new();
    for w in results.workloads() {
        let all = results.datasets_of(w);
        for &ds in &all {
            let every = results.records_of(w, ds);
            if !every
                .iter()
                .any(|r| r.engine == HERO || r.engine == BASELINE)
            {
                continue;
            }
            // One row per shape (scan offset, thread count, ingest phase): the fastest
            // method is picked within a shape, never across two.
            let mut shapes: Vec<Option<&str>> = every
                .iter()
                .map(|r| order::shape_of(r.variant.as_deref()))
                .collect();
            shapes.sort_by(|a, b| order::cmp_variant(*a, *b));
            shapes.dedup();
            for shape in shapes {
                let recs: Vec<&Record> = every
                    .iter()
                    .copied()
                    .filter(|r| order::shape_of(r.variant.as_deref()) == shape)
                    .collect();
                let named_workload = match shape {
                    Some(s) => format!("{w} {s}"),
                    None => w.to_string(),
                };
                let (hero, baseline) = (best(&recs, HERO), best(&recs, BASELINE));
                // The label speaks of the two measurements compared, where there are two.
                let compared: Vec<&Record> = match (&hero, &baseline) {
                    (Ok(a), Ok(l)) => vec![*a, *l],
                    _ => recs.clone(),
                };
                let label = format!(
                    "{named_workload}, {}",
                    dataset_tag(results, &all, ds, &compared, false)
                );
                let (cell, annotation) = match (hero, baseline) {
                    (Ok(a), Ok(l)) => {
                        let (am, lm) = (a.mean_ns().unwrap_or(0.0), l.mean_ns().unwrap_or(0.0));
                        let named: Vec<String> = [(HERO, &a.variant), ("LMDB", &l.variant)]
                            .iter()
                            .filter_map(|(e, v)| v.as_ref().map(|v| format!("{e} {v}")))
                            .collect();
                        // A shape is in the label already; only methods are worth naming.
                        let named = if shape.is_some() { Vec::new() } else { named };
                        let variants = (!named.is_empty()).then(|| named.join(" vs "));
                        if lm > 0.0 {
                            (Cell::Value(am / lm), variants)
                        } else {
                            (Cell::Missing("N/A: LMDB measured 0 ns".to_string()), None)
                        }
                    }
                    (Err(why), _) | (_, Err(why)) => (Cell::Missing(why), None),
                };
                rows.push(Row {
                    what: format!("{HERO} ÷ {BASELINE}, {named_workload} on {ds}"),
                    label,
                    colour: engine_colour(HERO),
                    faded: false,
                    cell,
                    annotation,
                    tails: vec![],
                });
            }
        }
    }
    let footnote = "Each engine's fastest method on each workload, data set and shape (scans \
         from an offset, thread counts and ingest phases are compared like with like); aimeta's \
         full_frame bug reproduction is left out, and of the trace replay (kvcache_trace) only \
         the 1-thread closed-loop replays count. Ratios of means from one run.";
    // A ratio, not a time: always on a log axis around a reference line at 1.
    let value_axis = ValueAxis {
        title: "aimeta's mean time ÷ LMDB's".to_string(),
        include: vec![0.5, 1.0, 2.0],
        reference: Some(Reference {
            value: 1.0,
            left: "← aimeta faster".to_string(),
            right: "aimeta slower →".to_string(),
        }),
        kind: ValueKind::Ratio,
        better: "below 1: aimeta is faster".to_string(),
        force_log: true,
    };
    Chart::new(
        "aimeta_vs_lmdb",
        "aimeta versus LMDB: mean time per operation, as a ratio".to_string(),
        subtitle(merged, |r| r.engine == HERO || r.engine == BASELINE),
        value_axis,
        vec![Section { header: None, rows }],
        vec![footnote.to_string()],
    )
}

/// (a) manifest_scan per engine, data that fits the budget beside data beyond it, with
/// aimeta's full_frame variant beside its paged mode.
pub(crate) fn scan_cliff(merged: &Merged) -> Chart {
    let results = merged.results();
    let datasets = results.datasets_of(SCAN);
    let label_of = |r: &Record| dataset_tag(results, &datasets, &r.dataset, &[r], true);
    let mut sections = Vec::new();
    for engine in results.engines() {
        let recs: Vec<&Record> = datasets
            .iter()
            .flat_map(|ds| results.records_of(SCAN, ds))
            .filter(|r| r.engine == engine)
            .collect();
        if recs.is_empty() {
            continue;
        }
        let mut variants: Vec<Option<&str>> = recs.iter().map(|r| r.variant.as_deref()).collect();
        variants.sort_by(|a, b| order::cmp_variant(*a, *b));
        variants.dedup();
        let mut rows = Vec::new();
        for v in &variants {
            let mine: Vec<&Record> = recs
                .iter()
                .copied()
                .filter(|r| r.variant.as_deref() == *v)
                .collect();
            let fits_mean = mine
                .iter()
                .filter(|r| order::fits(results, &r.dataset) == Some(true))
                .find_map(|r| r.mean_ns());
            for r in &mine {
                let fits = order::fits(results, &r.dataset);
                let label = match v {
                    Some(v) => format!("{v} · {}", label_of(r)),
                    None => label_of(r),
                };
                let mut row = record_row(r, label, fits == Some(true));
                if let (Some(f), Some(m), Some(false)) = (fits_mean, r.mean_ns(), fits) {
                    if f > 0.0 {
                        row.annotation = Some(format!("{} the fits time", format::ratio(m / f)));
                    }
                }
                rows.push(row);
            }
        }
        sections.push(Section {
            header: Some(engine.to_string()),
            rows,
        });
    }
    let names = |k: bool| {
        let v: Vec<&str> = datasets
            .iter()
            .copied()
            .filter(|d| order::fits(results, d) == Some(k))
            .collect();
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let scans: Vec<&Record> = datasets
        .iter()
        .flat_map(|ds| results.records_of(SCAN, ds))
        .collect();
    // Beyond in data, but not (throughout) in working set: the bars say which.
    let qualified = scans
        .iter()
        .any(|r| crate::working_set::standing(results, &r.dataset, &[r]).qualified());
    let mut footnotes = vec![if qualified {
        format!(
            "Lighter bars: data that fits the cache budget ({}); solid bars: data larger than \
             it ({}), labelled beyond only where the scans' working set is too.",
            names(true),
            names(false)
        )
    } else {
        format!(
            "Lighter bars: data that fits the cache budget ({}); solid bars: data beyond it ({}).",
            names(true),
            names(false)
        )
    }];
    footnotes.extend(full_frame_note(results, SCAN));
    let title = if qualified {
        "The scan cliff: manifest_scan on data inside and larger than the cache budget"
    } else {
        "The scan cliff: manifest_scan inside and beyond the cache budget"
    };
    let value_axis = ValueAxis::times("mean time per scan");
    let sub = subtitle(merged, |r| r.workload == SCAN);
    Chart::new(
        "scan_cliff",
        title.to_string(),
        sub,
        value_axis,
        sections,
        footnotes,
    )
}

/// (b) kvchain_lpm per engine: native lookup against the two emulations, on the
/// beyond-the-budget data set when there is one.
pub(crate) fn lpm_variants(merged: &Merged) -> Chart {
    let results = merged.results();
    let datasets = results.datasets_of(LPM);
    let dataset = datasets
        .iter()
        .copied()
        .find(|d| order::fits(results, d) == Some(false))
        .or_else(|| datasets.first().copied());
    let mut sections = Vec::new();
    let mut sub = subtitle(merged, |r| r.workload == LPM);
    if let Some(ds) = dataset {
        let recs = results.records_of(LPM, ds);
        sub.push(format!("data set {}", dataset_header(results, ds, &recs)));
        for engine in results.engines() {
            let mine: Vec<&Record> = recs
                .iter()
                .copied()
                .filter(|r| r.engine == engine)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let fastest = best(&mine, engine)
                .ok()
                .filter(|_| mine.iter().filter(|r| r.mean_ns().is_some()).count() > 1);
            let rows = mine
                .iter()
                .map(|r| {
                    let label = r.variant.clone().unwrap_or_else(|| "default".to_string());
                    let mut row = record_row(r, label, false);
                    if fastest.is_some_and(|f| std::ptr::eq(f, *r)) {
                        row.annotation = Some("fastest".to_string());
                    }
                    row
                })
                .collect();
            sections.push(Section {
                header: Some(engine.to_string()),
                rows,
            });
        }
    }
    let mut footnotes = vec![
        "native: the engine's own longest-prefix lookup; predecessor_seek and bisect: lookups \
         built from the engine's ordinary seeks and gets."
            .to_string(),
    ];
    footnotes.extend(full_frame_note(results, LPM));
    if datasets.len() > 1 {
        footnotes.push(format!("Other data sets: see the {LPM} chart."));
    }
    let title = "Longest-prefix lookup: native vs predecessor_seek vs bisect";
    let value_axis = ValueAxis::times("mean time per lookup");
    Chart::new(
        "lpm_variants",
        title.to_string(),
        sub,
        value_axis,
        sections,
        footnotes,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Latency, Provenance, Results, RunConfig, Status, SCHEMA_VERSION};
    use crate::svg::LIGHT;
    use crate::testing::{assert_contains_all, TestResult};

    fn rec(workload: &str, engine: &str, status: Status, mean: f64) -> Record {
        Record {
            workload: workload.into(),
            dataset: "manifest_beyond".into(),
            engine: engine.into(),
            variant: None,
            status,
            note: (status != Status::Ok).then(|| "why | not".to_string()),
            ops: 10,
            threads: 1,
            ns_per_op: Latency {
                mean,
                ..Latency::default()
            },
            ops_per_sec: 1.0,
            size_on_disk_bytes: None,
            io_per_op: None,
            load_secs: None,
            trace: None,
            working_set: None,
            alloc_per_op: None,
            device_beside: None,
        }
    }

    fn results(records: Vec<Record>) -> Merged {
        Merged::single(Results {
            schema_version: SCHEMA_VERSION,
            device: None,
            provenance: Provenance {
                machine: "m".into(),
                cores: 1,
                memory_bytes: 1,
                os: "o".into(),
                commit: "c".into(),
                date: "d".into(),
                rustc: "r".into(),
                command: "x".into(),
                filesystem: "ext4".into(),
                engine_versions: Default::default(),
            },
            config: RunConfig {
                scale: "ci".into(),
                budget_bytes: 1 << 20,
                budget_mode: "cgroup".into(),
                durability: "sync".into(),
                seed: 1,
                ops: 10,
                sweep: None,
            },
            datasets: vec![],
            records,
        })
    }

    #[test]
    fn the_headline_says_why_a_ratio_is_missing() -> TestResult {
        let r = results(vec![
            rec("manifest_get", "aimeta", Status::Ok, 500.0),
            rec("manifest_cas", "aimeta", Status::Ok, 500.0),
            rec("manifest_cas", "lmdb", Status::Unsupported, 0.0),
            rec("manifest_list", "lmdb", Status::Ok, 500.0),
            rec("manifest_list", "aimeta", Status::Error, 0.0),
        ]);
        let needles = [
            "N/A: lmdb not measured",
            "N/A: lmdb: unsupported: why | not",
            "N/A: aimeta: error: why | not",
            "cache budget 1 MiB (cgroup mode)",
        ];
        assert_contains_all(&headline(&r).render(&LIGHT), &needles);
        Ok(())
    }

    #[test]
    fn story_charts_without_their_workload_say_so() -> TestResult {
        let r = results(vec![rec("manifest_get", "aimeta", Status::Ok, 500.0)]);
        for chart in [scan_cliff(&r), lpm_variants(&r)] {
            assert!(chart
                .render(&LIGHT)
                .contains("no measurements in this results file"));
        }
        Ok(())
    }
}
