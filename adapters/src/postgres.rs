//! PostgreSQL adapter (sync `postgres` client) over a unix socket.
//!
//! Table `kv(k bytea PRIMARY KEY, v bytea NOT NULL)` (`UNLOGGED` under [`Durability::None`]).
//! bytea compares bytewise (memcmp, then length) whatever the collation, so the range predicates
//! `k >= $1 AND k < $2 ORDER BY k` give the same order as every other engine; the conformance
//! suite checks it with 0x00 and 0xFF keys. Bulk loads use `COPY ... FROM STDIN BINARY`.
//!
//! Where the server comes from: `OpenOptions::pg_url`, else `AI_META_PG_URL`, else a throwaway
//! cluster (see [`cluster`]). With a URL the adapter creates, and drops on close, its own
//! uniquely named table and touches nothing else.
//!
//! Concurrency: a [`pool`] of up to [`pool::POOL_SIZE`] (16) connections, each with its own
//! prepared statements and session settings, each behind its own mutex (`postgres::Client`
//! needs `&mut self`). A caller takes a free connection, so N threads run on N server
//! sessions, as PostgreSQL serves N clients; connections open when concurrency first needs
//! them. A bulk load runs on one connection (one COPY). `compare_and_swap` is one conditional
//! statement (`UPDATE ... WHERE k = $1 AND v = $2`, `INSERT ... ON CONFLICT DO NOTHING`,
//! `DELETE ... WHERE v = $2`), atomic in the server across sessions: under READ COMMITTED a
//! concurrent writer of the row makes it wait and re-check the condition against the
//! committed value, so of concurrent swaps from one value exactly one wins. `write_batch` is
//! one transaction on one connection.
//!
//! Durability: `synchronous_commit` per session, `on` only under [`Durability::Sync`], and an
//! `UNLOGGED` table under [`Durability::None`]. [`KvEngine::set_durability`] switches between
//! [`Durability::Async`] and [`Durability::Sync`] without reopening, by `SET synchronous_commit`
//! on every pooled connection (waiting for each to finish its call) and on every one opened
//! later; the throwaway cluster runs `fsync = on` and `full_page_writes = on` in both modes,
//! so that one setting is the whole difference. Switching to or from [`Durability::None`]
//! would need the table rebuilt (and the cluster restarted with fsync), so it returns
//! `Ok(false)`, changes nothing, and the engine must be reopened.
//!
//! Keys are limited by the primary key's btree ([`limits`]: 2,692 bytes on 8 KiB pages);
//! every write path refuses a longer key with [`Error::InvalidKey`] before sending anything,
//! so no batch or COPY fails in the server half-way.

mod batch;
mod cluster;
mod connection;
mod limits;
mod pool;

use crate::api::{BatchOp, Capabilities, CasOutcome, Durability, KvEngine, KvPair, OpenOptions};
use crate::emul::{self, OrderedRead, SortedCheck};
use crate::error::{Error, Result};
use cluster::PgCluster;
use connection::Conn;
use pool::Pool;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

const NAME: &str = "postgres";
/// Rows fetched per round trip by scans: the caller's limit, within these bounds.
const PAGE_MIN: usize = 16;
const PAGE_MAX: usize = 4096;

fn perr(operation: &'static str) -> impl FnOnce(postgres::Error) -> Error {
    move |e| Error::backend(NAME, operation, e)
}

/// A table in a PostgreSQL server; see the module docs.
pub(crate) struct PgEngine {
    pool: Pool,
    /// The longest key the table's primary key indexes on this server ([`limits`]).
    max_key_len: usize,
    /// The mode writes run under now ([`KvEngine::set_durability`] may change it).
    durability: Mutex<Durability>,
    /// Drop the table on close (only when it lives in a server we did not start).
    drop_table: bool,
    /// Held for its Drop, which stops the server; declared after `pool` so every connection
    /// closes first.
    #[cfg_attr(not(test), allow(dead_code))]
    cluster: Option<PgCluster>,
}

impl PgEngine {
    /// Connects (or starts a throwaway cluster), creates the table and prepares statements.
    pub(crate) fn open(o: &OpenOptions) -> Result<Self> {
        Self::open_with_pool(o, pool::POOL_SIZE)
    }

