//! Whether a measurement is beyond the cache budget in what it touched, not only in the
//! size of its data: a data set many times the budget whose timed operations touch a
//! few leaves is in memory for every engine, and the charts must not call it "beyond".
//! Records that carry no working set keep the data set's own word (its `fits_budget`).

use std::collections::BTreeMap;

use crate::format;
use crate::order;
use crate::results::{Record, Results};

/// Whether the working sets of a group of measurements fit the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every working set fits.
    Fits,
    /// Every working set is beyond.
    Beyond,
    /// Some are, some are not.
    Mixed,
}

/// The working sets of a group of measurements: smallest and largest, in bytes and as
/// ratios to the budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Span {
    lo_bytes: u64,
    hi_bytes: u64,
    lo_ratio: f64,
    hi_ratio: f64,
    /// The budget in bytes (from the largest working set and its ratio), when known.
    budget: Option<f64>,
}

impl Span {
    /// The span of the working sets `records` carry; `None` when none carries one.
    pub(crate) fn of<'a>(records: impl IntoIterator<Item = &'a Record>) -> Option<Span> {
        let mut span: Option<Span> = None;
        for ws in records.into_iter().filter_map(|r| r.working_set.as_ref()) {
            let budget = (ws.ratio_to_budget > 0.0).then(|| ws.bytes as f64 / ws.ratio_to_budget);
            let s = span.get_or_insert(Span {
                lo_bytes: ws.bytes,
                hi_bytes: ws.bytes,
                lo_ratio: ws.ratio_to_budget,
                hi_ratio: ws.ratio_to_budget,
                budget,
            });
            s.lo_bytes = s.lo_bytes.min(ws.bytes);
            s.lo_ratio = s.lo_ratio.min(ws.ratio_to_budget);
            if ws.bytes > s.hi_bytes || ws.ratio_to_budget > s.hi_ratio {
                s.budget = budget.or(s.budget);
            }
            s.hi_bytes = s.hi_bytes.max(ws.bytes);
            s.hi_ratio = s.hi_ratio.max(ws.ratio_to_budget);
        }
        span
    }

    /// Whether the working sets are beyond the budget (`WorkingSet::beyond_budget`).
    pub(crate) fn verdict(&self) -> Verdict {
        if self.lo_ratio > 1.0 {
            Verdict::Beyond
        } else if self.hi_ratio > 1.0 {
            Verdict::Mixed
        } else {
            Verdict::Fits
        }
    }

    /// "41 MiB = 2.6× the 16 MiB budget", "2.4 MiB fits the 16 MiB budget", or for a
    /// range "20 MiB to 41 MiB = 1.3× to 2.6× the 16 MiB budget".
    pub(crate) fn text(&self) -> String {
        let budget = match self.budget {
            Some(b) => format!("the {} budget", format::bytes(b)),
            None => "the budget".to_string(),
        };
        let (lo, hi) = (
            format::bytes(self.lo_bytes as f64),
            format::bytes(self.hi_bytes as f64),
        );
        let one = lo == hi;
        match (self.verdict(), one) {
            (Verdict::Fits, true) => format!("{hi} fits {budget}"),
            (Verdict::Fits, false) => format!("{lo} to {hi}, fits {budget}"),
            (_, true) => format!("{hi} = {} {budget}", format::ratio(self.hi_ratio)),
            (_, false) => format!(
                "{lo} to {hi} = {} to {} {budget}",
                format::ratio(self.lo_ratio),
                format::ratio(self.hi_ratio)
            ),
        }
    }
}

/// Where a data set stands against the budget, for the measurements a label covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Standing {
    /// The data fits the budget.
    Fits,
    /// Beyond the budget: in working set, or in data where no working set is known.
    Beyond,
    /// The data is beyond the budget but every working set fits; the ratio is the
    /// data's to the budget, when the data set is listed.
    DataOnly(Option<f64>),
    /// The data is beyond the budget and only some working sets are.
    Mixed(Option<f64>),
    /// Nothing says.
    Unknown,
}

