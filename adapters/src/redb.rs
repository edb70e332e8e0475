//! redb adapter (redb 2.x): one table `kv: &[u8] -> &[u8]` in `dir/kv.redb`.
//!
//! redb 2.x is used rather than 3.x because it still has `Durability::Eventual`, the exact match
//! for [`Durability::Async`], and builds at the workspace's minimum Rust. The cache budget goes
//! to `Builder::set_cache_size`. redb allows one write transaction at a time, so
//! `compare_and_swap` is atomic as a read, compare and write inside one write transaction.

use crate::api::{BatchOp, Capabilities, CasOutcome, Durability, KvEngine, KvPair, OpenOptions};
use crate::emul::{self, OrderedRead, SortedCheck};
use crate::error::{Error, Result};
use ::redb::{Builder, Database, ReadOnlyTable, ReadableTable, TableDefinition, WriteTransaction};
use std::ops::Bound;
use std::path::{Path, PathBuf};

const NAME: &str = "redb";
const FILE: &str = "kv.redb";
const TABLE: TableDefinition<'static, &'static [u8], &'static [u8]> = TableDefinition::new("kv");

/// A redb database file with one table; see the module docs.
pub(crate) struct RedbEngine {
    db: Database,
    durability: Durability,
    dir: PathBuf,
}

fn rerr<E: Into<::redb::Error>>(operation: &'static str) -> impl FnOnce(E) -> Error {
    move |e| Error::backend(NAME, operation, e.into())
}

impl RedbEngine {
    /// Opens or creates `dir/kv.redb` and its table.
    pub(crate) fn open(dir: &Path, o: &OpenOptions) -> Result<Self> {
        emul::ensure_dir(NAME, dir)?;
        let cache = usize::try_from(o.cache.bytes()).unwrap_or(usize::MAX);
        let db = Builder::new()
            .set_cache_size(cache)
            .create(dir.join(FILE))
            .map_err(rerr("open"))?;
        let e = RedbEngine {
            db,
            durability: o.durability,
            dir: dir.to_path_buf(),
        };
        // Create the table durably so that readers always find it.
        let txn = e.db.begin_write().map_err(rerr("open: begin"))?;
        txn.open_table(TABLE).map_err(rerr("open: create table"))?;
        txn.commit().map_err(rerr("open: commit"))?;
        Ok(e)
    }

    /// Runs `f` on the table inside one write transaction at the configured durability.
    fn write<R>(
        &self,
        op: &'static str,
        f: impl FnOnce(&mut ::redb::Table<'_, &'static [u8], &'static [u8]>) -> Result<R>,
    ) -> Result<R> {
        let mut txn: WriteTransaction = self.db.begin_write().map_err(rerr(op))?;
        txn.set_durability(match self.durability {
            Durability::None => ::redb::Durability::None,
            Durability::Async => ::redb::Durability::Eventual,
            Durability::Sync => ::redb::Durability::Immediate,
        });
        let r = {
            let mut table = txn.open_table(TABLE).map_err(rerr(op))?;
            f(&mut table)?
        };
        txn.commit().map_err(rerr(op))?;
        Ok(r)
    }

    fn read<R>(
        &self,
        op: &'static str,
        f: impl FnOnce(&ReadOnlyTable<&'static [u8], &'static [u8]>) -> Result<R>,
    ) -> Result<R> {
        let txn = self.db.begin_read().map_err(rerr(op))?;
        let table = txn.open_table(TABLE).map_err(rerr(op))?;
        f(&table)
    }
}

impl OrderedRead for RedbEngine {
    fn engine_name(&self) -> &'static str {
        NAME
    }

