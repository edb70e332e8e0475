//! The performance gate's baseline file and verdicts.
//!
//! The gate measures two kinds of check. A *ratio* check is the median, over alternating
//! rounds in one process, of this engine's mean time per operation divided by another
//! engine's (or another method's) on the same data: noisy, so it passes while it stays
//! under its baseline times `1 + slack` (and under an absolute cap where one applies). A
//! *counter* check is a deterministic I/O count, such as pages read per scan on a cold
//! pool: it passes only while it is at most its baseline, exactly.
//!
//! `reports/baselines/gate.json` holds the bounds with the provenance of the run that
//! recorded them. This module reads and writes that file and turns a measurement into a
//! table of verdicts; it never links an engine.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Provenance;

/// The baseline schema version this build writes and reads.
pub const GATE_SCHEMA_VERSION: u32 = 1;

/// Slack given to a ratio check that has none recorded yet (see docs/gate.md).
pub const DEFAULT_SLACK: f64 = 0.25;

/// Why the gate's baseline cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid baseline.
    #[error("{path} is not a gate baseline: {source}; restore it from git or record a new one with `ai-meta gate --update-baseline`")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The JSON error, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The file's schema version is not one this build reads.
    #[error("{path} has schema_version {found}; this build reads version {supported}: record a new baseline with `ai-meta gate --update-baseline`")]
    Schema {
        /// The file.
        path: PathBuf,
        /// Version found.
        found: u32,
        /// Version supported.
        supported: u32,
    },
    /// The baseline was recorded at another scale, so its counters do not apply.
    #[error("{path} was recorded at scale {recorded}, this gate ran at scale {ran}: run the gate with `--scale {recorded}`, or record a new baseline")]
    ScaleMismatch {
        /// The file.
        path: PathBuf,
        /// Scale of the baseline.
        recorded: String,
        /// Scale of this run.
        ran: String,
    },
}

/// A ratio check's recorded value and allowed slack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioBound {
    /// Stable name, e.g. `manifest_scan/manifest_beyond`.
    pub check: String,
    /// What is divided by what.
    pub what: String,
    /// The median ratio the recording run measured.
    pub ratio: f64,
    /// Allowed relative increase: the bound is `ratio * (1 + slack)`.
    pub slack: f64,
    /// An absolute ceiling that holds whatever the baseline (1.0 for "native must be faster
    /// than its emulation").
    #[serde(default)]
    pub cap: Option<f64>,
}

impl RatioBound {
    /// The largest ratio that passes.
    pub fn bound(&self) -> f64 {
        let b = self.ratio * (1.0 + self.slack);
        self.cap.map_or(b, |c| b.min(c))
    }
}

/// A deterministic counter's recorded value; the bound is the value itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterBound {
    /// Stable name, e.g. `pages_per_scan_cold/manifest_beyond`.
    pub check: String,
    /// What is counted.
    pub what: String,
    /// The value recorded; a run passes while it measures at most this (times
    /// `1 + slack` when the check has one).
    pub value: f64,
    /// Allowed relative increase, for the few counters that are not exactly repeatable
    /// (None: exact). Each such check says why where it is measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<f64>,
}

impl CounterBound {
    /// The largest value that passes.
    pub fn bound(&self) -> f64 {
        self.value * (1.0 + self.slack.unwrap_or(0.0))
    }
}

/// How a gate run measures: its data sets' scale and how many timed operations it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateShape {
    /// Scale of the data sets (counters only hold at the scale they were recorded at).
    pub scale: String,
    /// Alternating rounds per ratio.
    pub rounds: u32,
    /// Timed operations per engine per round.
    pub ops_per_round: u64,
}

impl GateShape {
    /// The shape of a run at `scale` with `rounds` rounds of `ops_per_round` operations.
    pub fn new(scale: &str, rounds: u32, ops_per_round: u64) -> GateShape {
        GateShape {
            scale: scale.to_string(),
            rounds,
            ops_per_round,
        }
    }
}

