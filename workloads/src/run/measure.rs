//! Timing: warm-up, then a fixed number of operations, each latency recorded in an HDR
//! histogram; engine I/O counters and /proc/self/io read before and after.

use std::time::{Duration, Instant};

use aimeta_adapters::{IoCounters, KvEngine};
use aimeta_reports::{IoPerOp, Latency};
use hdrhistogram::Histogram;

use super::sys::os_read_bytes;
use super::RunError;

/// What one timed phase measured.
#[derive(Debug)]
pub struct Timed {
    /// Per-operation latencies in nanoseconds.
    pub hist: Histogram<u64>,
    /// Wall time of the timed phase.
    pub wall: Duration,
    /// Engine counters and OS read bytes over the timed phase.
    pub io: Option<IoPerOp>,
    /// Operations timed.
    pub ops: u64,
}

/// A histogram for latencies from 1 ns to 100 s at three significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3)
        .unwrap_or_else(|_| Histogram::new(3).unwrap_or_else(|_| unreachable_histogram()))
}

fn unreachable_histogram() -> Histogram<u64> {
    // Histogram::new(3) cannot fail for 3 significant digits; keep a last resort anyway.
    Histogram::new_with_max(u64::MAX / 2, 2).unwrap_or_else(|_| {
        Histogram::new_with_bounds(1, 2, 1).expect("a 1..2 histogram is always valid")
    })
}

/// Runs `warmup` untimed operations, then `ops` timed ones.
pub fn time_ops(
    engine: &dyn KvEngine,
    warmup: u64,
    ops: u64,
    mut op: impl FnMut(u64) -> Result<(), RunError>,
) -> Result<Timed, RunError> {
    for i in 0..warmup {
        op(i)?;
    }
    let counters_before = engine.io_counters();
    let os_before = os_read_bytes();
    let mut hist = histogram();
    let start = Instant::now();
    for i in 0..ops {
        let t = Instant::now();
        op(warmup + i)?;
        let ns = t.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
        hist.saturating_record(ns.max(1));
    }
    let wall = start.elapsed();
    let io = io_per_op(
        counters_before,
        engine.io_counters(),
        os_read_bytes().saturating_sub(os_before),
        ops,
    );
    Ok(Timed {
        hist,
        wall,
        io,
        ops,
    })
}

/// Counter differences divided by `ops`; OS read bytes are reported for every engine.
pub fn io_per_op(
    before: Option<IoCounters>,
    after: Option<IoCounters>,
    os_bytes: u64,
    ops: u64,
) -> Option<IoPerOp> {
    let n = ops.max(1) as f64;
    let mut io = IoPerOp {
        os_read_bytes: os_bytes as f64 / n,
        ..IoPerOp::default()
    };
    if let (Some(b), Some(a)) = (before, after) {
        io.pages_read = a.pages_read.saturating_sub(b.pages_read) as f64 / n;
        io.page_hits = a.cache_hits.saturating_sub(b.cache_hits) as f64 / n;
        io.page_misses = a.cache_misses.saturating_sub(b.cache_misses) as f64 / n;
        io.full_frame_reads = a.full_frame_reads.saturating_sub(b.full_frame_reads) as f64 / n;
        io.bytes_read = a.bytes_read.saturating_sub(b.bytes_read) as f64 / n;
        io.readahead_pages = a.readahead_pages.saturating_sub(b.readahead_pages) as f64 / n;
    }
    Some(io)
}

/// Summary of a histogram in nanoseconds.
pub fn latency(h: &Histogram<u64>) -> Latency {
    Latency {
        mean: h.mean(),
        p50: h.value_at_quantile(0.5) as f64,
        p99: h.value_at_quantile(0.99) as f64,
        p999: h.value_at_quantile(0.999) as f64,
        min: h.min() as f64,
        max: h.max() as f64,
    }
}
