//! Conformance: every engine compiled in loads the same data set and must answer every query
//! exactly like a `BTreeMap` model, the reference. One test per engine (add the project's own
//! engine with one line in `engine_cases!`); PostgreSQL runs on a throwaway cluster and is
//! skipped with one printed line where no server binaries are installed.

// Built with no engine feature, the suite has no test to run and its helpers go unused.
#![cfg_attr(
    not(any(
        feature = "rocksdb",
        feature = "sqlite",
        feature = "lmdb",
        feature = "redb",
        feature = "postgres",
        feature = "etcd"
    )),
    allow(dead_code, unused_imports)
)]

mod common;

use aimeta_adapters::{
    open, BatchOp, CacheBudget, CasOutcome, Durability, EngineKind, Error, KvEngine, LpmMethod,
    OpenOptions,
};
use common::*;
use std::io::Write;

type TestResult = Result<(), Box<dyn std::error::Error>>;

macro_rules! engine_cases {
    ($($(#[$m:meta])* $test:ident => $kind:expr;)*) => {$(
        $(#[$m])*
        #[test]
        fn $test() -> TestResult {
            run_kind($kind)
        }
    )*};
}

engine_cases! {
    #[cfg(feature = "aimeta")] aimeta_conforms => EngineKind::Aimeta;
    #[cfg(feature = "rocksdb")] rocksdb_conforms => EngineKind::RocksDb;
    #[cfg(feature = "sqlite")] sqlite_conforms => EngineKind::Sqlite;
    #[cfg(feature = "sqlite")] sqlite_tuned_conforms => EngineKind::SqliteTuned;
    #[cfg(feature = "lmdb")] lmdb_conforms => EngineKind::Lmdb;
    #[cfg(feature = "redb")] redb_conforms => EngineKind::Redb;
    #[cfg(feature = "postgres")] postgres_conforms => EngineKind::Postgres;
    #[cfg(feature = "etcd")] etcd_conforms => EngineKind::Etcd;
    #[cfg(feature = "etcd")] etcd_1_conforms => EngineKind::Etcd1;
}

fn options(durability: Durability) -> OpenOptions {
    OpenOptions {
        cache: CacheBudget::mib(8),
        durability,
        expected_data_bytes: 4 << 20,
        // A throwaway cluster, unless AI_META_PG_URL names a server (then a table of our own).
        pg_url: None,
        direct_reads: false,
        memory_limit_bytes: None,
        absent_key_lookups: false,
        // A throwaway etcd cluster in the engine's directory.
        etcd_endpoints: None,
        read_consistency: Default::default(),
    }
}

/// Opens `kind`, or returns `None` after printing why PostgreSQL or etcd is skipped on this
/// machine (no server binaries).
fn open_or_skip(
    kind: EngineKind,
    dir: &std::path::Path,
    durability: Durability,
) -> Result<Option<Box<dyn KvEngine>>, Error> {
    match open(kind, dir, &options(durability)) {
        Ok(e) => Ok(Some(e)),
        Err(e) if e.is_unavailable() => {
            // Straight to stderr, past the test harness's capture, so the skip is visible.
            let _ = writeln!(std::io::stderr(), "{} skipped: {e}", kind.name());
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

fn run_kind(kind: EngineKind) -> TestResult {
    let dir = tempfile::tempdir()?;
    let Some(engine) = open_or_skip(kind, &dir.path().join("main"), Durability::Async)? else {
        return Ok(());
    };
    assert_eq!(engine.name(), kind.name());
    assert_eq!(
        engine.capabilities().durability,
        kind.durabilities(),
        "{}: capabilities against EngineKind::durabilities",
        kind.name()
    );
    conformance(engine.as_ref())?;
    concurrent_cas(engine.as_ref())?;
    drop(engine);
    for durability in [Durability::None, Durability::Sync] {
        let sub = dir.path().join(format!("{durability:?}"));
        if let Some(engine) = open_or_skip(kind, &sub, durability)? {
            durability_smoke(engine.as_ref())?;
        }
    }
    Ok(())
}

/// The whole suite against one open engine; generic over `dyn KvEngine`.
fn conformance(e: &dyn KvEngine) -> TestResult {
    let name = e.name();
    let caps = e.capabilities();
    let mut model = dataset();

    // Bulk load in two calls (the second strictly above the first), then a refused one.
    let split: &[u8] = b"zz";
    let first: Vec<_> = model
        .range(..split.to_vec())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let second: Vec<_> = model
        .range(split.to_vec()..)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(
        e.bulk_load(&mut first.clone().into_iter())?,
        first.len() as u64,
        "{name}"
    );
    assert_eq!(
        e.bulk_load(&mut second.clone().into_iter())?,
        second.len() as u64,
        "{name}"
    );
    let below_max = vec![(b"ds/zzz-late".to_vec(), b"x".to_vec())];
    match e.bulk_load(&mut below_max.into_iter()) {
        Err(Error::UnsortedInput { index: 0, .. }) => {}
        other => panic!("{name}: bulk_load below the stored max gave {other:?}"),
    }
    let above_max = |last: u8| vec![0xFF, 0xFF, 0xFF, 0xFF, last];
    let unsorted = vec![(above_max(2), b"x".to_vec()), (above_max(1), b"x".to_vec())];
    match e.bulk_load(&mut unsorted.into_iter()) {
        Err(Error::UnsortedInput { index: 1, .. }) => {}
        other => panic!("{name}: unsorted bulk_load gave {other:?}"),
    }
    // "Pairs before it may be stored": drop the one that may have been, in model and engine.
    e.delete(&above_max(2))?;
    assert_full_contents(e, &model)?;

    check_gets(e, &model)?;
    check_scans(e, &model)?;
    check_listing(e, &model)?;
    check_lpm(e, &model)?;
    check_counts(e, &model)?;

    // Native longest-prefix is refused with a typed error where the engine has none.
    let mut out = Vec::new();
    if !caps.native_longest_prefix {
        match e.longest_prefix(b"kv/llama70b", LpmMethod::Native, &mut out) {
            Err(Error::Unsupported { engine, .. }) => assert_eq!(engine, name),
            other => panic!("{name}: LpmMethod::Native gave {other:?}"),
        }
    }

    check_writes(e, &mut model)?;
    assert_full_contents(e, &model)?;
    check_batches(e, &mut model)?;
    assert_full_contents(e, &model)?;
    check_key_limits(e, &mut model)?;

    e.checkpoint()?;
    assert!(
        e.size_on_disk()? > 0,
        "{name}: size_on_disk is 0 after checkpoint"
    );
    assert_eq!(
        e.io_counters().is_some(),
        caps.io_counters,
        "{name}: io_counters vs capabilities"
    );
    // Every engine has the asynchronous log, except etcd, which fsyncs every commit.
    assert!(
        caps.durability.contains(&Durability::Async) || caps.durability == [Durability::Sync],
        "{name}: {:?}",
        caps.durability
    );
    Ok(())
}

/// put, overwrite, delete, the empty key, and every compare-and-swap outcome.
fn check_writes(e: &dyn KvEngine, model: &mut Model) -> TestResult {
    let name = e.name();
    let mut out = Vec::new();
    let writes: [(&[u8], Option<&[u8]>); 6] = [
        (b"new/key", Some(b"fresh")),
        (
            b"ds/laion/shard-00001/sample-00000001",
            Some(b"overwritten"),
        ),
        (b"ds/laion/shard-00001/sample-00000002", None),
        (b"never/stored", None),
        (&[0xFF, 0xFF, 0xFF, 0xFF], Some(b"")),
        (&[0x00, 0x00], None),
    ];
    for (k, v) in writes {
        match v {
            Some(v) => {
                e.put(k, v)?;
                model.insert(k.to_vec(), v.to_vec());
            }
            None => {
                e.delete(k)?;
                model.remove(k);
            }
        }
        assert_eq!(
            e.get(k, &mut out)?,
            v.is_some(),
            "{name}: get after write {k:?}"
        );
        assert_eq!(
            out,
            v.unwrap_or_default(),
            "{name}: value after write {k:?}"
        );
    }
    assert!(
        matches!(e.put(b"", b"v"), Err(Error::InvalidKey { .. })),
        "{name}: empty key"
    );

    let k: &[u8] = b"cas/key";
    let cas = |exp: Option<&[u8]>, new: Option<&[u8]>| e.compare_and_swap(k, exp, new);
    assert_eq!(
        cas(None, Some(b"v1"))?,
        CasOutcome::Ok,
        "{name}: insert-if-absent"
    );
    let conflict = CasOutcome::Conflict {
        current: Some(b"v1".to_vec()),
    };
    assert_eq!(
        cas(None, Some(b"v2"))?,
        conflict,
        "{name}: insert over a present key"
    );
    assert_eq!(
        cas(Some(b"wrong"), Some(b"v2"))?,
        conflict,
        "{name}: wrong expected value"
    );
    assert_eq!(
        cas(Some(b"v1"), Some(b"v2"))?,
        CasOutcome::Ok,
        "{name}: swap"
    );
    assert!(e.get(k, &mut out)?, "{name}: key present after swap");
    assert_eq!(out, b"v2", "{name}: value after swap");
    assert_eq!(
        cas(Some(b"v2"), None)?,
        CasOutcome::Ok,
        "{name}: delete by CAS"
    );
    assert!(!e.get(k, &mut out)?, "{name}: key gone after CAS delete");
    let absent = CasOutcome::Conflict { current: None };
    assert_eq!(
        cas(Some(b"v2"), Some(b"v3"))?,
        absent,
        "{name}: CAS on an absent key"
    );
    assert_eq!(
        cas(None, None)?,
        CasOutcome::Ok,
        "{name}: absent stays absent"
    );
    assert_eq!(
        cas(None, Some(b""))?,
        CasOutcome::Ok,
        "{name}: CAS insert of an empty value"
    );
    assert_eq!(
        cas(Some(b""), Some(b"v4"))?,
        CasOutcome::Ok,
        "{name}: CAS from an empty value"
    );
    model.insert(k.to_vec(), b"v4".to_vec());
    Ok(())
}

/// Atomic batches: puts, overwrites and deletes applied in order (a later write of a key
/// wins), deletes of absent and empty keys as no-ops, and a batch with an invalid put
/// refused whole.
fn check_batches(e: &dyn KvEngine, model: &mut Model) -> TestResult {
    let name = e.name();
    let existing = model.keys().next().ok_or("empty model")?.clone();
    let overwritten = model.keys().nth(1).ok_or("model too small")?.clone();
    let ops = [
        BatchOp::Put {
            key: b"batch/a",
            value: b"1",
        },
        BatchOp::Put {
            key: &overwritten,
            value: b"overwritten",
        },
        BatchOp::Delete { key: &existing },
        BatchOp::Delete {
            key: b"batch/absent",
        },
        BatchOp::Delete { key: b"" },
        BatchOp::Put {
            key: b"batch/b",
            value: b"first",
        },
        BatchOp::Delete { key: b"batch/b" },
        BatchOp::Delete { key: b"batch/c" },
        BatchOp::Put {
            key: b"batch/c",
            value: b"last",
        },
        BatchOp::Put {
            key: b"batch/a",
            value: b"2",
        },
    ];
    e.write_batch(&ops)?;
    for op in ops {
        match op {
            BatchOp::Put { key, value } => model.insert(key.to_vec(), value.to_vec()),
            BatchOp::Delete { key } => model.remove(key),
        };
    }
    assert_full_contents(e, model)?;
    e.write_batch(&[])?;
    let refused = [
        BatchOp::Put {
            key: b"batch/d",
            value: b"never",
        },
        BatchOp::Delete { key: b"batch/a" },
        BatchOp::Put {
            key: b"",
            value: b"empty key",
        },
    ];
    match e.write_batch(&refused) {
        Err(Error::InvalidKey { .. }) => {}
        other => panic!("{name}: a batch with an empty key gave {other:?}"),
    }
    assert_full_contents(e, model)?;
    Ok(())
}

/// A short life in another durability mode: writes, CAS, a checkpoint and a size.
fn durability_smoke(e: &dyn KvEngine) -> TestResult {
    let name = e.name();
    let pairs: Vec<_> = (0..200u32)
        .map(|i| (format!("d/{i:05}").into_bytes(), i.to_be_bytes().to_vec()))
        .collect();
    e.bulk_load(&mut pairs.into_iter())?;
    e.put(b"d/00007", b"seven")?;
    e.write_batch(&[
        BatchOp::Delete { key: b"d/00008" },
        BatchOp::Put {
            key: b"d/00010",
            value: b"ten",
        },
    ])?;
    assert_eq!(
        e.compare_and_swap(b"d/00009", Some(&9u32.to_be_bytes()), Some(b"nine"))?,
        CasOutcome::Ok
    );
    e.checkpoint()?;
    let mut out = Vec::new();
    assert!(e.get(b"d/00007", &mut out)? && out == b"seven", "{name}");
    assert!(!e.get(b"d/00008", &mut out)?, "{name}");
    assert!(e.get(b"d/00010", &mut out)? && out == b"ten", "{name}");
    assert!(e.get(b"d/00009", &mut out)? && out == b"nine", "{name}");
    assert_eq!(e.count_range(b"d/", b"d0")?, 199, "{name}");
    assert!(e.size_on_disk()? > 0, "{name}");
    Ok(())
}

/// Four threads increment one counter with compare-and-swap retry loops; no update may be lost.
fn concurrent_cas(e: &dyn KvEngine) -> TestResult {
    const THREADS: u64 = 4;
    const EACH: u64 = 25;
    let key: &[u8] = b"counter";
    let results: Vec<Result<u64, Error>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(move || -> Result<u64, Error> {
                    let mut conflicts = 0u64;
                    let mut cur: Option<Vec<u8>> = None;
                    let mut done = 0;
                    while done < EACH {
                        let n = cur
                            .as_deref()
                            .map_or(0, |b| u64::from_be_bytes(b.try_into().unwrap_or([0; 8])));
                        match e.compare_and_swap(
                            key,
                            cur.as_deref(),
                            Some(&(n + 1).to_be_bytes()),
                        )? {
                            CasOutcome::Ok => {
                                cur = Some((n + 1).to_be_bytes().to_vec());
                                done += 1;
                            }
                            CasOutcome::Conflict { current } => {
                                cur = current;
                                conflicts += 1;
                            }
                        }
                    }
                    Ok(conflicts)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or(Ok(u64::MAX)))
            .collect()
    });
    for r in results {
        assert_ne!(r?, u64::MAX, "{}: a CAS worker panicked", e.name());
    }
    let mut out = Vec::new();
    assert!(e.get(key, &mut out)?, "{}: counter missing", e.name());
    assert_eq!(
        out,
        (THREADS * EACH).to_be_bytes(),
        "{}: lost CAS updates",
        e.name()
    );
    Ok(())
}
