//! Buffers a write transaction fills and the next one reuses. A KV-cache trace commits
//! tens of thousands of small batches of long keys; allocating these afresh for each one
//! grew them by doubling every time (callgrind: a fifth of the trace's allocator work), so
//! the tree's writer keeps them between commits, under its lock.

use super::Freed;
use crate::page::{KeySpans, PageId, PageMap, PageSet};

/// A run of a batch's sorted mutations under one child of an inner page: (child index,
/// child page, end of the run in the batch).
pub(crate) type Run = (usize, PageId, usize);
/// A child that stays one page: (child index, its new page, the entries under it).
pub(crate) type Patch = (usize, PageId, u64);

/// One inner level's buffers for a change's descent.
#[derive(Debug, Default)]
pub(crate) struct LevelBuffers {
    pub(super) runs: Vec<Run>,
    pub(super) patches: Vec<Patch>,
}

/// A buffer grown past this by one large batch is dropped after it instead of being kept.
const KEEP_BYTES: usize = 1 << 20;
/// The bookkeeping maps of a batch that changed more pages than this are dropped after it.
const KEEP_PAGES: usize = 64;

/// The reusable buffers of one writer.
#[derive(Debug, Default)]
pub struct WriteScratch {
    /// The log record being built: room for its header, then the encoded mutations.
    pub(crate) log: Vec<u8>,
    /// A copy of the changed leaf's image (its values are borrowed from there).
    pub(crate) leaf_image: Vec<u8>,
    /// The changed leaf's whole keys, one after another.
    pub(crate) leaf_keys: Vec<u8>,
    /// Where each of those keys lies.
    pub(crate) leaf_spans: KeySpans,
    /// Each of those keys' common prefix with the key before it.
    pub(crate) leaf_lcps: Vec<u32>,
    /// The same for the entries of the leaf being written.
    pub(crate) merged_lcps: Vec<u32>,
    /// Where each mutation of a leaf's run is in that leaf.
    pub(crate) found: Vec<std::result::Result<usize, usize>>,
    /// A compare-and-swap's condition, with its buffer for the expected value.
    pub(crate) swap_check: super::swap::SwapCheck,
    /// Each inner level's buffers, by level (a single put's descent allocated a vector
    /// for its runs and another for its changes at every level: callgrind,
    /// docs/performance.md).
    levels: Vec<LevelBuffers>,
    /// A transaction's copy-on-write bookkeeping, empty between transactions.
    pub(crate) books: Books,
}

/// What a write transaction records about the pages it takes and gives up, kept empty
/// between transactions with its capacity: a compare-and-swap built these maps afresh
/// on every commit, 4 of its 21 allocator calls (callgrind, docs/performance.md).
#[derive(Debug, Default)]
pub(crate) struct Books {
    pub(super) pages: PageMap<Vec<u8>>,
    pub(super) allocated: PageSet,
    pub(super) runs: PageMap<u64>,
    pub(super) overflow: PageMap<Vec<u8>>,
    pub(super) frees: Vec<Freed>,
}

impl Books {
    /// Empties every collection, keeping its capacity.
    pub(super) fn clear(&mut self) {
        self.pages.clear();
        self.allocated.clear();
        self.runs.clear();
        self.overflow.clear();
        self.frees.clear();
    }

    /// True when every collection is empty (as between transactions).
    pub(super) fn is_clear(&self) -> bool {
        self.pages.is_empty()
            && self.allocated.is_empty()
            && self.runs.is_empty()
            && self.overflow.is_empty()
            && self.frees.is_empty()
    }
}

impl WriteScratch {
    /// Empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Level `level`'s buffers, empty, for the descent to fill and give back.
    pub(super) fn take_level(&mut self, level: u32) -> LevelBuffers {
        let mut b = self
            .levels
            .get_mut(level as usize)
            .map(std::mem::take)
            .unwrap_or_default();
        b.runs.clear();
        b.patches.clear();
        b
    }

    /// Gives back level `level`'s buffers for the next descent.
    pub(super) fn give_back_level(&mut self, level: u32, b: LevelBuffers) {
        let i = level as usize;
        if self.levels.len() <= i {
            self.levels.resize_with(i + 1, LevelBuffers::default);
        }
        self.levels[i] = b;
    }

    /// Drops any buffer that one unusually large batch left oversized.
    pub(crate) fn trim(&mut self) {
        fn trim<T>(v: &mut Vec<T>) {
            if v.capacity() * size_of::<T>() > KEEP_BYTES {
                *v = Vec::new();
            }
        }
        trim(&mut self.log);
        trim(&mut self.leaf_image);
        trim(&mut self.leaf_keys);
        trim(&mut self.leaf_spans);
        trim(&mut self.leaf_lcps);
        trim(&mut self.merged_lcps);
        trim(&mut self.found);
        trim(&mut self.swap_check.expected);
        for b in &mut self.levels {
            trim(&mut b.runs);
            trim(&mut b.patches);
        }
        trim(&mut self.books.frees);
        if self.books.pages.capacity() > KEEP_PAGES {
            // One large batch's maps: dropped, as its buffers are.
            self.books = Books::default();
        }
    }
}
