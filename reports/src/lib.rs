//! The results format of the ai-meta harness, and the charts and tables made from it.
//! This crate works from results JSON alone: it never links an engine.

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod atomic;
mod results;

pub use atomic::write_atomically;
pub use results::{
    Dataset, IoPerOp, Latency, Provenance, Record, ReportError, Results, RunConfig, Status,
    SCHEMA_VERSION,
};
