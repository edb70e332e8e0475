//! The page table: page number -> resident image, a two-level array of atomically
//! swappable pointers. Lookups take no lock and write no shared cache line.

use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;

use super::Page;
use crate::page::PageId;

const CHUNK_BITS: u32 = 16;
const CHUNK: usize = 1 << CHUNK_BITS;
const DIR: usize = 1 << 16;
/// Pages the table can address (2^32: 16 TiB of 4 KiB pages).
pub const MAX_PAGES: u64 = (DIR * CHUNK) as u64;

type Chunk = Box<[ArcSwapOption<Page>]>;

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
        chunk.get((id as usize) & (CHUNK - 1))
    }

    fn slot_or_create(&self, id: PageId) -> Option<&ArcSwapOption<Page>> {
        let chunk = self
            .dir
            .get((id >> CHUNK_BITS) as usize)?
            .get_or_init(|| (0..CHUNK).map(|_| ArcSwapOption::empty()).collect());
        chunk.get((id as usize) & (CHUNK - 1))
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
