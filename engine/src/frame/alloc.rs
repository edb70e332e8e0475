//! The page allocator: free extents, file growth by whole frames, and frees that wait.
//!
//! A page image created by commit `created` and replaced by commit `freed` (its last
//! version was visible to snapshots before `freed`) may be reused only when
//! 1. no live snapshot is older than `freed`, and
//! 2. no checkpoint that recovery could start from references it. Those are the durable
//!    checkpoint and, while one runs, the checkpoint being written (its superblock may
//!    reach the disk at any moment, and its flush may still be writing the page). A
//!    checkpoint of commit `c` references the page when `created <= c < freed`.
//!
//! Pages that never reached a checkpoint are therefore recycled as soon as readers move
//! on, while pages of a recoverable tree wait for a newer checkpoint (shadow paging).
//!
//! Single pages that become free that way are kept apart, up to [`HOT_PAGES`], as the
//! next page copies' places (LMDB reuses the pages its last transactions freed the same
//! way): a steady writer's commit frees about as many single pages as it copies, and
//! taking them back from a short list costs neither the free-extent map's updates nor, in
//! the buffer pool, dropping the old image's place and making a new one (the pool keeps
//! such a page's last image resident but unreachable, and the next image replaces it).

use std::collections::{BTreeMap, VecDeque};

use super::Geometry;
use crate::page::PageId;

/// Pages 0 and 1 hold the two superblock copies.
pub const FIRST_DATA_PAGE: PageId = 2;

/// Freed single pages kept for the next page copies (see the module comment): enough for a
/// single put's or a small batch's path, few enough that their stale images take little of
/// the pool (64 left the gate's cold trace lookups at their bound: docs/performance.md).
pub const HOT_PAGES: usize = 8;

/// What one [`Allocator::reclaim`] made free, kept by the caller between commits so that
/// a commit allocates nothing for it.
#[derive(Debug, Default)]
pub struct Reclaimed {
    /// Extents returned to the free space: the buffer pool drops their images.
    pub released: Vec<(PageId, u64)>,
    /// Single pages kept for the next page copies: the buffer pool keeps their images
    /// resident but makes sure none is ever written (the page's next image replaces it).
    pub kept: Vec<PageId>,
}

impl Reclaimed {
    fn clear(&mut self) {
        self.released.clear();
        self.kept.clear();
    }
}

/// The checkpoints that recovery could start from: the durable one and, while it is being
/// written, the next one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recoverable {
    /// The commit the durable checkpoint captured.
    pub durable: u64,
    /// The commit a checkpoint being written captured. It stays set when that checkpoint
    /// fails: its superblock may have reached the disk.
    pub in_flight: Option<u64>,
}

impl Recoverable {
    /// True when one of these checkpoints references a page image that commit `created`
    /// wrote and commit `freed` replaced.
    pub fn reference(&self, created: u64, freed: u64) -> bool {
        let refs = |c: u64| created <= c && c < freed;
        refs(self.durable) || self.in_flight.is_some_and(refs)
    }
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    first: PageId,
    len: u64,
    created: u64,
    freed: u64,
}

/// Free space of the data file.
#[derive(Debug, Clone)]
pub struct Allocator {
    geo: Geometry,
    free: BTreeMap<PageId, u64>,
    free_pages: u64,
    page_count: u64,
    pending: VecDeque<Pending>,
    awaiting_checkpoint: Vec<Pending>,
    /// Pages in `awaiting_checkpoint`: what the recoverable checkpoints keep out of use.
    awaiting_pages: u64,
    /// The checkpoints every entry of `awaiting_checkpoint` was last found referenced by:
    /// while they stay the same, no entry can leave the list, and a commit's reclaim
    /// skips the scan (it was O(list) per commit, a third of a single put's instructions
    /// under callgrind between two checkpoints).
    awaiting_checked: Option<Recoverable>,
    /// Free single pages kept for [`Allocator::alloc_page`]; counted in `free_pages` and
    /// never in `free`.
    hot: Vec<PageId>,
}

