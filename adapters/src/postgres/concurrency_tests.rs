//! Tests of the connection pool: concurrent callers on distinct sessions, compare-and-swap
//! atomic across sessions, and `set_durability` reaching every session.

use super::*;
use crate::api::CacheBudget;
use std::sync::Barrier;
use std::time::Instant;

const THREADS: usize = 8;

/// A throwaway cluster engine, or `None` (after a printed line) where PostgreSQL is missing.
fn open_cluster(durability: Durability, pool_size: usize) -> Result<Option<PgEngine>> {
    if let Err(e) = cluster::bindir_from_env() {
        println!("PostgreSQL skipped: {e}");
        return Ok(None);
    }
    let opts = OpenOptions {
        cache: CacheBudget::mib(16),
        durability,
        pg_url: Some(String::new()), // blank: ignore AI_META_PG_URL, start a cluster
        ..OpenOptions::default()
    };
    PgEngine::open_with_pool(&opts, pool_size).map(Some)
}

/// Runs `work(thread)` on `THREADS` scoped threads, all released together by a barrier, and
/// returns the first error (a panic counts as one).
fn on_threads(work: impl Fn(usize, &Barrier) -> Result<()> + Sync) -> Result<()> {
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (work, barrier) = (&work, &barrier);
                scope.spawn(move || work(t, barrier))
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .map_err(|_| Error::backend(NAME, "test", "a test thread panicked"))?
        })
    })
}

fn key(thread: usize, i: usize) -> Vec<u8> {
    format!("t{thread:02}/k{i:05}").into_bytes()
}

fn value(thread: usize, i: usize) -> Vec<u8> {
    format!("value of {thread}/{i}").into_bytes()
}

fn show_synchronous_commit(engine: &PgEngine) -> Result<Vec<String>> {
    let mut seen = Vec::new();
    engine.pool().for_each_open(|c| {
        let row = c
            .client
            .query_one("SHOW synchronous_commit", &[])
            .map_err(perr("test: SHOW"))?;
        seen.push(row.try_get::<_, String>(0).map_err(perr("test: SHOW"))?);
        Ok(())
    })?;
    Ok(seen)
}

/// A caller holding a connection does not block another: each nested call gets a session
/// of its own, and the pool keeps them all open afterwards.
#[test]
fn nested_callers_get_distinct_connections() -> Result<()> {
    let Some(engine) = open_cluster(Durability::Async, pool::POOL_SIZE)? else {
        return Ok(());
    };
    let pool = engine.pool();
    let pids = pool.with(|outer| {
        let outer_pid = backend_pid(outer)?;
        pool.with(|inner| {
            let inner_pid = backend_pid(inner)?;
            // A third caller, through the engine, while two connections are held.
            engine.put(b"nested", b"written")?;
            let mut out = Vec::new();
            assert!(engine.get(b"nested", &mut out)?);
            assert_eq!(out, b"written");
            Ok((outer_pid, inner_pid))
        })
    })?;
    assert_ne!(pids.0, pids.1, "two held callers shared one server session");
    assert_eq!(pool.for_each_open(|_| Ok(()))?, 3);
    Ok(())
}

fn backend_pid(c: &mut Conn) -> Result<i32> {
    let row = c
        .client
        .query_one("SELECT pg_backend_pid()", &[])
        .map_err(perr("test: pg_backend_pid"))?;
    row.try_get(0).map_err(perr("test: pg_backend_pid"))
}

/// Eight threads putting and reading at once all succeed, each reads its own writes at once,
/// never a torn or foreign value of another's, and after a barrier every thread sees every
/// thread's committed writes.
#[test]
fn concurrent_gets_and_puts_see_each_others_writes() -> Result<()> {
    const KEYS: usize = 150;
    let Some(engine) = open_cluster(Durability::Async, pool::POOL_SIZE)? else {
        return Ok(());
    };
    on_threads(|t, barrier| {
        barrier.wait();
        let mut out = Vec::new();
        for i in 0..KEYS {
            engine.put(&key(t, i), &value(t, i))?;
            assert!(
                engine.get(&key(t, i), &mut out)?,
                "own write {t}/{i} missing"
            );
            assert_eq!(out, value(t, i));
            let other = (t + 1) % THREADS;
            if engine.get(&key(other, i), &mut out)? {
                assert_eq!(out, value(other, i), "torn or foreign value");
            }
        }
        barrier.wait();
        for other in 0..THREADS {
            for i in 0..KEYS {
                assert!(
                    engine.get(&key(other, i), &mut out)?,
                    "{other}/{i} not seen"
                );
                assert_eq!(out, value(other, i));
            }
        }
        Ok(())
    })?;
    assert_eq!(engine.count_range(b"t", b"u")?, (THREADS * KEYS) as u64);
    let open = engine.pool().for_each_open(|_| Ok(()))?;
    println!("{THREADS} threads used {open} connections");
    assert!((1..=pool::POOL_SIZE).contains(&open));
    Ok(())
}

