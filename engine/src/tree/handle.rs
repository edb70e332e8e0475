//! `Tree`: the shared handle. One writer at a time (a mutex), any number of readers that
//! never wait: each read takes the current version (an atomic pointer load) and walks
//! immutable pages. Commits copy the pages they change, publish a new version, and free
//! replaced pages once no snapshot and no recoverable checkpoint can reach them.

use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use super::background::{Background, Signal};
use super::batch::WriteBatch;
use super::config::TreeConfig;
use super::keys::KeysBuilder;
use super::open::open;
use super::range::RangeBuilder;
use super::shared::{DurabilityStats, Shared, Writer};
use super::snapshot::Snapshot;
use crate::btree::{self, CheckReport, Mutation, Version, WriteTxn, MAX_KEY_LEN, MAX_VALUE_LEN};
use crate::error::{Error, Result};
use crate::pool::{lock, Access, Counter, Metrics};

/// A compare-and-swap found another value than the one expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CasConflict {
    /// The value stored now (None: the key is absent).
    pub current: Option<Vec<u8>>,
}

/// An embedded ordered key-value store: a copy-on-write B+tree of 4 KiB pages in 512 KiB
/// frames under a page-granular buffer pool. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Tree {
    pub(crate) shared: Arc<Shared>,
    _background: Arc<Background>,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree")
            .field("dir", &self.shared.dir)
            .finish_non_exhaustive()
    }
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.is_empty() {
        return Err(Error::EmptyKey { max: MAX_KEY_LEN });
    }
    if key.len() > MAX_KEY_LEN {
        return Err(Error::KeyTooLarge {
            len: key.len(),
            max: MAX_KEY_LEN,
        });
    }
    Ok(())
}

fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_LEN {
        return Err(Error::ValueTooLarge {
            len: value.len(),
            max: MAX_VALUE_LEN,
        });
    }
    Ok(())
}

impl Tree {
    /// Opens the tree in `config`'s directory, creating it when the directory is new or
    /// empty.
    pub fn open(config: TreeConfig) -> Result<Tree> {
        let o = open(&config)?;
        let ps = o.pool.geometry().page_bytes();
        let signal = Arc::new(Signal::default());
        let shared = Arc::new(Shared {
            dir: config.dir.clone(),
            current: ArcSwap::from_pointee(o.version),
            writer: Mutex::new(Writer {
                seq: o.superblock.seq,
                checkpoints: crate::frame::Recoverable {
                    durable: o.superblock.seq,
                    in_flight: None,
                },
                generation: o.superblock.generation,
                next_slot: o.slot ^ 1,
                freelist_pages: o.freelist_pages,
                alloc: o.alloc,
            }),
            live: Mutex::new(VecDeque::new()),
            readahead_pages: config.readahead_bytes as usize / ps,
            durable_seq: AtomicU64::new(o.superblock.seq),
            file_pages: AtomicU64::new(o.superblock.page_count),
            free_pages: AtomicU64::new(o.superblock.free_pages),
            pool: o.pool,
            wal: o.wal.wal,
            durability: config.durability,
            poisoned: Mutex::new(None),
            checkpointing: Mutex::new(()),
            checkpoint_log_bytes: config.checkpoint_log_bytes,
            signal: signal.clone(),
            stats: DurabilityStats::default(),
            _lock_file: o.lock,
        });
        shared
            .stats
            .torn_tails
            .store(o.wal.torn_tails, Ordering::Relaxed);
        shared
            .stats
            .repaired_headers
            .store(o.wal.repaired_headers, Ordering::Relaxed);
        let start = o.superblock.seq;
        let pending: Vec<_> = o
            .wal
            .records
            .into_iter()
            .filter(|r| r.seq > start)
            .collect();
        for rec in &pending {
            shared.replay(rec)?;
        }
        if !pending.is_empty() {
            shared.checkpoint()?;
        }
        let background = Background::start(
            Arc::downgrade(&shared),
            signal,
            config.checkpoint_interval,
            config.background_checkpoints,
        );
        Ok(Tree {
            shared,
            _background: Arc::new(background),
        })
    }