impl Allocator {
    /// An allocator for a file of `page_count` pages whose free extents are `free`.
    pub fn new(
        geo: Geometry,
        page_count: u64,
        free: impl IntoIterator<Item = (PageId, u64)>,
    ) -> Self {
        let mut a = Allocator {
            geo,
            free: BTreeMap::new(),
            free_pages: 0,
            page_count: page_count.max(geo.pages_per_frame()),
            pending: VecDeque::new(),
            awaiting_checkpoint: Vec::new(),
            awaiting_pages: 0,
            awaiting_checked: None,
            hot: Vec::with_capacity(HOT_PAGES),
        };
        if page_count == 0 {
            a.release(FIRST_DATA_PAGE, geo.pages_per_frame() - FIRST_DATA_PAGE);
        }
        for (first, len) in free {
            a.release(first, len);
        }
        a
    }

    /// Pages in the file, a whole number of frames.
    pub fn page_count(&self) -> u64 {
        self.page_count
    }

    /// Pages free for reuse now.
    pub fn free_pages(&self) -> u64 {
        self.free_pages
    }

    /// Pages that no snapshot needs any more but a recoverable checkpoint still
    /// references: only a newer checkpoint brings them back into use.
    pub fn awaiting_checkpoint_pages(&self) -> u64 {
        self.awaiting_pages
    }

    /// Allocates one page for a commit's page image, at the lowest free address as
    /// [`Allocator::alloc`] does (so pages land where they did before pages were kept:
    /// taking the most recently freed instead scattered a trace's pages and its cold
    /// lookups read 7 % more of them, the gate's `pages_per_trace_lookup_cold`). When
    /// that is a kept single page, its stale image may still be in the buffer pool: the
    /// caller installs a new image for it, or gives it back with
    /// [`Allocator::give_back_page`].
    pub fn alloc_page(&mut self) -> PageId {
        let lowest_kept = self
            .hot
            .iter()
            .enumerate()
            .min_by_key(|&(_, &id)| id)
            .map(|(i, &id)| (i, id));
        match lowest_kept {
            Some((i, id)) if self.free.keys().next().is_none_or(|&f| id < f) => {
                self.hot.swap_remove(i);
                self.free_pages -= 1;
                id
            }
            _ => self.alloc(1),
        }
    }

    /// Returns a page from [`Allocator::alloc_page`] that got no image after all (a
    /// transaction that changed its mind or was dropped) to the kept single pages.
    pub fn give_back_page(&mut self, id: PageId) {
        self.hot.push(id);
        self.free_pages += 1;
    }

    /// Allocates `n` contiguous pages, reusing free space first (lowest address that fits)
    /// and growing the file by whole frames otherwise. Never a kept single page: their
    /// stale images may still be in the buffer pool, which only a page image replaces.
    pub fn alloc(&mut self, n: u64) -> PageId {
        let found = self
            .free
            .iter()
            .find(|(_, &len)| len >= n)
            .map(|(&s, &l)| (s, l));
        if let Some((start, len)) = found {
            self.free.remove(&start);
            if len > n {
                self.free.insert(start + n, len - n);
            }
            self.free_pages -= n;
            return start;
        }
        self.alloc_at_end(n)
    }

    /// Allocates `n` contiguous pages at the end of the file, so that consecutive calls
    /// return adjacent pages (bulk load lays leaves out this way). Space left at the end
    /// of the last frame is used first.
    pub fn alloc_at_end(&mut self, n: u64) -> PageId {
        // A free extent that reaches the end of the file can be extended in place.
        let tail = self
            .free
            .iter()
            .next_back()
            .filter(|(&s, &l)| s + l == self.page_count)
            .map(|(&s, &l)| (s, l));
        let start = match tail {
            Some((s, l)) => {
                self.free.remove(&s);
                self.free_pages -= l;
                s
            }
            None => self.page_count,
        };
        let end = start + n;
        let ppf = self.geo.pages_per_frame();
        let new_count = end.div_ceil(ppf) * ppf;
        let old_count = self.page_count;
        self.page_count = new_count.max(old_count);
        if self.page_count > end {
            self.release(end, self.page_count - end);
        }
        start
    }

