//! The working set of a measurement: which 4 KiB pages its timed operations touch, with
//! the data set's keys and values packed into pages in key order (the key layout).
//!
//! Every engine stores at least that many bytes for the entries it reads, so the count is
//! a lower bound for all of them: when it exceeds the budget, no engine can hold what the
//! operations read, and the measurement is beyond the budget in working set, not only in
//! data size. The seed's start-of-shard scans are the case this exists for: 200 shards x
//! their first 100 entries are about 2.4 MiB, inside a 16 MiB budget, on a data set of
//! 120 MB.

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
        if self.count == 0 {
            return None;
        }
        let bytes = self.count * LAYOUT_PAGE_BYTES;
        Some(WorkingSet {
            pages: self.count,
            bytes,
            ratio_to_budget: bytes as f64 / budget_bytes.max(1) as f64,
            source: WorkingSetSource::KeyLayout,
        })
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
    fn the_seed_scan_shape_fits_where_its_data_does_not() {
        // 200 shards x 10,000 samples of 60 bytes: 120 MB of data. The first 100 entries
        // of every shard: 200 x 6,000 bytes, 400 pages, 1.6 MiB.
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
