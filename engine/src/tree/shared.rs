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
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use arc_swap::ArcSwap;

use super::background::Signal;
use super::config::Durability;
use super::open::write_superblock;
use crate::btree::{Mutation, Version, WriteTxn};
use crate::error::{Error, Result};
use crate::frame::{Allocator, Recoverable};
use crate::page::{
    encode_freelist_pages, freelist_pages_needed, seal, PageId, Superblock, FORMAT_VERSION,
};
use crate::pool::{lock, BufferPool};
use crate::wal::{Record, Wal, WalError};

/// State only the writer touches.
pub(crate) struct Writer {
    pub alloc: Allocator,
    pub seq: u64,
    /// The durable checkpoint and the one being written, which hold their pages.
    pub checkpoints: Recoverable,
    pub generation: u64,
    pub next_slot: u8,
    pub freelist_pages: Vec<PageId>,
}

/// Log and checkpoint counters.
#[derive(Debug, Default)]
pub(crate) struct DurabilityStats {
    pub torn_tails: AtomicU64,
    pub repaired_headers: AtomicU64,
    pub replayed: AtomicU64,
    pub checkpoints: AtomicU64,
}

/// Everything a `Tree` handle shares.
pub(crate) struct Shared {
    pub dir: PathBuf,
    pub pool: Arc<BufferPool>,
    pub current: ArcSwap<Version>,
    pub writer: Mutex<Writer>,
    pub live: Mutex<VecDeque<Weak<Version>>>,
    pub readahead_pages: usize,
    pub durable_seq: AtomicU64,
    pub file_pages: AtomicU64,
    pub free_pages: AtomicU64,
    pub wal: Wal,
    pub durability: Durability,
    pub poisoned: Mutex<Option<String>>,
    pub checkpointing: Mutex<()>,
    pub checkpoint_log_bytes: u64,
    pub signal: Arc<Signal>,
    pub stats: DurabilityStats,
    /// Held for its lock: a second process cannot open the tree.
    pub _lock_file: std::fs::File,
}

/// What a checkpoint captured under the writer lock. It holds the captured tree's shape,
/// not its version: the pages that tree references are kept in place by
/// `Writer::checkpoints` (`in_flight`), not as a snapshot, so that pages written and
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
}

impl Shared {
    fn logging(&self) -> bool {
        matches!(self.durability, Durability::Wal { .. })
    }

    /// Stops all further writes; reads keep working.
    pub fn poison(&self, reason: String) {
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
            let mut txn = WriteTxn::new(
                &self.pool,
                &mut w.alloc,
                seq,
                cur.root.as_ref().map(|p| p.id()),
                cur.height,
                cur.entries,
            );
            if self.logging() {
                txn = txn.with_log();
            }
            let r = f(&mut txn)?;
            if txn.is_empty() {
                return Ok(r);
            }
            if let Some((n, payload)) = txn.log_payload() {
                if let Err(e) = self.wal.append(seq, n, payload) {
                    self.poison(format!("appending commit {seq} to the log failed: {e}"));
                    return Err(e);
                }
            }
            match txn.commit() {
                Ok(c) => (c, r),
                Err(e) => {
                    self.poison(format!("commit {seq} failed after it was logged: {e}"));
                    return Err(e);
                }
            }
        };
        w.seq = seq;
        self.publish(
            &mut w,
            Version::new(seq, committed.root, committed.height, committed.entries),
        );
        let full = self.logging() && self.wal.pending_bytes() >= self.checkpoint_log_bytes;
        drop(w);
        if full {
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

    /// Re-applies a logged commit during open.
    pub fn replay(&self, rec: &Record) -> Result<()> {
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
        let mut txn = WriteTxn::new(
            &self.pool,
            &mut w.alloc,
            rec.seq,
            cur.root.as_ref().map(|p| p.id()),
            cur.height,
            cur.entries,
        );
        for (k, v) in &rec.ops {
            match v {
                Some(v) => txn.apply(Mutation::Put(k, v))?,
                None => txn.apply(Mutation::Delete(k))?,
            };
        }
        let c = txn.commit()?;
        w.seq = rec.seq;
        self.publish(&mut w, Version::new(rec.seq, c.root, c.height, c.entries));
        self.stats.replayed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Makes `v` the current version and frees what no reader can reach any more.
    pub fn publish(&self, w: &mut Writer, v: Version) {
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

    pub fn reclaim(&self, w: &mut Writer) {
        let oldest = self.oldest_live_seq();
        for (first, len) in w.alloc.reclaim(oldest, w.checkpoints) {
            for p in first..first + len {
                self.pool.discard(p);
            }
        }
        self.file_pages
            .store(w.alloc.page_count(), Ordering::Relaxed);
        self.free_pages
            .store(w.alloc.free_pages(), Ordering::Relaxed);
    }

    /// Makes everything committed so far durable in the data file and lets the log go.
    /// After it returns, a reopen replays nothing that was committed before it started.
    pub fn checkpoint(&self) -> Result<()> {
        let _one = lock(&self.checkpointing);
        let Some(cap) = self.capture()? else {
            return Ok(());
        };
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
        w.checkpoints = Recoverable {
            durable: cap.seq,
            in_flight: None,
        };
        self.durable_seq.store(cap.seq, Ordering::Relaxed);
        for p in std::mem::replace(&mut w.freelist_pages, cap.freelist) {
            w.alloc.release(p, 1);
        }
        self.reclaim(&mut w);
        self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The first critical section: what this checkpoint will write.
    fn capture(&self) -> Result<Option<Capture>> {
        let mut w = lock(&self.writer);
        let version = self.current.load_full();
        if version.seq == w.checkpoints.durable && w.generation > 0 {
            return Ok(None);
        }
        if self.logging() {
            if let Err(e) = self.wal.rotate(w.checkpoints.durable) {
                self.poison(format!("switching log files failed: {e}"));
                return Err(e);
            }
        }
        let ps = self.pool.geometry().page_bytes();
        let old: Vec<(PageId, u64)> = w.freelist_pages.iter().map(|&p| (p, 1)).collect();
        let mut freelist = Vec::new();
        let extents = loop {
            let mut all = w.alloc.extents_for_checkpoint();
            all.extend(old.iter().copied());
            let merged = merge_extents(all);
            if freelist.len() >= freelist_pages_needed(merged.len(), ps) {
                break merged;
            }
            freelist.push(w.alloc.alloc(1));
        };
        // From here until it is durable, the superblock of this checkpoint may reach the
        // disk: the pages its tree references are not reused, whatever replaces them.
        w.checkpoints.in_flight = Some(version.seq);
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
        };
        write_superblock(pool.storage().as_ref(), &sb, cap.slot)?;
        pool.storage().sync()?;
        Ok(())
    }
}

/// Sorts and coalesces extents, splitting any longer than a free-list record holds.
fn merge_extents(mut all: Vec<(PageId, u64)>) -> Vec<(PageId, u32)> {
    all.sort_unstable();
    let mut merged: Vec<(PageId, u64)> = Vec::with_capacity(all.len());
    for (s, l) in all {
        match merged.last_mut() {
            Some((ms, ml)) if *ms + *ml == s => *ml += l,
            _ => merged.push((s, l)),
        }
    }
    let mut out = Vec::with_capacity(merged.len());
    for (mut s, mut l) in merged {
        while l > 0 {
            let take = l.min(u64::from(u32::MAX));
            out.push((s, take as u32));
            s += take;
            l -= take;
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
