//! Latency histograms and I/O counter arithmetic.

use aimeta_adapters::IoCounters;
use aimeta_reports::{IoPerOp, Latency};
use hdrhistogram::Histogram;

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
