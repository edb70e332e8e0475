//! I/O counter arithmetic, and the latency histograms (written once in crate::histogram).

use aimeta_adapters::IoCounters;
use aimeta_reports::IoPerOp;

pub(crate) use crate::histogram::{histogram, latency};

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
