//! The charts made from a results file: the story charts (the trace charts of
//! `trace_charts` first, then those of `stories`), then one per workload. Each is
//! rendered in a light and a dark theme.

use crate::chart::{Chart, Section, ValueAxis};
use crate::ingest_chart;
use crate::line_chart::LineChart;
use crate::merge::Merged;
use crate::order;
use crate::results::Results;
use crate::rows::{dataset_header, engine_label, file_stem, full_frame_note, record_row, subtitle};
use crate::stories;
use crate::svg::THEMES;
use crate::sweep_charts;
use crate::trace::TRACE_WORKLOAD;
use crate::trace_charts;

/// Which part of the report a chart belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChartKind {
    /// A story chart, shown first in the README.
    Story,
    /// A chart of an `ai-meta sweep` (cost against data size, throughput against
    /// threads), shown after the story charts.
    Sweep,
    /// One workload's chart, folded away in the README.
    Workload,
}

/// One chart, rendered in both themes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedChart {
    /// File stem: the chart is written as `<stem>-light.svg` and `<stem>-dark.svg`.
    pub stem: String,
    /// The chart's title (also its alt text).
    pub title: String,
    /// Which part of the report it belongs to.
    pub kind: ChartKind,
    /// SVG on a white background.
    pub light: String,
    /// SVG on a dark background.
    pub dark: String,
}

/// Renders every chart for `results`: the story charts, that is the three trace charts
/// when there are `kvcache_trace` records (per-request time, hit rate against capacity,
/// lookup percentiles: the closest to real use, so first), then aimeta versus LMDB, the
/// scan cliff and the longest-prefix lookup variants; then, for a sweep's records, cost
/// against data size and throughput against threads; then one chart per workload but
/// the trace (whose records vary in more than engine and data set, which the trace
/// charts and results.md show), in a stable order.
pub fn render_charts(results: &Results) -> Vec<RenderedChart> {
    merged_charts(&Merged::single(results.clone()))
}

/// [`render_charts`] of several files drawn together: each chart's subtitle names the
/// runs of its own records.
pub(crate) fn merged_charts(merged: &Merged) -> Vec<RenderedChart> {
    let results = merged.results();
    // A sweep has charts of its own: the stories draw the other runs, when there are.
    let single_runs = merged.without(|s| s.config.sweep.is_some());
    let mut stories = trace_charts::trace_charts(merged);
    stories.extend([
        stories::headline(&single_runs),
        stories::scan_cliff(&single_runs),
        stories::lpm_variants(&single_runs),
    ]);
    stories.extend(ingest_chart::ingest_chart(merged));
    let sweeps = sweep_charts::sweep_charts(merged);
    let reserved: Vec<String> = stories
        .iter()
        .map(|c| c.stem.clone())
        .chain(sweeps.iter().map(|c| c.stem.clone()))
        .collect();
    let workloads = results
        .workloads()
        .into_iter()
        .filter(|w| *w != TRACE_WORKLOAD)
        .map(|w| workload_chart(merged, w, &reserved));
    let drawn =
        |stem: &str, title: &str, kind: ChartKind, [light, dark]: [String; 2]| RenderedChart {
            stem: stem.to_string(),
            title: title.to_string(),
            kind,
            light,
            dark,
        };
    let bars = |c: &Chart, kind| drawn(&c.stem, &c.title, kind, THEMES.map(|t| c.render(&t)));
    let lines = |c: &LineChart| {
        let svgs = THEMES.map(|t| c.render(&t));
        drawn(&c.stem, &c.title, ChartKind::Sweep, svgs)
    };
    stories
        .iter()
        .map(|c| bars(c, ChartKind::Story))
        .chain(sweeps.iter().map(lines))
        .chain(workloads.map(|c| bars(&c, ChartKind::Workload)))
        .collect()
}

fn workload_chart(merged: &Merged, workload: &str, reserved: &[String]) -> Chart {
    let results = merged.results();
    let mut stem = file_stem(workload);
    if reserved.contains(&stem) {
        stem = format!("workload_{stem}");
    }
    let title = match order::workload_description(workload) {
        Some(d) => format!("{workload}: {d}"),
        None => workload.to_string(),
    };
    let sections: Vec<Section> = results
        .datasets_of(workload)
        .into_iter()
        .map(|ds| {
            let recs = results.records_of(workload, ds);
            Section {
                header: Some(dataset_header(results, ds, &recs)),
                rows: recs
                    .into_iter()
                    .map(|r| record_row(r, engine_label(r), false))
                    .collect(),
            }
        })
        .collect();
    let mut footnotes: Vec<String> = full_frame_note(results, workload).into_iter().collect();
    let recs = || results.records.iter().filter(|r| r.workload == workload);
    if let Some(t) = recs().map(|r| r.threads).max().filter(|t| *t > 1) {
        footnotes.push(format!(
            "Up to {t} threads; times are per operation per thread (see results.md for ops/s)."
        ));
    }
    let value_axis = ValueAxis::times(order::per_what(workload));
    Chart::new(
        &stem,
        title,
        subtitle(merged, |r| r.workload == workload),
        value_axis,
        sections,
        footnotes,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{trace_record, trace_results, TestResult};

    #[test]
    fn trace_charts_come_first_and_the_trace_gets_no_workload_chart() -> TestResult {
        let mut get = trace_record("aimeta", "path_native", None, 1);
        (get.workload, get.dataset, get.variant, get.trace) =
            ("manifest_get".into(), "manifest_fits".into(), None, None);
        let results = trace_results(vec![
            trace_record("aimeta", "path_native", Some(10), 1),
            trace_record("lmdb", "chained_probe", Some(10), 1),
            get,
        ]);
        let charts = render_charts(&results);
        let stems: Vec<(&str, ChartKind)> =
            charts.iter().map(|c| (c.stem.as_str(), c.kind)).collect();
        let want = [
            ("trace_request_time", ChartKind::Story),
            ("trace_hit_rate", ChartKind::Story),
            ("trace_lookup_percentiles", ChartKind::Story),
            ("aimeta_vs_lmdb", ChartKind::Story),
            ("scan_cliff", ChartKind::Story),
            ("lpm_variants", ChartKind::Story),
            ("manifest_get", ChartKind::Workload),
        ];
        assert_eq!(stems, want);
        Ok(())
    }
}