    /// [`PgEngine::open`] with a pool of `pool_size` connections (at least one).
    fn open_with_pool(o: &OpenOptions, pool_size: usize) -> Result<Self> {
        let url = o
            .pg_url
            .clone()
            .or_else(|| std::env::var("AI_META_PG_URL").ok())
            .filter(|u| !u.trim().is_empty());
        let (mut client, config, cluster, table) = match url {
            Some(url) => {
                let config: postgres::Config = url.parse().map_err(perr("parse AI_META_PG_URL"))?;
                let client = config
                    .connect(postgres::NoTls)
                    .map_err(perr("connect to AI_META_PG_URL"))?;
                (client, config, None, unique_table_name())
            }
            None => {
                let (cluster, client) = PgCluster::start(o.cache.bytes(), o.durability)?;
                let config = cluster.config();
                (client, config, Some(cluster), "kv".to_string())
            }
        };
        let drop_table = cluster.is_none();
        let max_key_len = limits::server_max_key_len(&mut client)?;
        connection::create_table(&mut client, &table, o.durability)?;
        let synchronous_commit = o.durability == Durability::Sync;
        let first = Conn::prepare(client, &table, synchronous_commit)?;
        Ok(PgEngine {
            pool: Pool::new(first, pool_size, config, table, synchronous_commit),
            max_key_len,
            durability: Mutex::new(o.durability),
            drop_table,
            cluster,
        })
    }

    /// Refuses the empty key and one the primary key's btree cannot index.
    fn check_key(&self, key: &[u8]) -> Result<()> {
        emul::check_key_within(NAME, key, self.max_key_len, limits::LIMIT)
    }

    /// The directory of the throwaway cluster, if this engine started one.
    #[cfg(test)]
    fn cluster_root(&self) -> Option<std::path::PathBuf> {
        self.cluster.as_ref().map(|c| c.root().to_path_buf())
    }

    /// The pool, for the tests that hold several connections at once.
    #[cfg(test)]
    fn pool(&self) -> &Pool {
        &self.pool
    }

    fn copy_in(&self, pairs: &mut dyn Iterator<Item = KvPair>) -> Result<u64> {
        let mut check = SortedCheck::for_engine(self)?;
        let sql = format!("COPY {} (k, v) FROM STDIN BINARY", self.pool.table());
        self.pool.with(|conn| {
            let mut w = conn.client.copy_in(&sql).map_err(perr("bulk_load: COPY"))?;
            let io = |e| Error::backend(NAME, "bulk_load: COPY write", e);
            // Header: signature, flags, header-extension length.
            let mut buf: Vec<u8> = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0".to_vec();
            let mut n = 0u64;
            for (k, v) in pairs {
                // An early return drops `w` unfinished, which aborts the COPY: nothing is stored.
                check.check(&k)?;
                self.check_key(&k)?;
                buf.extend_from_slice(&2i16.to_be_bytes());
                for field in [&k, &v] {
                    let len = i32::try_from(field.len()).map_err(|_| Error::InvalidKey {
                        engine: NAME,
                        reason: "keys and values must be under 2 GiB".into(),
                    })?;
                    buf.extend_from_slice(&len.to_be_bytes());
                    buf.extend_from_slice(field);
                }
                n += 1;
                if buf.len() >= 1 << 20 {
                    w.write_all(&buf).map_err(io)?;
                    buf.clear();
                }
            }
            buf.extend_from_slice(&(-1i16).to_be_bytes());
            w.write_all(&buf).map_err(io)?;
            w.finish().map_err(perr("bulk_load: COPY finish"))?;
            // What a PostgreSQL operator does after a bulk load: set the visibility map
            // (so counts are index-only scans instead of a heap page per 60 rows) and
            // gather statistics (so the planner picks index scans for the bounded ranges
            // instead of parallel plans). Part of the timed load.
            conn.client
                .batch_execute(&format!("VACUUM (ANALYZE) {}", self.pool.table()))
                .map_err(perr("bulk_load: VACUUM (ANALYZE)"))?;
            Ok(n)
        })
    }
}

