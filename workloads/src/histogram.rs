//! Latency histograms, written once for the runner and the trace replay.

use aimeta_reports::Latency;
use hdrhistogram::Histogram;

/// A histogram for latencies from 1 ns to 100 s at three significant digits.
pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3)
        .unwrap_or_else(|_| Histogram::new(3).unwrap_or_else(|_| unreachable_histogram()))
}

fn unreachable_histogram() -> Histogram<u64> {
    // Histogram::new(3) cannot fail for 3 significant digits; keep a last resort anyway.
    Histogram::new_with_max(u64::MAX / 2, 2).unwrap_or_else(|_| {
        Histogram::new_with_bounds(1, 2, 1).expect("a 1..2 histogram is always valid")
    })
}

/// Summary of a histogram in nanoseconds.
pub(crate) fn latency(h: &Histogram<u64>) -> Latency {
    Latency {
        mean: h.mean(),
        p50: h.value_at_quantile(0.5) as f64,
        p99: h.value_at_quantile(0.99) as f64,
        p999: h.value_at_quantile(0.999) as f64,
        min: h.min() as f64,
        max: h.max() as f64,
    }
}
