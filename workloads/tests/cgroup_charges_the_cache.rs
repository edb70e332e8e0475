//! The cgroup budget mode bounds an engine's own cache, not only the page cache: an
//! engine closed before a phase and reopened inside the phase's memory cgroup has its
//! cache charged to that group. Without handing the heap's free pages back to the kernel
//! before entering, the reopened engine got the pages its predecessor had freed, still
//! charged to the group they were first touched in, and 0 bytes of its 16 MiB pool were
//! charged to the phase (measured at the seed scale; docs/fairness.md).
//!
//! Needs root and a writable memory cgroup, as the cgroup mode does; elsewhere it says so
//! and passes.

use aimeta_adapters::{open, CacheBudget, Durability, EngineKind, KvEngine, OpenOptions};
use aimeta_workloads::run::CgroupGuard;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const KEYS: u32 = 60_000;
const VALUE: [u8; 300] = [7; 300];

fn key(i: u32) -> Vec<u8> {
    format!("ds/shard-{:05}/sample-{i:08}", i % 97).into_bytes()
}

/// Reads every key, so that the pool fills to its budget.
fn read_all(engine: &dyn KvEngine) -> TestResult {
    let mut out = Vec::new();
    for i in 0..KEYS {
        assert!(engine.get(&key(i), &mut out)?, "key {i} lost");
        assert_eq!(out, VALUE);
    }
    Ok(())
}

#[test]
fn a_reopened_engines_cache_is_charged_to_the_phase_group() -> TestResult {
    let dir = tempfile::tempdir()?;
    let options = OpenOptions {
        cache: CacheBudget::mib(16),
        durability: Durability::Async,
        // Reads that copy each page into the pool's own memory, as every engine with a
        // cache of its own does (RocksDB's block cache, SQLite's and redb's caches). In the
        // cgroup mode this engine shares the page cache's copies instead
        // (`DataReads::Shared`), whose pages the kernel charges where they are read.
        direct_reads: false,
        memory_limit_bytes: None,
        ..OpenOptions::default()
    };
    let engine = open(EngineKind::Aimeta, dir.path(), &options)?;
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..KEYS).map(|i| (key(i), VALUE.to_vec())).collect();
    pairs.sort();
    engine.bulk_load(&mut pairs.into_iter())?;
    // The store (about 20 MiB) is larger than the pool: reading it fills the pool.
    read_all(engine.as_ref())?;
    drop(engine);

    let guard = match CgroupGuard::enter(1 << 30) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("skipped: no writable memory cgroup here ({e})");
            return Ok(());
        }
    };
    let engine = open(EngineKind::Aimeta, dir.path(), &options)?;
    read_all(engine.as_ref())?;
    let charged = guard
        .charged_anon_bytes()
        .ok_or("the group's memory.stat has no rss/anon line")?;
    drop(engine);
    drop(guard);
    assert!(
        charged >= 12 << 20,
        "only {charged} bytes of anonymous memory charged to the phase's group while a \
         16 MiB pool filled"
    );
    Ok(())
}
