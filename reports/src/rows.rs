//! The pieces every chart is built from: file stems, the subtitle, data set labels and
//! headings, and a record's bar (its value, or why there is none). Both the per-workload
//! charts (`charts`) and the story charts (`stories`) use them.

use crate::chart::{Cell, Row};
use crate::format;
use crate::merge::{Merged, Source};
use crate::order::{self, engine_colour};
use crate::results::{Record, Results, Status};
use crate::working_set;

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

/// The subtitle lines every chart carries: the settings of the run its records (those
/// `pick` accepts) came from, and where it was made. Records of several runs give each
/// run's lines, headed by the workloads it measured.
pub(crate) fn subtitle(merged: &Merged, pick: impl Fn(&Record) -> bool) -> Vec<String> {
    subtitle_of(merged, pick, true)
}

/// As `subtitle`, without the run's operations per measurement: what a trace replay's
/// charts print, whose operations are the trace's requests (given with the replay's
/// setting) rather than the run's count.
pub(crate) fn subtitle_without_ops(merged: &Merged, pick: impl Fn(&Record) -> bool) -> Vec<String> {
    subtitle_of(merged, pick, false)
}

fn subtitle_of(merged: &Merged, pick: impl Fn(&Record) -> bool, with_ops: bool) -> Vec<String> {
    let mut out = run_subtitle(merged, &pick, with_ops);
    let results = merged.results();
    let picked: Vec<&Record> = results.records.iter().filter(|r| pick(r)).collect();
    out.extend(working_set::subtitle_line(results, &picked));
    out
}

/// The runs' lines of a subtitle (see `subtitle`).
fn run_subtitle(merged: &Merged, pick: &impl Fn(&Record) -> bool, with_ops: bool) -> Vec<String> {
    let mut chosen = merged.sources_of(pick);
    if chosen.is_empty() {
        chosen = (0..merged.sources().len()).collect();
    }
    if let [only] = chosen[..] {
        return run_lines(&merged.sources()[only], with_ops).into();
    }
    let mut out = Vec::new();
    for i in chosen {
        let mut workloads = merged.workloads_of(i, pick);
        if workloads.is_empty() {
            workloads = merged.workloads_of(i, |_| true);
        }
        let [settings, made] = run_lines(&merged.sources()[i], with_ops);
        out.push(format!("{}: {settings}", workloads.join(", ")));
        out.push(made);
    }
    out
}

/// One run's two subtitle lines: its settings (with its operations per measurement when
/// `with_ops`), and where and when it was made.
fn run_lines(source: &Source, with_ops: bool) -> [String; 2] {
    let c = &source.config;
    let p = &source.provenance;
    let ops = if with_ops {
        format!(" · {} timed operations per measurement", c.ops)
    } else {
        String::new()
    };
    [
        format!(
            "scale {} · cache budget {} ({} mode) · durability {}{ops}",
            c.scale,
            format::bytes(c.budget_bytes as f64),
            c.budget_mode,
            c.durability,
        ),
        format!("{} · commit {} · {}", p.machine, p.commit, p.date),
    ]
}

/// A short name for `dataset` among `all` (the data sets of one chart), for the
/// measurements `records`: "fits" or "beyond" (with " the budget" when `long`) when no
/// other data set of `all` is of the same kind, else its own name. Data beyond the
/// budget whose measurements' working sets fit is never called beyond: it reads "data 6×
/// the budget, working set fits" (after its name, when it is not alone).
pub(crate) fn dataset_tag(
    results: &Results,
    all: &[&str],
    dataset: &str,
    records: &[&Record],
    long: bool,
) -> String {
    let kind = order::fits(results, dataset);
    let alone = all
        .iter()
        .filter(|d| order::fits(results, d) == kind)
        .count()
        == 1;
    let standing = working_set::standing(results, dataset, records);
    match standing.words(long, false) {
        Some(words) if alone && kind.is_some() => words,
        Some(words) if standing.qualified() => format!("{dataset}, {words}"),
        _ => dataset.to_string(),
    }
}

/// A heading describing a data set, for the measurements `records` under it: whether it
/// fits the budget (in working set, where the records carry one) and its size. (The
/// working sets themselves are in the chart's subtitle.)
pub(crate) fn dataset_header(results: &Results, dataset: &str, records: &[&Record]) -> String {
    let standing = working_set::standing(results, dataset, records);
    let mut s = dataset.to_string();
    if let Some(words) = standing.words(true, true) {
        s.push_str(": ");
        s.push_str(&words);
    }
    if let Some(d) = results.dataset(dataset) {
        // The words already give the data's ratio when they qualify it.
        let ratio = (!standing.qualified())
            .then(|| format!(", {}× the budget", format::trim_num(d.ratio_to_budget, 2)));
        s.push_str(&format!(
            " ({} keys, {} of data{})",
            format::thousands(d.keys),
            format::bytes(d.data_bytes as f64),
            ratio.unwrap_or_default()
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
        tails: vec![],
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestResult;

    #[test]
    fn subtitles_name_the_runs_of_the_chosen_records() -> TestResult {
        use crate::testing::{trace_record, trace_results};
        let mut get = trace_record("aimeta", "path_native", None, 1);
        (get.workload, get.trace) = ("manifest_get".into(), None);
        let first = trace_results(vec![get]);
        let mut second = trace_results(vec![trace_record("lmdb", "chained_probe", Some(10), 1)]);
        second.config.scale = "quick".into();
        let one = Merged::single(first.clone());
        let lines = subtitle(&one, |_| true);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("scale ci · cache budget 64 MiB (engine mode)"));
        assert!(lines[0].ends_with("timed operations per measurement"));
        let replay = subtitle_without_ops(&one, |_| true);
        assert!(replay[0].ends_with("durability async"), "{replay:?}");
        let both = Merged::merge(vec![("a".into(), first), ("b".into(), second)])
            .map_err(|e| e.to_string())?;
        assert_eq!(
            subtitle(&both, |r| r.workload == "kvcache_trace")[0],
            lines[0].replacen("scale ci", "scale quick", 1)
        );
        let all = subtitle(&both, |_| true);
        assert_eq!(all.len(), 4);
        assert!(all[0].starts_with("manifest_get: scale ci ·"), "{all:?}");
        assert!(
            all[2].starts_with("kvcache_trace: scale quick ·"),
            "{all:?}"
        );
        // Nothing chosen: every run, as there is no better answer.
        assert_eq!(subtitle(&both, |_| false), all);
        Ok(())
    }

    #[test]
    fn stems_cannot_escape_the_directory() -> TestResult {
        assert_eq!(file_stem("../../etc/passwd"), "______etc_passwd");
        assert_eq!(file_stem("manifest_scan"), "manifest_scan");
        assert_eq!(file_stem(""), "unnamed");
        Ok(())
    }
}
