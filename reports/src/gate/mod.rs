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
//! recorded them (`baseline`). A run's measurement (`measure`) is judged against them
//! into a table of verdicts (`verdict`). Nothing here links an engine.

mod baseline;
mod measure;
mod verdict;

pub use baseline::{
    Addition, AdditionKind, CounterBound, GateBaseline, GateError, GateShape, RatioBound,
    DEFAULT_SLACK, GATE_SCHEMA_VERSION,
};
pub use measure::{median, CounterMeasured, GateMeasurement, RatioMeasured};
pub use verdict::{
    evaluate, explain_failures, failing_ratios, passes, render_table, CheckKind, Row, Verdict,
};

#[cfg(test)]
mod tests;