/// The checked-in bounds of the gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateBaseline {
    /// `GATE_SCHEMA_VERSION`.
    pub schema_version: u32,
    /// How the gate ran when it recorded these bounds (flattened: the file keeps `scale`,
    /// `rounds` and `ops_per_round` at its top level).
    #[serde(flatten)]
    pub shape: GateShape,
    /// The run that recorded these bounds.
    pub provenance: Provenance,
    /// Timed checks.
    pub ratios: Vec<RatioBound>,
    /// Deterministic checks.
    pub counters: Vec<CounterBound>,
    /// The run that recorded the counters, when it is not the one that recorded the
    /// ratios (`ai-meta gate --update-counters`: counters are exact on any machine, the
    /// ratios belong to the machine kind they were measured on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters_provenance: Option<Provenance>,
    /// Checks added after the baseline was recorded (`ai-meta gate --add-new-checks`), each
    /// group with the run that measured it: the other checks keep their recording.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additions: Vec<Addition>,
}

/// One ratio as measured: the per-round ratios.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioMeasured {
    /// Stable name.
    pub check: String,
    /// What is divided by what.
    pub what: String,
    /// One ratio per round.
    pub rounds: Vec<f64>,
    /// An absolute ceiling that applies to this check.
    pub cap: Option<f64>,
}

impl RatioMeasured {
    /// The median of the rounds (NaN when there are none).
    pub fn median(&self) -> f64 {
        median(&self.rounds)
    }
}

/// One deterministic counter as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterMeasured {
    /// Stable name.
    pub check: String,
    /// What is counted.
    pub what: String,
    /// The value.
    pub value: f64,
    /// The slack this check asks for when a baseline is first recorded (None: exact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<f64>,
}

/// Everything one gate run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GateMeasurement {
    /// Timed checks.
    pub ratios: Vec<RatioMeasured>,
    /// Deterministic checks.
    pub counters: Vec<CounterMeasured>,
}

/// The median of `xs` (the mean of the middle two for an even count; NaN when empty).
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within its bound.
    Pass,
    /// A counter below its baseline: passes; record a new baseline to keep the gain.
    Improved,
    /// Over its bound.
    Fail,
    /// Measured, but the baseline has no such check: record one with `--update-baseline`.
    NoBaseline,
    /// In the baseline, but this run did not measure it.
    NotMeasured,
}

impl Verdict {
    /// True for the verdicts that fail the gate.
    pub fn fails(self) -> bool {
        matches!(
            self,
            Verdict::Fail | Verdict::NoBaseline | Verdict::NotMeasured
        )
    }

    fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Improved => "pass (improved)",
            Verdict::Fail => "FAIL",
            Verdict::NoBaseline => "FAIL (no baseline)",
            Verdict::NotMeasured => "FAIL (not measured)",
        }
    }
}

/// Whether a row is a ratio or a counter check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckKind {
    /// Timed: median ratio of two means, with slack.
    Ratio,
    /// Deterministic: exact.
    Counter,
}

/// One line of the gate's table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Stable name.
    pub check: String,
    /// What is measured.
    pub what: String,
    /// The recorded value.
    pub baseline: Option<f64>,
    /// The largest passing value.
    pub bound: Option<f64>,
    /// What the first measurement gave.
    pub measured: Option<f64>,
    /// What the re-measurement gave, when the first was over its bound.
    pub remeasured: Option<f64>,
    /// Ratio or counter.
    pub kind: CheckKind,
    /// The outcome (of the re-measurement when there was one).
    pub verdict: Verdict,
}

