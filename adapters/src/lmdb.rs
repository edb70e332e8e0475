//! LMDB adapter through heed: one unnamed database of raw bytes in `dir/data.mdb`.
//!
//! LMDB reads through a read-only mmap and so uses the OS page cache, not a budget of its own:
//! `CacheBudget` is not applied (docs/fairness.md). The map is sized from
//! `expected_data_bytes` (x2, at least 64 MiB) and doubled when a write hits `MDB_MAP_FULL`.
//! Writes are serialised by LMDB's single write transaction, which is also what makes
//! `compare_and_swap` atomic (read, compare and write inside one write transaction).
//!
//! This is the one module that needs `unsafe`: heed marks opening an environment, setting the
//! no-sync flags and resizing the map `unsafe`. Each call site states why it is sound.

use crate::api::{BatchOp, Capabilities, CasOutcome, Durability, KvEngine, KvPair, OpenOptions};
use crate::emul::{self, OrderedRead, SortedCheck};
use crate::error::{Error, Result};
use heed::types::Bytes;
use heed::{Database, Env, EnvFlags, EnvOpenOptions, MdbError, PutFlags, RwTxn, WithoutTls};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

const NAME: &str = "lmdb";
const MIN_MAP: u64 = 64 << 20;
/// Keys per write transaction during bulk load: LMDB keeps a write transaction's dirty pages in
/// memory until commit, so a load of millions of keys is split.
const LOAD_BATCH: usize = 50_000;
/// Where the key limit comes from, for [`Error::InvalidKey`].
///
/// heed's `longer-keys` feature builds LMDB with `MDB_MAXKEYSIZE=0`, which makes the limit
/// depend on the page size instead of the compiled-in 511 bytes: half a page less the page
/// header, the node's index slot, its header and a sub-database record, `((psize - 16) / 2
/// & !1) - 2 - 8 - 48` (mdb.c, `mdb_env_open2`), 1,982 bytes on 4 KiB pages. The same
/// build is what LMDB's users with long keys are told to use (heed's `MdbError::BadValSize`).
const LIMIT: &str = "LMDB's key limit (mdb_env_get_maxkeysize, heed's longer-keys build)";

/// An LMDB environment with one database, see the module docs.
pub(crate) struct LmdbEngine {
    env: Env<WithoutTls>,
    db: Database<Bytes, Bytes>,
    /// Held shared by every transaction and exclusively by a map resize, which LMDB allows only
    /// while this process has no transaction open.
    gate: RwLock<()>,
    dir: PathBuf,
}

fn lerr(operation: &'static str) -> impl FnOnce(heed::Error) -> Error {
    move |e| Error::backend(NAME, operation, e)
}

fn is_map_full(e: &heed::Error) -> bool {
    matches!(e, heed::Error::Mdb(MdbError::MapFull))
}

/// Rounds up to a whole MiB, a multiple of any page size LMDB runs with.
fn round_map(bytes: u64) -> usize {
    let mib = bytes.div_ceil(1 << 20).max(1);
    usize::try_from(mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX & !((1 << 20) - 1))
}

impl LmdbEngine {
    /// Opens or creates the environment in `dir`; see docs/fairness.md for the flags.
    pub(crate) fn open(dir: &Path, o: &OpenOptions) -> Result<Self> {
        emul::ensure_dir(NAME, dir)?;
        let flags = match o.durability {
            Durability::None => EnvFlags::NO_SYNC | EnvFlags::NO_META_SYNC,
            Durability::Async => EnvFlags::NO_SYNC,
            Durability::Sync => EnvFlags::empty(),
        };
        // LMDB's documentation advises turning readahead off when the database is larger
        // than the memory it may use: each fault would otherwise read neighbours that evict
        // useful pages. Its experts would set it whenever the data exceeds the budget.
        let flags = if o.expected_data_bytes > o.cache.bytes() {
            flags | EnvFlags::NO_READ_AHEAD
        } else {
            flags
        };
        let mut eo = EnvOpenOptions::new().read_txn_without_tls();
        eo.map_size(round_map(
            o.expected_data_bytes.saturating_mul(2).max(MIN_MAP),
        ))
        .max_dbs(1);
        #[allow(unsafe_code)]
        // SAFETY: NO_SYNC / NO_META_SYNC only weaken durability (what each Durability mode
        // asks for; WRITE_MAP, the flag that could corrupt the file on a crash, is never set);
        // NO_READ_AHEAD only advises the kernel. The environment is opened once per directory by this adapter, no other code in this
        // process maps the file, and we never abort the process with a transaction open.
        let env = unsafe {
            eo.flags(flags);
            eo.open(dir)
        }
        .map_err(lerr("open environment"))?;
        let mut wtxn = env.write_txn().map_err(lerr("open: begin"))?;
        let db = env
            .create_database::<Bytes, Bytes>(&mut wtxn, None)
            .map_err(lerr("open: create database"))?;
        wtxn.commit().map_err(lerr("open: commit"))?;
        Ok(LmdbEngine {
            env,
            db,
            gate: RwLock::new(()),
            dir: dir.to_path_buf(),
        })
    }

