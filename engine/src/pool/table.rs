//! The page table: page number -> resident image, a two-level array of atomically
//! swappable pointers. Lookups take no lock and write no shared cache line. Beside each
//! chunk of slots, one bit per page records that the page's on-disk image is known good
//! (verified when read, or written by this process), so a page read again after eviction
//! is not checksummed and validated again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;

use super::Page;
use crate::page::PageId;

const CHUNK_BITS: u32 = 16;
const CHUNK: usize = 1 << CHUNK_BITS;
const DIR: usize = 1 << 16;
/// Pages the table can address (2^32: 16 TiB of 4 KiB pages).
pub const MAX_PAGES: u64 = (DIR * CHUNK) as u64;

/// The slots of `CHUNK` consecutive pages and their known-good bits.
struct Chunk {
    slots: Box<[ArcSwapOption<Page>]>,
    good: Box<[AtomicU64]>,
}

impl Chunk {
    fn new() -> Self {
        Chunk {
            slots: (0..CHUNK).map(|_| ArcSwapOption::empty()).collect(),
            good: (0..CHUNK / 64).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// Page number -> resident page.
pub struct PageTable {
    dir: Box<[OnceLock<Chunk>]>,
}

impl std::fmt::Debug for PageTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageTable").finish_non_exhaustive()
    }
}

impl PageTable {
    /// An empty table.
    pub fn new() -> Self {
        PageTable {
            dir: (0..DIR).map(|_| OnceLock::new()).collect(),
        }
    }

    #[inline]
    fn slot(&self, id: PageId) -> Option<&ArcSwapOption<Page>> {
        let chunk = self.dir.get((id >> CHUNK_BITS) as usize)?.get()?;
        chunk.slots.get((id as usize) & (CHUNK - 1))
    }

    fn chunk_or_create(&self, id: PageId) -> Option<&Chunk> {
        Some(
            self.dir
                .get((id >> CHUNK_BITS) as usize)?
                .get_or_init(Chunk::new),
        )
    }

    fn slot_or_create(&self, id: PageId) -> Option<&ArcSwapOption<Page>> {
        self.chunk_or_create(id)?
            .slots
            .get((id as usize) & (CHUNK - 1))
    }

    /// The word and bit of `id`'s known-good flag.
    fn good_bit(&self, id: PageId, create: bool) -> Option<(&AtomicU64, u64)> {
        let chunk = if create {
            self.chunk_or_create(id)?
        } else {
            self.dir.get((id >> CHUNK_BITS) as usize)?.get()?
        };
        let i = (id as usize) & (CHUNK - 1);
        Some((chunk.good.get(i / 64)?, 1u64 << (i % 64)))
    }

    /// True when `id`'s on-disk image was verified by this process, or written by it,
    /// and has not been overwritten since.
    #[inline]
    pub fn is_known_good(&self, id: PageId) -> bool {
        self.good_bit(id, false)
            .is_some_and(|(w, b)| w.load(Ordering::Acquire) & b != 0)
    }

    /// Records whether `id`'s on-disk image is known good (set after a verified read or a
    /// completed write, cleared before a write starts).
    pub fn set_known_good(&self, id: PageId, good: bool) {
        if let Some((w, b)) = self.good_bit(id, good) {
            if good {
                w.fetch_or(b, Ordering::AcqRel);
            } else {
                w.fetch_and(!b, Ordering::AcqRel);
            }
        }
    }

    /// The resident image of `id`, if any.
    #[inline]
    pub fn get(&self, id: PageId) -> Option<Arc<Page>> {
        self.slot(id)?.load_full()
    }

    /// True when `id` is resident.
    #[inline]
    pub fn contains(&self, id: PageId) -> bool {
        self.slot(id).is_some_and(|s| s.load().is_some())
    }

    /// Inserts `page` unless an image is already resident; returns the resident image and
    /// whether it is the one given.
    pub fn insert_if_absent(&self, page: Arc<Page>) -> (Arc<Page>, bool) {
        let Some(slot) = self.slot_or_create(page.id()) else {
            return (page, false);
        };
        let prev = slot.compare_and_swap(&None::<Arc<Page>>, Some(page.clone()));
        match &*prev {
            None => (page, true),
            Some(existing) => (existing.clone(), false),
        }
    }

    /// Stores `page`, replacing any image; returns the replaced one.
    pub fn replace(&self, page: Arc<Page>) -> Option<Arc<Page>> {
        self.slot_or_create(page.id())?.swap(Some(page))
    }

    /// Removes the image of `id` if it is still generation `gen`.
    pub fn remove_if(&self, id: PageId, gen: u64) -> bool {
        let Some(slot) = self.slot(id) else {
            return false;
        };
        let cur = slot.load();
        match &*cur {
            Some(p) if p.gen() == gen => {
                let prev = slot.compare_and_swap(&*cur, None::<Arc<Page>>);
                matches!(&*prev, Some(q) if q.gen() == gen)
            }
            _ => false,
        }
    }

    /// Removes whatever image `id` has.
    pub fn remove(&self, id: PageId) -> Option<Arc<Page>> {
        self.slot(id)?.swap(None)
    }
}

impl Default for PageTable {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_good_bits_are_per_page_and_clear() {
        let t = PageTable::new();
        assert!(!t.is_known_good(5));
        t.set_known_good(5, true);
        t.set_known_good(CHUNK as u64 + 63, true);
        assert!(t.is_known_good(5));
        assert!(!t.is_known_good(4) && !t.is_known_good(6));
        assert!(t.is_known_good(CHUNK as u64 + 63));
        t.set_known_good(5, false);
        assert!(!t.is_known_good(5));
        // Clearing a page whose chunk was never made creates nothing and fails nothing.
        t.set_known_good(7 * CHUNK as u64, false);
        assert!(t.dir[7].get().is_none());
        assert!(!t.is_known_good(MAX_PAGES + 1));
    }
}