/// `aimeta_kv_<pid>_<nanos>_<counter>`: unique per open, so runs sharing a server never collide.
fn unique_table_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("aimeta_kv_{}_{nanos}_{n}", std::process::id())
}

impl Drop for PgEngine {
    /// Closes every connection (before `cluster`, declared last, stops the server), dropping
    /// the table first when it lives in someone else's server.
    fn drop(&mut self) {
        if self.drop_table {
            let sql = format!("DROP TABLE IF EXISTS {}", self.pool.table());
            let _ = self.pool.close_all_but_one_then(&sql);
        }
    }
}

impl OrderedRead for PgEngine {
    fn engine_name(&self) -> &'static str {
        NAME
    }

    fn point_get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        if key.is_empty() {
            return Ok(false);
        }
        self.pool.with(
            |c| match c.client.query_opt(&c.get, &[&key]).map_err(perr("get"))? {
                Some(row) => {
                    out.extend_from_slice(row.try_get::<_, &[u8]>(0).map_err(perr("get"))?);
                    Ok(true)
                }
                None => Ok(false),
            },
        )
    }

    fn seek_le(&self, key: &[u8], key_out: &mut Vec<u8>, val_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        val_out.clear();
        self.pool.with(|c| {
            match c
                .client
                .query_opt(&c.seek_le, &[&key])
                .map_err(perr("seek_le"))?
            {
                Some(row) => {
                    key_out.extend_from_slice(row.try_get::<_, &[u8]>(0).map_err(perr("seek_le"))?);
                    val_out.extend_from_slice(row.try_get::<_, &[u8]>(1).map_err(perr("seek_le"))?);
                    Ok(true)
                }
                None => Ok(false),
            }
        })
    }

    fn last_key(&self, key_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        self.pool.with(
            |c| match c.client.query_opt(&c.last, &[]).map_err(perr("last key"))? {
                Some(row) => {
                    key_out
                        .extend_from_slice(row.try_get::<_, &[u8]>(0).map_err(perr("last key"))?);
                    Ok(true)
                }
                None => Ok(false),
            },
        )
    }

    /// Pages of `LIMIT batch_hint` rows (16..=4096), continuing after the last key of a page,
    /// all on one connection.
    fn walk(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        batch_hint: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let page = batch_hint.clamp(PAGE_MIN, PAGE_MAX);
        let limit = page as i64;
        self.pool.with(|c| {
            let mut from = start.to_vec();
            loop {
                let rows = match end {
                    Some(end) => c.client.query(&c.walk_bounded, &[&from, &end, &limit]),
                    None => c.client.query(&c.walk_open, &[&from, &limit]),
                }
                .map_err(perr("scan"))?;
                for row in &rows {
                    let k: &[u8] = row.try_get(0).map_err(perr("scan"))?;
                    let v: &[u8] = row.try_get(1).map_err(perr("scan"))?;
                    if !visit(k, v) {
                        return Ok(());
                    }
                }
                match rows.last() {
                    Some(row) if rows.len() == page => {
                        from = emul::key_successor(row.try_get(0).map_err(perr("scan"))?);
                    }
                    _ => return Ok(()),
                }
            }
        })
    }
}

/// How many times `compare_and_swap` retries when its condition failed yet the value it then
/// reads is the expected one (another session changed the key back in between).
const CAS_ATTEMPTS: usize = 8;

