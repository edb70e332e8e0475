//! The buffer pool proper: lookups, misses, readahead, whole-frame reads (reproduction
//! mode only), installation of pages written by commits, write-back and eviction.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::evict::{Evictor, Verdict};
use super::metrics::{Counter, Counters};
use super::table::{PageTable, MAX_PAGES};
use super::Page;
use crate::error::{Error, Result};
use crate::frame::Geometry;
use crate::page::{
    seal, verify, InnerView, LeafView, PageError, PageHeader, PageId, PageKind, PageMap, KIND_AT,
};
use crate::storage::Storage;

/// How scans and longest-prefix lookups read pages that miss the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScanIo {
    /// Read only the missing page (plus bounded readahead on sequential scans).
    #[default]
    Paged,
    /// Reproduction mode for the peer engine's bug: every miss on the scan and
    /// longest-prefix path reads the page's whole frame and caches all of it.
    FullFrame,
}

/// Which read path asks for a page: point lookups never use whole-frame reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A point get, a count, a write's descent.
    Point,
    /// A range scan, key listing or longest-prefix lookup.
    Walk,
}

/// Sizes and modes of a pool.
#[derive(Debug, Clone, Copy)]
pub struct PoolConfig {
    /// Pages the pool may hold.
    pub capacity_pages: usize,
    /// Read mode of the walker path.
    pub scan_io: ScanIo,
    /// Pages a miss reads in one request while the whole data file fits in the pool and
    /// the pool is still filling (see [`BufferPool::get`]); 0 or 1 reads only the page.
    pub fill_readaround_pages: usize,
    /// Clean pages read from the file keep their images in place in the OS page cache,
    /// through the storage's map, instead of a copy (`DataReads::Shared`); storage without
    /// a map is copied from as usual.
    pub share_images: bool,
    /// Allocates and touches a buffer for every page of the capacity when the pool is
    /// made, as a database server allocates its shared buffers at start: a miss on a pool
    /// that is still filling then takes a ready buffer instead of new memory, which the OS
    /// supplies with a page fault per 4 KiB (about 4 us here, a twentieth of a device
    /// read).
    /// Ignored with shared images: their clean pages live in the OS page cache, and a
    /// reserve of copies beside it would be counted twice under one memory limit.
    pub reserve_buffers: bool,
}

/// Pages resident in memory under a budget.
pub struct BufferPool {
    storage: Arc<dyn Storage>,
    geo: Geometry,
    table: PageTable,
    evictor: Mutex<Evictor>,
    dirty: Mutex<PageMap<Arc<Page>>>,
    counters: Counters,
    scan_io: ScanIo,
    next_gen: AtomicU64,
    /// Writes to the data file begun and completed: a whole-frame read caches the pages it
    /// did not ask for only if no write overlapped it (see `read_frame`).
    writes_started: AtomicU64,
    writes_finished: AtomicU64,
    /// Held while a page image is written back and while a page is discarded, so that a
    /// write checks `dirty` and writes as one step and a discard waits for a write in
    /// progress. One latch for the pool, not one per page: write-backs are serialised by
    /// the evictor lock and the single checkpointer anyway, and an 8-byte latch in every
    /// page grew its `Arc` allocation from 64 to 72 bytes, past one cache line (the gate's
    /// ratios measured 2 to 4 % slower with it; docs/performance.md). It holds the buffer
    /// a write-back seals its copy of the image in.
    writeback_latch: Mutex<Vec<u8>>,
    writeback_failed: Mutex<Option<String>>,
    /// Evicted pages that no reader held (each `Arc` unique), reused whole by the next
    /// misses: a miss on a full pool allocates nothing, neither the page's buffer nor its
    /// `Arc`. Owned images here; shared ones (which have no buffer to give a writer) in
    /// `spare_shared`.
    spare: Mutex<Vec<Arc<Page>>>,
    spare_shared: Mutex<Vec<Arc<Page>>>,
    /// Owned spare pages kept at most: `SPARE_PAGES`, or with a reserve (see
    /// [`PoolConfig::reserve_buffers`]) one more than the capacity, so that every buffer
    /// of the reserve comes back to it when its page is evicted.
    spare_limit: AtomicUsize,
    /// The pool keeps a buffer ready for every page of its capacity.
    reserve: bool,
    /// Clean pages are read as shared images (see [`PoolConfig::share_images`]).
    share: bool,
    /// Sequential misses on shared images: the page a miss continuing the run would
    /// ask for, the run's length, and the end of the pages already advised (see
    /// `BufferPool::advise_ahead`).
    seq_next: AtomicU64,
    seq_run: AtomicU64,
    advised_to: AtomicU64,
    /// The buffer a scan's readahead request is read into (kept between requests).
    scratch: Mutex<Vec<u8>>,
    /// Pages of a fill read-around window (0: off).
    fill_pages: usize,
    /// Pages the data file holds, as of opening and every write since (a lower bound
    /// between a growth and its first write, which only delays read-around).
    file_pages: AtomicU64,
    /// Bytes the data file is known to hold because `ensure_len` saw or made them (0 until
    /// its first call): a commit whose pages end below this asks the file system nothing
    /// (one `statx` a commit measured otherwise). The pool never shrinks the file.
    ensured_bytes: AtomicU64,
    /// Cleared for good once the pool first evicts or the file outgrows it: from then on a
    /// miss reads only its page.
    filling: AtomicBool,
    /// Dirty victims set aside by eviction and not yet taken to be written back: lets
    /// every evicting path skip the evictor's lock when there are none.
    set_aside_count: AtomicUsize,
}

/// Spare pages kept at most (without a reserve).
const SPARE_PAGES: usize = 16;

/// Bytes the OS maps at a time: one touch each makes a buffer's memory resident.
const OS_PAGE_BYTES: usize = 4096;

/// A zeroed page buffer whose memory the OS has already supplied. The allocator hands
/// out fresh zeroed memory without touching it (calloc), so each 4 KiB is written once
/// here, through `black_box`, which the compiler cannot see through to drop the writes.
fn touched_buffer(bytes: usize) -> Box<[u8]> {
    let mut buf = vec![0u8; bytes].into_boxed_slice();
    let view = std::hint::black_box(&mut buf[..]);
    for at in (0..view.len()).step_by(OS_PAGE_BYTES) {
        view[at] = 0;
    }
    if let Some(last) = view.last_mut() {
        *last = 0;
    }
    buf
}

/// Largest window of pages advised ahead of sequential misses on shared images (128 KiB of
/// 4 KiB pages, the kernel's default readahead).
const SEQ_WINDOW_PAGES: u64 = 32;

/// Misses count as one run when each is at most this many pages past the one before (the
/// pages between may be resident already).
const SEQ_GAP_PAGES: u64 = 8;

/// Misses after the first of a run before the kernel is asked to read ahead of it.
const SEQ_MIN_RUN: u64 = 2;

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("geo", &self.geo)
            .field("scan_io", &self.scan_io)
            .finish_non_exhaustive()
    }
}

