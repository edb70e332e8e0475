//! Single-put sync commits on one engine, timed, for profiling the sync_put gap with
//! `strace -f -c` (system calls per commit) or callgrind: opens a fresh store with
//! `Durability::Sync`, loads `preload` keys, then commits `n` single puts from one thread
//! and prints commits per second.
//!
//! `cargo run --release -p aimeta-workloads --all-features --example sync_put_profile -- <engine> [n] [preload]`
//! (defaults: 2,000 puts after 100,000 keys).

use std::time::Instant;

use aimeta_adapters::{open, CacheBudget, Durability, EngineKind, OpenOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind: EngineKind = args.first().map_or("aimeta", |s| s).parse()?;
    let n: u64 = args.get(1).map_or(Ok(2_000), |s| s.parse())?;
    let preload: u64 = args.get(2).map_or(Ok(100_000), |s| s.parse())?;
    let dir = tempfile::tempdir_in("/var/tmp")?;
    let options = OpenOptions {
        cache: CacheBudget::mib(64),
        durability: Durability::Sync,
        ..OpenOptions::default()
    };
    let engine = open(kind, dir.path(), &options)?;
    let mut pairs = (0..preload).map(|i| (format!("ds/{i:012}").into_bytes(), vec![7u8; 24]));
    engine.bulk_load(&mut pairs)?;
    let t = Instant::now();
    for i in 0..n {
        engine.put(format!("sync_put/{i:08}").as_bytes(), &[9u8; 24])?;
    }
    let took = t.elapsed();
    println!(
        "{kind}: {n} sync puts in {:.2} s, {:.0} commits/s, {:.1} us each",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64(),
        took.as_secs_f64() * 1e6 / n as f64
    );
    Ok(())
}
