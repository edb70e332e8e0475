//! The charts of an `ai-meta sweep` (a results file whose `config.sweep` is set): per
//! workload (and scan shape), each engine's mean time per operation against the data
//! set's size in keys, on log-log axes, with the device's 4 KiB read at queue depth 1 as
//! a floor; and per thread workload, each engine's throughput against its reader
//! threads, with the device's read rates at queue depths 1 and 8 for gets.

use std::collections::BTreeMap;

use crate::format;
use crate::line_chart::{Floor, LineChart, Point, Series, XKind, YKind};
use crate::merge::Merged;
use crate::order::{self, engine_colour};
use crate::results::{DeviceFloor, Record, Results};
use crate::rows::{file_stem, missing_text, subtitle};
use crate::trace::TRACE_WORKLOAD;

/// The name ending of the thread workloads (`manifest_get_threads`).
const THREADS_SUFFIX: &str = "_threads";

/// The records of the sweep runs among the merged files, with what the charts need of
/// those runs.
struct Sweep<'a> {
    results: &'a Results,
    records: Vec<&'a Record>,
    /// The first sweep run's device floor, if it measured one.
    device: Option<&'a DeviceFloor>,
    /// The data sets the thread counts ran on.
    threads_datasets: Vec<&'a str>,
}

impl<'a> Sweep<'a> {
    fn of(merged: &'a Merged) -> Sweep<'a> {
        let results = merged.results();
        let sources = merged.sources();
        let is_sweep = |i: usize| {
            merged
                .source_index(i)
                .is_some_and(|s| sources[s].config.sweep.is_some())
        };
        let records = results
            .records
            .iter()
            .enumerate()
            .filter(|(i, _)| is_sweep(*i))
            .map(|(_, r)| r)
            .collect();
        let sweeps = sources.iter().filter(|s| s.config.sweep.is_some());
        Sweep {
            results,
            records,
            device: sweeps.clone().find_map(|s| s.device.as_ref()),
            threads_datasets: sweeps
                .filter_map(|s| s.config.sweep.as_ref())
                .map(|c| c.threads_dataset.as_str())
                .collect(),
        }
    }

    /// The size in keys of `dataset`: from the data set list, else from its name
    /// (`manifest_1e7`, `manifest_100000`).
    fn keys(&self, dataset: &str) -> Option<f64> {
        let listed = self.results.dataset(dataset).map(|d| d.keys as f64);
        let named = || {
            let (_, n) = dataset.rsplit_once('_')?;
            n.parse::<f64>().ok()
        };
        listed.or_else(named).filter(|k| k.is_finite() && *k >= 1.0)
    }
}

/// Every sweep chart: cost against size, then throughput against threads. Empty when
/// no merged file is a sweep.
pub(crate) fn sweep_charts(merged: &Merged) -> Vec<LineChart> {
    let sweep = Sweep::of(merged);
    if sweep.records.is_empty() {
        return Vec::new();
    }
    let mut out = size_charts(merged, &sweep);
    out.extend(thread_charts(merged, &sweep));
    out
}

/// The variant a size chart groups a record under: the engine's ordinary scan mode
/// (`paged`) is the shape without a variant; bug reproductions are left out.
fn shape(r: &Record) -> Option<Option<&str>> {
    match r.variant.as_deref() {
        v if order::is_bug_repro(v) => None,
        Some("paged") | None => Some(None),
        Some(v) => Some(Some(v)),
    }
}

/// What a shape of a workload does, for the footnote.
fn shape_description(workload: &str, variant: Option<&str>) -> Option<String> {
    let scan = workload == "manifest_scan";
    let text = match variant {
        None if scan => {
            "100 entries with values from the start of a random shard (the seed's shape)"
        }
        Some("offset_uniform") if scan => {
            "100 entries with values from a random sample inside a uniformly chosen shard"
        }
        Some("offset_zipf") if scan => {
            "100 entries with values from a random sample inside a shard chosen by a Zipf \
             draw (theta 0.99)"
        }
        _ => return order::workload_description(workload).map(|d| format!("{workload}: {d}")),
    };
    Some(format!("{workload}: {text}"))
}

/// The footnote of the measurements with no point, by engine: "postgres: N/A: skipped:
/// …" when all of an engine's are missing for one reason, else one per missing point.
fn missing_note(recs: &[&Record], at: impl Fn(&Record) -> String) -> Option<String> {
    let mut by_engine: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in recs {
        by_engine.entry(r.engine.as_str()).or_default().push(r);
    }
    let mut engines: Vec<&str> = by_engine.keys().copied().collect();
    engines.sort_by(|a, b| order::cmp_engine(a, b));
    let mut parts = Vec::new();
    for engine in engines {
        let mine = &by_engine[engine];
        let missing: Vec<&Record> = mine.iter().copied().filter(|r| !drawn(r)).collect();
        let reasons: Vec<String> = missing.iter().map(|r| missing_text(r)).collect();
        if missing.is_empty() {
            continue;
        }
        if missing.len() == mine.len() && reasons.windows(2).all(|w| w[0] == w[1]) {
            parts.push(format!("{engine}: {}", reasons[0]));
        } else {
            for (r, why) in missing.iter().zip(&reasons) {
                parts.push(format!("{engine} at {}: {why}", at(r)));
            }
        }
    }
    (!parts.is_empty()).then(|| format!("Not drawn: {}.", parts.join("; ")))
}

/// Whether a record gives a point of its chart.
fn drawn(r: &Record) -> bool {
    r.mean_ns().is_some_and(|m| m > 0.0)
}

/// The lines of `recs`, one per engine in the report's order: `point` gives a record's
/// point, if it has one.
fn series(recs: &[&Record], point: impl Fn(&Record) -> Option<Point>) -> Vec<Series> {
    let mut engines: Vec<&str> = recs.iter().map(|r| r.engine.as_str()).collect();
    engines.sort_by(|a, b| order::cmp_engine(a, b));
    engines.dedup();
    engines
        .into_iter()
        .map(|engine| {
            let points: Vec<Point> = recs
                .iter()
                .filter(|r| r.engine == engine)
                .filter_map(|r| point(r))
                .collect();
            let label = if points.is_empty() {
                format!("{engine}: N/A")
            } else {
                engine.to_string()
            };
            Series {
                label,
                colour: engine_colour(engine),
                points,
            }
        })
        .collect()
}

/// "with O_DIRECT" or why not.
fn direct_words(device: &DeviceFloor) -> &'static str {
    if device.direct {
        "with O_DIRECT"
    } else {
        "through the page cache (the file system refused O_DIRECT), so the disk itself may be \
         slower"
    }
}

