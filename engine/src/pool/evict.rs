//! S3-FIFO eviction (Yang et al., SOSP 2023): a small probationary FIFO takes new pages,
//! a main FIFO holds pages that proved useful, and a ghost list remembers recently
//! evicted page numbers. A one-pass scan only ever cycles through the small queue, so it
//! cannot flush the working set. Inner pages enter the main queue directly and saturate
//! at a higher frequency, so leaves go first; pinned pages (the root) are never evicted.
//!
//! Queue entries name (page, generation); an entry whose generation no longer matches
//! the table was discarded or replaced and is skipped.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Page;
use crate::page::{PageId, PageKind};

/// A set of page numbers, hashed with one multiplication (`page::id_hash`).
type IdSet = crate::page::PageSet;

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
    /// Stale images of freed pages kept in the table for reuse (`BufferPool::keep_freed`),
    /// oldest first: evicted before any page of the queues, which someone may read.
    stale: VecDeque<(PageId, u64)>,
    /// Dirty victims taken out of the queues, to be written back after the evictor's lock
    /// is released and then evicted (`BufferPool::write_back_set_aside`), with whether
    /// each came from the small queue.
    set_aside: Vec<(Arc<Page>, bool)>,
    /// Victims set aside and not yet settled (written back and evicted, or requeued):
    /// they count as gone for the budget, so that no other page is evicted in their place.
    writing: usize,
}

