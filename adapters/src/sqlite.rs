//! SQLite adapter (rusqlite, bundled SQLite) in two configurations:
//!
//! - `"sqlite"`: SQLite's defaults (rollback journal, synchronous=FULL, default page cache,
//!   a statement prepared per call) changed only where a [`Durability`] mode demands it;
//! - `"sqlite-tuned"`: WAL, synchronous=NORMAL, `prepare_cached` statements,
//!   `cache_size = -(budget KiB)`, `mmap_size = 0` (reads go through SQLite's page cache, the
//!   memory it is budgeted, not the OS's), and `soft_heap_limit = budget` shared by every
//!   connection of the process.
//!
//! A `Connection` is `Send` but not `Sync`: the writer connection sits behind a mutex, and a
//! read first tries that connection (so a single-threaded run uses one connection and one page
//! cache) and otherwise takes one from a pool of read connections, one per concurrent reader,
//! which is how SQLite's experts run parallel reads. Each connection has its own page cache;
//! in the tuned configuration SQLite's soft heap limit (process-wide) shrinks them as their
//! sum nears the budget, so that N concurrent readers do not hold (N + 1) x budget (which,
//! in the cgroup budget mode, ran the process out of memory at the seed scale with 8
//! readers). `compare_and_swap` is a
//! `BEGIN IMMEDIATE` transaction on the writer connection.

