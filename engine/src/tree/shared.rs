//! The state every `Tree` handle shares, and the parts of the write path that touch it:
//! running a write transaction against the log, publishing versions, reclaiming pages,
//! the checkpoint protocol and log replay.
//!
//! Checkpoint protocol (docs/durability.md): under the writer lock, capture the current
//! version, switch log files (syncing the old one) and reserve the free-list pages; then,
//! with writers running, write every dirty page and the free list, fsync, write the next
//! superblock copy, fsync; finally, under the writer lock again, mark the captured commit
//! durable and release what the previous checkpoint held. Readers never wait; writers
//! wait only for the two short critical sections.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use arc_swap::{ArcSwap, Guard};

use super::background::Signal;
use super::config::{Durability, TreeConfig};
use super::open::{write_superblock, Opened};
use crate::btree::{self, CheckReport, Mutation, Version, WriteScratch, WriteTxn};
use crate::error::{Error, Result};
use crate::filter::{self, KeyFilter};
use crate::frame::{Allocator, Reclaimed, Recoverable};
use crate::page::{
    encode_freelist_pages, freelist_pages_needed, seal, KeyLengths, PageId, Superblock,
    FORMAT_VERSION,
};
use crate::pool::{lock, Access, BufferPool, Counter, Metrics};
use crate::storage::StorageOpener;
use crate::wal::{Record, Wal, WalError};

mod key_filter;

/// State only the writer touches.
struct Writer {
    alloc: Allocator,
    seq: u64,
    /// The commit a checkpoint being written captured (see `Recoverable::in_flight`); the
    /// durable checkpoint's commit is `Shared::durable_seq`.
    checkpoint_in_flight: Option<u64>,
    generation: u64,
    next_slot: u8,
    freelist_pages: Vec<PageId>,
    /// The pool's dirty write-backs when the last checkpoint was captured.
    writebacks_at_capture: u64,
    /// The last transaction's buffers, for the next one.
    scratch: WriteScratch,
    /// The last reclaim's pages, kept for the next one's lists.
    reclaimed: Reclaimed,
}

/// Log and checkpoint counters.
#[derive(Debug, Default)]
struct DurabilityStats {
    torn_tails: AtomicU64,
    repaired_headers: AtomicU64,
    replayed: AtomicU64,
    checkpoints: AtomicU64,
    /// Stored-key filters rebuilt from the keys at open (no usable filter file).
    key_filter_rebuilds: AtomicU64,
    /// Filter files that could not be written (the next open rebuilds the filter).
    key_filter_write_failures: AtomicU64,
}

/// Everything a `Tree` handle shares.
pub(crate) struct Shared {
    dir: PathBuf,
    pool: Arc<BufferPool>,
    current: ArcSwap<Version>,
    writer: Mutex<Writer>,
    live: Mutex<VecDeque<Weak<Version>>>,
    readahead_pages: usize,
    /// Inner pages read into the pool when the tree opened (see [`Shared::warm`]).
    inner_pages_warmed: AtomicU64,
    /// The commit the durable checkpoint captured: the one copy. It changes only under the
    /// writer lock, so the writer reads it consistent with `Writer::checkpoint_in_flight`;
    /// metrics and close read it without the lock.
    durable_seq: AtomicU64,
    file_pages: AtomicU64,
    free_pages: AtomicU64,
    held_pages: AtomicU64,
    wal: Wal,
    durability: Durability,
    poisoned: Mutex<Option<String>>,
    checkpointing: Mutex<()>,
    checkpoint_log_bytes: u64,
    /// Pages held for a checkpoint at which a commit asks for one.
    checkpoint_held_pages: u64,
    signal: Arc<Signal>,
    stats: DurabilityStats,
    /// Opens the filter file the way the tree's other files are opened.
    opener: Arc<dyn StorageOpener>,
    /// Bits a key of the stored-key filter (0: none).
    key_filter_bits: u32,
    /// The pool's capacity before the filter's memory is taken out of it.
    budget_pages: usize,
    /// The filter's key count when its file was last written (u64::MAX: never).
    key_filter_written: AtomicU64,
    /// Held for its lock: a second process cannot open the tree.
    _lock_file: std::fs::File,
}