    /// Returns pages to the free space at once (they are referenced by nothing).
    pub fn release(&mut self, first: PageId, len: u64) {
        if len == 0 {
            return;
        }
        let mut start = first;
        let mut end = first + len;
        if let Some((&s, &l)) = self.free.range(..first).next_back() {
            if s + l == first {
                self.free.remove(&s);
                start = s;
            }
        }
        if let Some(&l) = self.free.get(&end) {
            self.free.remove(&end);
            end += l;
        }
        self.free.insert(start, end - start);
        self.free_pages += len;
    }

    /// Frees pages created by commit `created` and last visible before commit `freed`,
    /// to be reused once [`Allocator::reclaim`] finds both conditions met.
    pub fn defer(&mut self, first: PageId, len: u64, created: u64, freed: u64) {
        self.pending.push_back(Pending {
            first,
            len,
            created,
            freed,
        });
    }

    /// Moves pending frees that no snapshot and no recoverable checkpoint can reach into
    /// the free space, filling `out` (cleared first): single pages are kept for the next
    /// page copies while fewer than [`HOT_PAGES`] are, the rest released to the free-extent
    /// map, so that the buffer pool drops their stale images.
    pub fn reclaim(&mut self, oldest_snapshot: u64, recoverable: Recoverable, out: &mut Reclaimed) {
        out.clear();
        if self.awaiting_checked != Some(recoverable) {
            let mut i = 0;
            while i < self.awaiting_checkpoint.len() {
                let p = self.awaiting_checkpoint[i];
                if recoverable.reference(p.created, p.freed) {
                    i += 1;
                } else {
                    self.awaiting_checkpoint.swap_remove(i);
                    self.awaiting_pages -= p.len;
                    self.make_free(p, out);
                }
            }
            self.awaiting_checked = Some(recoverable);
        }
        // Entries added below are referenced by `recoverable`: the list stays checked.
        while let Some(p) = self.pending.front().copied() {
            if oldest_snapshot < p.freed {
                break;
            }
            self.pending.pop_front();
            if recoverable.reference(p.created, p.freed) {
                self.awaiting_checkpoint.push(p);
                self.awaiting_pages += p.len;
            } else {
                self.make_free(p, out);
            }
        }
        for &(first, len) in &out.released {
            self.release(first, len);
        }
    }

    /// A freed extent that nothing references any more: kept when it is a single page and
    /// there is room, else to be released.
    fn make_free(&mut self, p: Pending, out: &mut Reclaimed) {
        if p.len == 1 && self.hot.len() < HOT_PAGES {
            self.hot.push(p.first);
            self.free_pages += 1;
            out.kept.push(p.first);
        } else {
            out.released.push((p.first, p.len));
        }
    }

    /// Every extent free with respect to the tree as of now (free space, all pending
    /// frees and the single pages `also_free`), sorted and coalesced, for the checkpoint's
    /// free list.
    pub fn extents_for_checkpoint(&self, also_free: &[PageId]) -> Vec<(PageId, u64)> {
        let mut all: Vec<(PageId, u64)> = self.free.iter().map(|(&s, &l)| (s, l)).collect();
        all.extend(
            self.pending
                .iter()
                .chain(&self.awaiting_checkpoint)
                .map(|p| (p.first, p.len)),
        );
        all.extend(also_free.iter().chain(&self.hot).map(|&p| (p, 1)));
        all.sort_unstable();
        let mut merged: Vec<(PageId, u64)> = Vec::with_capacity(all.len());
        for (s, l) in all {
            match merged.last_mut() {
                Some((ms, ml)) if *ms + *ml == s => *ml += l,
                _ => merged.push((s, l)),
            }
        }
        merged
    }

    /// For integrity checks: a function telling why a page cannot belong to the current
    /// tree, if it cannot: it lies outside the file's data area, is free, or was freed by
    /// an earlier commit and waits for readers or a checkpoint.
    pub fn not_live(&self) -> impl Fn(PageId) -> Option<&'static str> + '_ {
        let freed: BTreeMap<PageId, u64> = self
            .pending
            .iter()
            .chain(&self.awaiting_checkpoint)
            .map(|p| (p.first, p.len))
            .collect();
        move |id| {
            if id < FIRST_DATA_PAGE || id >= self.page_count {
                Some("outside the data area of the file")
            } else if self.is_free(id) {
                Some("free")
            } else if freed
                .range(..=id)
                .next_back()
                .is_some_and(|(&s, &l)| id < s + l)
            {
                Some("freed by an earlier commit")
            } else {
                None
            }
        }
    }