impl Row {
    /// A line for `check`: `values` are its bound and its first measurement; the verdict
    /// is `NoBaseline` when the baseline does not know the check, else the re-measurement's
    /// value (or the first one's) against the bound.
    fn new(
        check: &str,
        what: &str,
        kind: CheckKind,
        baseline: Option<f64>,
        (bound, measured): (Option<f64>, Option<f64>),
        remeasured: Option<f64>,
    ) -> Row {
        let verdict = match baseline {
            None => Verdict::NoBaseline,
            Some(recorded) => judge(bound, remeasured.or(measured), kind, recorded),
        };
        Row {
            check: check.to_string(),
            what: what.to_string(),
            baseline,
            bound,
            measured,
            remeasured,
            kind,
            verdict,
        }
    }
}

/// Counters compare exactly; this only absorbs the last bit of a float division.
const COUNTER_EPS: f64 = 1e-9;

fn judge(bound: Option<f64>, value: Option<f64>, kind: CheckKind, baseline: f64) -> Verdict {
    match (bound, value) {
        (None, Some(_)) => Verdict::NoBaseline,
        (_, None) => Verdict::NotMeasured,
        (Some(b), Some(v)) => {
            let tol = if kind == CheckKind::Counter {
                COUNTER_EPS * b.abs().max(1.0)
            } else {
                0.0
            };
            if v.is_nan() || v > b + tol {
                Verdict::Fail
            } else if kind == CheckKind::Counter && v < baseline - tol {
                Verdict::Improved
            } else {
                Verdict::Pass
            }
        }
    }
}

/// The verdicts of `first` (and, for ratio checks listed in `again`, of the
/// re-measurement) against `baseline`, baseline checks first, in their order.
pub fn evaluate(
    baseline: &GateBaseline,
    first: &GateMeasurement,
    again: Option<&GateMeasurement>,
) -> Vec<Row> {
    let mut rows = Vec::new();
    let kind = CheckKind::Ratio;
    for b in &baseline.ratios {
        let measured = first.ratios.iter().find(|m| m.check == b.check);
        let remeasured = again
            .and_then(|a| a.ratios.iter().find(|m| m.check == b.check))
            .map(RatioMeasured::median);
        let values = (Some(b.bound()), measured.map(RatioMeasured::median));
        let row = Row::new(&b.check, &b.what, kind, Some(b.ratio), values, remeasured);
        rows.push(row);
    }
    let known = |check: &str| baseline.ratios.iter().any(|b| b.check == check);
    for m in first.ratios.iter().filter(|m| !known(&m.check)) {
        let values = (m.cap, Some(m.median()));
        rows.push(Row::new(&m.check, &m.what, kind, None, values, None));
    }
    let kind = CheckKind::Counter;
    for b in &baseline.counters {
        let measured = first.counters.iter().find(|m| m.check == b.check);
        let values = (Some(b.bound()), measured.map(|m| m.value));
        let row = Row::new(&b.check, &b.what, kind, Some(b.value), values, None);
        rows.push(row);
    }
    let known = |check: &str| baseline.counters.iter().any(|b| b.check == check);
    for m in first.counters.iter().filter(|m| !known(&m.check)) {
        let values = (None, Some(m.value));
        rows.push(Row::new(&m.check, &m.what, kind, None, values, None));
    }
    rows
}

/// The ratio checks of `rows` that are over their bound (the ones worth re-measuring).
pub fn failing_ratios(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.kind == CheckKind::Ratio && r.verdict == Verdict::Fail)
        .map(|r| r.check.clone())
        .collect()
}

/// True when no row fails.
pub fn passes(rows: &[Row]) -> bool {
    rows.iter().all(|r| !r.verdict.fails())
}

fn cell(v: Option<f64>, kind: CheckKind) -> String {
    match (v, kind) {
        (None, _) => "-".to_string(),
        (Some(x), CheckKind::Ratio) => format!("{x:.3}"),
        // Whole counts print whole; a per-operation average prints four decimals, so a
        // count a hair over its bound (0.2601 against 0.2599) does not print as equal.
        (Some(x), CheckKind::Counter) if x.fract() == 0.0 => format!("{x:.0}"),
        (Some(x), CheckKind::Counter) => format!("{x:.4}"),
    }
}

