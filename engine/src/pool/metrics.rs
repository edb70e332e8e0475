//! I/O counters, striped across cache lines so that reader threads do not contend on one
//! counter, and the `Metrics` snapshot that `Tree::metrics()` returns.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// What the pool counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Counter {
    /// Page accesses served from the pool.
    PageHits,
    /// Page accesses that had to read the page.
    PageMisses,
    /// Whole-frame reads (only in `ScanIo::FullFrame`).
    FullFrameReads,
    /// Bytes read from the data file.
    BytesRead,
    /// Pages read from the data file (misses, readahead and whole frames).
    PagesRead,
    /// Pages dropped from the pool to stay within budget.
    Evictions,
    /// Pages fetched by readahead before being asked for.
    ReadaheadPages,
    /// Pages written to the data file.
    PagesWritten,
    /// Bytes written to the data file.
    BytesWritten,
    /// Dirty pages written because eviction chose them.
    DirtyWritebacks,
    /// Pages a miss read around the page it wanted while the pool was filling (the
    /// whole file fitting in it); also in `PagesRead`, not in `ReadaheadPages`.
    ReadaroundPages,
    /// Pages read as shared images, left in place in the OS page cache instead of copied
    /// (`DataReads::Shared`); also in `PagesRead`.
    SharedPages,
    /// Longest-prefix candidates the stored-key filter ruled out (no leaf read for them).
    KeyFilterRejects,
}

const N: usize = 13;
const STRIPES: usize = 16;

#[repr(align(128))]
struct Stripe([AtomicU64; N]);

/// Striped counters.
pub struct Counters {
    stripes: Box<[Stripe]>,
}

impl std::fmt::Debug for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counters").finish_non_exhaustive()
    }
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
}