use crate::api::{BatchOp, Capabilities, CasOutcome, Durability, KvEngine, KvPair, OpenOptions};
use crate::emul::{self, OrderedRead, SortedCheck};
use crate::error::{Error, Result};
use rusqlite::{params, Connection, OpenFlags, Statement, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

const FILE: &str = "kv.sqlite";

/// One SQLite database file, `dir/kv.sqlite`, with table
/// `kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID`.
pub(crate) struct SqliteEngine {
    cfg: Config,
    dir: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
}

/// What every connection of one engine is opened with.
struct Config {
    name: &'static str,
    tuned: bool,
    path: PathBuf,
    cache_kib: u64,
    durability: Durability,
}

fn serr(name: &'static str, operation: &'static str) -> impl FnOnce(rusqlite::Error) -> Error {
    move |e| Error::backend(name, operation, e)
}

/// Runs `f` on `sql` prepared per call (defaults) or taken from the statement cache (tuned).
/// Insert or overwrite one key.
const PUT_SQL: &str =
    "INSERT INTO kv(k, v) VALUES (?1, ?2) ON CONFLICT(k) DO UPDATE SET v = excluded.v";
/// Remove one key.
const DELETE_SQL: &str = "DELETE FROM kv WHERE k = ?1";

fn with_stmt<R>(
    conn: &Connection,
    cached: bool,
    sql: &str,
    f: impl FnOnce(&mut Statement<'_>) -> rusqlite::Result<R>,
) -> rusqlite::Result<R> {
    if cached {
        let mut stmt = conn.prepare_cached(sql)?;
        f(&mut stmt) // CachedStatement derefs to Statement
    } else {
        f(&mut conn.prepare(sql)?)
    }
}

impl Config {
    /// Opens a connection with this configuration's pragmas (see docs/fairness.md).
    fn connect(&self, writer: bool) -> Result<Connection> {
        let n = self.name;
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(serr(n, "open"))?;
        // Readers and the writer never wait on each other for long, but a busy handler keeps a
        // rollback-journal reader from failing while a commit holds the file lock.
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(serr(n, "set busy_timeout"))?;
        let journal = match (self.tuned, self.durability) {
            (true, _) => "WAL",
            (false, Durability::None) => "MEMORY",
            (false, _) => "DELETE",
        };
        let sync = match (self.tuned, self.durability) {
            (_, Durability::None) => "OFF",
            (true, Durability::Async) => "NORMAL",
            (false, Durability::Async) => "OFF",
            (_, Durability::Sync) => "FULL",
        };
        if writer || journal == "WAL" {
            let got: String = conn
                .pragma_update_and_check(None, "journal_mode", journal, |r| r.get(0))
                .map_err(serr(n, "set journal_mode"))?;
            if !got.eq_ignore_ascii_case(journal) {
                return Err(Error::backend(
                    n,
                    "set journal_mode",
                    format!("asked for journal_mode={journal}, SQLite kept {got}"),
                ));
            }
        }
        conn.pragma_update(None, "synchronous", sync)
            .map_err(serr(n, "set synchronous"))?;
        if self.tuned {
            let kib = i64::try_from(self.cache_kib).unwrap_or(i64::MAX);
            conn.pragma_update(None, "cache_size", -kib)
                .map_err(serr(n, "set cache_size"))?;
            conn.pragma_update(None, "mmap_size", 0)
                .map_err(serr(n, "set mmap_size"))?;
            let bytes = i64::try_from(self.cache_kib.saturating_mul(1024)).unwrap_or(i64::MAX);
            conn.pragma_update(None, "soft_heap_limit", bytes)
                .map_err(serr(n, "set soft_heap_limit"))?;
            conn.set_prepared_statement_cache_capacity(32);
        }
        Ok(conn)
    }
}

impl SqliteEngine {
    /// Opens or creates `dir/kv.sqlite` in the defaults (`tuned = false`) or tuned configuration.
    pub(crate) fn open(dir: &Path, o: &OpenOptions, tuned: bool) -> Result<Self> {
        let name = if tuned { "sqlite-tuned" } else { "sqlite" };
        emul::ensure_dir(name, dir)?;
        let cfg = Config {
            name,
            tuned,
            path: dir.join(FILE),
            cache_kib: o.cache.bytes().div_ceil(1024).max(1),
            durability: o.durability,
        };
        let conn = cfg.connect(true)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
        )
        .map_err(serr(name, "create table"))?;
        Ok(SqliteEngine {
            cfg,
            dir: dir.to_path_buf(),
            writer: Mutex::new(conn),
            readers: Mutex::new(Vec::new()),
        })
    }
    /// Runs a read on the writer connection if it is free, else on a pooled read connection.
    fn read<R>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<R>,
        op: &'static str,
    ) -> Result<R> {
        if let Ok(conn) = self.writer.try_lock() {
            return f(&conn).map_err(serr(self.cfg.name, op));
        }
        let pooled = self
            .readers
            .lock()
            .map_err(|_| Error::Poisoned {
                engine: self.cfg.name,
            })?
            .pop();
        let conn = match pooled {
            Some(c) => c,
            None => self.cfg.connect(false)?,
        };
        let result = f(&conn).map_err(serr(self.cfg.name, op));
        if let Ok(mut pool) = self.readers.lock() {
            pool.push(conn);
        }
        result
    }

    fn write<R>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<R>,
        op: &'static str,
    ) -> Result<R> {
        let mut conn = self.writer.lock().map_err(|_| Error::Poisoned {
            engine: self.cfg.name,
        })?;
        f(&mut conn).map_err(serr(self.cfg.name, op))
    }

    fn load(&self, pairs: &mut dyn Iterator<Item = KvPair>) -> Result<u64> {
        let mut check = SortedCheck::for_engine(self)?;
        let mut conn = self.writer.lock().map_err(|_| Error::Poisoned {
            engine: self.cfg.name,
        })?;
        let txn = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(serr(self.cfg.name, "bulk_load: begin"))?;
        let mut n = 0u64;
        {
            let mut stmt = txn
                .prepare("INSERT INTO kv(k, v) VALUES (?1, ?2)")
                .map_err(serr(self.cfg.name, "bulk_load: prepare"))?;
            for (k, v) in pairs {
                check.check(&k)?; // an early return drops `txn`, which rolls back
                stmt.execute(params![k, v])
                    .map_err(serr(self.cfg.name, "bulk_load: insert"))?;
                n += 1;
            }
        }
        txn.commit()
            .map_err(serr(self.cfg.name, "bulk_load: commit"))?;
        Ok(n)
    }
}