/// The table the gate prints: check, baseline, bound, measured, re-measured, verdict.
pub fn render_table(rows: &[Row]) -> String {
    let width = rows.iter().map(|r| r.check.len()).max().unwrap_or(5).max(5);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<width$}  {:>9}  {:>9}  {:>9}  {:>11}  verdict",
        "check", "baseline", "bound", "measured", "re-measured"
    );
    for (kind, title) in [
        (
            CheckKind::Ratio,
            "ratios (median over rounds; this engine / the other)",
        ),
        (
            CheckKind::Counter,
            "counters (deterministic; exact unless the baseline gives a slack)",
        ),
    ] {
        let _ = writeln!(out, "-- {title}");
        for r in rows.iter().filter(|r| r.kind == kind) {
            let _ = writeln!(
                out,
                "{:<width$}  {:>9}  {:>9}  {:>9}  {:>11}  {}",
                r.check,
                cell(r.baseline, kind),
                cell(r.bound, kind),
                cell(r.measured, kind),
                cell(r.remeasured, kind),
                r.verdict.label()
            );
        }
    }
    out
}

/// What each failing check measures, one line each (printed under the table).
pub fn explain_failures(rows: &[Row]) -> String {
    let mut out = String::new();
    for r in rows.iter().filter(|r| r.verdict.fails()) {
        let _ = writeln!(out, "{}: {} — {}", r.check, r.what, r.verdict.label());
    }
    out
}

/// Checks a later run added to a baseline (or recorded again), and that run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Addition {
    /// The checks added.
    pub checks: Vec<String>,
    /// The run that measured them.
    pub provenance: Provenance,
    /// Whether they were new checks or ratios recorded again lower.
    #[serde(default, skip_serializing_if = "AdditionKind::is_new")]
    pub kind: AdditionKind,
}

/// How a later run changed a baseline's checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AdditionKind {
    /// Checks the baseline lacked (`ai-meta gate --add-new-checks`).
    #[default]
    New,
    /// Ratios recorded again at a lower median, to lock in a gain (`ai-meta gate
    /// --lock-in`).
    LockedIn,
}

impl AdditionKind {
    fn is_new(&self) -> bool {
        *self == AdditionKind::New
    }

    /// The verb the gate prints for it.
    pub fn verb(self) -> &'static str {
        match self {
            AdditionKind::New => "added",
            AdditionKind::LockedIn => "locked in",
        }
    }
}

impl GateBaseline {
    /// A baseline recording `m`; slacks (and the order of checks) are kept from
    /// `previous` where it has the same check, `DEFAULT_SLACK` otherwise.
    pub fn record(
        m: &GateMeasurement,
        shape: GateShape,
        provenance: Provenance,
        previous: Option<&GateBaseline>,
    ) -> GateBaseline {
        let slack = |check: &str| {
            previous
                .and_then(|p| p.ratios.iter().find(|b| b.check == check))
                .map_or(DEFAULT_SLACK, |b| b.slack)
        };
        GateBaseline {
            schema_version: GATE_SCHEMA_VERSION,
            shape,
            provenance,
            ratios: m
                .ratios
                .iter()
                .map(|r| RatioBound {
                    check: r.check.clone(),
                    what: r.what.clone(),
                    ratio: r.median(),
                    slack: slack(&r.check),
                    cap: r.cap,
                })
                .collect(),
            counters: m
                .counters
                .iter()
                .map(|c| CounterBound {
                    check: c.check.clone(),
                    what: c.what.clone(),
                    value: c.value,
                    slack: previous
                        .and_then(|p| p.counters.iter().find(|b| b.check == c.check))
                        .map_or(c.slack, |b| b.slack),
                })
                .collect(),
            counters_provenance: None,
            additions: Vec::new(),
        }
    }

