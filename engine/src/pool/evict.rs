//! S3-FIFO eviction (Yang et al., SOSP 2023): a small probationary FIFO takes new pages,
//! a main FIFO holds pages that proved useful, and a ghost list remembers recently
//! evicted page numbers. A one-pass scan only ever cycles through the small queue, so it
//! cannot flush the working set. Inner pages enter the main queue directly and saturate
//! at a higher frequency, so leaves go first; pinned pages (the root) are never evicted.
//!
//! Queue entries name (page, generation); an entry whose generation no longer matches
//! the table was discarded or replaced and is skipped.

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::Ordering;

use super::Page;
use crate::page::{PageId, PageKind};

/// Hashes page numbers with one multiplication (Fibonacci hashing): the ghost set is
/// updated on every eviction from the small queue, under the pool's miss lock, where
/// SipHash cost more than the rest of the bookkeeping. Page numbers are not chosen by
/// an adversary.
#[derive(Default)]
pub struct PageIdHasher(u64);

impl Hasher for PageIdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        // High bits feed the table index (hashbrown uses the top 7 for its tags and the
        // low bits for the bucket), so fold the product's high half down.
        let h = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

/// A set of page numbers hashed with [`PageIdHasher`].
type IdSet = HashSet<PageId, BuildHasherDefault<PageIdHasher>>;

/// What the policy decided about the page at the head of a queue.
pub enum Verdict {
    /// Keep it (it was moved to the main queue or requeued).
    Keep,
    /// Evict it.
    Evict {
        /// The page came from the small queue (its number goes to the ghost list).
        from_small: bool,
    },
}

/// The S3-FIFO queues.
#[derive(Debug)]
pub struct Evictor {
    capacity: usize,
    small_target: usize,
    small: VecDeque<(PageId, u64)>,
    main: VecDeque<(PageId, u64)>,
    ghost: VecDeque<PageId>,
    ghost_set: IdSet,
    /// Frames cached whole by the full-frame reproduction mode, oldest first: (first
    /// page, pages). They are evicted first-in first-out, a whole frame at a time.
    pub frames: VecDeque<(PageId, u64)>,
    /// Pages in the table.
    pub resident: usize,
}

impl Evictor {
    /// Queues for a pool of `capacity` pages.
    pub fn new(capacity: usize) -> Self {
        Evictor {
            capacity,
            small_target: (capacity / 10).max(1),
            small: VecDeque::new(),
            main: VecDeque::new(),
            ghost: VecDeque::new(),
            ghost_set: IdSet::default(),
            frames: VecDeque::new(),
            resident: 0,
        }
    }

    /// Capacity in pages.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// True while the pool holds more pages than its budget.
    pub fn over_budget(&self) -> bool {
        self.resident > self.capacity
    }

    /// Queues a newly resident page.
    pub fn admit(&mut self, page: &Page) {
        let entry = (page.id(), page.gen());
        if page.kind() == PageKind::Inner || self.ghost_set.remove(&page.id()) {
            self.main.push_back(entry);
        } else {
            self.small.push_back(entry);
        }
    }

    /// Queues a replacement image for a page that stays resident.
    pub fn requeue_replacement(&mut self, page: &Page) {
        self.main.push_back((page.id(), page.gen()));
    }

    /// The next candidate: (page, generation, from the small queue).
    pub fn next_candidate(&mut self) -> Option<(PageId, u64, bool)> {
        let from_small = self.small.len() > self.small_target || self.main.is_empty();
        let q = if from_small {
            &mut self.small
        } else {
            &mut self.main
        };
        let (id, gen) = q.pop_front()?;
        Some((id, gen, from_small))
    }

    /// Applies the policy to a candidate that is still resident.
    pub fn judge(&mut self, page: &Page, from_small: bool) -> Verdict {
        let entry = (page.id(), page.gen());
        if page.pinned.load(Ordering::Relaxed) {
            self.main.push_back(entry);
            return Verdict::Keep;
        }
        let f = page.freq.load(Ordering::Relaxed);
        if from_small {
            if f > 0 {
                page.freq.store(0, Ordering::Relaxed);
                self.main.push_back(entry);
                return Verdict::Keep;
            }
        } else if f > 0 {
            page.freq.store(f - 1, Ordering::Relaxed);
            self.main.push_back(entry);
            return Verdict::Keep;
        }
        Verdict::Evict { from_small }
    }

    /// Puts back a page whose eviction failed (its write-back did not succeed).
    pub fn keep_after_failure(&mut self, page: &Page) {
        self.main.push_back((page.id(), page.gen()));
    }

    /// Remembers an evicted page number so that a quick return goes to the main queue.
    pub fn remember(&mut self, id: PageId) {
        if self.ghost_set.insert(id) {
            self.ghost.push_back(id);
        }
        while self.ghost.len() > self.capacity {
            if let Some(old) = self.ghost.pop_front() {
                self.ghost_set.remove(&old);
            }
        }
    }

    /// Entries in both queues (an upper bound on candidates to examine).
    pub fn queued(&self) -> usize {
        self.small.len() + self.main.len()
    }
}
