//! The working set of a measurement: which 4 KiB pages its access pattern reaches, with
//! the data set's keys and values packed into pages in key order (the key layout), and
//! which of them its timed operations did touch.
//!
//! The working set is the pattern's support, not the pages a few thousand timed
//! operations happened to draw: gets of uniformly chosen keys reach every page of the data
//! set (5,000 of them touch 20 MB of a 3 GB manifest, but a cache that held only those
//! would miss on the next ones), while the seed's start-of-shard scans reach only the
//! first 100 entries of each shard, however long they run. Every engine stores at least
//! that many bytes for the entries, so the count is a lower bound for all of them: when it
//! exceeds the budget, no engine can hold what the operations read, and the measurement is
//! beyond the budget in working set, not only in data size. The seed's scans are the case
//! this exists for: 200 shards x their first 100 entries are 1.9 MiB, inside a 16 MiB
//! budget, on a data set of 120 MB.

use aimeta_reports::{WorkingSet, WorkingSetSource};

/// Bytes of a page of the key layout.
pub const LAYOUT_PAGE_BYTES: u64 = 4096;

/// A set of page numbers (a bitmap: one bit per page of the data set).
#[derive(Debug, Clone, Default)]
pub struct TouchedPages {
    bits: Vec<u64>,
    count: u64,
}

impl TouchedPages {
    /// An empty set.
    pub fn new() -> TouchedPages {
        TouchedPages::default()
    }

    /// Marks `page`.
    pub fn touch(&mut self, page: u64) {
        let word = (page / 64) as usize;
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        let mask = 1u64 << (page % 64);
        if self.bits[word] & mask == 0 {
            self.bits[word] |= mask;
            self.count += 1;
        }
    }

    /// Marks every page from `first` to `last`, both included.
    pub fn touch_pages(&mut self, first: u64, last: u64) {
        for page in first..=last {
            self.touch(page);
        }
    }

    /// Marks the pages of `bytes` bytes that start `offset` bytes into the layout.
    pub fn touch_bytes(&mut self, offset: u64, bytes: u64) {
        let first = offset / LAYOUT_PAGE_BYTES;
        let last = (offset + bytes.max(1) - 1) / LAYOUT_PAGE_BYTES;
        self.touch_pages(first, last);
    }

    /// Marks the pages of `count` consecutive fixed-size entries of `entry_bytes` bytes
    /// each, from entry number `first_entry`.
    pub fn touch_entries(&mut self, first_entry: u64, count: u64, entry_bytes: u64) {
        self.touch_bytes(first_entry * entry_bytes, count.max(1) * entry_bytes);
    }

    /// Adds every page of `other`.
    pub fn merge(&mut self, other: &TouchedPages) {
        if other.bits.len() > self.bits.len() {
            self.bits.resize(other.bits.len(), 0);
        }
        for (mine, theirs) in self.bits.iter_mut().zip(&other.bits) {
            *mine |= theirs;
        }
        self.count = self.bits.iter().map(|w| u64::from(w.count_ones())).sum();
    }

    /// Distinct pages marked.
    pub fn pages(&self) -> u64 {
        self.count
    }

    /// The working set these pages are, against `budget_bytes`; None when nothing was
    /// marked (a workload that does not track its pages).
    pub fn working_set(&self, budget_bytes: u64) -> Option<WorkingSet> {
        working_set(self.count, None, budget_bytes)
    }
}

/// A working set of `support` pages (`touched` of them touched), against `budget_bytes`;
/// None for an empty support.
pub fn working_set(support: u64, touched: Option<u64>, budget_bytes: u64) -> Option<WorkingSet> {
    if support == 0 {
        return None;
    }
    let bytes = support * LAYOUT_PAGE_BYTES;
    Some(WorkingSet {
        pages: support,
        bytes,
        ratio_to_budget: bytes as f64 / budget_bytes.max(1) as f64,
        source: WorkingSetSource::KeyLayout,
        touched_pages: touched.map(|t| t.min(support)),
    })
}

/// Pages of the key layout that hold `bytes` bytes.
pub fn layout_pages(bytes: u64) -> u64 {
    bytes.div_ceil(LAYOUT_PAGE_BYTES)
}

/// The pages a manifest workload's access pattern reaches: the first `per_shard_entries`
/// entries of each of `shards` shards of `per_shard` samples (`entry_bytes` each), or every
/// page when `per_shard_entries` is None.
pub fn manifest_support(
    shards: u32,
    per_shard: u32,
    entry_bytes: u64,
    per_shard_entries: Option<u32>,
) -> u64 {
    match per_shard_entries {
        None => layout_pages(u64::from(shards) * u64::from(per_shard) * entry_bytes),
        Some(n) => {
            let mut t = TouchedPages::new();
            for s in 0..u64::from(shards) {
                t.touch_entries(
                    s * u64::from(per_shard),
                    u64::from(n.min(per_shard)),
                    entry_bytes,
                );
            }
            t.pages()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_counted_once_and_ranges_cover_their_ends() {
        let mut t = TouchedPages::new();
        t.touch(3);
        t.touch(3);
        assert_eq!(t.pages(), 1);
        // Entries 60..=130 of 60 bytes: bytes 3,600..7,860, pages 0 and 1.
        t.touch_entries(60, 71, 60);
        assert_eq!(t.pages(), 3);
        t.touch_bytes(4096 * 200 - 1, 2);
        assert_eq!(
            t.pages(),
            5,
            "a two-byte read across a boundary is two pages"
        );
        let mut u = TouchedPages::new();
        u.touch(3);
        u.touch(1_000);
        t.merge(&u);
        assert_eq!(t.pages(), 6);
        let ws = t.working_set(4 * 4096).map(|w| (w.pages, w.bytes));
        assert_eq!(ws, Some((6, 6 * 4096)));
        assert!(t.working_set(4 * 4096).is_some_and(|w| w.beyond_budget()));
        assert!(t
            .working_set(100 * 4096)
            .is_some_and(|w| !w.beyond_budget()));
        assert!(TouchedPages::new().working_set(1).is_none());
    }

    #[test]
    fn supports_of_the_manifest_shapes() {
        // 200 x 10,000 entries of 60 bytes: 120 MB, 29,297 pages; the first 100 entries of
        // each shard: 6,000 bytes from wherever the shard starts, 2 or 3 pages each.
        assert_eq!(manifest_support(200, 10_000, 60, None), 29_297);
        let starts = manifest_support(200, 10_000, 60, Some(100));
        assert!((400..=600).contains(&starts), "{starts}");
        let ws = working_set(starts, Some(150), 16 << 20);
        assert!(ws.is_some_and(|w| !w.beyond_budget() && w.touched_pages == Some(150)));
        let all = working_set(29_297, Some(40_000), 16 << 20);
        assert!(all.is_some_and(|w| w.beyond_budget() && w.touched_pages == Some(29_297)));
    }

    #[test]
    fn the_seed_scan_shape_fits_where_its_data_does_not() {
        // 200 shards x 10,000 samples of 60 bytes: 120 MB of data. The first 100 entries
        // of every shard: 200 x 6,000 bytes, 2 or 3 pages each, under 600 pages (2.3 MiB).
        let mut t = TouchedPages::new();
        for shard in 0..200u64 {
            t.touch_entries(shard * 10_000, 100, 60);
        }
        let budget = 16 << 20;
        let ws = t.working_set(budget);
        assert!(
            ws.is_some_and(|w| !w.beyond_budget() && w.pages <= 600),
            "{ws:?}"
        );
    }
}