/// What a checkpoint captured under the writer lock. It holds the captured tree's shape,
/// not its version: the pages that tree references are kept in place by
/// `Writer::checkpoint_in_flight`, not as a snapshot, so that pages written and
/// replaced after the capture are reused while the flush runs.
struct Capture {
    seq: u64,
    root: PageId,
    height: u32,
    entries: u64,
    freelist: Vec<PageId>,
    extents: Vec<(PageId, u32)>,
    page_count: u64,
    generation: u64,
    slot: u8,
    key_lengths: KeyLengths,
    key_filter: Option<Arc<KeyFilter>>,
}

impl Shared {
    /// The state of a tree just opened, at its durable checkpoint; also returns the log
    /// records to replay with [`Shared::recover`]. `signal` wakes its checkpointer.
    pub fn new(config: &TreeConfig, opened: Opened, signal: Arc<Signal>) -> (Shared, Vec<Record>) {
        let sb = opened.superblock;
        let log = opened.wal;
        let (_, budget_pages) = opened.pool.occupancy();
        let shared = Shared {
            dir: config.dir.clone(),
            current: ArcSwap::from_pointee(opened.version),
            writer: Mutex::new(Writer {
                seq: sb.seq,
                checkpoint_in_flight: None,
                generation: sb.generation,
                next_slot: opened.slot ^ 1,
                freelist_pages: opened.freelist_pages,
                writebacks_at_capture: 0,
                alloc: opened.alloc,
                scratch: WriteScratch::new(),
                reclaimed: Reclaimed::default(),
            }),
            live: Mutex::new(VecDeque::new()),
            readahead_pages: config.readahead_bytes as usize / opened.pool.geometry().page_bytes(),
            inner_pages_warmed: AtomicU64::new(0),
            durable_seq: AtomicU64::new(sb.seq),
            file_pages: AtomicU64::new(sb.page_count),
            free_pages: AtomicU64::new(sb.free_pages),
            held_pages: AtomicU64::new(0),
            pool: opened.pool,
            wal: log.wal,
            durability: config.durability,
            poisoned: Mutex::new(None),
            checkpointing: Mutex::new(()),
            checkpoint_log_bytes: config.checkpoint_log_bytes,
            checkpoint_held_pages: config.checkpoint_held_pages.unwrap_or(u64::MAX).max(1),
            signal,
            stats: DurabilityStats {
                torn_tails: AtomicU64::new(log.torn_tails),
                repaired_headers: AtomicU64::new(log.repaired_headers),
                ..DurabilityStats::default()
            },
            opener: config.opener.clone(),
            key_filter_bits: config.key_filter_bits,
            budget_pages,
            key_filter_written: AtomicU64::new(u64::MAX),
            _lock_file: opened.lock,
        };
        (shared, log.records)
    }