impl Counters {
    /// All zero.
    pub fn new() -> Self {
        Counters {
            stripes: (0..STRIPES)
                .map(|_| Stripe(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
        }
    }

    /// Adds `n` to counter `c`.
    #[inline]
    pub fn add(&self, c: Counter, n: u64) {
        let s = STRIPE.with(|s| *s);
        self.stripes[s].0[c as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// The current total of counter `c`.
    pub fn get(&self, c: Counter) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.0[c as usize].load(Ordering::Relaxed))
            .sum()
    }
}

impl Default for Counters {
    fn default() -> Self {
        Self::new()
    }
}

/// A snapshot of the engine's counters and sizes. Counters only grow; subtract two
/// snapshots to measure an operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Metrics {
    /// Page accesses served from the buffer pool.
    pub bm_read_page_hits: u64,
    /// Page accesses that had to read from the file.
    pub bm_read_page_misses: u64,
    /// Whole-frame reads; nonzero only in `ScanIo::FullFrame` mode.
    pub bm_scan_full_blob_reads: u64,
    /// Bytes read from the data file.
    pub bm_bytes_read: u64,
    /// Pages read from the data file, readahead and whole frames included.
    pub bm_pages_read: u64,
    /// Pages evicted to stay within the budget.
    pub bm_evictions: u64,
    /// Pages fetched by scan readahead.
    pub bm_readahead_pages: u64,
    /// Pages read around a miss while the pool was filling (in `bm_pages_read` too).
    pub bm_readaround_pages: u64,
    /// Pages read as shared images, in place in the OS page cache (`DataReads::Shared`;
    /// in `bm_pages_read` too).
    pub bm_shared_pages: u64,
    /// Pages written to the data file.
    pub bm_pages_written: u64,
    /// Bytes written to the data file.
    pub bm_bytes_written: u64,
    /// Dirty pages written early because eviction chose them.
    pub bm_dirty_writebacks: u64,
    /// Pages resident in the pool now.
    pub resident_pages: u64,
    /// Pool capacity in pages.
    pub capacity_pages: u64,
    /// Entries in the tree (latest commit).
    pub entries: u64,
    /// Tree height (latest commit); 0 when empty.
    pub height: u32,
    /// Pages in the data file.
    pub file_pages: u64,
    /// Pages free for reuse.
    pub free_pages: u64,
    /// Pages that commits replaced and no reader needs, which the durable checkpoint still
    /// references: the next checkpoint frees them.
    pub held_pages: u64,
    /// Latest commit sequence.
    pub commit_seq: u64,
    /// Sequence of the latest durable checkpoint.
    pub checkpoint_seq: u64,
    /// Log records appended since open.
    pub wal_records: u64,
    /// Log bytes appended since open.
    pub wal_bytes: u64,
    /// Log fdatasync calls for commits (group commit shares them).
    pub wal_syncs: u64,
    /// Torn log tails cut off when the tree was opened.
    pub wal_torn_tails: u64,
    /// Log file headers found damaged on open and rewritten from the epoch their records
    /// prove (a damaged header is never read as an empty log).
    pub wal_repaired_headers: u64,
    /// Log records replayed when the tree was opened.
    pub wal_replayed_records: u64,
    /// Inner pages read into the pool when the tree opened (`TreeConfig::warm_inner_levels`);
    /// also in the pool's read counters since open.
    pub inner_pages_warmed: u64,
    /// Checkpoints completed since open.
    pub checkpoints: u64,
    /// Longest-prefix candidates the stored-key filter ruled out without a page read.
    pub key_filter_rejects: u64,
    /// Bytes of the stored-key filter (taken out of the pool's budget; 0: no filter).
    pub key_filter_bytes: u64,
    /// Stored-key filters rebuilt from the tree's keys when it opened (its file missing,
    /// of another checkpoint, or damaged).
    pub key_filter_rebuilds: u64,
    /// Filter files that could not be written at a checkpoint (the next open rebuilds).
    pub key_filter_write_failures: u64,
}

impl Metrics {
    /// Counter differences `self - earlier` for everything that counts since open (pool,
    /// log appends and syncs, checkpoints); sizes, sequences and what the open found (torn
    /// tails, repaired headers, replayed records) are taken from `self`.
    pub fn since(&self, earlier: &Metrics) -> Metrics {
        Metrics {
            bm_read_page_hits: self.bm_read_page_hits - earlier.bm_read_page_hits,
            bm_read_page_misses: self.bm_read_page_misses - earlier.bm_read_page_misses,
            bm_scan_full_blob_reads: self.bm_scan_full_blob_reads - earlier.bm_scan_full_blob_reads,
            bm_bytes_read: self.bm_bytes_read - earlier.bm_bytes_read,
            bm_pages_read: self.bm_pages_read - earlier.bm_pages_read,
            bm_evictions: self.bm_evictions - earlier.bm_evictions,
            bm_readahead_pages: self.bm_readahead_pages - earlier.bm_readahead_pages,
            bm_readaround_pages: self.bm_readaround_pages - earlier.bm_readaround_pages,
            bm_shared_pages: self.bm_shared_pages - earlier.bm_shared_pages,
            bm_pages_written: self.bm_pages_written - earlier.bm_pages_written,
            bm_bytes_written: self.bm_bytes_written - earlier.bm_bytes_written,
            bm_dirty_writebacks: self.bm_dirty_writebacks - earlier.bm_dirty_writebacks,
            wal_records: self.wal_records - earlier.wal_records,
            wal_bytes: self.wal_bytes - earlier.wal_bytes,
            wal_syncs: self.wal_syncs - earlier.wal_syncs,
            checkpoints: self.checkpoints - earlier.checkpoints,
            key_filter_rejects: self.key_filter_rejects - earlier.key_filter_rejects,
            ..*self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up_across_threads_and_stripes() {
        let counters = Counters::new();
        std::thread::scope(|s| {
            for _ in 0..STRIPES + 3 {
                s.spawn(|| {
                    for _ in 0..100 {
                        counters.add(Counter::PageHits, 1);
                    }
                    counters.add(Counter::BytesRead, 4096);
                });
            }
        });
        let threads = (STRIPES + 3) as u64;
        assert_eq!(counters.get(Counter::PageHits), 100 * threads);
        assert_eq!(counters.get(Counter::BytesRead), 4096 * threads);
        assert_eq!(counters.get(Counter::PageMisses), 0);
    }

    #[test]
    fn since_subtracts_the_counters_and_keeps_the_sizes() {
        let earlier = Metrics {
            bm_read_page_hits: 10,
            bm_pages_read: 4,
            bm_dirty_writebacks: 1,
            resident_pages: 7,
            entries: 100,
            wal_syncs: 2,
            checkpoints: 1,
            wal_torn_tails: 1,
            ..Metrics::default()
        };
        let now = Metrics {
            bm_read_page_hits: 25,
            bm_pages_read: 9,
            bm_dirty_writebacks: 1,
            resident_pages: 3,
            entries: 120,
            wal_syncs: 6,
            checkpoints: 3,
            wal_torn_tails: 1,
            ..Metrics::default()
        };
        let d = now.since(&earlier);
        assert_eq!(
            (d.bm_read_page_hits, d.bm_pages_read, d.bm_dirty_writebacks),
            (15, 5, 0)
        );
        assert_eq!((d.resident_pages, d.entries), (3, 120));
        // Log syncs and checkpoints count since open; a torn tail is what the open found.
        assert_eq!((d.wal_syncs, d.checkpoints, d.wal_torn_tails), (4, 2, 1));
    }
}
