//! What an etcd range costs against the keys it spans, on a throwaway one-member cluster
//! holding the quick scale's beyond-the-budget manifest (60 shards of 10,000 samples):
//! point gets before and after the adapter's checkpoint (etcd 3.4's read buffer), one-key
//! ranges over prefixes spanning 1 to 600,000 keys (etcd 3.4 collects a range's whole index
//! before it applies the limit), a 100-entry scan from inside a shard, and 20-item
//! listings. docs/fairness.md quotes its output.
//!
//! `cargo run --release -p aimeta-adapters --example etcd_ranges [DIR]` (default DIR
//! /var/tmp/etcd-ranges; the cluster and its data are removed at the end).

use aimeta_adapters::{open, EngineKind, OpenOptions};
use std::error::Error;
use std::time::Instant;

const SHARD: &[u8] = b"ds/laion/shard-00012/sample-00000042";

/// Runs `f` `n` times and prints its mean time.
fn time(
    label: &str,
    n: u32,
    mut f: impl FnMut() -> aimeta_adapters::Result<()>,
) -> Result<(), Box<dyn Error>> {
    let start = Instant::now();
    for _ in 0..n {
        f()?;
    }
    let us = start.elapsed().as_secs_f64() * 1e6 / f64::from(n);
    println!("{label:48} {us:10.1} us");
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::args().nth(1).map_or_else(
        || std::path::PathBuf::from("/var/tmp/etcd-ranges"),
        Into::into,
    );
    let _ = std::fs::remove_dir_all(&dir);
    let opts = OpenOptions {
        expected_data_bytes: 40 << 20,
        ..OpenOptions::default()
    };
    let e = open(EngineKind::Etcd1, &dir, &opts)?;
    let mut pairs = (0..60u32).flat_map(|s| {
        (0..10_000u32).map(move |i| {
            let key = format!("ds/laion/shard-{s:05}/sample-{i:08}").into_bytes();
            (key, vec![7u8; 24])
        })
    });
    let start = Instant::now();
    e.bulk_load(&mut pairs)?;
    println!(
        "bulk load of 600,000 keys: {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let mut out = Vec::new();
    time("get, after the load", 200, || {
        e.get(SHARD, &mut out).map(drop)
    })?;
    let start = Instant::now();
    e.checkpoint()?;
    println!("checkpoint: {:.2} s", start.elapsed().as_secs_f64());
    time("get, after the checkpoint", 500, || {
        e.get(SHARD, &mut out).map(drop)
    })?;
    for (keys, prefix) in [
        (1, &b"ds/laion/shard-00012/sample-00000042"[..]),
        (10, b"ds/laion/shard-00012/sample-0000004"),
        (100, b"ds/laion/shard-00012/sample-000000"),
        (1_000, b"ds/laion/shard-00012/sample-00000"),
        (10_000, b"ds/laion/shard-00012/"),
        (100_000, b"ds/laion/shard-0001"),
        (600_000, b"ds/laion/"),
    ] {
        let n = if keys >= 100_000 { 20 } else { 200 };
        time(&format!("first key of a range over {keys} keys"), n, || {
            e.scan_prefix(prefix, 1, &mut |_, _| {}).map(drop)
        })?;
    }
    time("scan_range of 100 from inside a shard", 200, || {
        e.scan_range(SHARD, 100, &mut |_, _| {}).map(drop)
    })?;
    for shard in [12, 50] {
        let after = format!("ds/laion/shard-{shard:05}").into_bytes();
        time(&format!("list 20 from shard {shard}"), 20, || {
            e.list_delimited(b"ds/laion/", Some(&after), b'/', 20, &mut |_| {})
                .map(drop)
        })?;
    }
    Ok(())
}