    /// A consistent read view of the tree as of the latest commit.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.shared.clone(), self.shared.current.load_full())
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let v = self.shared.current.load();
        btree::get_value(&self.shared.pool, &v, key, |b| b.to_vec())
    }

    /// Calls `f` with the value stored under `key` without copying it out of the page.
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        let v = self.shared.current.load();
        btree::get_value(&self.shared.pool, &v, key, f)
    }

    /// A range scan builder: `.prefix(p)`, bounds, `.rev()`, `.limit(n)`, then iterate.
    pub fn range(&self) -> RangeBuilder {
        self.snapshot().range()
    }

    /// A key-only listing builder: `.prefix(p)`, `.delimiter(b'/')`, `.start_after(k)`,
    /// `.limit(n)`, then iterate.
    pub fn scan_keys(&self) -> KeysBuilder {
        self.snapshot().scan_keys()
    }

    /// The longest stored key that is a prefix of `query`, with its value.
    pub fn longest_prefix_record(&self, query: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.longest_prefix_with(query, None, |k, v| (k.to_vec(), v.to_vec()))
    }

    /// The longest stored key that is a prefix of `query` ending at a `boundary` byte of
    /// `query` (or at its end), with its value.
    pub fn longest_prefix_record_at(
        &self,
        query: &[u8],
        boundary: u8,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.longest_prefix_with(query, Some(boundary), |k, v| (k.to_vec(), v.to_vec()))
    }

    /// Calls `f` with the longest stored prefix of `query` (ending at a `boundary` byte of
    /// `query` when one is given) and its value, without copies and without taking a
    /// snapshot.
    pub fn longest_prefix_with<R>(
        &self,
        query: &[u8],
        boundary: Option<u8>,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        let v = self.shared.current.load();
        super::snapshot::longest_prefix_on(&self.shared.pool, &v, query, boundary, f)
    }

    /// Entries whose keys lie within `range`: two descents, whatever its size.
    pub fn count<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<u64> {
        super::snapshot::count_in(&self.shared.pool, &self.shared.current.load(), range)
    }

    /// Entries whose keys start with `prefix`.
    pub fn count_prefix(&self, prefix: &[u8]) -> Result<u64> {
        self.snapshot().count_prefix(prefix)
    }

    /// Entries in the tree.
    pub fn len(&self) -> u64 {
        self.shared.current.load().entries
    }

    /// True when the tree holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Inserts or replaces `key`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        self.write(|txn| txn.apply(Mutation::Put(key, value)).map(|_| ()))
    }

    /// Removes `key`; returns whether it was present.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        self.write(|txn| txn.apply(Mutation::Delete(key)))
    }

    /// Sets `key` to `new` (None deletes it) only if its current value is `expected`
    /// (None: absent). On a mismatch nothing changes and the current value comes back.
    pub fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), CasConflict>> {
        check_key(key)?;
        if let Some(v) = new {
            check_value(v)?;
        }
        self.write(|txn| {
            let current = txn.get(key)?;
            if current.as_deref() != expected {
                return Ok(Err(CasConflict { current }));
            }
            match new {
                Some(v) => txn.apply(Mutation::Put(key, v))?,
                None => txn.apply(Mutation::Delete(key))?,
            };
            Ok(Ok(()))
        })
    }

    /// Applies every operation of `batch` in order, atomically.
    pub fn apply_batch(&self, batch: &WriteBatch) -> Result<()> {
        for (k, v) in &batch.ops {
            check_key(k)?;
            if let Some(v) = v {
                check_value(v)?;
            }
        }
        self.write(|txn| {
            for (k, v) in &batch.ops {
                match v {
                    Some(v) => txn.apply(Mutation::Put(k, v))?,
                    None => txn.apply(Mutation::Delete(k))?,
                };
            }
            Ok(())
        })
    }

    /// Runs `f` in a write transaction and commits what it changed.
    fn write<R>(&self, f: impl FnOnce(&mut WriteTxn<'_>) -> Result<R>) -> Result<R> {
        self.shared.write(f)
    }

    /// Loads sorted, duplicate-free pairs into an empty tree: full leaves written to
    /// adjacent pages, then a checkpoint. Returns the number of entries loaded.
    pub fn bulk_load<I, K, V>(&self, items: I) -> Result<u64>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let sh = &self.shared;
        let mut w = lock(&sh.writer);
        let cur = sh.current.load_full();
        if cur.entries != 0 || cur.root.is_some() {
            return Err(Error::BulkLoadNotEmpty {
                entries: cur.entries,
            });
        }
        let seq = w.seq + 1;
        let saved = w.alloc.clone();
        let loaded = match btree::bulk_load(&sh.pool, &mut w.alloc, seq, items) {
            Ok(l) => l,
            Err(e) => {
                w.alloc = saved;
                return Err(e);
            }
        };
        let root = match loaded.root {
            Some(id) => Some(sh.pool.get(id, Access::Point)?),
            None => None,
        };
        w.seq = seq;
        sh.publish(
            &mut w,
            Version::new(seq, root, loaded.height, loaded.entries),
        );
        drop(w);
        sh.checkpoint()?;
        Ok(loaded.entries)
    }

    /// Writes every change to the data file and makes it durable: dirty pages, the free
    /// list, fsync, then the next superblock copy, fsync. After it returns, a reopen
    /// finds exactly the current contents.
    pub fn checkpoint(&self) -> Result<()> {
        self.shared.checkpoint()
    }

    /// Walks every page of the current version and checks the tree's invariants.
    pub fn check_integrity(&self) -> Result<CheckReport> {
        let w = lock(&self.shared.writer);
        let v = self.shared.current.load_full();
        let freed = w.alloc.not_live();
        btree::check_tree(&self.shared.pool, &v, &|p| {
            if w.freelist_pages.contains(&p) {
                Some("a page of the durable free list")
            } else {
                freed(p)
            }
        })
    }

    /// Counters and sizes, readable at any moment.
    pub fn metrics(&self) -> Metrics {
        let sh = &self.shared;
        let c = sh.pool.counters();
        let v = sh.current.load();
        let (resident, capacity) = sh.pool.occupancy();
        Metrics {
            bm_read_page_hits: c.get(Counter::PageHits),
            bm_read_page_misses: c.get(Counter::PageMisses),
            bm_scan_full_blob_reads: c.get(Counter::FullFrameReads),
            bm_bytes_read: c.get(Counter::BytesRead),
            bm_pages_read: c.get(Counter::PagesRead),
            bm_evictions: c.get(Counter::Evictions),
            bm_readahead_pages: c.get(Counter::ReadaheadPages),
            bm_pages_written: c.get(Counter::PagesWritten),
            bm_bytes_written: c.get(Counter::BytesWritten),
            bm_dirty_writebacks: c.get(Counter::DirtyWritebacks),
            resident_pages: resident as u64,
            capacity_pages: capacity as u64,
            entries: v.entries,
            height: v.height,
            file_pages: sh.file_pages.load(Ordering::Relaxed),
            free_pages: sh.free_pages.load(Ordering::Relaxed),
            commit_seq: v.seq,
            checkpoint_seq: sh.durable_seq.load(Ordering::Relaxed),
            wal_records: sh.wal.records.load(Ordering::Relaxed),
            wal_bytes: sh.wal.bytes.load(Ordering::Relaxed),
            wal_syncs: sh.wal.syncs.load(Ordering::Relaxed),
            wal_torn_tails: sh.stats.torn_tails.load(Ordering::Relaxed),
            wal_repaired_headers: sh.stats.repaired_headers.load(Ordering::Relaxed),
            wal_replayed_records: sh.stats.replayed.load(Ordering::Relaxed),
            checkpoints: sh.stats.checkpoints.load(Ordering::Relaxed),
        }
    }

    /// Bytes of the data file on disk.
    pub fn size_on_disk(&self) -> Result<u64> {
        Ok(self.shared.pool.storage().len()?)
    }

    /// The tree's directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.shared.dir
    }
}

pub(crate) fn as_ref_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
