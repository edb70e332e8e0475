//! PostgreSQL adapter (sync `postgres` client) over a unix socket.
//!
//! Table `kv(k bytea PRIMARY KEY, v bytea NOT NULL)` (`UNLOGGED` under [`Durability::None`]).
//! bytea compares bytewise (memcmp, then length) whatever the collation, so the range predicates
//! `k >= $1 AND k < $2 ORDER BY k` give the same order as every other engine; the conformance
//! suite checks it with 0x00 and 0xFF keys. Bulk loads use `COPY ... FROM STDIN BINARY`.
//!
//! Where the server comes from: `OpenOptions::pg_url`, else `AI_META_PG_URL`, else a throwaway
//! cluster (see [`cluster`]). With a URL the adapter creates, and drops on close, its own
//! uniquely named table and touches nothing else. `postgres::Client` needs `&mut self`, so the
//! one connection sits behind a mutex: concurrent callers are serialised, as in one session.
//! `compare_and_swap` is one conditional statement (`UPDATE ... WHERE k = $1 AND v = $2`,
//! `INSERT ... ON CONFLICT DO NOTHING`, `DELETE ... WHERE v = $2`), atomic in the server.
//!
//! Keys are limited by the primary key's btree ([`limits`]: 2,692 bytes on 8 KiB pages);
//! every write path refuses a longer key with [`Error::InvalidKey`] before sending anything,
//! so no batch or COPY fails in the server half-way.

mod batch;
mod cluster;
mod limits;

use crate::api::{BatchOp, Capabilities, CasOutcome, Durability, KvEngine, KvPair, OpenOptions};
use crate::emul::{self, OrderedRead, SortedCheck};
use crate::error::{Error, Result};
use cluster::PgCluster;
use postgres::{Client, NoTls, Statement};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

const NAME: &str = "postgres";
/// Rows fetched per round trip by scans: the caller's limit, within these bounds.
const PAGE_MIN: usize = 16;
const PAGE_MAX: usize = 4096;

fn perr(operation: &'static str) -> impl FnOnce(postgres::Error) -> Error {
    move |e| Error::backend(NAME, operation, e)
}

/// The connection and its prepared statements.
struct Conn {
    client: Client,
    get: Statement,
    put: Statement,
    delete: Statement,
    put_many: Statement,
    delete_many: Statement,
    seek_le: Statement,
    last: Statement,
    walk_bounded: Statement,
    walk_open: Statement,
    count: Statement,
    cas_update: Statement,
    cas_insert: Statement,
    cas_delete: Statement,
}

/// A table in a PostgreSQL server; see the module docs.
pub(crate) struct PgEngine {
    conn: Mutex<Conn>,
    table: String,
    /// The longest key the table's primary key indexes on this server ([`limits`]).
    max_key_len: usize,
    /// Drop the table on close (only when it lives in a server we did not start).
    drop_table: bool,
    /// Held for its Drop, which stops the server; declared after `conn` so the connection
    /// closes first.
    #[cfg_attr(not(test), allow(dead_code))]
    cluster: Option<PgCluster>,
}

impl PgEngine {
    /// Connects (or starts a throwaway cluster), creates the table and prepares statements.
    pub(crate) fn open(o: &OpenOptions) -> Result<Self> {
        let url = o
            .pg_url
            .clone()
            .or_else(|| std::env::var("AI_META_PG_URL").ok())
            .filter(|u| !u.trim().is_empty());
        let (mut client, cluster, table) = match url {
            Some(url) => {
                let client =
                    Client::connect(&url, NoTls).map_err(perr("connect to AI_META_PG_URL"))?;
                (client, None, unique_table_name())
            }
            None => {
                let (cluster, client) = PgCluster::start(o.cache.bytes(), o.durability)?;
                (client, Some(cluster), "kv".to_string())
            }
        };
        let drop_table = cluster.is_none();
        let max_key_len = limits::server_max_key_len(&mut client)?;
        let conn = prepare(client, &table, o.durability)?;
        Ok(PgEngine {
            conn: Mutex::new(conn),
            table,
            max_key_len,
            drop_table,
            cluster,
        })
    }