/// Stale images remembered for eviction first; an older one beyond this is left to the
/// queues (a steady writer replaces each within a commit or two).
const STALE_ENTRIES: usize = 256;

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
            stale: VecDeque::new(),
            set_aside: Vec::new(),
            writing: 0,
        }
    }

    /// Capacity in pages.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Changes the capacity; the next admission evicts down to it.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.small_target = (capacity / 10).max(1);
    }

    /// True while the pool holds more pages than its budget, not counting the victims
    /// being written back (they leave as soon as they are clean).
    pub fn over_budget(&self) -> bool {
        self.resident.saturating_sub(self.writing) > self.capacity
    }

    /// Takes a dirty victim out of the queues until it is written back: see
    /// [`Evictor::next_set_aside`] and [`Evictor::settled`].
    pub fn set_aside(&mut self, page: Arc<Page>, from_small: bool) {
        self.writing += 1;
        self.set_aside.push((page, from_small));
    }

    /// A victim set aside and not yet taken by a thread to write back.
    pub fn next_set_aside(&mut self) -> Option<(Arc<Page>, bool)> {
        self.set_aside.pop()
    }

    /// Victims set aside and not yet settled.
    #[cfg(test)]
    pub fn writing(&self) -> usize {
        self.writing
    }

    /// A victim set aside was written back (or found clean, or failed): it counts for the
    /// budget again, and its caller evicts or requeues it.
    pub fn settled(&mut self) {
        self.writing = self.writing.saturating_sub(1);
    }

    /// Puts a victim back at the head of its queue: the next candidate again.
    pub fn requeue_first(&mut self, page: &Page, from_small: bool) {
        let entry = (page.id(), page.gen());
        if from_small {
            self.small.push_front(entry);
        } else {
            self.main.push_front(entry);
        }
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

    /// Remembers the stale image (page, generation) of a freed page kept for reuse.
    pub fn note_stale(&mut self, id: PageId, gen: u64) {
        if self.stale.len() >= STALE_ENTRIES {
            self.stale.pop_front();
        }
        self.stale.push_back((id, gen));
    }

    /// The oldest stale image remembered: evicted first when it is still resident.
    pub fn next_stale(&mut self) -> Option<(PageId, u64)> {
        self.stale.pop_front()
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

    /// True when the queues hold so many dead entries (pages discarded or replaced since
    /// they were queued) that they should be dropped: a pool under its budget never takes
    /// a candidate, so without this a writer whose data fits grew them by an entry for
    /// every page it wrote (three a compare-and-swap), forever.
    pub fn has_many_dead(&self) -> bool {
        self.queued() > 2 * self.capacity + DEAD_SLACK
    }

    /// Keeps only the queue entries for which `live(page, generation)` holds.
    pub fn drop_dead(&mut self, live: impl Fn(PageId, u64) -> bool) {
        self.small.retain(|&(id, gen)| live(id, gen));
        self.main.retain(|&(id, gen)| live(id, gen));
    }
}

/// Dead queue entries tolerated beyond twice the capacity before they are dropped: each
/// drop costs a pass over the queues, so it runs once per that many admissions at most.
const DEAD_SLACK: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::buffer::tests::pool_over;
    use crate::pool::{Access, Counter, ScanIo};

    /// A resident page as the evictor sees it (its bytes play no part in the policy).
    fn page(id: PageId, kind: PageKind, gen: u64) -> Page {
        Page::new(id, kind, 1, gen, Box::new([]), false)
    }

    fn ids(q: &VecDeque<(PageId, u64)>) -> Vec<PageId> {
        q.iter().map(|&(id, _)| id).collect()
    }

    #[test]
    fn new_leaves_go_to_the_small_queue_and_inner_pages_to_the_main() {
        let mut ev = Evictor::new(20);
        assert_eq!(ev.small_target, 2);
        ev.admit(&page(2, PageKind::Leaf, 1));
        ev.admit(&page(3, PageKind::Inner, 2));
        ev.admit(&page(4, PageKind::Overflow, 3));
        assert_eq!(ids(&ev.small), vec![2, 4]);
        assert_eq!(ids(&ev.main), vec![3]);
        assert_eq!(ev.queued(), 3);
    }

    #[test]
    fn candidates_come_from_small_while_it_is_over_its_share() {
        let mut ev = Evictor::new(20);
        for id in 2..6 {
            ev.admit(&page(id, PageKind::Leaf, id));
        }
        ev.admit(&page(9, PageKind::Inner, 9));
        // Small holds 4 > its target of 2: its oldest page goes first.
        assert_eq!(ev.next_candidate(), Some((2, 2, true)));
        assert_eq!(ev.next_candidate(), Some((3, 3, true)));
        // Small is at its target now: main's oldest is next.
        assert_eq!(ev.next_candidate(), Some((9, 9, false)));
        // With main empty, small is drained whatever its length.
        assert_eq!(ev.next_candidate(), Some((4, 4, true)));
        assert_eq!(ev.next_candidate(), Some((5, 5, true)));
        assert_eq!(ev.next_candidate(), None);
    }

    #[test]
    fn a_page_never_re_referenced_is_evicted_from_small_and_remembered() {
        let mut ev = Evictor::new(10);
        let p = page(2, PageKind::Leaf, 1);
        ev.admit(&p);
        let (id, _, from_small) = ev.next_candidate().expect("candidate");
        assert!(matches!(
            ev.judge(&p, from_small),
            Verdict::Evict { from_small: true }
        ));
        ev.remember(id);
        assert!(ev.ghost_set.contains(&2));
        // Back soon after: the ghost entry sends it straight to main, and is used up.
        ev.admit(&page(2, PageKind::Leaf, 5));
        assert_eq!(ids(&ev.main), vec![2]);
        assert!(ev.small.is_empty() && !ev.ghost_set.contains(&2));
    }

    #[test]
    fn a_re_referenced_page_is_promoted_with_its_count_reset() {
        let mut ev = Evictor::new(10);
        let p = page(2, PageKind::Leaf, 1);
        ev.admit(&p);
        p.touch();
        p.touch();
        let (_, _, from_small) = ev.next_candidate().expect("candidate");
        assert!(matches!(ev.judge(&p, from_small), Verdict::Keep));
        assert_eq!(ids(&ev.main), vec![2]);
        assert_eq!(p.freq.load(Ordering::Relaxed), 0);
        // In main with no reference since: it goes, and is not remembered as a ghost.
        let (_, _, from_small) = ev.next_candidate().expect("candidate");
        assert!(!from_small);
        assert!(matches!(
            ev.judge(&p, from_small),
            Verdict::Evict { from_small: false }
        ));
    }

    #[test]
    fn each_reference_buys_a_main_page_one_more_pass_and_inner_pages_count_higher() {
        // Passes through the main queue that a page survives after many references.
        fn passes(kind: PageKind) -> usize {
            let mut ev = Evictor::new(10);
            let p = page(2, kind, 1);
            ev.main.push_back((p.id(), p.gen()));
            for _ in 0..100 {
                p.touch();
            }
            let mut kept = 0;
            loop {
                let (_, _, from_small) = ev.next_candidate().expect("queued");
                match ev.judge(&p, from_small) {
                    Verdict::Keep => kept += 1,
                    Verdict::Evict { .. } => return kept,
                }
            }
        }
        assert_eq!(passes(PageKind::Leaf), 3);
        assert_eq!(passes(PageKind::Inner), 7);
    }

    #[test]
    fn a_pinned_page_is_always_kept() {
        let mut ev = Evictor::new(10);
        let p = page(2, PageKind::Leaf, 1);
        p.pinned.store(true, Ordering::Relaxed);
        ev.admit(&p);
        for _ in 0..20 {
            let (_, _, from_small) = ev.next_candidate().expect("queued");
            assert!(matches!(ev.judge(&p, from_small), Verdict::Keep));
        }
        assert_eq!(ev.queued(), 1);
    }

    #[test]
    fn the_ghost_list_forgets_the_oldest_beyond_the_capacity() {
        let mut ev = Evictor::new(8);
        for id in 2..20 {
            ev.remember(id);
        }
        ev.remember(19);
        assert_eq!(ev.ghost.len(), 8);
        assert_eq!(ev.ghost_set.len(), 8);
        assert!((2..12).all(|id| !ev.ghost_set.contains(&id)));
        assert!((12..20).all(|id| ev.ghost_set.contains(&id)));
    }

    /// The claim of docs/design.md: a one-pass scan of ten times the pool does not flush
    /// the working set. Pages are read through a real pool; the hot set is read three
    /// times among one-off reads that keep the pool full and evicting, then ten pools'
    /// worth of distinct pages are read once each, then the hot set again.
    #[test]
    fn a_hot_set_survives_a_one_pass_scan_of_ten_times_the_pool() {
        const CAPACITY: u64 = 100;
        const HOT: u64 = CAPACITY / 2;
        const SCAN: u64 = 10 * CAPACITY;
        let cold_per_round = CAPACITY;
        let rounds = 3;
        let total = HOT + rounds * cold_per_round + SCAN;
        let (pool, _) = pool_over(total, CAPACITY as usize, ScanIo::Paged);
        let hot = 2..2 + HOT;
        let mut next_cold = 2 + HOT;
        for _ in 0..rounds {
            for id in hot.clone() {
                pool.get(id, Access::Point).expect("hot read");
            }
            for id in next_cold..next_cold + cold_per_round {
                pool.get(id, Access::Point).expect("cold read");
            }
            next_cold += cold_per_round;
        }
        let counts = |pool: &crate::pool::BufferPool| {
            (
                pool.counters().get(Counter::PageHits),
                pool.counters().get(Counter::PageMisses),
                pool.counters().get(Counter::Evictions),
            )
        };
        let (hits0, misses0, evictions0) = counts(&pool);
        for id in next_cold..next_cold + SCAN {
            pool.get(id, Access::Walk).expect("scan read");
        }
        let (hits1, misses1, evictions1) = counts(&pool);
        assert_eq!((hits1 - hits0, misses1 - misses0), (0, SCAN));
        assert!(evictions1 - evictions0 >= SCAN - CAPACITY);
        for id in hot {
            pool.get(id, Access::Point)
                .expect("hot read after the scan");
        }
        let (hits2, misses2, _) = counts(&pool);
        assert_eq!(
            (hits2 - hits1, misses2 - misses1),
            (HOT, 0),
            "hot-set hits and misses after a scan of {SCAN} pages through a pool of {CAPACITY}"
        );
    }
}
