//! A measurement judged against the baseline: one row and verdict per check, the table
//! the gate prints, and the lines that explain its failures.

use std::fmt::Write as _;

use super::baseline::GateBaseline;
use super::measure::{GateMeasurement, RatioMeasured};

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