/// Locks a mutex, ignoring poisoning: the data under these locks stays consistent at
/// every await-free step, so a panic elsewhere leaves nothing half-done.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl BufferPool {
    /// A pool over `storage`.
    pub fn new(storage: Arc<dyn Storage>, geo: Geometry, cfg: PoolConfig) -> Self {
        // Unknown length: read-around waits for the first write to learn it.
        let file_pages = storage.len().unwrap_or(0) / geo.page_bytes() as u64;
        let reserve = cfg.reserve_buffers && !cfg.share_images;
        let pool = BufferPool {
            storage,
            geo,
            table: PageTable::new(),
            evictor: Mutex::new(Evictor::new(cfg.capacity_pages)),
            dirty: Mutex::new(PageMap::default()),
            counters: Counters::new(),
            scan_io: cfg.scan_io,
            next_gen: AtomicU64::new(1),
            writes_started: AtomicU64::new(0),
            writes_finished: AtomicU64::new(0),
            writeback_latch: Mutex::new(Vec::new()),
            writeback_failed: Mutex::new(None),
            spare: Mutex::new(Vec::with_capacity(SPARE_PAGES)),
            spare_shared: Mutex::new(Vec::with_capacity(SPARE_PAGES)),
            spare_limit: AtomicUsize::new(SPARE_PAGES),
            reserve,
            share: cfg.share_images,
            seq_next: AtomicU64::new(0),
            seq_run: AtomicU64::new(0),
            advised_to: AtomicU64::new(0),
            scratch: Mutex::new(Vec::new()),
            fill_pages: cfg.fill_readaround_pages,
            file_pages: AtomicU64::new(file_pages),
            ensured_bytes: AtomicU64::new(0),
            filling: AtomicBool::new(cfg.fill_readaround_pages > 1),
            set_aside_count: AtomicUsize::new(0),
        };
        if reserve {
            pool.top_up_reserve(0, cfg.capacity_pages);
        }
        pool
    }

    /// With a reserve, makes the spare pages and the `resident` pages together one more
    /// than `capacity` (adding new buffers, touched, or dropping spare ones) and lets
    /// eviction keep that many spare. The one more: a miss on a full pool reads into a
    /// buffer before its admission evicts a page.
    fn top_up_reserve(&self, resident: usize, capacity: usize) {
        let buffers = capacity + 1;
        self.spare_limit.store(buffers, Ordering::Relaxed);
        let want = buffers.saturating_sub(resident);
        let mut spare = lock(&self.spare);
        spare.truncate(want);
        let missing = want - spare.len();
        spare.reserve(missing);
        while spare.len() < want {
            spare.push(Arc::new(Page::new(
                0,
                PageKind::Leaf,
                0,
                0,
                touched_buffer(self.geo.page_bytes()),
                false,
            )));
        }
    }

    /// Page and frame sizes.
    pub fn geometry(&self) -> Geometry {
        self.geo
    }

    /// The file under the pool.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The data file's path, for error messages.
    pub fn path(&self) -> &Path {
        self.storage.path()
    }

    /// The I/O counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The walker path's read mode.
    pub fn scan_io(&self) -> ScanIo {
        self.scan_io
    }

    /// Changes the capacity (memory the tree spends beside the pool comes out of its
    /// budget); pages past it are evicted now.
    pub fn set_capacity_pages(&self, pages: usize) {
        let mut ev = lock(&self.evictor);
        ev.set_capacity(pages);
        self.evict_locked(&mut ev);
        let resident = ev.resident;
        drop(ev);
        self.write_back_set_aside();
        if self.reserve {
            self.top_up_reserve(resident, pages);
        }
    }

    /// (resident pages, capacity in pages).
    pub fn occupancy(&self) -> (usize, usize) {
        let ev = lock(&self.evictor);
        (ev.resident, ev.capacity())
    }

    /// Returns page `id`, reading it on a miss. Walks in full-frame mode read its frame.
    /// While the whole data file fits in the pool and the pool has never evicted, a miss
    /// reads the aligned window of `fill_readaround_pages` around the page and caches its
    /// tree pages: every page read then stays, so its neighbours cost one sequential
    /// request instead of a random read each later (the kernel's read-around gives an
    /// mmap reader like LMDB the same). A file larger than the pool never reads around.
    #[inline]
    pub fn get(&self, id: PageId, access: Access) -> Result<Arc<Page>> {
        if let Some(p) = self.table.get(id) {
            p.touch();
            self.counters.add(Counter::PageHits, 1);
            return Ok(p);
        }
        self.counters.add(Counter::PageMisses, 1);
        if access == Access::Walk && self.scan_io == ScanIo::FullFrame {
            return self.read_frame(id);
        }
        if self.filling.load(Ordering::Relaxed) {
            if let Some(p) = self.read_around(id)? {
                return Ok(p);
            }
        }
        self.read_page(id)
    }

    /// The fill read-around of [`BufferPool::get`]; None when it does not apply (any more).
    fn read_around(&self, id: PageId) -> Result<Option<Arc<Page>>> {
        self.check_id(id)?;
        let w = self.fill_pages as u64;
        let file_pages = self.file_pages.load(Ordering::Acquire);
        {
            let ev = lock(&self.evictor);
            let cap = ev.capacity() as u64;
            if file_pages > cap || ev.resident as u64 + w > cap {
                self.filling.store(false, Ordering::Relaxed);
                return Ok(None);
            }
        }
        let window = id / w * w;
        let first = window.max(2);
        let end = (window + w).min(file_pages);
        if id < first || id >= end || end - first < 2 {
            return Ok(None);
        }
        // As with whole frames, the window's other pages belong to no snapshot this read
        // holds: cached only if no write to the file overlapped the read.
        let started = self.writes_started.load(Ordering::Acquire);
        let quiet_before = self.writes_finished.load(Ordering::Acquire) == started;
        let buf = self.read_pages(first, (end - first) as usize)?;
        let ps = self.geo.page_bytes();
        let mut loaded = Vec::with_capacity(buf.len() / ps);
        for (j, chunk) in buf.chunks_exact(ps).enumerate() {
            let pid = first + j as u64;
            if pid != id && self.table.contains(pid) {
                continue;
            }
            let image = match self.share(pid) {
                Ok(Some(page)) => Ok(page),
                Ok(None) => self.load_image(pid, chunk.into()).map(Arc::new),
                Err(e) => Err(e),
            };
            match image {
                Ok(page)
                    if pid == id || matches!(page.kind(), PageKind::Leaf | PageKind::Inner) =>
                {
                    loaded.push(page)
                }
                Ok(_) => {}
                Err(e) if pid == id => return Err(e),
                Err(_) => {}
            }
        }
        let mut wanted = None;
        let mut ahead = 0u64;
        {
            let mut ev = lock(&self.evictor);
            let quiet = quiet_before && self.writes_started.load(Ordering::Acquire) == started;
            for page in loaded {
                let pid = page.id();
                if pid != id && !quiet {
                    continue;
                }
                let (p, inserted) = self.table.insert_if_absent(page);
                if inserted {
                    ev.resident += 1;
                    ev.admit(&p);
                    ahead += u64::from(pid != id);
                }
                if pid == id {
                    wanted = Some(p);
                }
            }
            self.evict_locked(&mut ev);
        }
        self.write_back_set_aside();
        self.counters.add(Counter::ReadaroundPages, ahead);
        Ok(wanted)
    }

    /// True when `id` is resident.
    #[inline]
    pub fn is_resident(&self, id: PageId) -> bool {
        self.table.contains(id)
    }

    fn check_id(&self, id: PageId) -> Result<()> {
        if !(2..MAX_PAGES).contains(&id) {
            return Err(PageError::Malformed {
                file: self.path().to_path_buf(),
                page: id,
                reason: "reference to a page number outside the data area".into(),
            }
            .into());
        }
        Ok(())
    }

    fn gen(&self) -> u64 {
        self.next_gen.fetch_add(1, Ordering::Relaxed)
    }

    /// The page of place `id` as a shared image, in place in the storage's map, when the
    /// pool shares images and the storage has a map covering the place; Ok(None) when the
    /// image must be copied instead. The image is verified (or, known good, only parsed)
    /// where it lies: reading its header is what faults it into the page cache.
    fn share(&self, id: PageId) -> Result<Option<Arc<Page>>> {
        if !self.share {
            return Ok(None);
        }
        let ps = self.geo.page_bytes();
        let start = self.geo.offset(id);
        let Some(map) = self.storage.shared_map(start + ps as u64) else {
            return Ok(None);
        };
        let Some(bytes) = map.get(start as usize..start as usize + ps) else {
            return Ok(None);
        };
        let h = self.header_of(id, bytes)?;
        self.counters.add(Counter::SharedPages, 1);
        let mut spare = lock(&self.spare_shared).pop();
        if let Some(page) = spare.as_mut().and_then(Arc::get_mut) {
            page.reuse_shared(id, h.kind, h.txn, self.gen(), map);
            return Ok(spare);
        }
        Ok(Some(Arc::new(Page::shared(
            id,
            h.kind,
            h.txn,
            self.gen(),
            map,
            ps,
        ))))
    }

    /// A shared image's miss reads only its page (the map is advised random, as LMDB
    /// does, so that a random miss does not read its neighbours into a bounded page
    /// cache). Misses on consecutive pages, such as a walk along keys stored in key order,
    /// would then wait on one device read each; once `SEQ_MIN_RUN` + 1 misses in a row
    /// ask for nearby pages in increasing order, the kernel is asked to read ahead of the
    /// run without waiting (`madvise(WILLNEED)`), in a window that doubles from 8 pages up
    /// to `SEQ_WINDOW_PAGES`, renewed when the run is halfway through it. Two misses are
    /// not a run: a 100-entry range and a bisect's pair of gets touch two neighbouring
    /// leaves, and advising after them read 8 pages more that the next operation's miss
    /// then waited behind on the device (docs/performance.md, nineteenth session).
    fn advise_ahead(&self, id: PageId) {
        let last = self.seq_next.swap(id, Ordering::Relaxed);
        if id <= last || id - last > SEQ_GAP_PAGES {
            self.seq_run.store(0, Ordering::Relaxed);
            return;
        }
        let run = self.seq_run.fetch_add(1, Ordering::Relaxed) + 1;
        if run < SEQ_MIN_RUN {
            return;
        }
        let window = (4u64 << (run + 1 - SEQ_MIN_RUN).min(8)).min(SEQ_WINDOW_PAGES);
        // What an earlier advice of this run covers: nothing when it ended behind the
        // page or belongs to another run further on.
        let done = self.advised_to.load(Ordering::Relaxed);
        let done = if done > id && done <= id + 1 + window {
            done
        } else {
            id + 1
        };
        if done - id > window / 2 {
            return;
        }
        let from = done;
        let to = (id + 1 + window).min(self.file_pages.load(Ordering::Acquire));
        if from >= to {
            return;
        }
        let ps = self.geo.page_bytes() as u64;
        if let Some(map) = self.storage.shared_map(to * ps) {
            map.will_need((from * ps) as usize, ((to - from) * ps) as usize);
            self.advised_to.store(to, Ordering::Relaxed);
        }
    }

    /// Verifies a page image read from disk and wraps it.
    fn load_image(&self, id: PageId, buf: Box<[u8]>) -> Result<Page> {
        let h = self.header_of(id, &buf)?;
        Ok(Page::new(id, h.kind, h.txn, self.gen(), buf, false))
    }

    /// The header of an image read from place `id`, verified. An image this process has
    /// already verified (or written) since its last write is only parsed: the page cache
    /// hands back the bytes that passed.
    fn header_of(&self, id: PageId, buf: &[u8]) -> Result<PageHeader> {
        if self.table.is_known_good(id) {
            if let Some(h) = PageHeader::read(buf) {
                return Ok(h);
            }
        }
        let h = self.verify_image(id, buf)?;
        self.table.set_known_good(id, true);
        Ok(h)
    }

    /// Verifies an image read from place `id`: checksum, page number, kind, and the
    /// structure of leaf and inner pages.
    fn verify_image(&self, id: PageId, buf: &[u8]) -> Result<PageHeader> {
        let h = verify(buf, id, self.path())?;
        let structure = match h.kind {
            PageKind::Leaf => LeafView::validate(buf),
            PageKind::Inner => InnerView::validate(buf),
            _ => Ok(()),
        };
        if let Err(corruption) = structure {
            return Err(corruption.at(self.path(), id).into());
        }
        Ok(h)
    }

    fn read_page(&self, id: PageId) -> Result<Arc<Page>> {
        self.check_id(id)?;
        let ps = self.geo.page_bytes();
        let offset = self.geo.offset(id);
        if let Some(page) = self.share(id)? {
            self.advise_ahead(id);
            self.counters.add(Counter::BytesRead, ps as u64);
            self.counters.add(Counter::PagesRead, 1);
            return Ok(self.admit(page).0);
        }
        let mut spare = lock(&self.spare).pop();
        let page = match spare.as_mut().and_then(Arc::get_mut) {
            // A spare page holds an old image; the read overwrites all of it or fails.
            // (Only owned images are kept in `spare`, so it has a buffer.)
            Some(page) => match page.buf_mut() {
                Some(buf) => {
                    self.storage.read_at(buf, offset)?;
                    let h = self.header_of(id, page.bytes())?;
                    page.reuse(id, h.kind, h.txn, self.gen());
                    spare.take()
                }
                None => None,
            },
            None => None,
        };
        let page = match page {
            Some(page) => page,
            None => {
                let mut buf = vec![0u8; ps].into_boxed_slice();
                self.storage.read_at(&mut buf, offset)?;
                Arc::new(self.load_image(id, buf)?)
            }
        };
        self.counters.add(Counter::BytesRead, ps as u64);
        self.counters.add(Counter::PagesRead, 1);
        Ok(self.admit(page).0)
    }

    /// The reproduction of the peer engine's bug: read the whole frame holding `id` and
    /// cache every tree page in it.
    fn read_frame(&self, id: PageId) -> Result<Arc<Page>> {
        self.check_id(id)?;
        let frame = self.geo.frame_of(id);
        let start = self.geo.frame_start(frame);
        let ps = self.geo.page_bytes();
        let mut buf = vec![0u8; self.geo.frame_size as usize];
        // The other pages of the frame belong to no snapshot this read holds: their places
        // may be freed and rewritten while it runs, so they are cached only if no write to
        // the file was in progress or began during the read (checked under the evictor
        // lock, which every removal of a written page from the table takes).
        let started = self.writes_started.load(Ordering::Acquire);
        let quiet_before = self.writes_finished.load(Ordering::Acquire) == started;
        self.storage.read_at(&mut buf, self.geo.offset(start))?;
        self.counters.add(Counter::FullFrameReads, 1);
        self.counters.add(Counter::BytesRead, buf.len() as u64);
        self.counters
            .add(Counter::PagesRead, self.geo.pages_per_frame());
        let mut loaded = Vec::new();
        for (j, chunk) in buf.chunks_exact(ps).enumerate() {
            let pid = start + j as u64;
            if pid < 2 || self.table.contains(pid) {
                continue;
            }
            let page = match self.load_image(pid, chunk.into()) {
                Ok(p) => p,
                Err(e) if pid == id => return Err(e),
                Err(_) => continue,
            };
            if pid != id && !matches!(page.kind(), PageKind::Leaf | PageKind::Inner) {
                continue;
            }
            page.frame_unit.store(true, Ordering::Relaxed);
            loaded.push(page);
        }
        // The peer engine caches what it read as one 512 KiB unit: the frame's pages enter
        // the table together and leave together, first in first out.
        let mut wanted = None;
        {
            let mut ev = lock(&self.evictor);
            let quiet = quiet_before && self.writes_started.load(Ordering::Acquire) == started;
            let mut added = 0usize;
            for page in loaded {
                let pid = page.id();
                if pid != id && !quiet {
                    continue;
                }
                let (p, inserted) = self.table.insert_if_absent(Arc::new(page));
                added += usize::from(inserted);
                if pid == id {
                    wanted = Some(p);
                }
            }
            ev.resident += added;
            ev.frames.push_back((start, self.geo.pages_per_frame()));
            self.evict_locked(&mut ev);
        }
        self.write_back_set_aside();
        match wanted.or_else(|| self.table.get(id)) {
            Some(p) => Ok(p),
            None => self.read_page(id),
        }
    }

    /// Evicts the oldest frame cached whole; false when there is none.
    fn evict_frame(&self, ev: &mut Evictor) -> bool {
        let Some((start, n)) = ev.frames.pop_front() else {
            return false;
        };
        for pid in start..start + n {
            if let Some(p) = self.table.get(pid) {
                if p.frame_unit.load(Ordering::Relaxed)
                    && !p.is_dirty()
                    && !p.pinned.load(Ordering::Relaxed)
                    && self.table.remove_if(pid, p.gen())
                {
                    ev.resident -= 1;
                    self.counters.add(Counter::Evictions, 1);
                }
            }
        }
        true
    }

    /// Reads `n` adjacent pages from `first` in one request and caches those not yet
    /// resident; returns how many were added. Pages that fail verification are left out,
    /// so the error surfaces when (and if) the scan reaches them.
    pub fn readahead(&self, first: PageId, n: usize) -> Result<usize> {
        if n == 0 {
            return Ok(0);
        }
        // The request goes into the pool's scratch buffer when no other readahead holds
        // it, and each page into a spare page: a scan on a full pool allocates nothing.
        let mut scratch = self.scratch.try_lock().ok();
        let mut own = Vec::new();
        let buf = match scratch.as_deref_mut() {
            Some(s) => s,
            None => &mut own,
        };
        self.read_pages_into(first, n, buf)?;
        let ps = self.geo.page_bytes();
        let mut added = 0;
        for (j, chunk) in buf.chunks_exact(ps).enumerate() {
            let pid = first + j as u64;
            if self.table.contains(pid) {
                continue;
            }
            match self.share(pid) {
                Ok(Some(page)) => {
                    added += usize::from(self.admit(page).1);
                    continue;
                }
                Ok(None) => {}
                Err(_) => continue,
            }
            let Ok(h) = self.header_of(pid, chunk) else {
                continue;
            };
            let mut spare = lock(&self.spare).pop();
            let page = match spare.as_mut().and_then(Arc::get_mut) {
                Some(page) => match page.buf_mut() {
                    Some(buf) => {
                        buf.copy_from_slice(chunk);
                        page.reuse(pid, h.kind, h.txn, self.gen());
                        spare.take()
                    }
                    None => None,
                },
                None => None,
            };
            let page = page.unwrap_or_else(|| {
                Arc::new(Page::new(
                    pid,
                    h.kind,
                    h.txn,
                    self.gen(),
                    chunk.into(),
                    false,
                ))
            });
            if self.admit(page).1 {
                added += 1;
            }
        }
        self.counters.add(Counter::ReadaheadPages, added as u64);
        Ok(added)
    }

    /// Reads `n` contiguous pages from `first` in one request, bypassing the cache, and
    /// counts the bytes and pages read (readahead and overflow runs).
    fn read_pages(&self, first: PageId, n: usize) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_pages_into(first, n, &mut buf)?;
        Ok(buf)
    }

    /// [`BufferPool::read_pages`] into `buf`, cut or grown to the `n` pages (its old
    /// bytes are overwritten by the read, so growing allocates zeroed memory rather than
    /// filling a byte at a time).
    fn read_pages_into(&self, first: PageId, n: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.check_id(first)?;
        let want = n * self.geo.page_bytes();
        if buf.len() >= want {
            buf.truncate(want);
        } else if buf.capacity() >= want {
            buf.resize(want, 0);
        } else {
            *buf = vec![0u8; want];
        }
        self.storage.read_at(buf, self.geo.offset(first))?;
        self.counters.add(Counter::BytesRead, buf.len() as u64);
        self.counters.add(Counter::PagesRead, n as u64);
        Ok(())
    }

    /// Makes `page` resident unless another thread was first; evicts to stay in budget.
    fn admit(&self, page: Arc<Page>) -> (Arc<Page>, bool) {
        let (winner, inserted) = self.table.insert_if_absent(page);
        if inserted {
            let mut ev = lock(&self.evictor);
            ev.resident += 1;
            ev.admit(&winner);
            self.evict_locked(&mut ev);
            drop(ev);
            self.write_back_set_aside();
        }
        (winner, inserted)
    }

    /// Publishes a page image built by a commit as a dirty page. Its checksum is not
    /// computed here but when it is written (`write_back`): an image that a later commit
    /// replaces before the next checkpoint, as the inner pages of a run of small commits
    /// are, is never written and never needs one, and the checkpointer's thread, not the
    /// committing writer, pays for the ones that are.
    pub fn install(&self, buf: Vec<u8>) -> Result<Arc<Page>> {
        let h = PageHeader::read(&buf).ok_or_else(|| Error::Integrity {
            reason: "a commit built a page with an unknown kind".into(),
        })?;
        self.check_id(h.id)?;
        let page = Arc::new(Page::new(
            h.id,
            h.kind,
            h.txn,
            self.gen(),
            buf.into_boxed_slice(),
            true,
        ));
        lock(&self.dirty).insert(h.id, page.clone());
        let mut ev = lock(&self.evictor);
        let replaced = self.table.replace(page.clone());
        if replaced.is_none() {
            ev.resident += 1;
        }
        // Queued as a new page whatever it replaces: commits write new pages, and an image
        // replaced is a freed page's stale one (`keep_freed`), whose queue entry is dead.
        // (Queued as a proven page instead, a writer's new leaves stayed while the pages
        // it only read were evicted, and its changes were written back far later.)
        ev.admit(&page);
        self.evict_locked(&mut ev);
        drop(ev);
        // The stale image's buffer is the next copy's when no reader holds it.
        if let Some(old) = replaced {
            self.recycle(old);
        }
        self.write_back_set_aside();
        Ok(page)
    }

    /// Pins or unpins a page so that eviction skips it (the root is pinned).
    pub fn set_pinned(&self, page: &Page, pinned: bool) {
        page.pinned.store(pinned, Ordering::Relaxed);
    }

    /// Drops the image of a freed page whose place in the file is about to be reused.
    /// When it returns, no write of that image is in progress and none will start: a
    /// flush or eviction still holding it finds it clean. The place's known-good mark goes
    /// too, since the bytes there belong to no tree until the next owner writes them.
    pub fn discard(&self, id: PageId) {
        let resident = {
            let mut ev = lock(&self.evictor);
            let p = self.table.remove(id);
            if p.is_some() {
                ev.resident -= 1;
            }
            p
        };
        let listed = lock(&self.dirty).remove(&id);
        {
            let _latch = lock(&self.writeback_latch);
            for page in resident.iter().chain(listed.iter()) {
                page.dirty.store(false, Ordering::Release);
            }
        }
        self.table.set_known_good(id, false);
        // The image of a freed place is a writer's next page buffer when no reader holds
        // it (copy-on-write frees one page for each it writes).
        drop(listed);
        if let Some(page) = resident {
            self.recycle(page);
        }
    }

    /// Keeps the image of a freed page that the allocator keeps for the next page copies
    /// (`Allocator::alloc_page`) resident but inert: no flush or eviction writes it from
    /// here on (as with [`BufferPool::discard`]), and the next image installed for the
    /// page replaces it in its place in the table, or eviction drops it first. No reader
    /// reaches it: no version references the page. Cheaper than a discard, which empties
    /// the table's place for the next install to fill again.
    pub fn keep_freed(&self, id: PageId) {
        // Eviction takes it before any page someone may read (kept as a page of the
        // queues, stale images displaced read pages: the gate's cold trace lookups read
        // 7 % more pages).
        if let Some(page) = self.table.get(id) {
            lock(&self.evictor).note_stale(id, page.gen());
        }
        // A dirty image is in the dirty list (`install` puts it there, `write_back` takes
        // it out once clean): a clean one is never written again.
        if let Some(page) = lock(&self.dirty).remove(&id) {
            let _latch = lock(&self.writeback_latch);
            page.dirty.store(false, Ordering::Release);
        }
        self.table.set_known_good(id, false);
    }

    /// Writes `page` to its place in the file if it is still dirty; true when it wrote.
    /// The check and the write are one step under the write-back latch, so an image
    /// discarded meanwhile is never written over its place's next owner.
    fn write_back(&self, page: &Page) -> Result<bool> {
        {
            let mut sealed = lock(&self.writeback_latch);
            if !page.is_dirty() {
                return Ok(false);
            }
            // Images in memory are not sealed (see `install`): seal a copy. Published
            // images are shared with readers and never change.
            sealed.clear();
            sealed.extend_from_slice(page.bytes());
            seal(&mut sealed);
            self.table.set_known_good(page.id(), false);
            self.writes_started.fetch_add(1, Ordering::AcqRel);
            let written = self.storage.write_at(&sealed, self.geo.offset(page.id()));
            self.writes_finished.fetch_add(1, Ordering::AcqRel);
            written?;
            self.file_pages.fetch_max(page.id() + 1, Ordering::AcqRel);
            // A sealed image this process just wrote.
            self.table.set_known_good(page.id(), true);
            page.dirty.store(false, Ordering::Release);
        }
        self.counters.add(Counter::PagesWritten, 1);
        self.counters
            .add(Counter::BytesWritten, page.bytes().len() as u64);
        let mut dirty = lock(&self.dirty);
        if dirty.get(&page.id()).is_some_and(|p| p.gen() == page.gen()) {
            dirty.remove(&page.id());
        }
        Ok(true)
    }

    fn evict_locked(&self, ev: &mut Evictor) {
        if ev.has_many_dead() {
            ev.drop_dead(|id, gen| self.table.get(id).is_some_and(|p| p.gen() == gen));
        }
        // Stale images of kept freed pages first: no one reads them.
        while ev.over_budget() {
            let Some((id, gen)) = ev.next_stale() else {
                break;
            };
            let Some(page) = self.table.get(id) else {
                continue;
            };
            // A newer image of the page (installed since) has another generation.
            if page.gen() == gen && self.table.remove_if(id, gen) {
                ev.resident -= 1;
                self.recycle(page);
            }
        }
        while ev.over_budget() && self.evict_frame(ev) {}
        let mut guard = ev.queued() * 8 + 16;
        while ev.over_budget() && guard > 0 {
            guard -= 1;
            let Some((id, gen, from_small)) = ev.next_candidate() else {
                break;
            };
            let Some(page) = self.table.get(id) else {
                continue;
            };
            if page.gen() != gen {
                continue;
            }
            let Verdict::Evict { from_small } = ev.judge(&page, from_small) else {
                continue;
            };
            if page.is_dirty() {
                // Written back once this lock is released (`write_back_set_aside`), by the
                // thread that chose it: a write can take milliseconds when the OS must
                // reclaim memory for it (1.6 ms measured beside an ingesting writer), and
                // every miss of every reader waits for this lock.
                ev.set_aside(page, from_small);
                self.set_aside_count.fetch_add(1, Ordering::AcqRel);
                continue;
            }
            if self.table.remove_if(id, gen) {
                ev.resident -= 1;
                self.filling.store(false, Ordering::Relaxed);
                self.counters.add(Counter::Evictions, 1);
                if from_small {
                    ev.remember(id);
                }
                self.recycle(page);
            }
        }
    }

    /// Writes back the dirty victims that eviction set aside, outside the evictor's lock,
    /// and evicts each one that is still over the budget once clean (or puts it back at
    /// the head of its queue). Every path that evicts calls it after releasing the lock.
    fn write_back_set_aside(&self) {
        while self.set_aside_count.load(Ordering::Acquire) > 0 {
            let next = {
                let mut ev = lock(&self.evictor);
                let next = ev.next_set_aside();
                if next.is_some() {
                    self.set_aside_count.fetch_sub(1, Ordering::AcqRel);
                }
                next
            };
            let Some((page, from_small)) = next else {
                return;
            };
            self.settle_set_aside(page, from_small);
        }
    }

    /// Writes back one victim set aside, then evicts or requeues it.
    fn settle_set_aside(&self, page: Arc<Page>, from_small: bool) {
        let written = self.write_back(&page);
        let (id, gen) = (page.id(), page.gen());
        let mut ev = lock(&self.evictor);
        ev.settled();
        match written {
            Ok(wrote) => {
                if wrote {
                    self.counters.add(Counter::DirtyWritebacks, 1);
                }
                // Discarded, kept or replaced meanwhile: no longer this image's place.
                if self.table.get(id).is_none_or(|p| p.gen() != gen) {
                    return;
                }
                if ev.over_budget() && self.table.remove_if(id, gen) {
                    ev.resident -= 1;
                    self.filling.store(false, Ordering::Relaxed);
                    self.counters.add(Counter::Evictions, 1);
                    if from_small {
                        ev.remember(id);
                    }
                    drop(ev);
                    self.recycle(page);
                } else {
                    ev.requeue_first(&page, from_small);
                }
            }
            Err(e) => {
                // Keep the page: the next checkpoint reports the failure.
                *lock(&self.writeback_failed) = Some(e.to_string());
                ev.keep_after_failure(&page);
            }
        }
    }

    /// A page-sized buffer for a writer to encode a page into: an evicted page's, which
    /// holds its old image, when one is spare (a new page then costs neither an
    /// allocation nor zeroing it), else a new zeroed one.
    pub fn page_buffer(&self) -> Vec<u8> {
        let ps = self.geo.page_bytes();
        let spare = lock(&self.spare).pop();
        match spare
            .and_then(|p| Arc::try_unwrap(p).ok())
            .and_then(Page::into_buffer)
        {
            Some(buf) => buf,
            None => vec![0u8; ps],
        }
    }

    /// Keeps an evicted page for the next miss when no reader holds it any more (a reader
    /// that still does frees it when it lets go).
    fn recycle(&self, mut page: Arc<Page>) {
        let ps = self.geo.page_bytes();
        if Arc::get_mut(&mut page).is_some_and(|p| p.bytes().len() == ps) {
            let mut spare = lock(if page.is_shared() {
                &self.spare_shared
            } else {
                &self.spare
            });
            let limit = if page.is_shared() {
                SPARE_PAGES
            } else {
                self.spare_limit.load(Ordering::Relaxed)
            };
            if spare.len() < limit {
                spare.push(page);
            }
        }
    }

    /// Writes every dirty page to its place in the file (not synced); returns how many.
    pub fn flush_dirty(&self) -> Result<u64> {
        if let Some(msg) = lock(&self.writeback_failed).take() {
            return Err(Error::Integrity {
                reason: format!("an earlier write-back of an evicted page failed: {msg}"),
            });
        }
        let mut pages: Vec<Arc<Page>> = lock(&self.dirty).values().cloned().collect();
        pages.sort_by_key(|p| p.id());
        let mut n = 0;
        for p in &pages {
            n += u64::from(self.write_back(p)?);
        }
        Ok(n)
    }

    /// Writes sealed page images laid out contiguously from `first`, bypassing the cache.
    pub fn write_run(&self, first: PageId, bytes: &[u8]) -> Result<()> {
        self.check_id(first)?;
        let ps = self.geo.page_bytes();
        let pages = first..first + (bytes.len() / ps) as u64;
        for id in pages.clone() {
            self.table.set_known_good(id, false);
        }
        self.writes_started.fetch_add(1, Ordering::AcqRel);
        let written = self.storage.write_at(bytes, self.geo.offset(first));
        self.writes_finished.fetch_add(1, Ordering::AcqRel);
        written?;
        self.file_pages
            .fetch_max(first + (bytes.len() / ps) as u64, Ordering::AcqRel);
        for id in pages {
            self.table.set_known_good(id, true);
        }
        self.counters
            .add(Counter::PagesWritten, (bytes.len() / ps) as u64);
        self.counters.add(Counter::BytesWritten, bytes.len() as u64);
        Ok(())
    }

    /// Verifies the on-disk image of a tree page for the integrity check: checksum, page
    /// number, kind and structure, whatever the known-good mark says; and, when the
    /// resident image is clean (written, or read from disk), that the bytes on disk are
    /// exactly those. A dirty image is not on disk yet and is not compared.
    pub fn check_on_disk(&self, page: &Page) -> Result<()> {
        if page.is_dirty() {
            return Ok(());
        }
        let id = page.id();
        let mut buf = vec![0u8; self.geo.page_bytes()];
        self.storage.read_at(&mut buf, self.geo.offset(id))?;
        let h = self.verify_image(id, &buf)?;
        if h.kind != page.kind() {
            return Err(PageError::UnexpectedKind {
                file: self.path().to_path_buf(),
                page: id,
                expected: page.kind().name(),
                found: h.kind as u8,
            }
            .into());
        }
        // A clean image was written (or read) before it became clean, and its place is not
        // rewritten while the tree references it: the bytes must be the same.
        // The image in memory is not sealed (see `install`): all but the checksum.
        if buf[KIND_AT..] == page.bytes()[KIND_AT..] {
            return Ok(());
        }
        Err(PageError::Malformed {
            file: self.path().to_path_buf(),
            page: id,
            reason: format!(
                "the image on disk (written by commit {}) is not the one in memory (commit {})",
                h.txn,
                page.txn()
            ),
        }
        .into())
    }

    /// Reads and verifies `n` contiguous pages of `kind` from `first`, bypassing the cache.
    pub fn read_run(&self, first: PageId, n: usize, kind: PageKind) -> Result<Vec<u8>> {
        let buf = self.read_pages(first, n)?;
        let ps = self.geo.page_bytes();
        for (j, chunk) in buf.chunks_exact(ps).enumerate() {
            let pid = first + j as u64;
            let h = verify(chunk, pid, self.path())?;
            if h.kind != kind {
                return Err(PageError::UnexpectedKind {
                    file: self.path().to_path_buf(),
                    page: pid,
                    expected: kind.name(),
                    found: h.kind as u8,
                }
                .into());
            }
        }
        Ok(buf)
    }

    /// Grows the file to hold `page_count` pages.
    pub fn ensure_len(&self, page_count: u64) -> Result<()> {
        let want = self.geo.offset(page_count);
        if want <= self.ensured_bytes.load(Ordering::Acquire) {
            return Ok(());
        }
        let len = self.storage.len()?;
        if len < want {
            self.storage.set_len(want)?;
        }
        self.ensured_bytes
            .fetch_max(len.max(want), Ordering::AcqRel);
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::page::{encode_overflow_run, HEADER_LEN};
    use crate::storage::{SimDisk, StorageOpener};

    /// Page size of the test pools.
    const PAGE: usize = 4096;

    /// A sealed one-page image for place `id`. An overflow page verifies without a tree
    /// around it and is queued by the evictor as a leaf is (only inner pages differ).
    pub(in crate::pool) fn image(id: PageId, txn: u64) -> Vec<u8> {
        encode_overflow_run(&[id as u8; 100], id, txn, PAGE)
    }

    /// A pool of `capacity` pages over a simulated file whose places 2..2 + `pages` hold
    /// images written by commit 1 (frames of 8 pages).
    pub(in crate::pool) fn pool_over(
        pages: u64,
        capacity: usize,
        scan_io: ScanIo,
    ) -> (BufferPool, Arc<dyn Storage>) {
        pool_over_with(&SimDisk::new(), pages, capacity, scan_io)
    }

    /// [`pool_over`] on a file that `opener` opens.
    fn pool_over_with(
        opener: &dyn StorageOpener,
        pages: u64,
        capacity: usize,
        scan_io: ScanIo,
    ) -> (BufferPool, Arc<dyn Storage>) {
        let storage = opener
            .open(Path::new("/sim/data"), true)
            .expect("open the simulated file");
        let mut bytes = vec![0u8; 2 * PAGE];
        for id in 2..2 + pages {
            bytes.extend(image(id, 1));
        }
        storage.write_at(&bytes, 0).expect("write the images");
        (pool_on(storage.clone(), capacity, scan_io), storage)
    }

    /// A pool of `capacity` pages over `storage` (4 KiB pages in frames of 8).
    fn pool_on(storage: Arc<dyn Storage>, capacity: usize, scan_io: ScanIo) -> BufferPool {
        pool_sharing(storage, capacity, scan_io, false)
    }

    /// [`pool_on`], reading clean pages as shared images when `share_images` is set.
    fn pool_sharing(
        storage: Arc<dyn Storage>,
        capacity: usize,
        scan_io: ScanIo,
        share_images: bool,
    ) -> BufferPool {
        pool_with(storage, capacity, scan_io, share_images, false)
    }

    /// [`pool_sharing`], with a reserve of buffers when `reserve_buffers` is set.
    fn pool_with(
        storage: Arc<dyn Storage>,
        capacity: usize,
        scan_io: ScanIo,
        share_images: bool,
        reserve_buffers: bool,
    ) -> BufferPool {
        let geo = Geometry::new(PAGE as u32, 8 * PAGE as u32).expect("geometry");
        let cfg = PoolConfig {
            capacity_pages: capacity,
            scan_io,
            fill_readaround_pages: 0,
            share_images,
            reserve_buffers,
        };
        BufferPool::new(storage, geo, cfg)
    }

    /// Buffers the pool holds in its spare list.
    fn spare_count(pool: &BufferPool) -> usize {
        lock(&pool.spare).len()
    }

    /// The address of each resident image's buffer among `ids`.
    fn buffer_addresses(pool: &BufferPool, ids: impl Iterator<Item = PageId>) -> Vec<usize> {
        ids.map(|id| pool.get(id, Access::Point).expect("read").bytes().as_ptr() as usize)
            .collect()
    }

    #[test]
    fn a_reserve_serves_every_miss_of_a_filling_pool_and_takes_back_what_eviction_frees(
    ) -> Result<()> {
        const CAPACITY: usize = 8;
        let pages = 3 * CAPACITY as u64;
        let (_, storage) = pool_over(pages, 1, ScanIo::Paged);
        let pool = pool_with(storage, CAPACITY, ScanIo::Paged, false, true);
        assert_eq!(
            spare_count(&pool),
            CAPACITY + 1,
            "a buffer for every page of the capacity and one for the miss that evicts"
        );
        let reserved: Vec<usize> = lock(&pool.spare)
            .iter()
            .map(|p| p.bytes().as_ptr() as usize)
            .collect();
        // Filling: every miss takes a reserved buffer, none is allocated.
        let first = buffer_addresses(&pool, 2..2 + CAPACITY as u64);
        assert_eq!(spare_count(&pool), 1);
        assert!(first.iter().all(|a| reserved.contains(a)));
        // Past the capacity: each miss evicts and reuses the evicted page's buffer.
        let later = buffer_addresses(&pool, 2 + CAPACITY as u64..2 + pages);
        assert!(
            later.iter().all(|a| reserved.contains(a)),
            "no buffer from outside the reserve"
        );
        assert_eq!(pool.occupancy(), (CAPACITY, CAPACITY));
        // A smaller capacity gives up the buffers it no longer needs; a larger one adds.
        pool.set_capacity_pages(CAPACITY / 2);
        assert_eq!(pool.occupancy().0 + spare_count(&pool), CAPACITY / 2 + 1);
        pool.set_capacity_pages(2 * CAPACITY);
        assert_eq!(pool.occupancy().0 + spare_count(&pool), 2 * CAPACITY + 1);
        Ok(())
    }

    #[test]
    fn no_reserve_with_shared_images_or_when_not_asked() -> Result<()> {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("data");
        let storage: Arc<dyn Storage> =
            Arc::new(crate::storage::FileStorage::open_mapped(&path, true)?);
        storage.set_len(4 * PAGE as u64)?;
        let shared = pool_with(storage.clone(), 8, ScanIo::Paged, true, true);
        assert_eq!(
            spare_count(&shared),
            0,
            "shared images keep no copies in reserve"
        );
        let plain = pool_with(storage, 8, ScanIo::Paged, false, false);
        assert_eq!(spare_count(&plain), 0);
        Ok(())
    }

    #[test]
    fn shared_misses_advise_readahead_from_the_third_in_a_row() {
        let dir = tempfile::tempdir().expect("temp dir");
        let storage: Arc<dyn Storage> = Arc::new(
            crate::storage::FileStorage::open_mapped(&dir.path().join("data"), true)
                .expect("open the file"),
        );
        let mut bytes = vec![0u8; 2 * PAGE];
        for id in 2..64 {
            bytes.extend(image(id, 1));
        }
        storage.write_at(&bytes, 0).expect("write the images");
        let pool = pool_sharing(storage, 64, ScanIo::Paged, true);
        let advised = || pool.advised_to.load(Ordering::Relaxed);
        for id in [10, 11] {
            pool.get(id, Access::Walk).expect("miss");
        }
        assert_eq!(advised(), 0, "two neighbouring misses are not a run");
        pool.get(12, Access::Walk).expect("miss");
        assert!(
            advised() > 13,
            "the third asks ahead of the run: {}",
            advised()
        );
        let before = advised();
        for id in [40, 30, 31] {
            pool.get(id, Access::Walk).expect("miss");
        }
        assert_eq!(advised(), before, "a miss out of order starts a new run");
        assert_eq!(count(&pool, Counter::SharedPages), 6);
    }

    fn on_disk(storage: &Arc<dyn Storage>, id: PageId) -> Vec<u8> {
        let mut buf = vec![0u8; PAGE];
        storage
            .read_at(&mut buf, id * PAGE as u64)
            .expect("read a page back");
        buf
    }

    /// Flips one payload byte of the image at `id` on disk; its header stays readable.
    fn damage(storage: &Arc<dyn Storage>, id: PageId) {
        let mut buf = on_disk(storage, id);
        buf[HEADER_LEN + 10] ^= 0xFF;
        storage
            .write_at(&buf, id * PAGE as u64)
            .expect("damage a page");
    }

    fn count(pool: &BufferPool, c: Counter) -> u64 {
        pool.counters().get(c)
    }

    #[test]
    fn a_page_read_once_is_cached_and_every_access_is_counted() {
        let (pool, _) = pool_over(8, 16, ScanIo::Paged);
        let first = pool.get(4, Access::Point).expect("miss");
        assert_eq!(first.bytes(), image(4, 1).as_slice());
        assert_eq!(
            (first.id(), first.kind(), first.txn()),
            (4, PageKind::Overflow, 1)
        );
        assert!(pool.is_resident(4) && !pool.is_resident(5));
        let again = pool.get(4, Access::Walk).expect("hit");
        assert!(
            Arc::ptr_eq(&first, &again),
            "a hit hands back the cached image"
        );
        assert_eq!(count(&pool, Counter::PageMisses), 1);
        assert_eq!(count(&pool, Counter::PageHits), 1);
        assert_eq!(count(&pool, Counter::PagesRead), 1);
        assert_eq!(count(&pool, Counter::BytesRead), PAGE as u64);
        assert_eq!(pool.occupancy(), (1, 16));
    }

    #[test]
    fn superblock_places_and_damaged_images_are_refused_and_not_cached() {
        let (pool, storage) = pool_over(8, 16, ScanIo::Paged);
        for id in [0, 1, MAX_PAGES] {
            assert!(matches!(
                pool.get(id, Access::Point),
                Err(Error::Page(PageError::Malformed { .. }))
            ));
        }
        damage(&storage, 6);
        assert!(matches!(
            pool.get(6, Access::Point),
            Err(Error::Page(PageError::ChecksumMismatch { page: 6, .. }))
        ));
        assert!(!pool.is_resident(6));
        assert!(!pool.table.is_known_good(6));
        assert_eq!(pool.occupancy().0, 0);
    }

    #[test]
    fn an_image_verified_once_is_only_parsed_until_its_place_is_discarded() {
        let (pool, storage) = pool_over(8, 2, ScanIo::Paged);
        pool.get(2, Access::Point).expect("first read verifies");
        assert!(pool.table.is_known_good(2));
        // Two more pages in a pool of two evict page 2 (never re-referenced, small queue).
        pool.get(3, Access::Point).expect("read");
        pool.get(4, Access::Point).expect("read");
        assert!(!pool.is_resident(2));
        assert!(pool.table.is_known_good(2), "eviction keeps the mark");
        // The bytes on disk change behind the pool's back: the mark says they were
        // verified, so the second read does not checksum them again.
        damage(&storage, 2);
        let p = pool.get(2, Access::Point).expect("known good: parsed only");
        assert_ne!(p.bytes(), image(2, 1).as_slice());
        drop(p);
        // A discard clears the mark: the next read verifies and refuses the same bytes.
        pool.discard(2);
        assert!(!pool.table.is_known_good(2));
        assert!(matches!(
            pool.get(2, Access::Point),
            Err(Error::Page(PageError::ChecksumMismatch { page: 2, .. }))
        ));
    }

    #[test]
    fn an_installed_page_is_dirty_until_one_flush_writes_it() {
        let (pool, storage) = pool_over(0, 16, ScanIo::Paged);
        let mut img = image(5, 2);
        img[0..4].fill(0); // the write seals it, not the install
        let p = pool.install(img.clone()).expect("install");
        assert!(p.is_dirty() && pool.is_resident(5));
        assert_eq!(p.bytes(), img.as_slice(), "installed as built, unsealed");
        assert!(
            storage.len().expect("len") < 6 * PAGE as u64,
            "not written yet"
        );
        let hit = pool.get(5, Access::Point).expect("resident");
        assert!(Arc::ptr_eq(&p, &hit));
        assert_eq!(count(&pool, Counter::PagesRead), 0);

        assert_eq!(pool.flush_dirty().expect("flush"), 1);
        assert!(!p.is_dirty());
        assert_eq!(on_disk(&storage, 5), image(5, 2), "written sealed");
        pool.check_on_disk(&p)
            .expect("the same image but for its checksum");
        assert!(pool.table.is_known_good(5), "written by this process");
        assert_eq!(count(&pool, Counter::PagesWritten), 1);
        assert_eq!(count(&pool, Counter::BytesWritten), PAGE as u64);
        assert_eq!(pool.flush_dirty().expect("second flush"), 0);
        assert_eq!(count(&pool, Counter::PagesWritten), 1);
    }

    #[test]
    fn a_replacement_image_takes_the_place_of_the_resident_one() {
        let (pool, storage) = pool_over(8, 16, ScanIo::Paged);
        let old = pool.get(3, Access::Point).expect("read");
        let new = pool.install(image(3, 9)).expect("install");
        assert_eq!(pool.occupancy().0, 1);
        let now = pool.get(3, Access::Point).expect("hit");
        assert!(Arc::ptr_eq(&now, &new) && !Arc::ptr_eq(&now, &old));
        assert_eq!(now.txn(), 9);
        assert_eq!(pool.flush_dirty().expect("flush"), 1);
        assert_eq!(on_disk(&storage, 3), image(3, 9));
    }

    #[test]
    fn a_discarded_dirty_page_is_never_written() {
        let (pool, storage) = pool_over(0, 16, ScanIo::Paged);
        let held = pool.install(image(7, 3)).expect("install");
        pool.discard(7);
        assert!(!pool.is_resident(7));
        assert_eq!(pool.occupancy().0, 0);
        assert!(!held.is_dirty(), "a holder finds the discarded image clean");
        assert_eq!(pool.flush_dirty().expect("flush"), 0);
        assert!(storage.len().expect("len") <= 7 * PAGE as u64);
        assert_eq!(count(&pool, Counter::PagesWritten), 0);
    }

    #[test]
    fn a_dirty_victim_is_written_back_outside_the_evictors_lock() {
        use crate::storage::{FaultPlan, FaultyOpener};
        use std::sync::mpsc;
        use std::time::Duration;

        let plan = FaultPlan::new("");
        let opener = FaultyOpener {
            inner: SimDisk::new(),
            plan: plan.clone(),
        };
        let (pool, storage) = pool_over_with(&opener, 10, 4, ScanIo::Paged);
        // Queued in this order: dirty 2, clean 8 and 10, dirty 3.
        pool.install(image(2, 2)).expect("install");
        for id in [8, 10] {
            pool.get(id, Access::Point).expect("read");
        }
        pool.install(image(3, 2)).expect("install");
        // The next install evicts dirty page 2, whose write stalls.
        plan.stall_write(1);
        let pool = &pool;
        std::thread::scope(|s| {
            let writer = s.spawn(|| pool.install(image(6, 2)));
            assert!(
                plan.wait_for_stall(Duration::from_secs(30)),
                "no write stalled"
            );
            // Meanwhile a reader's miss takes the evictor's lock, evicts clean page 8, and
            // returns (a dirty victim would wait for the write-back latch: write-backs
            // are one at a time).
            let (done, finished) = mpsc::channel();
            let reader = s.spawn(move || {
                let got = pool.get(9, Access::Point).map(|p| p.id());
                let _ = done.send(());
                got
            });
            let waited = finished.recv_timeout(Duration::from_secs(30));
            plan.release_stall();
            assert!(waited.is_ok(), "the miss waited for the stalled write-back");
            assert_eq!(reader.join().expect("reader").expect("read page 9"), 9);
            writer.join().expect("writer").expect("install page 6");
        });
        // Settled: within the budget, and every evicted dirty page is on disk.
        assert!(pool.occupancy().0 <= 4, "{:?}", pool.occupancy());
        assert!(!pool.is_resident(2) && !pool.is_resident(8));
        for id in [2, 3, 6].into_iter().filter(|&id| !pool.is_resident(id)) {
            assert_eq!(on_disk(&storage, id), image(id, 2), "page {id}");
        }
        assert_eq!(lock(&pool.evictor).writing(), 0);
    }

    #[test]
    fn a_kept_freed_image_is_never_written_and_the_next_image_takes_its_place() {
        let (pool, storage) = pool_over(0, 16, ScanIo::Paged);
        let held = pool.install(image(7, 3)).expect("install");
        pool.keep_freed(7);
        assert!(pool.is_resident(7), "kept in its place");
        assert!(!held.is_dirty(), "a holder finds the kept image clean");
        assert!(!pool.table.is_known_good(7));
        assert_eq!(pool.flush_dirty().expect("flush"), 0);
        assert_eq!(count(&pool, Counter::PagesWritten), 0);
        // The page's next owner: one resident image, the new one, written once.
        drop(held);
        let new = pool.install(image(7, 5)).expect("install again");
        assert_eq!(pool.occupancy().0, 1);
        let now = pool.get(7, Access::Point).expect("hit");
        assert!(Arc::ptr_eq(&now, &new));
        assert_eq!(pool.flush_dirty().expect("flush"), 1);
        assert_eq!(on_disk(&storage, 7), image(7, 5));
        // The old image's buffer went to the spare list for the next copy.
        assert_eq!(lock(&pool.spare).len(), 1);
    }

    #[test]
    fn the_eviction_queues_stay_bounded_under_a_writer_that_fits() {
        // A pool far from its budget never takes a candidate: the queue entries of
        // replaced images must still go.
        let (pool, _storage) = pool_over(0, 64, ScanIo::Paged);
        for round in 0..5_000u64 {
            for id in 2..5 {
                pool.install(image(id, round + 1)).expect("install");
            }
        }
        assert_eq!(pool.occupancy().0, 3);
        let queued = lock(&pool.evictor).queued();
        assert!(
            queued <= 2 * 64 + 1024 + 1,
            "{queued} entries queued for 3 pages"
        );
    }

    #[test]
    fn a_tiny_budget_evicts_and_writes_dirty_pages_back_first() {
        let (pool, storage) = pool_over(0, 4, ScanIo::Paged);
        for id in 2..14 {
            pool.install(image(id, 4)).expect("install");
            assert!(pool.occupancy().0 <= 4, "within budget after page {id}");
        }
        let resident = (2..14).filter(|&id| pool.is_resident(id)).count() as u64;
        assert_eq!(resident, 4);
        let evicted = count(&pool, Counter::Evictions);
        assert_eq!(evicted, 12 - resident);
        // Every evicted page was dirty: each one was written back before it left.
        assert_eq!(count(&pool, Counter::DirtyWritebacks), evicted);
        for id in (2..14).filter(|&id| !pool.is_resident(id)) {
            assert_eq!(on_disk(&storage, id), image(id, 4), "page {id}");
        }
        assert_eq!(pool.flush_dirty().expect("flush"), resident);
        assert_eq!(count(&pool, Counter::PagesWritten), 12);
        for id in 2..14 {
            assert_eq!(on_disk(&storage, id), image(id, 4), "page {id}");
        }
        // Read back in a fresh pool of the same file: nothing was lost.
        let fresh = pool_on(storage.clone(), 64, ScanIo::Paged);
        for id in 2..14 {
            let p = fresh.get(id, Access::Point).expect("read back");
            assert_eq!(p.bytes(), image(id, 4).as_slice());
        }
    }

    #[test]
    fn a_pinned_page_outlives_any_number_of_misses() {
        let (pool, _) = pool_over(40, 4, ScanIo::Paged);
        let root = pool.get(2, Access::Point).expect("read");
        pool.set_pinned(&root, true);
        for id in 3..42 {
            pool.get(id, Access::Walk).expect("read");
        }
        assert!(pool.is_resident(2));
        assert!(pool.occupancy().0 <= 4);
        assert_eq!(count(&pool, Counter::Evictions), 40 - 4);
    }

    #[test]
    fn readahead_reads_a_run_in_one_request_and_caches_what_was_missing() {
        let (pool, storage) = pool_over(16, 64, ScanIo::Paged);
        pool.get(5, Access::Point).expect("read");
        assert_eq!(pool.readahead(4, 4).expect("readahead"), 3);
        assert_eq!(pool.readahead(4, 0).expect("nothing"), 0);
        assert_eq!(count(&pool, Counter::PagesRead), 1 + 4);
        assert_eq!(count(&pool, Counter::BytesRead), 5 * PAGE as u64);
        assert_eq!(count(&pool, Counter::ReadaheadPages), 3);
        for id in [4, 6, 7] {
            pool.get(id, Access::Point).expect("hit");
        }
        assert_eq!(count(&pool, Counter::PageHits), 3);
        assert_eq!(count(&pool, Counter::PageMisses), 1);
        // A damaged page in the run is left out; its error surfaces when it is asked for.
        damage(&storage, 9);
        assert_eq!(pool.readahead(8, 3).expect("readahead"), 2);
        assert!(pool.is_resident(8) && !pool.is_resident(9) && pool.is_resident(10));
        assert!(pool.get(9, Access::Point).is_err());
    }

    #[test]
    fn whole_frame_reads_serve_walks_only() {
        let (pool, _) = pool_over(14, 64, ScanIo::FullFrame);
        pool.get(3, Access::Point).expect("point read");
        assert_eq!(count(&pool, Counter::FullFrameReads), 0);
        assert_eq!(count(&pool, Counter::PagesRead), 1);
        let p = pool.get(10, Access::Walk).expect("walk read");
        assert_eq!(p.id(), 10);
        assert_eq!(count(&pool, Counter::FullFrameReads), 1);
        assert_eq!(count(&pool, Counter::PagesRead), 1 + 8);
        assert_eq!(count(&pool, Counter::BytesRead), 9 * PAGE as u64);
        // Only tree pages of the frame are kept beside the one asked for.
        assert!(pool.is_resident(10) && !pool.is_resident(11));
        assert_eq!(lock(&pool.evictor).frames.len(), 1);
    }

    #[test]
    fn runs_bypass_the_cache_and_are_checked_for_their_kind() {
        let (pool, storage) = pool_over(0, 16, ScanIo::Paged);
        let run = encode_overflow_run(&[7u8; 3 * PAGE], 20, 5, PAGE);
        let pages = (run.len() / PAGE) as u64;
        pool.write_run(20, &run).expect("write run");
        assert!(!pool.is_resident(20));
        assert_eq!(count(&pool, Counter::PagesWritten), pages);
        assert_eq!(on_disk(&storage, 21), run[PAGE..2 * PAGE]);
        let back = pool
            .read_run(20, pages as usize, PageKind::Overflow)
            .expect("read run");
        assert_eq!(back, run);
        assert_eq!(count(&pool, Counter::PagesRead), pages);
        assert!(matches!(
            pool.read_run(20, pages as usize, PageKind::Leaf),
            Err(Error::Page(PageError::UnexpectedKind { page: 20, .. }))
        ));
        assert!(
            pool.write_run(1, &run).is_err(),
            "the superblocks are not a run's"
        );
    }

    #[test]
    fn the_integrity_check_compares_a_clean_image_with_the_disk() {
        let (pool, storage) = pool_over(8, 16, ScanIo::Paged);
        let p = pool.get(3, Access::Point).expect("read");
        pool.check_on_disk(&p).expect("same bytes");
        damage(&storage, 3);
        assert!(pool.check_on_disk(&p).is_err());
        let dirty = pool.install(image(4, 8)).expect("install");
        pool.check_on_disk(&dirty)
            .expect("a dirty image is not compared");
    }
}
