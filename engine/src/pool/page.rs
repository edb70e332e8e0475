//! A page image resident in the pool. Published images are immutable: writers build new
//! pages (copy-on-write) and readers share the old ones, so reads take no latch.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crate::page::{InnerView, LeafView, PageId, PageKind};

/// Access frequency cap for leaves and other pages.
const LEAF_FREQ_CAP: u8 = 3;
/// Inner pages saturate higher, so eviction keeps them in preference to leaves.
const INNER_FREQ_CAP: u8 = 7;

/// One resident page.
#[derive(Debug)]
pub struct Page {
    id: PageId,
    kind: PageKind,
    txn: u64,
    gen: u64,
    buf: Box<[u8]>,
    pub(crate) freq: AtomicU8,
    /// Not yet written to its place in the file. Cleared only under the pool's write-back
    /// latch: by the write that puts the image in place, or when the page is discarded
    /// (its place now belongs to another image, and this one must never be written there).
    pub(crate) dirty: AtomicBool,
    pub(crate) pinned: AtomicBool,
    /// Cached as part of a whole frame (full-frame reproduction mode): evicted with it.
    pub(crate) frame_unit: AtomicBool,
}

impl Page {
    /// Wraps a verified page image.
    pub(crate) fn new(
        id: PageId,
        kind: PageKind,
        txn: u64,
        gen: u64,
        buf: Box<[u8]>,
        dirty: bool,
    ) -> Self {
        Page {
            id,
            kind,
            txn,
            gen,
            buf,
            freq: AtomicU8::new(0),
            dirty: AtomicBool::new(dirty),
            pinned: AtomicBool::new(false),
            frame_unit: AtomicBool::new(false),
        }
    }

    /// The page number.
    #[inline]
    pub fn id(&self) -> PageId {
        self.id
    }

    /// What the page holds.
    #[inline]
    pub fn kind(&self) -> PageKind {
        self.kind
    }

    /// The commit that created this page image.
    #[inline]
    pub fn txn(&self) -> u64 {
        self.txn
    }

    /// Insertion generation, unique per image, to tell stale queue entries apart.
    #[inline]
    pub(crate) fn gen(&self) -> u64 {
        self.gen
    }

    /// The image buffer of a page no one else holds, for a miss to read into when the
    /// page is reused (see [`Page::reuse`]).
    pub(crate) fn buf_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// Turns an evicted page no one else holds into the page of a new image read into its
    /// buffer: the pool reuses evicted pages whole, so that a miss allocates nothing.
    pub(crate) fn reuse(&mut self, id: PageId, kind: PageKind, txn: u64, gen: u64) {
        self.id = id;
        self.kind = kind;
        self.txn = txn;
        self.gen = gen;
        *self.freq.get_mut() = 0;
        *self.dirty.get_mut() = false;
        *self.pinned.get_mut() = false;
        *self.frame_unit.get_mut() = false;
    }

    /// The image buffer of a page no one else holds, for a writer to encode a new page
    /// into (whatever it holds is overwritten).
    pub(crate) fn into_buffer(self) -> Vec<u8> {
        self.buf.into_vec()
    }

    /// The page bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// A leaf view (the caller has checked the kind).
    #[inline]
    pub fn leaf(&self) -> LeafView<'_> {
        LeafView::new(&self.buf)
    }

    /// An inner view (the caller has checked the kind).
    #[inline]
    pub fn inner(&self) -> InnerView<'_> {
        InnerView::new(&self.buf)
    }

    /// Records an access for eviction, without writing when already saturated.
    #[inline]
    pub(crate) fn touch(&self) {
        let cap = if self.kind == PageKind::Inner {
            INNER_FREQ_CAP
        } else {
            LEAF_FREQ_CAP
        };
        let f = self.freq.load(Ordering::Relaxed);
        if f < cap {
            self.freq.store(f + 1, Ordering::Relaxed);
        }
    }

    /// True when the image has not been written to its place in the file yet.
    #[inline]
    pub fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }
}
