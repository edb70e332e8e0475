//! The results format of the ai-meta harness, and the charts and tables made from it.
//! This crate works from results JSON alone: it never links an engine.
//!
//! [`render_report`] turns a [`Results`] (or, with [`render_merged`], several files drawn
//! together as [`Merged`]) into SVG charts (light and dark) under
//! `docs/benchmarks/`, the tables of `docs/benchmarks/results.md`, and the README's
//! Performance section; [`report_main`] runs a typed [`ReportRequest`], the `ai-meta report`
//! command the binary parses.

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod atomic;
mod axis;
mod chart;
mod charts;
mod command;
mod format;
pub mod gate;
mod ingest_chart;
mod ingest_table;
mod line_chart;
mod log_axis;
mod markdown;
mod merge;
mod order;
mod ratios;
mod readme;
mod report;
mod repro;
mod results;
mod rows;
mod stories;
mod svg;
mod sweep_charts;
#[cfg(test)]
mod testing;
mod trace;
mod trace_charts;
mod trace_hit_rate;
mod trace_table;
mod working_set;

pub use atomic::write_atomically;
pub use charts::{render_charts, ChartKind, RenderedChart};
pub use command::{report_main, report_main_with, run_report, ReadmeTarget, ReportRequest};
pub use merge::{MergeError, Merged, Source};
pub use order::engine_colour;
pub use ratios::{ratio_rows, render_ratios, RatioRow};
pub use readme::{BEGIN_MARKER, END_MARKER};
pub use report::{render_merged, render_report, ReportSummary, CHARTS_DIR};
pub use repro::repro_tables;
pub use results::{
    AllocPerOp, Dataset, DeviceFloor, IoPerOp, Latency, Provenance, Record, ReportError, Results,
    RunConfig, Status, SweepConfig, TraceStats, WorkingSet, WorkingSetSource, SCHEMA_VERSION,
};
