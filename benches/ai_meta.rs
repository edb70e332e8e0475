//! `cargo bench --bench ai_meta`: the engine on the seed report's manifest shape, point
//! gets and 100-entry prefix scans on a store several times larger than the pool, in
//! paged mode and in the full-frame reproduction mode. Set-up happens outside timing;
//! criterion's iter_custom times only the operations. The cross-engine suite (LMDB,
//! RocksDB, SQLite, redb, PostgreSQL) and the results JSON join this entry point with the
//! workloads.

use std::time::{Duration, Instant};

use aimeta_engine::{ScanIo, Tree, TreeConfig};
use criterion::{criterion_group, criterion_main, Criterion};

const SHARDS: u32 = 40;
const PER_SHARD: u32 = 10_000;
const POOL_BYTES: u64 = 4 << 20;

fn key(s: u32, i: u32) -> Vec<u8> {
    format!("ds/laion/shard-{s:05}/sample-{i:08}").into_bytes()
}

fn value(s: u32, i: u32) -> [u8; 24] {
    let mut v = [0u8; 24];
    v[..8].copy_from_slice(&u64::from(s).to_le_bytes());
    v[8..16].copy_from_slice(&u64::from(i).to_le_bytes());
    v[16..].copy_from_slice(&(u64::from(s) * 1_000_003 + u64::from(i)).to_le_bytes());
    v
}

/// xorshift: deterministic query choice without a dependency.
fn rng(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn bench(c: &mut Criterion) {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("ai_meta bench: no temporary directory: {e}");
            return;
        }
    };
    let load = Tree::open(TreeConfig::new(dir.path()).cache_bytes(POOL_BYTES)).and_then(|t| {
        t.bulk_load((0..SHARDS).flat_map(|s| (0..PER_SHARD).map(move |i| (key(s, i), value(s, i)))))
    });
    if let Err(e) = load {
        eprintln!("ai_meta bench: load failed: {e}");
        return;
    }
    let mut group = c.benchmark_group("engine_manifest_2x_pool");
    for (name, mode) in [("paged", ScanIo::Paged), ("full_frame", ScanIo::FullFrame)] {
        let tree = match Tree::open(
            TreeConfig::new(dir.path())
                .cache_bytes(POOL_BYTES)
                .scan_io(mode),
        ) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("ai_meta bench: open failed: {e}");
                return;
            }
        };
        group.bench_function(format!("manifest_scan/{name}"), |b| {
            let mut state = 0x5EED;
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let s = (rng(&mut state) % u64::from(SHARDS)) as u32;
                    let prefix = format!("ds/laion/shard-{s:05}/");
                    let start = Instant::now();
                    let mut scan = tree.range().prefix(prefix.as_bytes()).limit(100).iter();
                    let mut n = 0;
                    while let Ok(Some(_)) = scan.next_entry() {
                        n += 1;
                    }
                    total += start.elapsed();
                    assert_eq!(n, 100);
                }
                total
            })
        });
        group.bench_function(format!("manifest_get/{name}"), |b| {
            let mut state = 0xBEEF;
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let r = rng(&mut state);
                    let k = key(
                        (r % u64::from(SHARDS)) as u32,
                        ((r >> 20) % u64::from(PER_SHARD)) as u32,
                    );
                    let start = Instant::now();
                    let hit = tree.get_with(&k, |v| v.len());
                    total += start.elapsed();
                    assert!(matches!(hit, Ok(Some(24))));
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