impl OrderedRead for SqliteEngine {
    fn engine_name(&self) -> &'static str {
        self.cfg.name
    }

    fn point_get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        if key.is_empty() {
            return Ok(false);
        }
        let tuned = self.cfg.tuned;
        self.read(
            |c| {
                with_stmt(c, tuned, "SELECT v FROM kv WHERE k = ?1", |s| {
                    let mut rows = s.query([key])?;
                    match rows.next()? {
                        Some(row) => {
                            out.extend_from_slice(row.get_ref(0)?.as_blob()?);
                            Ok(true)
                        }
                        None => Ok(false),
                    }
                })
            },
            "get",
        )
    }

    fn seek_le(&self, key: &[u8], key_out: &mut Vec<u8>, val_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        val_out.clear();
        let sql = "SELECT k, v FROM kv WHERE k <= ?1 ORDER BY k DESC LIMIT 1";
        let tuned = self.cfg.tuned;
        self.read(
            |c| {
                with_stmt(c, tuned, sql, |s| {
                    let mut rows = s.query([key])?;
                    match rows.next()? {
                        Some(row) => {
                            key_out.extend_from_slice(row.get_ref(0)?.as_blob()?);
                            val_out.extend_from_slice(row.get_ref(1)?.as_blob()?);
                            Ok(true)
                        }
                        None => Ok(false),
                    }
                })
            },
            "seek_le",
        )
    }

    fn last_key(&self, key_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        let tuned = self.cfg.tuned;
        self.read(
            |c| {
                with_stmt(c, tuned, "SELECT k FROM kv ORDER BY k DESC LIMIT 1", |s| {
                    let mut rows = s.query([])?;
                    match rows.next()? {
                        Some(row) => {
                            key_out.extend_from_slice(row.get_ref(0)?.as_blob()?);
                            Ok(true)
                        }
                        None => Ok(false),
                    }
                })
            },
            "last key",
        )
    }

    /// `k >= ?1 AND k < ?2` with the bound when there is one (a prefix of all 0xFF bytes has
    /// no successor: then `k >= ?1` only), stepped lazily so stopping early costs nothing.
    fn walk(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        _batch_hint: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let tuned = self.cfg.tuned;
        self.read(
            |c| {
                let mut step = |rows: &mut rusqlite::Rows<'_>| -> rusqlite::Result<()> {
                    while let Some(row) = rows.next()? {
                        if !visit(row.get_ref(0)?.as_blob()?, row.get_ref(1)?.as_blob()?) {
                            break;
                        }
                    }
                    Ok(())
                };
                match end {
                    Some(end) => with_stmt(
                        c,
                        tuned,
                        "SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k",
                        |s| step(&mut s.query(params![start, end])?),
                    ),
                    None => with_stmt(
                        c,
                        tuned,
                        "SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k",
                        |s| step(&mut s.query([start])?),
                    ),
                }
            },
            "scan",
        )
    }
}