    /// True when page `id` is free now (for integrity checks).
    pub fn is_free(&self, id: PageId) -> bool {
        self.hot.contains(&id)
            || self
                .free
                .range(..=id)
                .next_back()
                .is_some_and(|(&s, &l)| id < s + l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo() -> Geometry {
        Geometry::new(4096, 8 * 4096).expect("geometry")
    }

    #[test]
    fn a_new_file_allocates_after_the_superblocks_and_grows_by_frames() {
        let mut a = Allocator::new(geo(), 0, []);
        assert_eq!(a.page_count(), 8);
        assert_eq!(a.alloc(1), 2);
        assert_eq!(a.alloc(5), 3);
        assert_eq!(a.alloc(2), 8);
        assert_eq!(a.page_count(), 16);
        assert_eq!(a.free_pages(), 6);
        a.release(3, 5);
        assert_eq!(a.alloc(1), 3);
    }

    #[test]
    fn alloc_at_end_is_contiguous() {
        let mut a = Allocator::new(geo(), 0, []);
        let first = a.alloc_at_end(3);
        let second = a.alloc_at_end(10);
        assert_eq!(first, 2);
        assert_eq!(second, 5);
        assert_eq!(a.page_count(), 16);
    }

    /// Every page one reclaim made free, kept or released, sorted.
    fn freed_by(a: &mut Allocator, oldest: u64, r: Recoverable) -> Vec<(PageId, u64)> {
        let mut out = Reclaimed::default();
        a.reclaim(oldest, r, &mut out);
        let mut all = out.released.clone();
        all.extend(out.kept.iter().map(|&p| (p, 1)));
        all.sort_unstable();
        all
    }

    fn durable(seq: u64) -> Recoverable {
        Recoverable {
            durable: seq,
            in_flight: None,
        }
    }

    /// An allocator whose first two data pages, `p` and `q`, were freed: each was created
    /// by the first commit of its `(created, freed)` pair and replaced by the second.
    fn two_deferred(p_life: (u64, u64), q_life: (u64, u64)) -> (Allocator, PageId, PageId) {
        let mut a = Allocator::new(geo(), 0, []);
        let (p, q) = (a.alloc(1), a.alloc(1));
        a.defer(p, 1, p_life.0, p_life.1);
        a.defer(q, 1, q_life.0, q_life.1);
        (a, p, q)
    }

    #[test]
    fn deferred_frees_wait_for_readers_and_checkpoints() {
        // p was created after the last checkpoint (0): only readers hold it back. q is
        // part of durable checkpoint 3: it must wait for a checkpoint at or after 7.
        let (mut a, p, q) = two_deferred((5, 7), (2, 7));
        assert!(freed_by(&mut a, 6, durable(3)).is_empty());
        assert_eq!(freed_by(&mut a, 7, durable(3)), vec![(p, 1)]);
        assert!(freed_by(&mut a, 9, durable(6)).is_empty());
        assert_eq!(freed_by(&mut a, 9, durable(7)), vec![(q, 1)]);
        assert!(a.is_free(p) && a.is_free(q));
    }

    #[test]
    fn a_checkpoint_being_written_holds_the_pages_it_references() {
        // Both created after the durable checkpoint 3; checkpoint 6 is being written.
        // p (created 5, replaced 7) is in checkpoint 6's tree; q (created 4, replaced 6)
        // is not.
        let (mut a, p, q) = two_deferred((5, 7), (4, 6));
        let writing = Recoverable {
            durable: 3,
            in_flight: Some(6),
        };
        assert_eq!(freed_by(&mut a, 9, writing), vec![(q, 1)]);
        assert!(!a.is_free(p));
        // Checkpoint 6 became durable: p still waits for one at or after 7.
        assert!(freed_by(&mut a, 9, durable(6)).is_empty());
        assert_eq!(freed_by(&mut a, 9, durable(8)), vec![(p, 1)]);
    }

    #[test]
    fn frees_held_by_a_checkpoint_leave_when_the_checkpoints_change_not_before() {
        // Both part of durable checkpoint 3; q's reader-held free arrives while the list
        // holding p is unchanged, and both must still leave together at checkpoint 7.
        let (mut a, p, q) = two_deferred((2, 5), (2, 7));
        assert!(freed_by(&mut a, 5, durable(3)).is_empty());
        assert!(freed_by(&mut a, 5, durable(3)).is_empty());
        assert_eq!(a.awaiting_checkpoint_pages(), 1);
        assert!(freed_by(&mut a, 7, durable(3)).is_empty());
        assert!(!a.is_free(p) && !a.is_free(q));
        assert_eq!(a.awaiting_checkpoint_pages(), 2);
        assert_eq!(freed_by(&mut a, 7, durable(7)), vec![(p, 1), (q, 1)]);
        assert_eq!(a.awaiting_checkpoint_pages(), 0);
        assert!(freed_by(&mut a, 8, durable(7)).is_empty());
    }

    #[test]
    fn references_are_the_half_open_lifetime() {
        let r = Recoverable {
            durable: 3,
            in_flight: Some(8),
        };
        assert!(r.reference(3, 4) && r.reference(1, 9) && r.reference(8, 9));
        assert!(!r.reference(4, 8) && !r.reference(1, 3) && !r.reference(9, 12));
    }

    #[test]
    fn freed_single_pages_are_the_next_page_copies_places_and_nothing_else() {
        let mut a = Allocator::new(geo(), 0, []);
        let pages: Vec<PageId> = (0..3).map(|_| a.alloc(1)).collect();
        let run = a.alloc(2);
        for &p in &pages {
            a.defer(p, 1, 1, 2);
        }
        a.defer(run, 2, 1, 2);
        let free_before = a.free_pages();
        let mut out = Reclaimed::default();
        a.reclaim(2, durable(0), &mut out);
        assert_eq!(out.kept, pages, "single pages are kept");
        assert_eq!(out.released, vec![(run, 2)], "a run is released");
        assert_eq!(a.free_pages(), free_before + 5);
        assert!(pages.iter().all(|&p| a.is_free(p)));
        // Runs and the checkpoint's own pages never take a kept page (the pool may hold
        // its stale image); a page copy takes the lowest free page, kept or not.
        let run_page = a.alloc(1);
        assert!(!pages.contains(&run_page));
        assert_eq!(run_page, run, "the lowest page of the free extents");
        assert_eq!(a.alloc_page(), pages[0]);
        a.give_back_page(pages[0]);
        assert_eq!(a.alloc_page(), pages[0]);
        assert_eq!(a.alloc_page(), pages[1]);
        assert!(!a.is_free(pages[1]));
        // A checkpoint lists the kept pages as free.
        let listed = a.extents_for_checkpoint(&[]);
        let lists = |p: PageId| listed.iter().any(|&(s, l)| s <= p && p < s + l);
        assert!(lists(pages[2]) && !lists(pages[1]));
        // Kept or in the free extents, the lowest goes first.
        a.release(run_page, 1);
        assert_eq!(a.alloc_page(), pages[2]);
        assert_eq!(a.alloc_page(), run_page);
    }

    #[test]
    fn past_the_kept_pages_bound_single_pages_are_released() {
        let mut a = Allocator::new(geo(), 0, []);
        let pages: Vec<PageId> = (0..HOT_PAGES + 3).map(|_| a.alloc(1)).collect();
        for &p in &pages {
            a.defer(p, 1, 1, 2);
        }
        let mut out = Reclaimed::default();
        a.reclaim(2, durable(0), &mut out);
        assert_eq!(out.kept.len(), HOT_PAGES);
        assert_eq!(out.released.len(), 3);
        assert!(pages.iter().all(|&p| a.is_free(p)));
        // The next reclaim starts from an empty list.
        a.reclaim(2, durable(0), &mut out);
        assert!(out.kept.is_empty() && out.released.is_empty());
    }
}