/// The subtitle of a sweep chart over `recs`: the runs', then the sweep's sizes.
fn sweep_subtitle(merged: &Merged, recs: &[&Record], line: String) -> Vec<String> {
    let mut sub = subtitle(merged, |r| recs.iter().any(|c| std::ptr::eq(*c, r)));
    sub.push(line);
    sub
}

/// One chart per workload and shape: mean time per operation against keys.
fn size_charts(merged: &Merged, sweep: &Sweep<'_>) -> Vec<LineChart> {
    let mut groups: BTreeMap<(&str, Option<&str>), Vec<&Record>> = BTreeMap::new();
    for r in &sweep.records {
        let thread_curve = r.workload.ends_with(THREADS_SUFFIX);
        if thread_curve || r.workload == TRACE_WORKLOAD || sweep.keys(&r.dataset).is_none() {
            continue;
        }
        if let Some(v) = shape(r) {
            groups.entry((r.workload.as_str(), v)).or_default().push(r);
        }
    }
    let mut keys: Vec<(&str, Option<&str>)> = groups.keys().copied().collect();
    keys.sort_by(|a, b| order::cmp_workload(a.0, b.0).then_with(|| order::cmp_variant(a.1, b.1)));
    let mut out = Vec::new();
    for (workload, variant) in keys {
        let recs = &groups[&(workload, variant)];
        let mut sizes: Vec<f64> = recs.iter().filter_map(|r| sweep.keys(&r.dataset)).collect();
        sizes.sort_by(f64::total_cmp);
        sizes.dedup();
        if sizes.len() < 2 {
            continue;
        }
        let name = match variant {
            Some(v) => format!("{workload} {v}"),
            None => workload.to_string(),
        };
        let lines = series(recs, |r| {
            let (x, y) = (sweep.keys(&r.dataset)?, r.mean_ns().filter(|m| *m > 0.0)?);
            let tip = format!(
                "{}, {name} on {} ({} keys): {}",
                r.engine,
                r.dataset,
                format::count_tick(x),
                format::duration(y)
            );
            Some(Point { x, y, tip })
        });
        let mut floors = Vec::new();
        let mut footnotes: Vec<String> = shape_description(workload, variant).into_iter().collect();
        if let Some(d) = sweep.device.filter(|d| d.read_4k_qd1.mean > 0.0) {
            floors.push(Floor {
                value: d.read_4k_qd1.mean,
                label: format!(
                    "disk: 4 KiB read at QD1, {}",
                    format::duration(d.read_4k_qd1.mean)
                ),
            });
            footnotes.push(format!(
                "Dashed line: the device's floor in {}, the mean of random 4 KiB reads at queue \
                 depth 1 {}, measured at the start of the run: an operation that must read \
                 the disk once cannot be faster.",
                d.path,
                direct_words(d)
            ));
        }
        footnotes.extend(missing_note(recs, |r| {
            sweep.keys(&r.dataset).map_or_else(
                || r.dataset.clone(),
                |k| format!("{} keys", format::count_tick(k)),
            )
        }));
        let line = format!(
            "sweep: {} sizes from {} to {} keys · one line per engine",
            sizes.len(),
            format::count_tick(sizes[0]),
            format::count_tick(sizes[sizes.len() - 1])
        );
        out.push(LineChart {
            stem: file_stem(&format!("size_{}", name.replace(' ', "_"))),
            title: format!("Cost against data size: {name}"),
            subtitle: sweep_subtitle(merged, recs, line),
            x: XKind::Keys,
            x_title: "data set size in keys".to_string(),
            y: YKind::Time,
            y_title: order::per_what(workload).to_string(),
            better: "lower is better".to_string(),
            series: lines,
            floors,
            footnotes,
        });
    }
    out
}

