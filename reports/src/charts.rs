//! The charts made from a results file: one per workload, plus the story charts (see
//! `stories`). Each is rendered in a light and a dark theme.

use crate::chart::{Chart, Section, ValueAxis};
use crate::order;
use crate::results::Results;
use crate::rows::{dataset_header, engine_label, file_stem, full_frame_note, record_row, subtitle};
use crate::stories;
use crate::svg::THEMES;

/// One chart, rendered in both themes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedChart {
    /// File stem: the chart is written as `<stem>-light.svg` and `<stem>-dark.svg`.
    pub stem: String,
    /// The chart's title (also its alt text).
    pub title: String,
    /// Whether this is a story chart (shown first in the README) rather than a
    /// per-workload chart.
    pub story: bool,
    /// SVG on a white background.
    pub light: String,
    /// SVG on a dark background.
    pub dark: String,
}

/// Renders every chart for `results`: the three story charts (aimeta versus LMDB, the
/// scan cliff, longest-prefix lookup variants), then one chart per workload, in a stable
/// order.
pub fn render_charts(results: &Results) -> Vec<RenderedChart> {
    let stories = [
        stories::headline(results),
        stories::scan_cliff(results),
        stories::lpm_variants(results),
    ];
    let story_stems: Vec<String> = stories.iter().map(|c| c.stem.clone()).collect();
    let workloads = results
        .workloads()
        .into_iter()
        .map(|w| workload_chart(results, w, &story_stems));
    stories
        .iter()
        .map(|c| render(c, true))
        .chain(workloads.map(|c| render(&c, false)))
        .collect()
}

fn render(chart: &Chart, story: bool) -> RenderedChart {
    let [light, dark] = THEMES.map(|t| chart.render(&t));
    RenderedChart {
        stem: chart.stem.clone(),
        title: chart.title.clone(),
        story,
        light,
        dark,
    }
}

fn workload_chart(results: &Results, workload: &str, reserved: &[String]) -> Chart {
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
        .map(|ds| Section {
            header: Some(dataset_header(results, ds)),
            rows: results
                .records_of(workload, ds)
                .into_iter()
                .map(|r| record_row(r, engine_label(r), false))
                .collect(),
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
        subtitle(results),
        value_axis,
        sections,
        footnotes,
    )
}
