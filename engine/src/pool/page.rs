//! A page image resident in the pool. Published images are immutable: writers build new
//! pages (copy-on-write) and readers share the old ones, so reads take no latch.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crate::page::{InnerView, LeafView, PageId, PageKind};
use crate::storage::SharedMap;

/// Access frequency cap for leaves and other pages.
const LEAF_FREQ_CAP: u8 = 3;
/// Inner pages saturate higher, so eviction keeps them in preference to leaves.
const INNER_FREQ_CAP: u8 = 7;

/// Where a page's bytes live.
#[derive(Debug)]
enum Image {
    /// The pool's own copy: every image a commit builds, and every image read while pages
    /// are not shared.
    Owned(Box<[u8]>),
    /// In place in the OS page cache, through a read-only map of the data file: the page's
    /// place is its page number, its length the page size. No copy is held, so under a
    /// memory cgroup the page cache is the only cache of a clean page (docs/design.md).
    Shared(SharedMap),
}

/// One resident page. Kept within 48 bytes, so that with its `Arc` counts it fills one
/// 64-byte cache line (a test holds this).
#[derive(Debug)]
pub struct Page {
    id: PageId,
    txn: u64,
    gen: u64,
    image: Image,
    kind: PageKind,
    /// log2 of the page size: a shared image's length and, with the page number, place.
    size_shift: u8,
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
            size_shift: buf.len().max(1).ilog2() as u8,
            image: Image::Owned(buf),
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

    /// A clean page whose verified image stays in place in `map` (its page number is its
    /// place; `page_bytes` a power of two).
    pub(crate) fn shared(
        id: PageId,
        kind: PageKind,
        txn: u64,
        gen: u64,
        map: SharedMap,
        page_bytes: usize,
    ) -> Self {
        Page {
            id,
            kind,
            txn,
            gen,
            size_shift: page_bytes.max(1).ilog2() as u8,
            image: Image::Shared(map),
            freq: AtomicU8::new(0),
            dirty: AtomicBool::new(false),
            pinned: AtomicBool::new(false),
            frame_unit: AtomicBool::new(false),
        }
    }

    /// The image buffer of a page no one else holds, for a miss to read into when the
    /// page is reused (see [`Page::reuse`]); None for a shared image, which has none.
    pub(crate) fn buf_mut(&mut self) -> Option<&mut [u8]> {
        match &mut self.image {
            Image::Owned(buf) => Some(buf),
            Image::Shared(_) => None,
        }
    }

    /// True when the image is shared with the OS page cache rather than owned.
    #[inline]
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self.image, Image::Shared(_))
    }

    /// Turns an evicted page no one else holds into the page of a new shared image (an
    /// owned buffer it held is freed).
    pub(crate) fn reuse_shared(
        &mut self,
        id: PageId,
        kind: PageKind,
        txn: u64,
        gen: u64,
        map: SharedMap,
    ) {
        self.image = Image::Shared(map);
        self.reuse(id, kind, txn, gen);
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
    /// into (whatever it holds is overwritten); None for a shared image.
    pub(crate) fn into_buffer(self) -> Option<Vec<u8>> {
        match self.image {
            Image::Owned(buf) => Some(buf.into_vec()),
            Image::Shared(_) => None,
        }
    }

    /// The page bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match &self.image {
            Image::Owned(buf) => buf,
            Image::Shared(map) => {
                let start = (self.id as usize) << self.size_shift;
                // The pool made the image from a map that covers its place (see
                // `BufferPool::share`), so the range is always there.
                map.get(start..start + (1usize << self.size_shift))
                    .unwrap_or_default()
            }
        }
    }

    /// A leaf view (the caller has checked the kind).
    #[inline]
    pub fn leaf(&self) -> LeafView<'_> {
        LeafView::new(self.bytes())
    }

    /// An inner view (the caller has checked the kind).
    #[inline]
    pub fn inner(&self) -> InnerView<'_> {
        InnerView::new(self.bytes())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_and_its_arc_counts_fit_one_cache_line() {
        // An `Arc<Page>` allocation is the two reference counts and the page.
        assert!(
            std::mem::size_of::<Page>() + 2 * std::mem::size_of::<usize>() <= 64,
            "Page is {} bytes",
            std::mem::size_of::<Page>()
        );
    }
}