    fn point_get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        if key.is_empty() {
            return Ok(false);
        }
        self.read("get", |t| match t.get(key).map_err(rerr("get"))? {
            Some(v) => {
                out.extend_from_slice(v.value());
                Ok(true)
            }
            None => Ok(false),
        })
    }

    fn seek_le(&self, key: &[u8], key_out: &mut Vec<u8>, val_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        val_out.clear();
        self.read("seek_le", |t| {
            let mut range = t.range::<&[u8]>(..=key).map_err(rerr("seek_le"))?;
            match range.next_back() {
                Some(item) => {
                    let (k, v) = item.map_err(rerr("seek_le"))?;
                    key_out.extend_from_slice(k.value());
                    val_out.extend_from_slice(v.value());
                    Ok(true)
                }
                None => Ok(false),
            }
        })
    }

    fn last_key(&self, key_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        self.read("last key", |t| {
            match t.last().map_err(rerr("last key"))? {
                Some((k, _)) => {
                    key_out.extend_from_slice(k.value());
                    Ok(true)
                }
                None => Ok(false),
            }
        })
    }

    fn walk(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        _batch_hint: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let upper = match end {
            Some(e) => Bound::Excluded(e),
            None => Bound::Unbounded,
        };
        self.read("scan", |t| {
            let range = t
                .range::<&[u8]>((Bound::Included(start), upper))
                .map_err(rerr("scan"))?;
            for item in range {
                let (k, v) = item.map_err(rerr("scan"))?;
                if !visit(k.value(), v.value()) {
                    break;
                }
            }
            Ok(())
        })
    }
}

impl KvEngine for RedbEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        // No key limit a caller can reach: redb 2.6 refuses a key over MAX_VALUE_LENGTH
        // (3 GiB) or a pair over MAX_PAIR_LENGTH (3.75 GiB) with StorageError::ValueTooLarge;
        // a long key moves to its own pages of the b-tree.
        Capabilities::emulated(false, None)
    }

    /// One write transaction with every insert (redb has no append or ingest path).
    fn bulk_load(&self, pairs: &mut dyn Iterator<Item = KvPair>) -> Result<u64> {
        let mut check = SortedCheck::for_engine(self)?;
        self.write("bulk_load", |t| {
            let mut n = 0u64;
            for (k, v) in pairs {
                check.check(&k)?;
                t.insert(k.as_slice(), v.as_slice())
                    .map_err(rerr("bulk_load: insert"))?;
                n += 1;
            }
            Ok(n)
        })
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.point_get(key, out)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        emul::check_key(NAME, key)?;
        self.write("put", |t| {
            t.insert(key, value).map_err(rerr("put"))?;
            Ok(())
        })
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        if key.is_empty() {
            return Ok(());
        }
        self.write("delete", |t| {
            t.remove(key).map_err(rerr("delete"))?;
            Ok(())
        })
    }

    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        emul::check_batch(NAME, ops)?;
        self.write("write_batch", |t| {
            for op in ops {
                match *op {
                    BatchOp::Put { key, value } => {
                        t.insert(key, value).map_err(rerr("write_batch"))?;
                    }
                    BatchOp::Delete { key: [] } => {}
                    BatchOp::Delete { key } => {
                        t.remove(key).map_err(rerr("write_batch"))?;
                    }
                }
            }
            Ok(())
        })
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        emul::check_key(NAME, key)?;
        self.write("compare_and_swap", |t| {
            let current = t
                .get(key)
                .map_err(rerr("compare_and_swap: get"))?
                .map(|g| g.value().to_vec());
            if current.as_deref() != expected {
                return Ok(CasOutcome::Conflict { current });
            }
            match new {
                Some(v) => {
                    t.insert(key, v).map_err(rerr("compare_and_swap: insert"))?;
                }
                None => {
                    t.remove(key).map_err(rerr("compare_and_swap: remove"))?;
                }
            }
            Ok(CasOutcome::Ok)
        })
    }

    crate::emul::emulated_reads!(scans, count);

    /// Commits an empty transaction at `Immediate` durability unless every commit already is:
    /// that persists `None`/`Eventual` commits and lets redb free the pages they released.
    fn checkpoint(&self) -> Result<()> {
        if self.durability == Durability::Sync {
            return Ok(());
        }
        let mut txn = self.db.begin_write().map_err(rerr("checkpoint"))?;
        txn.set_durability(::redb::Durability::Immediate);
        txn.commit().map_err(rerr("checkpoint"))
    }

    /// The `kv.redb` file as allocated on disk.
    fn size_on_disk(&self) -> Result<u64> {
        emul::dir_size(NAME, &self.dir)
    }

    fn io_counters(&self) -> Option<crate::api::IoCounters> {
        None
    }
}