/// The threads of a thread-curve record: its `threads`, else its variant's `t<N>`.
fn threads_of(r: &Record) -> Option<f64> {
    if r.threads > 0 {
        return Some(f64::from(r.threads));
    }
    let n: u32 = r.variant.as_deref()?.strip_prefix('t')?.parse().ok()?;
    (n > 0).then_some(f64::from(n))
}

/// One chart per thread workload: throughput over all threads against threads.
fn thread_charts(merged: &Merged, sweep: &Sweep<'_>) -> Vec<LineChart> {
    let mut workloads: Vec<&str> = sweep
        .records
        .iter()
        .map(|r| r.workload.as_str())
        .filter(|w| w.ends_with(THREADS_SUFFIX))
        .collect();
    workloads.sort_by(|a, b| order::cmp_workload(a, b));
    workloads.dedup();
    let mut out = Vec::new();
    for workload in workloads {
        let all: Vec<&Record> = sweep
            .records
            .iter()
            .copied()
            .filter(|r| r.workload == workload)
            .collect();
        // The sweep's thread data set, when its records name it.
        let on_it: Vec<&Record> = all
            .iter()
            .copied()
            .filter(|r| sweep.threads_datasets.contains(&r.dataset.as_str()))
            .collect();
        let recs = if on_it.is_empty() { all } else { on_it };
        let base = workload.trim_end_matches(THREADS_SUFFIX);
        let mut datasets: Vec<&str> = recs.iter().map(|r| r.dataset.as_str()).collect();
        datasets.sort_by(|a, b| order::cmp_dataset(sweep.results, a, b));
        datasets.dedup();
        let lines = series(&recs, |r| {
            let x = threads_of(r)?;
            let y = Some(r.ops_per_sec).filter(|y| drawn(r) && y.is_finite() && *y > 0.0)?;
            let threads = if x == 1.0 { "thread" } else { "threads" };
            let tip = format!(
                "{}, {base} with {x} {threads}: {}",
                r.engine,
                format::rate(y)
            );
            Some(Point { x, y, tip })
        });
        let mut floors = Vec::new();
        let mut footnotes = vec![
            "Operations per second over all reader threads together (each thread's latency is \
             in results.md)."
                .to_string(),
        ];
        let gets = base.contains("get");
        if let Some(d) = sweep.device.filter(|_| gets) {
            for (depth, iops) in [(1, d.iops_qd1), (8, d.iops_qd8)] {
                if iops.is_finite() && iops > 0.0 {
                    floors.push(Floor {
                        value: iops,
                        label: format!(
                            "disk: random 4 KiB reads at QD{depth}, {}",
                            format::rate(iops)
                        ),
                    });
                }
            }
            footnotes.push(format!(
                "Dashed lines: the device's own random 4 KiB reads per second in {} at queue \
                 depths 1 and 8 {}, measured at the start of the run: gets that each read the \
                 disk are bounded by them at those depths.",
                d.path,
                direct_words(d)
            ));
        }
        footnotes.extend(missing_note(&recs, |r| {
            threads_of(r).map_or_else(|| r.dataset.clone(), |t| format!("{t} threads"))
        }));
        let line = format!("on {} · one line per engine", datasets.join(", "));
        out.push(LineChart {
            stem: file_stem(&format!("threads_{base}")),
            title: format!("Throughput against reader threads: {base}"),
            subtitle: sweep_subtitle(merged, &recs, line),
            x: XKind::Threads,
            x_title: "reader threads".to_string(),
            y: YKind::Rate,
            y_title: "operations per second over all threads".to_string(),
            better: "higher is better".to_string(),
            series: lines,
            floors,
            footnotes,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{trace_record, TestResult};

    #[test]
    fn thread_counts_come_from_the_record_or_its_variant() -> TestResult {
        let mut r = trace_record("aimeta", "t8", None, 4);
        assert_eq!(threads_of(&r), Some(4.0));
        r.threads = 0;
        assert_eq!(threads_of(&r), Some(8.0));
        r.variant = Some("eight".into());
        assert_eq!(threads_of(&r), None);
        Ok(())
    }

    #[test]
    fn scan_shapes_fold_the_paged_mode_and_drop_bug_reproductions() -> TestResult {
        let mut r = trace_record("aimeta", "paged", None, 1);
        assert_eq!(shape(&r), Some(None));
        r.variant = Some("full_frame".into());
        assert_eq!(shape(&r), None);
        r.variant = Some("offset_zipf".into());
        assert_eq!(shape(&r), Some(Some("offset_zipf")));
        Ok(())
    }
}