/// Where `dataset` stands for the measurements `records` (those of the label).
pub(crate) fn standing(results: &Results, dataset: &str, records: &[&Record]) -> Standing {
    let verdict = Span::of(records.iter().copied()).map(|s| s.verdict());
    let ratio = results.dataset(dataset).map(|d| d.ratio_to_budget);
    match (order::fits(results, dataset), verdict) {
        (Some(true), _) => Standing::Fits,
        (Some(false), None | Some(Verdict::Beyond)) | (None, Some(Verdict::Beyond)) => {
            Standing::Beyond
        }
        (Some(false), Some(Verdict::Fits)) => Standing::DataOnly(ratio),
        (Some(false), Some(Verdict::Mixed)) => Standing::Mixed(ratio),
        (None, _) => Standing::Unknown,
    }
}

fn data_ratio(ratio: Option<f64>) -> String {
    match ratio {
        Some(r) => format!("data {}× the budget", format::trim_num(r, 2)),
        None => "data beyond the budget".to_string(),
    }
}

impl Standing {
    /// What a label says of the data set: "fits"/"beyond" (with " the budget" when
    /// `long`, "the cache budget" when `cache`), or for data beyond the budget whose
    /// working set is not, "data 6× the budget, working set fits"; `None` when unknown.
    pub(crate) fn words(self, long: bool, cache: bool) -> Option<String> {
        let budget = match (long, cache) {
            (_, true) => " the cache budget",
            (true, false) => " the budget",
            (false, false) => "",
        };
        Some(match self {
            Standing::Fits => format!("fits{budget}"),
            Standing::Beyond => format!("beyond{budget}"),
            Standing::DataOnly(r) => format!("{}, working set fits", data_ratio(r)),
            Standing::Mixed(r) => format!("{}, working set beyond it only in part", data_ratio(r)),
            Standing::Unknown => return None,
        })
    }

    /// Whether the label must not call the data set beyond (its data is, its working
    /// set is not, or not throughout).
    pub(crate) fn qualified(self) -> bool {
        matches!(self, Standing::DataOnly(_) | Standing::Mixed(_))
    }
}