    /// Doubles the map. Takes the gate exclusively so no transaction of ours is open.
    fn grow(&self) -> Result<()> {
        let _g = self
            .gate
            .write()
            .map_err(|_| Error::Poisoned { engine: NAME })?;
        let new = round_map((self.env.info().map_size as u64).saturating_mul(2));
        #[allow(unsafe_code)]
        // SAFETY: LMDB allows mdb_env_set_mapsize while the process has no active transaction;
        // every transaction this adapter opens holds `gate` shared, and we hold it exclusively.
        unsafe { self.env.resize(new) }.map_err(lerr("resize map"))
    }

    /// Runs `f` in one write transaction and commits it, growing the map and retrying the
    /// whole transaction on `MDB_MAP_FULL` (so `f` must be repeatable).
    fn write<R>(
        &self,
        op: &'static str,
        mut f: impl FnMut(&mut RwTxn<'_>) -> heed::Result<R>,
    ) -> Result<R> {
        loop {
            let attempt = {
                let _g = self
                    .gate
                    .read()
                    .map_err(|_| Error::Poisoned { engine: NAME })?;
                let mut txn = self.env.write_txn().map_err(lerr(op))?;
                f(&mut txn).and_then(|r| txn.commit().map(|()| r))
            };
            match attempt {
                Err(e) if is_map_full(&e) => self.grow()?,
                other => return other.map_err(lerr(op)),
            }
        }
    }

    /// Runs `f` in a read transaction.
    fn read<R>(
        &self,
        op: &'static str,
        f: impl FnOnce(&heed::RoTxn<'_, WithoutTls>) -> heed::Result<R>,
    ) -> Result<R> {
        let _g = self
            .gate
            .read()
            .map_err(|_| Error::Poisoned { engine: NAME })?;
        let txn = self.env.read_txn().map_err(lerr(op))?;
        f(&txn).map_err(lerr(op))
    }

    /// Refuses the empty key and one over [`Env::max_key_size`], which LMDB itself would
    /// refuse with `MDB_BAD_VALSIZE` (an untyped backend error) if it got that far.
    fn check_len(&self, key: &[u8]) -> Result<()> {
        emul::check_key_within(NAME, key, self.env.max_key_size(), LIMIT)
    }
}

impl OrderedRead for LmdbEngine {
    fn engine_name(&self) -> &'static str {
        NAME
    }

    fn point_get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        if key.is_empty() || key.len() > self.env.max_key_size() {
            return Ok(false);
        }
        self.read("get", |t| match self.db.get(t, key)? {
            Some(v) => {
                out.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        })
    }

    fn seek_le(&self, key: &[u8], key_out: &mut Vec<u8>, val_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        val_out.clear();
        // LMDB cannot compare against an over-long key; its longest storable prefix sorts
        // <= the key and every stored key <= the key is also <= that prefix or equal to it.
        let probe = &key[..key.len().min(self.env.max_key_size())];
        if probe.is_empty() {
            return Ok(false); // no stored key is <= the empty string
        }
        self.read("seek_le", |t| {
            match self.db.get_lower_than_or_equal_to(t, probe)? {
                Some((k, v)) => {
                    key_out.extend_from_slice(k);
                    val_out.extend_from_slice(v);
                    Ok(true)
                }
                None => Ok(false),
            }
        })
    }

    fn last_key(&self, key_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        self.read("last key", |t| match self.db.last(t)? {
            Some((k, _)) => {
                key_out.extend_from_slice(k);
                Ok(true)
            }
            None => Ok(false),
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
        // As in seek_le: no stored key lies strictly between an over-long start and its
        // longest storable prefix, so "k >= start" becomes "k > prefix".
        let max = self.env.max_key_size();
        let lower = if start.is_empty() {
            Bound::Unbounded // LMDB rejects an empty key even as a bound; "" sorts first anyway
        } else if start.len() > max {
            Bound::Excluded(&start[..max])
        } else {
            Bound::Included(start)
        };
        let range = (lower, upper);
        self.read("scan", |t| {
            for item in self.db.range(t, &range)? {
                let (k, v) = item?;
                if !visit(k, v) {
                    break;
                }
            }
            Ok(())
        })
    }
}

impl KvEngine for LmdbEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::emulated(false, Some(self.env.max_key_size()))
    }

    /// `MDB_APPEND` puts, committing every 50k keys; each batch is buffered so it can be
    /// replayed after growing the map.
    fn bulk_load(&self, pairs: &mut dyn Iterator<Item = KvPair>) -> Result<u64> {
        let mut check = SortedCheck::for_engine(self)?;
        let mut batch: Vec<KvPair> = Vec::with_capacity(LOAD_BATCH);
        let mut n = 0u64;
        loop {
            batch.clear();
            for (k, v) in (&mut *pairs).take(LOAD_BATCH) {
                check.check(&k)?;
                self.check_len(&k)?;
                batch.push((k, v));
            }
            if batch.is_empty() {
                return Ok(n);
            }
            self.write("bulk_load", |txn| {
                for (k, v) in &batch {
                    self.db.put_with_flags(txn, PutFlags::APPEND, k, v)?;
                }
                Ok(())
            })?;
            n += batch.len() as u64;
        }
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.point_get(key, out)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_len(key)?;
        self.write("put", |txn| self.db.put(txn, key, value))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        if key.is_empty() || key.len() > self.env.max_key_size() {
            return Ok(());
        }
        self.write("delete", |txn| self.db.delete(txn, key).map(|_| ()))
    }

    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        for op in ops {
            if let BatchOp::Put { key, .. } = op {
                self.check_len(key)?;
            }
        }
        let max = self.env.max_key_size();
        self.write("write_batch", |txn| {
            for op in ops {
                match *op {
                    BatchOp::Put { key, value } => self.db.put(txn, key, value)?,
                    BatchOp::Delete { key } if key.is_empty() || key.len() > max => {}
                    BatchOp::Delete { key } => {
                        self.db.delete(txn, key)?;
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
        self.check_len(key)?;
        self.write("compare_and_swap", |txn| {
            let current = self.db.get(txn, key)?;
            if current != expected {
                let current = current.map(<[u8]>::to_vec);
                return Ok(CasOutcome::Conflict { current });
            }
            match new {
                Some(v) => self.db.put(txn, key, v)?,
                None => {
                    self.db.delete(txn, key)?;
                }
            }
            Ok(CasOutcome::Ok)
        })
    }

    crate::emul::emulated_reads!(scans, count);

    /// `mdb_env_sync(force = 1)`: flushes whatever the no-sync modes left in the OS cache.
    fn checkpoint(&self) -> Result<()> {
        self.env.force_sync().map_err(lerr("env sync"))
    }

    /// `data.mdb` and `lock.mdb` as allocated on disk (the map size itself is not counted).
    fn size_on_disk(&self) -> Result<u64> {
        emul::dir_size(NAME, &self.dir)
    }

    fn io_counters(&self) -> Option<crate::api::IoCounters> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::CacheBudget;

    /// Writes past the initial 64 MiB map through both bulk_load and put: the map must grow.
    #[test]
    fn map_grows_on_map_full() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io(NAME, "create", "tempdir", e))?;
        let opts = OpenOptions {
            cache: CacheBudget::mib(1),
            durability: Durability::None,
            expected_data_bytes: 0,
            pg_url: None,
            direct_reads: false,
            memory_limit_bytes: None,
            absent_key_lookups: false,
            ..OpenOptions::default()
        };
        let e = LmdbEngine::open(dir.path(), &opts)?;
        let initial = e.env.info().map_size;
        let value = vec![7u8; 1 << 20];
        let mut pairs = (0..48u32).map(|i| (format!("bulk/{i:03}").into_bytes(), value.clone()));
        assert_eq!(e.bulk_load(&mut pairs)?, 48);
        for i in 0..48u32 {
            e.put(format!("put/{i:03}").as_bytes(), &value)?;
        }
        assert!(e.env.info().map_size > initial, "map did not grow");
        assert_eq!(e.count_range(b"bulk/", b"put0")?, 96);
        let mut out = Vec::new();
        assert!(e.get(b"put/047", &mut out)? && out == value);
        Ok(())
    }

    /// The longer-keys build: the limit follows the page size (1,982 bytes on 4 KiB pages),
    /// not the default build's 511, and LMDB itself stores a key of exactly that length.
    #[test]
    fn longer_keys_build_sets_the_limit_from_the_page_size() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::io(NAME, "create", "tempdir", e))?;
        let e = LmdbEngine::open(dir.path(), &OpenOptions::default())?;
        let page = e.env.stat().page_size as usize;
        // mdb_env_open2: me_nodemax = ((psize - PAGEHDRSZ) / MDB_MINKEYS & -2) - sizeof(indx_t),
        // me_maxkey = me_nodemax - (NODESIZE + sizeof(MDB_db)).
        let expected = (((page - 16) / 2) & !1) - 2 - (8 + 48);
        assert_eq!(e.env.max_key_size(), expected, "page size {page}");
        if page == 4096 {
            assert_eq!(expected, 1982);
        }
        assert_eq!(e.capabilities().max_key_len, Some(expected));
        let longest = vec![0xA5; expected];
        e.write("raw put", |txn| e.db.put(txn, &longest, b"v"))?;
        let too_long = vec![0xA5; expected + 1];
        match e.write("raw put", |txn| e.db.put(txn, &too_long, b"v")) {
            Err(Error::Backend { .. }) => {} // MDB_BAD_VALSIZE from LMDB itself
            other => panic!("LMDB stored a key over its own limit: {other:?}"),
        }
        Ok(())
    }
}