impl KvEngine for SqliteEngine {
    fn name(&self) -> &'static str {
        self.cfg.name
    }

    fn capabilities(&self) -> Capabilities {
        // No key limit a caller can reach: a BLOB (and the whole row) may hold up to
        // SQLITE_MAX_LENGTH, 1,000,000,000 bytes in the bundled build, and a long key spills
        // to overflow pages of the WITHOUT ROWID table's b-tree (SQLITE_TOOBIG beyond).
        Capabilities::emulated(false, None)
    }

    /// One `BEGIN IMMEDIATE` transaction with one prepared `INSERT`.
    fn bulk_load(&self, pairs: &mut dyn Iterator<Item = KvPair>) -> Result<u64> {
        self.load(pairs)
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.point_get(key, out)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        emul::check_key(self.cfg.name, key)?;
        let tuned = self.cfg.tuned;
        self.write(
            |c| with_stmt(c, tuned, PUT_SQL, |s| s.execute(params![key, value])),
            "put",
        )?;
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        let tuned = self.cfg.tuned;
        self.write(
            |c| with_stmt(c, tuned, DELETE_SQL, |s| s.execute([key])),
            "delete",
        )?;
        Ok(())
    }

    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        emul::check_batch(self.cfg.name, ops)?;
        let tuned = self.cfg.tuned;
        self.write(
            |c| {
                let txn = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
                // Prepared once per batch; the tuned configuration keeps the statements
                // cached across batches, as it does for single writes.
                let apply =
                    |put: &mut Statement<'_>, delete: &mut Statement<'_>| -> rusqlite::Result<()> {
                        for op in ops {
                            match *op {
                                BatchOp::Put { key, value } => put.execute(params![key, value])?,
                                BatchOp::Delete { key } => delete.execute([key])?,
                            };
                        }
                        Ok(())
                    };
                if tuned {
                    apply(
                        &mut *txn.prepare_cached(PUT_SQL)?,
                        &mut *txn.prepare_cached(DELETE_SQL)?,
                    )?;
                } else {
                    apply(&mut txn.prepare(PUT_SQL)?, &mut txn.prepare(DELETE_SQL)?)?;
                }
                txn.commit()
            },
            "write_batch",
        )
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        emul::check_key(self.cfg.name, key)?;
        let tuned = self.cfg.tuned;
        self.write(
            |c| {
                let txn = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let current: Option<Vec<u8>> =
                    with_stmt(&txn, tuned, "SELECT v FROM kv WHERE k = ?1", |s| {
                        let mut rows = s.query([key])?;
                        match rows.next()? {
                            Some(row) => Ok(Some(row.get_ref(0)?.as_blob()?.to_vec())),
                            None => Ok(None),
                        }
                    })?;
                if current.as_deref() != expected {
                    return Ok(CasOutcome::Conflict { current });
                }
                match new {
                    Some(v) => with_stmt(&txn, tuned, PUT_SQL, |s| s.execute(params![key, v]))?,
                    None => with_stmt(&txn, tuned, DELETE_SQL, |s| s.execute([key]))?,
                };
                txn.commit()?;
                Ok(CasOutcome::Ok)
            },
            "compare_and_swap",
        )
    }

    crate::emul::emulated_reads!(scans);

    fn count_range(&self, start_inclusive: &[u8], end_exclusive: &[u8]) -> Result<u64> {
        if start_inclusive >= end_exclusive {
            return Ok(0);
        }
        let tuned = self.cfg.tuned;
        let sql = "SELECT count(*) FROM kv WHERE k >= ?1 AND k < ?2";
        let n: i64 = self.read(
            |c| {
                with_stmt(c, tuned, sql, |s| {
                    s.query_row(params![start_inclusive, end_exclusive], |r| r.get(0))
                })
            },
            "count",
        )?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// `PRAGMA wal_checkpoint(TRUNCATE)`: copies the WAL into the database file and empties it
    /// (a no-op in rollback-journal mode, where commits already wrote the database file).
    fn checkpoint(&self) -> Result<()> {
        self.write(
            |c| c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())),
            "wal_checkpoint",
        )
    }

    /// The database file plus any -wal, -shm or -journal file beside it.
    fn size_on_disk(&self) -> Result<u64> {
        emul::dir_size(self.cfg.name, &self.dir)
    }

    fn io_counters(&self) -> Option<crate::api::IoCounters> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::CacheBudget;

    #[test]
    fn tuned_connections_share_one_heap_limit_of_the_budget() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::backend("sqlite-tuned", "tempdir", e))?;
        let o = OpenOptions {
            cache: CacheBudget::mib(3),
            ..OpenOptions::default()
        };
        let engine = SqliteEngine::open(dir.path(), &o, true)?;
        // A reader connection, as a second concurrent reader would open.
        let reader = engine.cfg.connect(false)?;
        let limit: i64 = reader
            .query_row("PRAGMA soft_heap_limit", [], |r| r.get(0))
            .map_err(serr("sqlite-tuned", "read soft_heap_limit"))?;
        assert_eq!(limit, 3 << 20);
        Ok(())
    }
}