/// Rounds of eight threads racing the same swap on one key, on their own connections:
/// exactly one wins each round (insert-if-absent rounds and update rounds), the losers see
/// the winner's value, and concurrent read-modify-write increments lose no update.
#[test]
fn concurrent_compare_and_swap_has_one_winner_per_round() -> Result<()> {
    const ROUNDS: usize = 30;
    const INCREMENTS: usize = 20;
    let Some(engine) = open_cluster(Durability::Async, pool::POOL_SIZE)? else {
        return Ok(());
    };
    let wins: Vec<AtomicU64> = (0..2 * ROUNDS).map(|_| AtomicU64::new(0)).collect();
    engine.put(b"counter", b"0")?;
    engine.put(b"round", b"0")?;
    on_threads(|t, barrier| {
        let me = format!("thread {t}").into_bytes();
        for round in 0..ROUNDS {
            let fresh = format!("insert/{round}").into_bytes();
            barrier.wait();
            match engine.compare_and_swap(&fresh, None, Some(&me))? {
                CasOutcome::Ok => {
                    wins[round].fetch_add(1, Ordering::SeqCst);
                }
                CasOutcome::Conflict { current } => {
                    assert!(current.is_some_and(|c| c != me && c.starts_with(b"thread ")));
                }
            }
            let (from, to) = (round.to_string(), (round + 1).to_string());
            barrier.wait();
            match engine.compare_and_swap(b"round", Some(from.as_bytes()), Some(to.as_bytes()))? {
                CasOutcome::Ok => {
                    wins[ROUNDS + round].fetch_add(1, Ordering::SeqCst);
                }
                CasOutcome::Conflict { current } => {
                    assert_eq!(current.as_deref(), Some(to.as_bytes()), "round {round}");
                }
            }
        }
        barrier.wait();
        for _ in 0..INCREMENTS {
            let mut out = Vec::new();
            loop {
                let seen = engine.get(b"counter", &mut out).map(|_| out.clone())?;
                let n: u64 = String::from_utf8_lossy(&seen).parse().unwrap_or(u64::MAX);
                assert_ne!(n, u64::MAX, "counter is not a number: {seen:?}");
                let next = (n + 1).to_string();
                match engine.compare_and_swap(b"counter", Some(&seen), Some(next.as_bytes()))? {
                    CasOutcome::Ok => break,
                    CasOutcome::Conflict { current } => assert_ne!(current, Some(seen)),
                }
            }
        }
        Ok(())
    })?;
    for (round, n) in wins.iter().enumerate() {
        let n = n.load(Ordering::SeqCst);
        let kind = if round < ROUNDS { "insert" } else { "update" };
        assert_eq!(n, 1, "{kind} round {} had {n} winners", round % ROUNDS);
    }
    let mut out = Vec::new();
    assert!(engine.get(b"round", &mut out)?);
    assert_eq!(out, ROUNDS.to_string().into_bytes());
    assert!(engine.get(b"counter", &mut out)?);
    assert_eq!(out, (THREADS * INCREMENTS).to_string().into_bytes());
    Ok(())
}