    /// Refuses the empty key and one the primary key's btree cannot index.
    fn check_key(&self, key: &[u8]) -> Result<()> {
        emul::check_key_within(NAME, key, self.max_key_len, limits::LIMIT)
    }

    fn lock(&self) -> Result<MutexGuard<'_, Conn>> {
        self.conn
            .lock()
            .map_err(|_| Error::Poisoned { engine: NAME })
    }

    /// The directory of the throwaway cluster, if this engine started one.
    #[cfg(test)]
    fn cluster_root(&self) -> Option<std::path::PathBuf> {
        self.cluster.as_ref().map(|c| c.root().to_path_buf())
    }

    fn copy_in(&self, pairs: &mut dyn Iterator<Item = KvPair>) -> Result<u64> {
        let mut check = SortedCheck::for_engine(self)?;
        let mut conn = self.lock()?;
        let sql = format!("COPY {} (k, v) FROM STDIN BINARY", self.table);
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
        Ok(n)
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

fn prepare(mut client: Client, t: &str, durability: Durability) -> Result<Conn> {
    let sync = if durability == Durability::Sync {
        "on"
    } else {
        "off"
    };
    let unlogged = if durability == Durability::None {
        "UNLOGGED "
    } else {
        ""
    };
    client
        .batch_execute(&format!(
            "SET synchronous_commit TO {sync};
             CREATE {unlogged}TABLE IF NOT EXISTS {t} (k bytea PRIMARY KEY, v bytea NOT NULL)"
        ))
        .map_err(perr("create table"))?;
    let mut p = |sql: String| client.prepare(&sql).map_err(perr("prepare statements"));
    let get = p(format!("SELECT v FROM {t} WHERE k = $1"))?;
    let put = p(format!(
        "INSERT INTO {t} (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
    ))?;
    let delete = p(format!("DELETE FROM {t} WHERE k = $1"))?;
    let put_many = p(format!(
        "INSERT INTO {t} (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) \
         ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
    ))?;
    let delete_many = p(format!("DELETE FROM {t} WHERE k = ANY($1::bytea[])"))?;
    let seek_le = p(format!(
        "SELECT k, v FROM {t} WHERE k <= $1 ORDER BY k DESC LIMIT 1"
    ))?;
    let last = p(format!("SELECT k FROM {t} ORDER BY k DESC LIMIT 1"))?;
    let walk_bounded = p(format!(
        "SELECT k, v FROM {t} WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3"
    ))?;
    let walk_open = p(format!(
        "SELECT k, v FROM {t} WHERE k >= $1 ORDER BY k LIMIT $2"
    ))?;
    let count = p(format!("SELECT count(*) FROM {t} WHERE k >= $1 AND k < $2"))?;
    let cas_update = p(format!("UPDATE {t} SET v = $3 WHERE k = $1 AND v = $2"))?;
    let cas_insert = p(format!(
        "INSERT INTO {t} (k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING"
    ))?;
    let cas_delete = p(format!("DELETE FROM {t} WHERE k = $1 AND v = $2"))?;
    Ok(Conn {
        client,
        get,
        put,
        delete,
        put_many,
        delete_many,
        seek_le,
        last,
        walk_bounded,
        walk_open,
        count,
        cas_update,
        cas_insert,
        cas_delete,
    })
}

impl Drop for PgEngine {
    fn drop(&mut self) {
        if self.drop_table {
            if let Ok(conn) = self.conn.get_mut() {
                let _ = conn
                    .client
                    .batch_execute(&format!("DROP TABLE IF EXISTS {}", self.table));
            }
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
        let mut c = self.lock()?;
        let c = &mut *c;
        match c.client.query_opt(&c.get, &[&key]).map_err(perr("get"))? {
            Some(row) => {
                out.extend_from_slice(row.try_get::<_, &[u8]>(0).map_err(perr("get"))?);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn seek_le(&self, key: &[u8], key_out: &mut Vec<u8>, val_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        val_out.clear();
        let mut c = self.lock()?;
        let c = &mut *c;
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
    }

    fn last_key(&self, key_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        let mut c = self.lock()?;
        let c = &mut *c;
        match c.client.query_opt(&c.last, &[]).map_err(perr("last key"))? {
            Some(row) => {
                key_out.extend_from_slice(row.try_get::<_, &[u8]>(0).map_err(perr("last key"))?);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Pages of `LIMIT batch_hint` rows (16..=4096), continuing after the last key of a page.
    fn walk(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        batch_hint: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        let page = batch_hint.clamp(PAGE_MIN, PAGE_MAX);
        let limit = page as i64;
        let mut c = self.lock()?;
        let c = &mut *c;
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
    }
}

impl KvEngine for PgEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::emulated(false, Some(self.max_key_len))
    }

    /// `COPY ... FROM STDIN BINARY` in one statement.
    fn bulk_load(&self, pairs: &mut dyn Iterator<Item = KvPair>) -> Result<u64> {
        self.copy_in(pairs)
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.point_get(key, out)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_key(key)?;
        let mut c = self.lock()?;
        let c = &mut *c;
        c.client
            .execute(&c.put, &[&key, &value])
            .map_err(perr("put"))?;
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        let mut c = self.lock()?;
        let c = &mut *c;
        c.client
            .execute(&c.delete, &[&key])
            .map_err(perr("delete"))?;
        Ok(())
    }

    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        emul::check_batch_within(NAME, ops, self.max_key_len, limits::LIMIT)?;
        let mut c = self.lock()?;
        let c = &mut *c;
        let mut txn = c.client.transaction().map_err(perr("write_batch: begin"))?;
        for run in batch::runs(ops) {
            match run {
                batch::Run::Put { keys, values } => txn.execute(&c.put_many, &[&keys, &values]),
                batch::Run::Delete { keys } => txn.execute(&c.delete_many, &[&keys]),
            }
            .map_err(perr("write_batch"))?;
        }
        txn.commit().map_err(perr("write_batch: commit"))
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.check_key(key)?;
        let mut c = self.lock()?;
        let c = &mut *c;
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
        let current = c
            .client
            .query_opt(&c.get, &[&key])
            .map_err(perr("compare_and_swap: read current"))?
            .map(|row| row.try_get::<_, Vec<u8>>(0))
            .transpose()
            .map_err(perr("compare_and_swap: read current"))?;
        if expected.is_none() && new.is_none() && current.is_none() {
            return Ok(CasOutcome::Ok); // "delete if absent": nothing to do, and it was absent
        }
        Ok(CasOutcome::Conflict { current })
    }

    crate::emul::emulated_reads!(scans);

    fn count_range(&self, start_inclusive: &[u8], end_exclusive: &[u8]) -> Result<u64> {
        if start_inclusive >= end_exclusive {
            return Ok(0);
        }
        let mut c = self.lock()?;
        let c = &mut *c;
        let row = c
            .client
            .query_one(&c.count, &[&start_inclusive, &end_exclusive])
            .map_err(perr("count"))?;
        let n: i64 = row.try_get(0).map_err(perr("count"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// `CHECKPOINT` (needs superuser or, from PostgreSQL 15, the pg_checkpoint role).
    fn checkpoint(&self) -> Result<()> {
        let mut c = self.lock()?;
        c.client
            .batch_execute("CHECKPOINT")
            .map_err(perr("CHECKPOINT"))
    }

    /// `pg_total_relation_size` of the table: heap, primary-key index and TOAST, without the
    /// WAL and system catalogs that any cluster carries.
    fn size_on_disk(&self) -> Result<u64> {
        let mut c = self.lock()?;
        let row = c
            .client
            .query_one(
                "SELECT pg_total_relation_size($1::text::regclass)",
                &[&self.table],
            )
            .map_err(perr("pg_total_relation_size"))?;
        let n: i64 = row.try_get(0).map_err(perr("pg_total_relation_size"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn io_counters(&self) -> Option<crate::api::IoCounters> {
        None
    }
}

#[cfg(test)]
mod tests;