impl KvEngine for PgEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::emulated(false, Some(self.max_key_len))
    }

    /// `COPY ... FROM STDIN BINARY` in one statement, on one connection.
    fn bulk_load(&self, pairs: &mut dyn Iterator<Item = KvPair>) -> Result<u64> {
        self.copy_in(pairs)
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.point_get(key, out)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_key(key)?;
        self.pool.with(|c| {
            c.client
                .execute(&c.put, &[&key, &value])
                .map_err(perr("put"))?;
            Ok(())
        })
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        self.pool.with(|c| {
            c.client
                .execute(&c.delete, &[&key])
                .map_err(perr("delete"))?;
            Ok(())
        })
    }

    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        emul::check_batch_within(NAME, ops, self.max_key_len, limits::LIMIT)?;
        self.pool.with(|c| {
            let mut txn = c.client.transaction().map_err(perr("write_batch: begin"))?;
            for run in batch::runs(ops) {
                match run {
                    batch::Run::Put { keys, values } => txn.execute(&c.put_many, &[&keys, &values]),
                    batch::Run::Delete { keys } => txn.execute(&c.delete_many, &[&keys]),
                }
                .map_err(perr("write_batch"))?;
            }
            txn.commit().map_err(perr("write_batch: commit"))
        })
    }

    /// One conditional statement (atomic across sessions, see the module docs); on a miss
    /// the current value is read back, and if another session restored the expected value
    /// in between the swap is tried again, so a conflict never reports `expected` itself.
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.check_key(key)?;
        self.pool.with(|c| {
            let mut current = None;
            for _ in 0..CAS_ATTEMPTS {
                let applied = match (expected, new) {
                    (Some(e), Some(n)) => c.client.execute(&c.cas_update, &[&key, &e, &n]),
                    (Some(e), None) => c.client.execute(&c.cas_delete, &[&key, &e]),
                    (None, Some(n)) => c.client.execute(&c.cas_insert, &[&key, &n]),
                    (None, None) => Ok(0),
                }
                .map_err(perr("compare_and_swap"))?;
                if applied == 1 {
                    return Ok(CasOutcome::Ok);
                }
                current = c
                    .client
                    .query_opt(&c.get, &[&key])
                    .map_err(perr("compare_and_swap: read current"))?
                    .map(|row| row.try_get::<_, Vec<u8>>(0))
                    .transpose()
                    .map_err(perr("compare_and_swap: read current"))?;
                if expected.is_none() && new.is_none() && current.is_none() {
                    return Ok(CasOutcome::Ok); // "delete if absent": it was absent
                }
                if current.as_deref() != expected {
                    break;
                }
            }
            Ok(CasOutcome::Conflict { current })
        })
    }

    /// Under [`Durability::Async`] and [`Durability::Sync`]: `SET synchronous_commit` on
    /// every pooled connection, `Ok(true)`. To or from [`Durability::None`] (an UNLOGGED
    /// table, and a throwaway cluster without fsync): `Ok(false)`, nothing changed.
    fn set_durability(&self, durability: Durability) -> Result<bool> {
        let mut current = self
            .durability
            .lock()
            .map_err(|_| Error::Poisoned { engine: NAME })?;
        if (*current == Durability::None) != (durability == Durability::None) {
            return Ok(false);
        }
        // Recorded before the SETs: on an error the connections still open have the new
        // setting and the one that failed was closed, to reopen with it.
        *current = durability;
        self.pool
            .set_synchronous_commit(durability == Durability::Sync)?;
        Ok(true)
    }

    crate::emul::emulated_reads!(scans);

    fn count_range(&self, start_inclusive: &[u8], end_exclusive: &[u8]) -> Result<u64> {
        if start_inclusive >= end_exclusive {
            return Ok(0);
        }
        self.pool.with(|c| {
            let row = c
                .client
                .query_one(&c.count, &[&start_inclusive, &end_exclusive])
                .map_err(perr("count"))?;
            let n: i64 = row.try_get(0).map_err(perr("count"))?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    /// `CHECKPOINT` (needs superuser or, from PostgreSQL 15, the pg_checkpoint role).
    fn checkpoint(&self) -> Result<()> {
        self.pool.with(|c| {
            c.client
                .batch_execute("CHECKPOINT")
                .map_err(perr("CHECKPOINT"))
        })
    }

    /// `pg_total_relation_size` of the table: heap, primary-key index and TOAST, without the
    /// WAL and system catalogs that any cluster carries.
    fn size_on_disk(&self) -> Result<u64> {
        self.pool.with(|c| {
            let row = c
                .client
                .query_one(
                    "SELECT pg_total_relation_size($1::text::regclass)",
                    &[&self.pool.table()],
                )
                .map_err(perr("pg_total_relation_size"))?;
            let n: i64 = row.try_get(0).map_err(perr("pg_total_relation_size"))?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    fn io_counters(&self) -> Option<crate::api::IoCounters> {
        None
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod concurrency_tests;