/// `set_durability(Sync)` sets `synchronous_commit = on` on every open connection and on
/// those opened later, writes still succeed, and `Async` turns it off again.
#[test]
fn set_durability_reaches_every_connection() -> Result<()> {
    let Some(engine) = open_cluster(Durability::Async, pool::POOL_SIZE)? else {
        return Ok(());
    };
    let pool = engine.pool();
    pool.with(|_| pool.with(|_| pool.with(|_| Ok(()))))?; // three sessions open
    assert_eq!(show_synchronous_commit(&engine)?, vec!["off"; 3]);
    assert!(engine.set_durability(Durability::Sync)?);
    engine.put(b"after sync", b"v")?;
    pool.with(|_| pool.with(|_| pool.with(|_| pool.with(|_| Ok(())))))?; // and a fourth
    assert_eq!(show_synchronous_commit(&engine)?, vec!["on"; 4]);
    assert!(engine.set_durability(Durability::Async)?);
    assert_eq!(show_synchronous_commit(&engine)?, vec!["off"; 4]);
    // The UNLOGGED table cannot follow a switch to or from None: refused, nothing changed.
    assert!(!engine.set_durability(Durability::None)?);
    assert_eq!(show_synchronous_commit(&engine)?, vec!["off"; 4]);
    let mut out = Vec::new();
    assert!(engine.get(b"after sync", &mut out)?);
    Ok(())
}

#[test]
fn set_durability_from_none_needs_a_reopen() -> Result<()> {
    let Some(engine) = open_cluster(Durability::None, pool::POOL_SIZE)? else {
        return Ok(());
    };
    assert!(!engine.set_durability(Durability::Sync)?);
    assert!(!engine.set_durability(Durability::Async)?);
    assert_eq!(show_synchronous_commit(&engine)?, vec!["off"]);
    assert!(engine.set_durability(Durability::None)?);
    Ok(())
}

/// With a server we did not start (a URL), closing with several pooled sessions open drops
/// our table and leaves the server running.
#[test]
fn closing_with_a_url_drops_the_table_with_every_session_open() -> Result<()> {
    if let Err(e) = cluster::bindir_from_env() {
        println!("PostgreSQL skipped: {e}");
        return Ok(());
    }
    let (server, mut admin) = PgCluster::start(16 << 20, Durability::Async)?;
    let opts = OpenOptions {
        pg_url: Some(format!(
            "host={} port=5432 user={} dbname=postgres",
            server.root().display(),
            cluster::SUPERUSER
        )),
        ..OpenOptions::default()
    };
    let engine = PgEngine::open(&opts)?;
    let table = engine.pool().table().to_string();
    let pool = engine.pool();
    pool.with(|_| pool.with(|_| engine.put(b"k", b"v")))?;
    assert_eq!(pool.for_each_open(|_| Ok(()))?, 3);
    let exists = |admin: &mut postgres::Client| -> Result<bool> {
        let row = admin
            .query_one("SELECT to_regclass($1::text) IS NOT NULL", &[&table])
            .map_err(perr("test: to_regclass"))?;
        row.try_get(0).map_err(perr("test: to_regclass"))
    };
    assert!(exists(&mut admin)?);
    drop(engine);
    assert!(!exists(&mut admin)?, "{table} left behind");
    Ok(())
}

/// Not a check, a measurement: 8 threads of gets through the pool and through one
/// connection. `cargo test ... pool_measurement -- --ignored --nocapture`.
#[test]
#[ignore = "prints a measurement; run explicitly"]
fn pool_measurement() -> Result<()> {
    const KEYS: usize = 20_000;
    const GETS: usize = 2_000;
    for pool_size in [1, pool::POOL_SIZE] {
        let Some(engine) = open_cluster(Durability::Async, pool_size)? else {
            return Ok(());
        };
        engine.bulk_load(&mut (0..KEYS).map(|i| (key(0, i), value(0, i))))?;
        for threads in [1, THREADS] {
            let started = Instant::now();
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads)
                    .map(|t| {
                        let engine = &engine;
                        scope.spawn(move || {
                            let mut out = Vec::new();
                            for i in 0..GETS {
                                engine.get(&key(0, (i * 7919 + t * 104_729) % KEYS), &mut out)?;
                            }
                            Ok::<_, Error>(())
                        })
                    })
                    .collect();
                handles.into_iter().try_for_each(|h| {
                    h.join()
                        .map_err(|_| Error::backend(NAME, "test", "a test thread panicked"))?
                })
            })?;
            let secs = started.elapsed().as_secs_f64();
            println!(
                "pool {pool_size:2}, {threads} threads: {:.0} gets/s",
                (threads * GETS) as f64 / secs
            );
        }
    }
    Ok(())
}