/// The subtitle line of the working sets of `records` (those with one), or `None`: per
/// data set (and per variant, when one workload's variants touch different sets),
/// "manifest_beyond: working set 41 MiB = 2.6× the 16 MiB budget", joined by " · ".
pub(crate) fn subtitle_line(results: &Results, records: &[&Record]) -> Option<String> {
    let with: Vec<&Record> = records
        .iter()
        .copied()
        .filter(|r| r.working_set.is_some())
        .collect();
    let mut workloads: Vec<&str> = with.iter().map(|r| r.workload.as_str()).collect();
    workloads.sort_unstable();
    workloads.dedup();
    let by_variant = workloads.len() == 1;
    let mut datasets: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in &with {
        datasets.entry(r.dataset.as_str()).or_default().push(r);
    }
    let mut names: Vec<&str> = datasets.keys().copied().collect();
    names.sort_by(|a, b| order::cmp_dataset(results, a, b));
    let mut entries = Vec::new();
    for name in names {
        let recs = &datasets[name];
        let mut variants: Vec<Option<&str>> = recs.iter().map(|r| r.variant.as_deref()).collect();
        variants.sort_by(|a, b| order::cmp_variant(*a, *b));
        variants.dedup();
        // Variants whose working sets all fit, or all are beyond, share one entry with
        // their range; only a split between the two is spelt out, group by group.
        let verdict_of = |v: &Option<&str>| {
            Span::of(recs.iter().copied().filter(|r| r.variant.as_deref() == *v))
                .map(|s| s.verdict() == Verdict::Fits)
        };
        let fitting: Vec<Option<&str>> = variants
            .iter()
            .copied()
            .filter(|v| verdict_of(v) == Some(true))
            .collect();
        let beyond: Vec<Option<&str>> = variants
            .iter()
            .copied()
            .filter(|v| verdict_of(v) == Some(false))
            .collect();
        if by_variant && !fitting.is_empty() && !beyond.is_empty() {
            for group in [fitting, beyond] {
                let labels: Vec<&str> = group.iter().map(|v| v.unwrap_or("plain")).collect();
                let mine = recs
                    .iter()
                    .copied()
                    .filter(|r| group.contains(&r.variant.as_deref()));
                let label = if group == [None] {
                    name.to_string()
                } else {
                    format!("{name} {}", labels.join(", "))
                };
                if let Some(span) = Span::of(mine) {
                    entries.push(format!("{label}: working set {}", span.text()));
                }
            }
        } else if let Some(s) = Span::of(recs.iter().copied()) {
            entries.push(format!("{name}: working set {}", s.text()));
        }
    }
    (!entries.is_empty()).then(|| entries.join(" · "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{WorkingSet, WorkingSetSource};
    use crate::testing::{trace_record, trace_results, TestResult};

    const MIB: u64 = 1 << 20;

    fn measured(dataset: &str, variant: Option<&str>, ws_mib: f64) -> Record {
        let mut r = trace_record("aimeta", "x", None, 1);
        (r.workload, r.dataset, r.variant, r.trace) = (
            "manifest_scan".into(),
            dataset.into(),
            variant.map(String::from),
            None,
        );
        let bytes = (ws_mib * MIB as f64) as u64;
        r.working_set = Some(WorkingSet {
            pages: bytes / 4096,
            bytes,
            ratio_to_budget: bytes as f64 / (16 * MIB) as f64,
            source: WorkingSetSource::KeyLayout,
            touched_pages: None,
        });
        r
    }

    #[test]
    fn one_working_set_says_its_size_and_ratio() -> TestResult {
        let beyond = measured("manifest_beyond", None, 41.0);
        let fits = measured("manifest_beyond", None, 2.4);
        let text = |r: &Record| Span::of([r]).map(|s| s.text()).ok_or("no span");
        assert_eq!(text(&beyond)?, "41 MiB = 2.6× the 16 MiB budget");
        assert_eq!(text(&fits)?, "2.4 MiB fits the 16 MiB budget");
        let both = Span::of([&beyond, &fits]).ok_or("no span")?;
        assert_eq!(both.verdict(), Verdict::Mixed);
        assert_eq!(
            both.text(),
            "2.4 MiB to 41 MiB = 0.15× to 2.6× the 16 MiB budget"
        );
        let mut none = beyond.clone();
        none.working_set = None;
        assert_eq!(Span::of([&none]), None);
        Ok(())
    }

    #[test]
    fn beyond_in_data_is_beyond_only_when_the_working_set_is() -> TestResult {
        let mut results = trace_results(vec![]);
        results.datasets.push(crate::Dataset {
            name: "manifest_beyond".into(),
            family: "manifest".into(),
            keys: 2_000_000,
            data_bytes: 400 * MIB,
            fits_budget: false,
            ratio_to_budget: 6.0,
        });
        let fits = measured("manifest_beyond", None, 2.4);
        let beyond = measured("manifest_beyond", None, 41.0);
        let mut unknown = beyond.clone();
        unknown.working_set = None;
        let of = |recs: &[&Record]| standing(&results, "manifest_beyond", recs);
        assert_eq!(of(&[&fits]), Standing::DataOnly(Some(6.0)));
        assert_eq!(of(&[&beyond]), Standing::Beyond);
        assert_eq!(of(&[&unknown]), Standing::Beyond);
        assert_eq!(of(&[&fits, &beyond]), Standing::Mixed(Some(6.0)));
        assert_eq!(
            of(&[&fits]).words(true, false).as_deref(),
            Some("data 6× the budget, working set fits")
        );
        assert_eq!(
            Standing::Beyond.words(true, true).as_deref(),
            Some("beyond the cache budget")
        );
        assert_eq!(Standing::Fits.words(false, false).as_deref(), Some("fits"));
        assert_eq!(Standing::Unknown.words(true, false), None);
        Ok(())
    }

    #[test]
    fn the_subtitle_line_splits_variants_only_when_they_differ() -> TestResult {
        let results = trace_results(vec![]);
        let (a, b, c) = (
            measured("manifest_beyond", None, 2.4),
            measured("manifest_beyond", Some("offset_uniform"), 41.0),
            measured("manifest_fits", None, 1.0),
        );
        let line = subtitle_line(&results, &[&a, &b, &c]).ok_or("no line")?;
        assert_eq!(
            line,
            "manifest_fits: working set 1 MiB fits the 16 MiB budget · manifest_beyond: \
             working set 2.4 MiB fits the 16 MiB budget · manifest_beyond offset_uniform: \
             working set 41 MiB = 2.6× the 16 MiB budget"
        );
        let mut other = b.clone();
        other.workload = "manifest_get".into();
        let two = subtitle_line(&results, &[&a, &other]).ok_or("no line")?;
        assert!(
            two.starts_with("manifest_beyond: working set 2.4 MiB to 41 MiB"),
            "{two}"
        );
        let mut bare = a.clone();
        bare.working_set = None;
        assert_eq!(subtitle_line(&results, &[&bare]), None);
        Ok(())
    }
}