    /// This baseline with the counters `m` lowered (their slacks kept; a counter `m` reads
    /// higher keeps its bound, so that no counter is loosened this way) and its ratios as
    /// they were: what `--update-counters` writes after a change that reads fewer pages.
    pub fn with_counters(&self, m: &GateMeasurement, provenance: Provenance) -> GateBaseline {
        let counters = m
            .counters
            .iter()
            .map(|c| {
                let old = self.counters.iter().find(|b| b.check == c.check);
                CounterBound {
                    check: c.check.clone(),
                    what: c.what.clone(),
                    value: old.map_or(c.value, |b| b.value.min(c.value)),
                    slack: old.map_or(c.slack, |b| b.slack),
                }
            })
            .collect();
        GateBaseline {
            counters,
            counters_provenance: Some(provenance),
            ..self.clone()
        }
    }

    /// This baseline with the checks of `m` that it lacks added (a ratio at its median
    /// with `DEFAULT_SLACK`, a counter at its value with the slack it asks for) and every
    /// check it has kept as it is: what `--add-new-checks` writes after the gate gained
    /// checks, so that they are guarded without recording the others again on another
    /// day or machine kind. Returns the new baseline and the names of the checks added.
    pub fn with_new_checks(
        &self,
        m: &GateMeasurement,
        provenance: Provenance,
    ) -> (GateBaseline, Vec<String>) {
        let mut b = self.clone();
        let mut added = Vec::new();
        for r in &m.ratios {
            if !b.ratios.iter().any(|x| x.check == r.check) {
                b.ratios.push(RatioBound {
                    check: r.check.clone(),
                    what: r.what.clone(),
                    ratio: r.median(),
                    slack: DEFAULT_SLACK,
                    cap: r.cap,
                });
                added.push(r.check.clone());
            }
        }
        for c in &m.counters {
            if !b.counters.iter().any(|x| x.check == c.check) {
                b.counters.push(CounterBound {
                    check: c.check.clone(),
                    what: c.what.clone(),
                    value: c.value,
                    slack: c.slack,
                });
                added.push(c.check.clone());
            }
        }
        if !added.is_empty() {
            b.additions.push(Addition {
                checks: added.clone(),
                provenance,
                kind: AdditionKind::New,
            });
        }
        (b, added)
    }

    /// This baseline with the ratio checks named in `checks` recorded again at `m`'s
    /// medians, keeping their slack and cap, and every other check as it is: a gain
    /// locked in. Fails, changing nothing, when a check is not a ratio of both the
    /// baseline and `m`, or when its median is not below its recorded ratio (recording
    /// it higher would loosen the gate; that is `--update-baseline`, with a reason).
    pub fn with_locked_in(
        &self,
        m: &GateMeasurement,
        checks: &[String],
        provenance: Provenance,
    ) -> Result<GateBaseline, String> {
        let mut b = self.clone();
        for name in checks {
            let Some(measured) = m.ratios.iter().find(|r| &r.check == name) else {
                return Err(format!("{name}: this run measured no such ratio"));
            };
            let Some(bound) = b.ratios.iter_mut().find(|r| &r.check == name) else {
                return Err(format!(
                    "{name}: the baseline has no such ratio (new checks: --add-new-checks)"
                ));
            };
            let median = measured.median();
            if median >= bound.ratio {
                return Err(format!(
                    "{name}: measured {median:.3}, not below the recorded {:.3}; nothing to lock in",
                    bound.ratio
                ));
            }
            bound.ratio = median;
        }
        if !checks.is_empty() {
            b.additions.push(Addition {
                checks: checks.to_vec(),
                provenance,
                kind: AdditionKind::LockedIn,
            });
        }
        Ok(b)
    }

