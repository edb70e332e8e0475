//! A small pool of connections, so N concurrent callers run on N server sessions (PostgreSQL's
//! own way to serve concurrent clients) instead of queueing on one.
//!
//! Each slot is a mutex around an optional [`Conn`]. A caller takes the first free slot that
//! holds a connection (`try_lock` in turn); when every open connection is busy it opens a new
//! one in a free empty slot; when no slot is free at all it waits on the slot its thread's
//! index picks. Connections open lazily, so a single-threaded run keeps one session and N
//! threads at most about N: the first callers of a run pay one connect (a few ms on the unix
//! socket) each, which no percentile of a measured phase can see. A connection whose session
//! broke, or whose holder panicked, is dropped and its slot reopens on next use.

use super::connection::{self, Conn};
use super::perr;
use crate::error::Result;
use postgres::{Config, NoTls};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

/// Connections per engine: the widest thread sweep (16 threads) gets a session per thread.
pub(crate) const POOL_SIZE: usize = 16;

type Slot = Mutex<Option<Conn>>;

/// The pooled connections to one table; see the module docs.
pub(super) struct Pool {
    slots: Vec<Slot>,
    /// How to open another session (the throwaway cluster's socket or the URL's server).
    config: Config,
    table: String,
    /// The `synchronous_commit` every connection has, and every new one gets.
    synchronous_commit: AtomicBool,
}

impl Pool {
    /// A pool of `size` slots (at least one) whose first holds `first`, already prepared.
    pub(super) fn new(
        first: Conn,
        size: usize,
        config: Config,
        table: String,
        synchronous_commit: bool,
    ) -> Pool {
        let slots = std::iter::once(Mutex::new(Some(first)))
            .chain((1..size).map(|_| Mutex::new(None)))
            .collect();
        Pool {
            slots,
            config,
            table,
            synchronous_commit: AtomicBool::new(synchronous_commit),
        }
    }

    /// The table every connection's statements name.
    pub(super) fn table(&self) -> &str {
        &self.table
    }

    /// Runs `f` on a connection no other caller is using (opening one if need be).
    pub(super) fn with<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let mut guard = self.claim();
        let conn = match guard.take() {
            Some(conn) => guard.insert(conn),
            None => guard.insert(self.connect()?),
        };
        let result = f(conn);
        if guard.as_ref().is_some_and(|c| c.client.is_closed()) {
            *guard = None; // the session is gone (server restart, network): reconnect next time
        }
        result
    }

    /// A free slot: the first free one holding a connection, else the first free empty one,
    /// else (all busy) the one this thread's index picks, waited for.
    fn claim(&self) -> MutexGuard<'_, Option<Conn>> {
        let mut empty = None;
        for slot in &self.slots {
            match slot.try_lock() {
                Ok(guard) if guard.is_some() => return guard,
                Ok(guard) => {
                    empty.get_or_insert(guard);
                }
                Err(TryLockError::Poisoned(p)) => {
                    empty.get_or_insert(discard_poisoned(slot, p));
                }
                Err(TryLockError::WouldBlock) => {}
            }
        }
        if let Some(guard) = empty {
            return guard;
        }
        let slot = &self.slots[thread_index() % self.slots.len()];
        slot.lock().unwrap_or_else(|p| discard_poisoned(slot, p))
    }

    /// A new session with the pool's current settings and the statements prepared.
    fn connect(&self) -> Result<Conn> {
        let client = self.config.connect(NoTls).map_err(perr(
            "open another pooled connection (raise the server's max_connections?)",
        ))?;
        Conn::prepare(
            client,
            &self.table,
            self.synchronous_commit.load(Ordering::SeqCst),
        )
    }

    /// Sets `synchronous_commit` on every open connection (waiting for each to be free) and
    /// for every one opened later. A connection the `SET` fails on is closed, so it reopens
    /// with the new setting; the first such error is returned after all the others are set.
    pub(super) fn set_synchronous_commit(&self, on: bool) -> Result<()> {
        // Stored first: a connection opening meanwhile holds its slot, which the loop below
        // then waits for and sets, so no session is left with the old value.
        self.synchronous_commit.store(on, Ordering::SeqCst);
        let sql = connection::synchronous_commit_sql(on);
        let mut first_error = None;
        for slot in &self.slots {
            let mut guard = slot.lock().unwrap_or_else(|p| discard_poisoned(slot, p));
            if let Some(conn) = guard.as_mut() {
                if let Err(e) = conn.client.batch_execute(sql) {
                    *guard = None;
                    first_error.get_or_insert(perr("set_durability: SET synchronous_commit")(e));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Closes every connection but one and runs `sql` on that one (or on a new one when none
    /// is open); for the table's `DROP` on close, which no other session may be holding up.
    pub(super) fn close_all_but_one_then(&mut self, sql: &str) -> Result<()> {
        let mut kept: Option<Conn> = None;
        for slot in &mut self.slots {
            // A poisoned slot's session may be mid-transaction: closed, not kept.
            let conn = slot.get_mut().ok().and_then(Option::take);
            if kept.is_none() {
                kept = conn;
            }
        }
        let mut conn = match kept {
            Some(conn) => conn,
            None => self.connect()?,
        };
        conn.client.batch_execute(sql).map_err(perr("close"))
    }

    /// Runs `f` on every open connection, each while no caller uses it; returns how many.
    #[cfg(test)]
    pub(super) fn for_each_open(
        &self,
        mut f: impl FnMut(&mut Conn) -> Result<()>,
    ) -> Result<usize> {
        let mut n = 0;
        for slot in &self.slots {
            let mut guard = slot.lock().unwrap_or_else(|p| discard_poisoned(slot, p));
            if let Some(conn) = guard.as_mut() {
                f(conn)?;
                n += 1;
            }
        }
        Ok(n)
    }
}

/// A slot whose holder panicked: its session may be mid-statement or mid-transaction, so it
/// is closed (the server rolls back whatever it had open) and the slot starts empty.
fn discard_poisoned<'a>(
    slot: &'a Slot,
    poisoned: PoisonError<MutexGuard<'a, Option<Conn>>>,
) -> MutexGuard<'a, Option<Conn>> {
    let mut guard = poisoned.into_inner();
    *guard = None;
    slot.clear_poison();
    guard
}

/// A small number per thread, fixed for its life: spreads the threads that find every
/// connection busy over the slots instead of queueing them all on one.
fn thread_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    INDEX.with(|index| *index)
}
