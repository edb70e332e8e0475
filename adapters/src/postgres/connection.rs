//! One session of the pool: a `postgres::Client` with its session settings applied and every
//! statement the adapter runs prepared on it (prepared statements belong to one session, so
//! each pooled connection prepares its own).

use super::perr;
use crate::api::Durability;
use crate::error::Result;
use postgres::{Client, Statement};

/// A connection and its prepared statements.
pub(super) struct Conn {
    pub(super) client: Client,
    pub(super) get: Statement,
    pub(super) put: Statement,
    pub(super) delete: Statement,
    pub(super) put_many: Statement,
    pub(super) delete_many: Statement,
    pub(super) seek_le: Statement,
    pub(super) last: Statement,
    pub(super) walk_bounded: Statement,
    pub(super) walk_open: Statement,
    pub(super) count: Statement,
    pub(super) cas_update: Statement,
    pub(super) cas_insert: Statement,
    pub(super) cas_delete: Statement,
}

/// The statement that gives a session the commit durability of the engine's mode.
pub(super) fn synchronous_commit_sql(on: bool) -> &'static str {
    if on {
        "SET synchronous_commit TO on"
    } else {
        "SET synchronous_commit TO off"
    }
}

/// Creates the table (`UNLOGGED` under [`Durability::None`]) unless it exists; run once, on
/// the first connection, before any statement is prepared against it.
pub(super) fn create_table(client: &mut Client, table: &str, durability: Durability) -> Result<()> {
    let unlogged = if durability == Durability::None {
        "UNLOGGED "
    } else {
        ""
    };
    client
        .batch_execute(&format!(
            "CREATE {unlogged}TABLE IF NOT EXISTS {table} (k bytea PRIMARY KEY, v bytea NOT NULL)"
        ))
        .map_err(perr("create table"))
}

impl Conn {
    /// Applies `synchronous_commit` to the session and prepares every statement on `table`.
    pub(super) fn prepare(mut client: Client, t: &str, synchronous_commit: bool) -> Result<Conn> {
        client
            .batch_execute(synchronous_commit_sql(synchronous_commit))
            .map_err(perr("SET synchronous_commit"))?;
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
        // Each is one statement, so atomic in the server whatever the other sessions do: under
        // READ COMMITTED a concurrent UPDATE/DELETE of the row makes this one wait for it and
        // re-check `v = $2` against the committed row, and ON CONFLICT DO NOTHING inserts only
        // if no session has the key.
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
}