    /// Reads and checks a baseline file.
    pub fn load(path: &Path) -> Result<GateBaseline, GateError> {
        use crate::atomic::{read_json_versioned, ReadFailure};
        read_json_versioned(path, GATE_SCHEMA_VERSION).map_err(|f| match f {
            ReadFailure::Io(source) => GateError::Io {
                path: path.to_path_buf(),
                source,
            },
            ReadFailure::Parse(source) => GateError::Parse {
                path: path.to_path_buf(),
                source,
            },
            ReadFailure::Version(found) => GateError::Schema {
                path: path.to_path_buf(),
                found,
                supported: GATE_SCHEMA_VERSION,
            },
        })
    }

    /// Checks that the baseline applies to a gate run at `scale`.
    pub fn check_scale(&self, path: &Path, scale: &str) -> Result<(), GateError> {
        if self.shape.scale == scale {
            Ok(())
        } else {
            Err(GateError::ScaleMismatch {
                path: path.to_path_buf(),
                recorded: self.shape.scale.clone(),
                ran: scale.to_string(),
            })
        }
    }

    /// Writes the file atomically, pretty-printed.
    pub fn save(&self, path: &Path) -> Result<(), GateError> {
        crate::atomic::write_json(path, self).map_err(|source| GateError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provenance() -> Provenance {
        crate::testing::provenance("rustc", "ai-meta gate --update-baseline")
    }

    fn measurement(scan: &[f64], pages: f64) -> GateMeasurement {
        GateMeasurement {
            ratios: vec![
                RatioMeasured {
                    check: "manifest_scan/manifest_beyond".into(),
                    what: "aimeta / lmdb".into(),
                    rounds: scan.to_vec(),
                    cap: None,
                },
                RatioMeasured {
                    check: "kvchain_lpm/native_vs_bisect".into(),
                    what: "native / bisect".into(),
                    rounds: vec![0.6, 0.7, 0.65],
                    cap: Some(1.0),
                },
            ],
            counters: vec![CounterMeasured {
                check: "pages_per_scan_cold/manifest_beyond".into(),
                what: "pages".into(),
                value: pages,
                slack: None,
            }],
        }
    }

    #[test]
    fn median_of_odd_even_and_nan() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
    }

    /// The first baseline recorded from `m` (no earlier one to keep slacks from), at scale
    /// ci with `rounds` rounds of 100 operations.
    fn first_baseline(m: &GateMeasurement, rounds: u32) -> GateBaseline {
        GateBaseline::record(m, GateShape::new("ci", rounds, 100), provenance(), None)
    }

    #[test]
    fn ratio_bounds_use_slack_and_cap() {
        let b = first_baseline(&measurement(&[1.0], 10.0), 5);
        assert_eq!(b.ratios[0].bound(), 1.0 * (1.0 + DEFAULT_SLACK));
        // The cap wins over a baseline whose slack would let "native" be slower than bisect.
        assert_eq!(b.ratios[1].bound(), 0.65 * (1.0 + DEFAULT_SLACK));
        let capped = RatioBound {
            ratio: 0.9,
            ..b.ratios[1].clone()
        };
        assert_eq!(capped.bound(), 1.0);
    }

    #[test]
    fn updating_the_counters_keeps_the_ratios_and_the_slacks() {
        let mut m = measurement(&[1.0], 100.0);
        m.counters[0].slack = Some(0.01);
        let base = first_baseline(&m, 3);
        let mut later = provenance();
        later.commit = "later".into();
        let updated = base.with_counters(&measurement(&[9.0], 80.0), later.clone());
        assert_eq!(updated.ratios, base.ratios);
        assert_eq!(updated.provenance, base.provenance);
        assert_eq!(updated.counters[0].value, 80.0);
        assert_eq!(updated.counters[0].slack, Some(0.01));
        assert_eq!(
            updated.counters_provenance.clone().map(|p| p.commit),
            Some("later".into())
        );
        assert_eq!(base.counters_provenance, None);
        // A counter measured higher is not loosened.
        let higher = updated.with_counters(&measurement(&[1.0], 90.0), later);
        assert_eq!(higher.counters[0].value, 80.0);
    }

    #[test]
    fn adding_new_checks_keeps_every_recorded_one_and_says_which_were_added() {
        let base = first_baseline(&measurement(&[1.0], 100.0), 3);
        let mut later = measurement(&[9.0], 500.0);
        later.ratios.push(RatioMeasured {
            check: "manifest_cas/manifest_fits".into(),
            what: "aimeta / lmdb".into(),
            rounds: vec![1.1, 1.0, 1.2],
            cap: None,
        });
        let mut p = provenance();
        p.commit = "later".into();
        let (added, names) = base.with_new_checks(&later, p);
        assert_eq!(names, vec!["manifest_cas/manifest_fits".to_string()]);
        assert_eq!(
            added.ratios[..2],
            base.ratios[..],
            "recorded ratios untouched"
        );
        assert_eq!(added.counters, base.counters, "recorded counters untouched");
        assert_eq!(added.ratios[2].ratio, 1.1);
        assert_eq!(added.ratios[2].slack, DEFAULT_SLACK);
        assert_eq!(added.additions.len(), 1);
        assert_eq!(added.additions[0].provenance.commit, "later");
        // It round-trips, and a run with nothing new adds no empty group.
        let text = serde_json::to_string(&added).expect("json");
        let back: GateBaseline = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, added);
        let (same, none) = added.with_new_checks(&later, provenance());
        assert!(none.is_empty());
        assert_eq!(same, added);
        // A baseline without additions reads as before.
        assert!(!serde_json::to_string(&base)
            .expect("json")
            .contains("additions"));
    }

