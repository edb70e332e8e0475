//! The charts made from a results file: one per workload, plus the story charts (see
//! `stories`). Each is rendered in a light and a dark theme.

use crate::chart::{Cell, Chart, Row, Section, ValueKind};
use crate::format;
use crate::order::{self, engine_colour};
use crate::results::{Record, Results, Status};
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

/// A file stem from a name: characters other than ASCII letters, digits, `-` and `_`
/// become `_`, so a name can never leave the charts directory.
pub(crate) fn file_stem(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "unnamed".to_string()
    } else {
        s
    }
}

/// The subtitle lines every chart carries: the run's settings and where it was made.
pub(crate) fn subtitle(results: &Results) -> Vec<String> {
    let c = &results.config;
    let p = &results.provenance;
    vec![
        format!(
            "scale {} · cache budget {} ({} mode) · durability {} · {} timed operations per measurement",
            c.scale,
            format::bytes(c.budget_bytes as f64),
            c.budget_mode,
            c.durability,
            c.ops
        ),
        format!("{} · commit {} · {}", p.machine, p.commit, p.date),
    ]
}

/// A short name for `dataset` among `all` (the data sets of one chart): "fits" or
/// "beyond" (with " the budget" when `long`) when no other data set of `all` is of the
/// same kind, else its own name.
pub(crate) fn dataset_tag(results: &Results, all: &[&str], dataset: &str, long: bool) -> String {
    let kind = order::fits(results, dataset);
    let alone = all
        .iter()
        .filter(|d| order::fits(results, d) == kind)
        .count()
        == 1;
    let suffix = if long { " the budget" } else { "" };
    match kind {
        Some(true) if alone => format!("fits{suffix}"),
        Some(false) if alone => format!("beyond{suffix}"),
        _ => dataset.to_string(),
    }
}

/// A heading describing a data set.
pub(crate) fn dataset_header(results: &Results, dataset: &str) -> String {
    let kind = match order::fits(results, dataset) {
        Some(true) => "fits the cache budget",
        Some(false) => "beyond the cache budget",
        None => "",
    };
    let mut s = dataset.to_string();
    if !kind.is_empty() {
        s.push_str(": ");
        s.push_str(kind);
    }
    if let Some(d) = results.dataset(dataset) {
        s.push_str(&format!(
            " ({} keys, {} of data, {}× the budget)",
            format::thousands(d.keys),
            format::bytes(d.data_bytes as f64),
            format::trim_num(d.ratio_to_budget, 2)
        ));
    }
    s
}

/// Why a record has no bar.
pub(crate) fn missing_text(r: &Record) -> String {
    let head = match r.status {
        Status::Ok => "N/A: invalid measurement",
        Status::Unsupported => "N/A: unsupported",
        Status::Skipped => "N/A: skipped",
        Status::Error => "error",
    };
    match &r.note {
        Some(n) if !n.trim().is_empty() => format!("{head}: {}", n.trim()),
        _ => head.to_string(),
    }
}

/// The bar (or the reason for none) of a record.
pub(crate) fn cell(r: &Record) -> Cell {
    match r.mean_ns() {
        Some(v) => Cell::Value(v),
        None => Cell::Missing(missing_text(r)),
    }
}

/// "engine" or "engine variant".
pub(crate) fn engine_label(r: &Record) -> String {
    match &r.variant {
        Some(v) => format!("{} {v}", r.engine),
        None => r.engine.clone(),
    }
}

/// A bar for a record, coloured by engine.
pub(crate) fn record_row(r: &Record, label: String, faded: bool) -> Row {
    Row {
        what: format!("{} on {}", engine_label(r), r.dataset),
        label,
        colour: engine_colour(&r.engine),
        faded,
        cell: cell(r),
        annotation: None,
    }
}

/// The note explaining aimeta's full_frame variants.
const FULL_FRAME_NOTE: &str = "full_frame variants reproduce the seed report's bug (scans and \
     longest-prefix lookups read whole 512 KiB frames on a miss); the others read pages.";

/// The full_frame note, when `workload` has a bug-reproduction record to explain.
pub(crate) fn full_frame_note(results: &Results, workload: &str) -> Option<String> {
    results
        .records
        .iter()
        .any(|r| r.workload == workload && order::is_bug_repro(r.variant.as_deref()))
        .then(|| FULL_FRAME_NOTE.to_string())
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
    Chart {
        stem,
        title,
        subtitle: subtitle(results),
        axis_title: order::per_what(workload).to_string(),
        better: "lower is better".to_string(),
        kind: ValueKind::Time,
        force_log: false,
        include: vec![],
        reference: None,
        sections,
        footnotes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn stems_cannot_escape_the_directory() -> TestResult {
        assert_eq!(file_stem("../../etc/passwd"), "______etc_passwd");
        assert_eq!(file_stem("manifest_scan"), "manifest_scan");
        assert_eq!(file_stem(""), "unnamed");
        Ok(())
    }
}