    /// Replays the logged commits after the durable checkpoint, then checkpoints them so
    /// that the log can go.
    pub fn recover(&self, records: Vec<Record>) -> Result<()> {
        let start = self.durable_seq.load(Ordering::Relaxed);
        let mut replayed = false;
        for rec in records.iter().filter(|r| r.seq > start) {
            self.replay(rec)?;
            replayed = true;
        }
        if replayed {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// The tree's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The buffer pool over the data file.
    #[inline]
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    /// Reads the current version's inner levels below the root into the pool, while they
    /// hold at most half of it (`btree::warm_inner_levels`), in requests of up to 256 KiB.
    pub fn warm(&self) {
        let v = self.current.load();
        let (_, capacity) = self.pool.occupancy();
        let run_pages = (256 << 10) / self.pool.geometry().page_bytes();
        let warmed = crate::btree::warm_inner_levels(&self.pool, &v, capacity / 2, run_pages);
        self.inner_pages_warmed.store(warmed, Ordering::Relaxed);
    }

    /// The largest readahead of a scan, in pages.
    pub fn readahead_pages(&self) -> usize {
        self.readahead_pages
    }

    /// The current version, without touching its reference count: for one read.
    #[inline]
    pub fn current_guard(&self) -> Guard<Arc<Version>> {
        self.current.load()
    }

    /// The current version, held: for a snapshot.
    pub fn current_version(&self) -> Arc<Version> {
        self.current.load_full()
    }

    /// The checkpoints recovery could start from now; `w` is the writer's state, under
    /// whose lock `durable_seq` changes.
    fn recoverable(&self, w: &Writer) -> Recoverable {
        Recoverable {
            durable: self.durable_seq.load(Ordering::Relaxed),
            in_flight: w.checkpoint_in_flight,
        }
    }

    fn logging(&self) -> bool {
        matches!(self.durability, Durability::Wal { .. })
    }

    /// Stops all further writes; reads keep working.
    fn poison(&self, reason: String) {
        self.wal.fail(reason.clone());
        lock(&self.poisoned).get_or_insert(reason);
    }

    fn check_writable(&self) -> Result<()> {
        match lock(&self.poisoned).as_ref() {
            Some(reason) => Err(Error::WritesRefused {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Runs `f` in a write transaction: logs what it changed, commits, publishes, and (in
    /// `Wal { sync: true }` mode) waits until the log is on disk.
    pub fn write<R>(&self, f: impl FnOnce(&mut WriteTxn<'_>) -> Result<R>) -> Result<R> {
        self.check_writable()?;
        let mut w = lock(&self.writer);
        let cur = self.current.load_full();
        let seq = w.seq + 1;
        let (committed, r) = {
            // The guard, dereferenced once: the transaction borrows two of its fields.
            let wr = &mut *w;
            let mut txn = WriteTxn::new(
                &self.pool,
                &mut wr.alloc,
                &mut wr.scratch,
                seq,
                cur.root.as_ref().map(|p| p.id()),
                cur.height,
                cur.entries,
            )
            .with_key_filter(cur.key_filter.as_deref());
            if self.logging() {
                txn = txn.with_log();
            }
            let r = f(&mut txn)?;
            if txn.is_empty() {
                drop(txn);
                wr.scratch.trim();
                return Ok(r);
            }
            if let Some((n, mut record)) = txn.take_log() {
                if let Err(e) = self.wal.append_started(seq, n, &mut record) {
                    self.poison(format!("appending commit {seq} to the log failed: {e}"));
                    return Err(e);
                }
                txn.return_log_buffer(record);
            }
            match txn.commit() {
                Ok(c) => (c, r),
                Err(e) => {
                    self.poison(format!("commit {seq} failed after it was logged: {e}"));
                    return Err(e);
                }
            }
        };
        w.scratch.trim();
        w.seq = seq;
        let mut lengths = cur.key_lengths;
        lengths.union(&committed.put_lengths);
        self.publish(
            &mut w,
            Version::new(seq, committed.root, committed.height, committed.entries)
                .with_key_lengths(lengths)
                .with_key_filter(cur.key_filter.clone()),
        );
        let full = self.logging() && self.wal.pending_bytes() >= self.checkpoint_log_bytes;
        // Replaced pages the durable checkpoint holds cannot be reused, so each changed
        // page the pool writes back goes to a new place at the end of the file, one more
        // page in the OS cache beside the pool. Past `checkpoint_held_pages` (off unless
        // configured), and once the pool writes pages back (while every change stays in
        // the pool, a checkpoint would only add writes), a checkpoint returns them; one is
        // not asked for while one runs, which could not free them yet. The cheap tests
        // come first: the counter sum runs only past the limit.
        let held = w.checkpoint_in_flight.is_none() && self.held_pages_call_for_checkpoint(&w);
        drop(w);
        if full || held {
            self.signal.kick();
        }
        if let Durability::Wal { sync: true } = self.durability {
            if let Err(e) = self.wal.wait_durable(seq) {
                self.poison(e.to_string());
                return Err(e);
            }
        }
        Ok(r)
    }

    /// True when the pages held for a checkpoint pass `checkpoint_held_pages` and the pool
    /// has written pages back since the last capture (see the commit path).
    fn held_pages_call_for_checkpoint(&self, w: &Writer) -> bool {
        w.alloc.awaiting_checkpoint_pages() >= self.checkpoint_held_pages
            && self.pool.counters().get(Counter::DirtyWritebacks) > w.writebacks_at_capture
    }

    /// Re-applies a logged commit during open.
    fn replay(&self, rec: &Record) -> Result<()> {
        let mut w = lock(&self.writer);
        let cur = self.current.load_full();
        if rec.seq != w.seq + 1 {
            return Err(WalError::Gap {
                file: self.dir.join(crate::wal::WAL_FILES[0]),
                expected: w.seq + 1,
                found: rec.seq,
            }
            .into());
        }
        let wr = &mut *w;
        let mut txn = WriteTxn::new(
            &self.pool,
            &mut wr.alloc,
            &mut wr.scratch,
            rec.seq,
            cur.root.as_ref().map(|p| p.id()),
            cur.height,
            cur.entries,
        )
        .with_key_filter(cur.key_filter.as_deref());
        // One record is one committed batch: replayed as one, each page changed once.
        txn.apply_all(&Mutation::all_of(&rec.ops))?;
        let c = txn.commit()?;
        w.seq = rec.seq;
        let mut lengths = cur.key_lengths;
        lengths.union(&c.put_lengths);
        self.publish(
            &mut w,
            Version::new(rec.seq, c.root, c.height, c.entries)
                .with_key_lengths(lengths)
                .with_key_filter(cur.key_filter.clone()),
        );
        self.stats.replayed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Makes `v` the current version and frees what no reader can reach any more.
    fn publish(&self, w: &mut Writer, v: Version) {
        if let Some(r) = &v.root {
            self.pool.set_pinned(r, true);
        }
        let new_root = v.root.as_ref().map(|p| p.id());
        let old = self.current.swap(Arc::new(v));
        if let Some(r) = &old.root {
            if Some(r.id()) != new_root {
                self.pool.set_pinned(r, false);
            }
        }
        lock(&self.live).push_back(Arc::downgrade(&old));
        drop(old);
        self.reclaim(w);
    }

    fn oldest_live_seq(&self) -> u64 {
        let mut live = lock(&self.live);
        while let Some(front) = live.front() {
            if let Some(v) = front.upgrade() {
                return v.seq;
            }
            live.pop_front();
        }
        self.current.load().seq
    }

    /// Frees the pages no snapshot and no recoverable checkpoint reaches any more.
    fn reclaim(&self, w: &mut Writer) {
        let oldest = self.oldest_live_seq();
        let recoverable = self.recoverable(w);
        let wr = &mut *w;
        wr.alloc.reclaim(oldest, recoverable, &mut wr.reclaimed);
        for &(first, len) in &wr.reclaimed.released {
            for p in first..first + len {
                self.pool.discard(p);
            }
        }
        for &p in &wr.reclaimed.kept {
            self.pool.keep_freed(p);
        }
        self.file_pages
            .store(w.alloc.page_count(), Ordering::Relaxed);
        self.free_pages
            .store(w.alloc.free_pages(), Ordering::Relaxed);
        self.held_pages
            .store(w.alloc.awaiting_checkpoint_pages(), Ordering::Relaxed);
    }

    /// Loads sorted, duplicate-free pairs into the empty tree as one commit, then
    /// checkpoints. Returns the number of entries loaded.
    pub fn bulk_load<I, K, V>(&self, items: I) -> Result<u64>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut w = lock(&self.writer);
        let cur = self.current.load_full();
        if cur.entries != 0 || cur.root.is_some() {
            return Err(Error::BulkLoadNotEmpty {
                entries: cur.entries,
            });
        }
        let seq = w.seq + 1;
        let saved = w.alloc.clone();
        // The filter is sized once the count is known: keep each key's hash until then.
        let mut hashes = Vec::new();
        let keep = self.key_filter_bits > 0;
        let items = items.into_iter().inspect(|(k, _)| {
            if keep {
                hashes.push(filter::hash_key(k.as_ref()));
            }
        });
        let loaded = match btree::bulk_load(&self.pool, &mut w.alloc, seq, items) {
            Ok(l) => l,
            Err(e) => {
                w.alloc = saved;
                return Err(e);
            }
        };
        let root = match loaded.root {
            Some(id) => Some(self.pool.get(id, Access::Point)?),
            None => None,
        };
        w.seq = seq;
        let key_filter = if keep {
            let f = KeyFilter::new(loaded.entries, self.key_filter_bits);
            for h in hashes {
                f.insert_hash(h);
            }
            self.charge(&f);
            Some(Arc::new(f))
        } else {
            cur.key_filter.clone()
        };
        self.publish(
            &mut w,
            Version::new(seq, root, loaded.height, loaded.entries)
                .with_key_lengths(loaded.key_lengths)
                .with_key_filter(key_filter),
        );
        drop(w);
        self.checkpoint()?;
        Ok(loaded.entries)
    }

    /// Walks every page of the current version and checks the tree's invariants, with
    /// the writer held so that no page changes hands meanwhile.
    pub fn check_integrity(&self) -> Result<CheckReport> {
        let w = lock(&self.writer);
        let v = self.current.load_full();
        let freed = w.alloc.not_live();
        btree::check_tree(&self.pool, &v, &|p| {
            if w.freelist_pages.contains(&p) {
                Some("a page of the durable free list")
            } else {
                freed(p)
            }
        })
    }

    /// Counters and sizes, read without any lock.
    pub fn metrics(&self) -> Metrics {
        let c = self.pool.counters();
        let v = self.current.load();
        let (resident, capacity) = self.pool.occupancy();
        Metrics {
            bm_read_page_hits: c.get(Counter::PageHits),
            bm_read_page_misses: c.get(Counter::PageMisses),
            bm_scan_full_blob_reads: c.get(Counter::FullFrameReads),
            bm_bytes_read: c.get(Counter::BytesRead),
            bm_pages_read: c.get(Counter::PagesRead),
            bm_evictions: c.get(Counter::Evictions),
            bm_readahead_pages: c.get(Counter::ReadaheadPages),
            bm_readaround_pages: c.get(Counter::ReadaroundPages),
            bm_shared_pages: c.get(Counter::SharedPages),
            bm_pages_written: c.get(Counter::PagesWritten),
            bm_bytes_written: c.get(Counter::BytesWritten),
            bm_dirty_writebacks: c.get(Counter::DirtyWritebacks),
            resident_pages: resident as u64,
            capacity_pages: capacity as u64,
            entries: v.entries,
            height: v.height,
            file_pages: self.file_pages.load(Ordering::Relaxed),
            free_pages: self.free_pages.load(Ordering::Relaxed),
            held_pages: self.held_pages.load(Ordering::Relaxed),
            commit_seq: v.seq,
            checkpoint_seq: self.durable_seq.load(Ordering::Relaxed),
            wal_records: self.wal.records.load(Ordering::Relaxed),
            wal_bytes: self.wal.bytes.load(Ordering::Relaxed),
            wal_syncs: self.wal.syncs.load(Ordering::Relaxed),
            wal_torn_tails: self.stats.torn_tails.load(Ordering::Relaxed),
            wal_repaired_headers: self.stats.repaired_headers.load(Ordering::Relaxed),
            wal_replayed_records: self.stats.replayed.load(Ordering::Relaxed),
            inner_pages_warmed: self.inner_pages_warmed.load(Ordering::Relaxed),
            checkpoints: self.stats.checkpoints.load(Ordering::Relaxed),
            key_filter_rejects: c.get(Counter::KeyFilterRejects),
            key_filter_bytes: v.key_filter.as_ref().map_or(0, |f| f.bytes()),
            key_filter_rebuilds: self.stats.key_filter_rebuilds.load(Ordering::Relaxed),
            key_filter_write_failures: self.stats.key_filter_write_failures.load(Ordering::Relaxed),
        }
    }

    /// Bytes of the data file on disk.
    pub fn size_on_disk(&self) -> Result<u64> {
        Ok(self.pool.storage().len()?)
    }

    /// Makes everything committed so far durable in the data file and lets the log go.
    /// After it returns, a reopen replays nothing that was committed before it started.
    pub fn checkpoint(&self) -> Result<()> {
        let _one = lock(&self.checkpointing);
        let Some(cap) = self.capture()? else {
            return Ok(());
        };
        // The switched-out log file leaves the OS page cache now, without the writer's lock.
        self.wal.drop_switched_out();
        let written = self.write_checkpoint(&cap);
        let mut w = lock(&self.writer);
        if let Err(e) = written {
            for &p in &cap.freelist {
                w.alloc.release(p, 1);
            }
            self.poison(format!("checkpoint of commit {} failed: {e}", cap.seq));
            return Err(e);
        }
        w.next_slot ^= 1;
        w.generation = cap.generation;
        w.checkpoint_in_flight = None;
        self.durable_seq.store(cap.seq, Ordering::Relaxed);
        for p in std::mem::replace(&mut w.freelist_pages, cap.freelist) {
            w.alloc.release(p, 1);
        }
        self.reclaim(&mut w);
        // Commits do not ask while a checkpoint runs; pages replaced meanwhile under this
        // one may already pass the limit, and no later commit need come to ask.
        let again = self.held_pages_call_for_checkpoint(&w);
        drop(w);
        if again {
            self.signal.kick();
        }
        self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
        if let Some(f) = &cap.key_filter {
            self.write_key_filter(f, cap.seq);
        }
        if self.logging() {
            // Off the commit path: the next switch then finds its file ready. A failure
            // here costs only that: the switch resets the file itself, and reports it.
            let _ = self.wal.prepare_next(cap.seq);
        }
        Ok(())
    }

    /// The first critical section: what this checkpoint will write.
    fn capture(&self) -> Result<Option<Capture>> {
        if self.logging() {
            // The log's switch below syncs its active file while commits wait for the
            // writer's lock; what is appended so far goes to disk first, without it.
            if let Err(e) = self.wal.sync_appended() {
                self.poison(format!("syncing the log before its switch failed: {e}"));
                return Err(e);
            }
        }
        let mut w = lock(&self.writer);
        let version = self.current.load_full();
        let durable = self.durable_seq.load(Ordering::Relaxed);
        if version.seq == durable && w.generation > 0 {
            return Ok(None);
        }
        if self.logging() {
            if let Err(e) = self.wal.rotate(durable) {
                self.poison(format!("switching log files failed: {e}"));
                return Err(e);
            }
        }
        let ps = self.pool.geometry().page_bytes();
        let mut freelist = Vec::new();
        let extents = loop {
            // The pages of the durable free list are free in the tree this one describes.
            let all = w.alloc.extents_for_checkpoint(&w.freelist_pages);
            let records = split_for_records(all);
            if freelist.len() >= freelist_pages_needed(records.len(), ps) {
                break records;
            }
            freelist.push(w.alloc.alloc(1));
        };
        // From here until it is durable, the superblock of this checkpoint may reach the
        // disk: the pages its tree references are not reused, whatever replaces them.
        w.checkpoint_in_flight = Some(version.seq);
        w.writebacks_at_capture = self.pool.counters().get(Counter::DirtyWritebacks);
        Ok(Some(Capture {
            seq: version.seq,
            root: version.root.as_ref().map_or(0, |p| p.id()),
            height: version.height,
            entries: version.entries,
            freelist,
            extents,
            page_count: w.alloc.page_count(),
            generation: w.generation + 1,
            slot: w.next_slot,
            key_lengths: version.key_lengths,
            key_filter: version.key_filter.clone(),
        }))
    }

    /// The unlocked part: pages, free list, fsync, superblock, fsync.
    fn write_checkpoint(&self, cap: &Capture) -> Result<()> {
        let pool = &self.pool;
        let geo = pool.geometry();
        pool.ensure_len(cap.page_count)?;
        pool.flush_dirty()?;
        let pages = encode_freelist_pages(&cap.extents, &cap.freelist, cap.seq, geo.page_bytes());
        for (id, mut page) in cap.freelist.iter().zip(pages) {
            seal(&mut page);
            pool.write_run(*id, &page)?;
        }
        pool.storage().sync()?;
        let sb = Superblock {
            version: FORMAT_VERSION,
            page_size: geo.page_size,
            frame_size: geo.frame_size,
            seq: cap.seq,
            root: cap.root,
            height: cap.height,
            entries: cap.entries,
            page_count: cap.page_count,
            freelist: cap.freelist.first().copied().unwrap_or(0),
            freelist_pages: cap.freelist.len() as u64,
            free_pages: cap.extents.iter().map(|&(_, l)| u64::from(l)).sum(),
            log_start: cap.seq + 1,
            generation: cap.generation,
            key_lengths: cap.key_lengths,
        };
        write_superblock(pool.storage().as_ref(), &sb, cap.slot)?;
        pool.storage().sync()?;
        Ok(())
    }
}

/// Splits extents longer than a free-list record holds (`u32::MAX` pages).
fn split_for_records(extents: Vec<(PageId, u64)>) -> Vec<(PageId, u32)> {
    let mut out = Vec::with_capacity(extents.len());
    for (mut first, mut len) in extents {
        while len > 0 {
            let take = len.min(u64::from(u32::MAX));
            out.push((first, take as u32));
            first += take;
            len -= take;
        }
    }
    out
}

impl Drop for Shared {
    /// Closing checkpoints what was committed since the last checkpoint, so that a clean
    /// shutdown replays nothing. Errors cannot be reported from drop; call
    /// `Tree::checkpoint` first to see them.
    fn drop(&mut self) {
        let poisoned = lock(&self.poisoned).is_some();
        if !poisoned && self.current.load().seq != self.durable_seq.load(Ordering::Relaxed) {
            let _ = self.checkpoint();
        }
    }
}