    #[test]
    fn locking_in_lowers_only_the_named_ratios_and_never_raises_one() {
        let base = first_baseline(&measurement(&[1.0], 100.0), 3);
        let name = base.ratios[0].check.clone();
        let mut p = provenance();
        p.commit = "faster".into();
        let lower = measurement(&[0.6], 100.0);
        let locked = base
            .with_locked_in(&lower, std::slice::from_ref(&name), p.clone())
            .expect("lower");
        assert_eq!(locked.ratios[0].ratio, 0.6);
        assert_eq!(locked.ratios[0].slack, base.ratios[0].slack);
        assert_eq!(locked.ratios[1..], base.ratios[1..], "the others untouched");
        assert_eq!(locked.counters, base.counters);
        assert_eq!(locked.additions.len(), 1);
        assert_eq!(locked.additions[0].kind, AdditionKind::LockedIn);
        let text = serde_json::to_string(&locked).expect("json");
        assert!(text.contains("locked_in"));
        let back: GateBaseline = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, locked);
        // Higher or equal is refused, as is a name the run or the baseline lacks.
        let higher = measurement(&[1.2], 100.0);
        assert!(base
            .with_locked_in(&higher, std::slice::from_ref(&name), p.clone())
            .is_err());
        assert!(base
            .with_locked_in(&lower, &["no/such".to_string()], p)
            .is_err());
    }

    #[test]
    fn a_counter_with_slack_passes_within_it_and_keeps_it_when_recorded_again() {
        let mut m = measurement(&[1.0], 100.0);
        m.counters[0].slack = Some(0.01);
        let base = first_baseline(&m, 3);
        assert_eq!(base.counters[0].slack, Some(0.01));
        let verdict = |pages: f64| evaluate(&base, &measurement(&[1.0], pages), None)[2].verdict;
        assert_eq!(verdict(100.5), Verdict::Pass);
        assert_eq!(verdict(99.0), Verdict::Improved);
        assert_eq!(verdict(101.5), Verdict::Fail);
        // A re-recording keeps the file's slack, not what the measurement proposes.
        let again = GateBaseline::record(
            &measurement(&[1.0], 100.0),
            GateShape::new("ci", 3, 100),
            provenance(),
            Some(&base),
        );
        assert_eq!(again.counters[0].slack, Some(0.01));
        // Exact counters stay exact.
        let exact = first_baseline(&measurement(&[1.0], 100.0), 3);
        assert_eq!(exact.counters[0].slack, None);
        let rows = evaluate(&exact, &measurement(&[1.0], 100.5), None);
        assert_eq!(rows[2].verdict, Verdict::Fail);
    }

    #[test]
    fn verdicts_pass_fail_and_remeasure() {
        let base = first_baseline(&measurement(&[1.0, 1.1, 0.9], 10.0), 3);
        let ok = evaluate(&base, &measurement(&[1.2, 1.25, 1.1], 10.0), None);
        assert!(passes(&ok), "{}", render_table(&ok));

        let slow = measurement(&[2.0, 1.9, 2.1], 10.0);
        let rows = evaluate(&base, &slow, None);
        assert!(!passes(&rows));
        assert_eq!(failing_ratios(&rows), vec!["manifest_scan/manifest_beyond"]);
        // A re-measurement within the bound clears it (noise); one over it confirms.
        let noise = evaluate(&base, &slow, Some(&measurement(&[1.0], 10.0)));
        assert!(passes(&noise));
        assert_eq!(noise[0].remeasured, Some(1.0));
        let confirmed = evaluate(&base, &slow, Some(&measurement(&[2.2], 10.0)));
        assert!(!passes(&confirmed));
        assert!(render_table(&confirmed).contains("FAIL"));
    }

    #[test]
    fn counters_are_exact() {
        let base = first_baseline(&measurement(&[1.0], 10.0), 1);
        let more = evaluate(&base, &measurement(&[1.0], 10.01), None);
        assert_eq!(more[2].verdict, Verdict::Fail);
        let fewer = evaluate(&base, &measurement(&[1.0], 9.0), None);
        assert_eq!(fewer[2].verdict, Verdict::Improved);
        assert!(passes(&fewer));
    }

    #[test]
    fn missing_and_new_checks_fail() {
        let base = first_baseline(&measurement(&[1.0], 10.0), 1);
        let mut m = measurement(&[1.0], 10.0);
        m.counters[0].check = "renamed".into();
        let rows = evaluate(&base, &m, None);
        assert!(rows
            .iter()
            .any(|r| r.check == "renamed" && r.verdict == Verdict::NoBaseline));
        assert!(rows
            .iter()
            .any(|r| r.check == "pages_per_scan_cold/manifest_beyond"
                && r.verdict == Verdict::NotMeasured));
        assert!(!passes(&rows));
        assert!(explain_failures(&rows).contains("renamed"));
    }

    #[test]
    fn record_keeps_slack_and_file_round_trips() -> Result<(), Box<dyn std::error::Error>> {
        let mut first = first_baseline(&measurement(&[1.0], 10.0), 1);
        first.ratios[0].slack = 0.5;
        let again = GateBaseline::record(
            &measurement(&[1.1], 9.0),
            GateShape::new("ci", 1, 1),
            provenance(),
            Some(&first),
        );
        assert_eq!(again.ratios[0].slack, 0.5);
        assert_eq!(again.ratios[1].slack, DEFAULT_SLACK);
        assert_eq!(again.counters[0].value, 9.0);

        let dir = tempfile::tempdir()?;
        let p = dir.path().join("gate.json");
        again.save(&p)?;
        let back = GateBaseline::load(&p)?;
        assert_eq!(back, again);
        assert!(back.check_scale(&p, "ci").is_ok());
        let e = back.check_scale(&p, "seed").err().map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("--scale ci")));
        std::fs::write(&p, b"{\"schema_version\": 7}")?;
        assert!(matches!(
            GateBaseline::load(&p),
            Err(GateError::Schema { found: 7, .. })
        ));
        std::fs::write(&p, b"nonsense")?;
        let e = GateBaseline::load(&p).err().map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("is not a gate baseline")));
        Ok(())
    }
}
