//! Direct reads (`DataReads::Direct`): page misses bypass the OS page cache, and every read
//! still sees the latest image, including pages the pool evicted and wrote back through
//! the page cache moments before (the kernel writes a cached range back before a direct
//! read of it). A tiny pool forces the evict-write-reread cycle on every commit. The same
//! scenario runs with buffered reads (`DataReads::Buffered`, a `pread` per miss, no map)
//! and with shared images (`DataReads::Shared`, pages left in place in the map).

mod common;

use std::collections::BTreeMap;

use aimeta_engine::{DataReads, Durability, Readable, Tree, TreeConfig};
use common::{seeded, stamped_value, TestResult};
use rand::RngExt as _;

fn config(dir: &std::path::Path, reads: DataReads) -> TreeConfig {
    TreeConfig::new(dir)
        .cache_bytes(48 * 4096)
        .durability(Durability::Wal { sync: false })
        .data_reads(reads)
}

#[test]
fn direct_reads_see_every_write_through_eviction_and_reopen() -> TestResult {
    every_write_is_read_back(DataReads::Direct)
}

#[test]
fn buffered_reads_see_every_write_through_eviction_and_reopen() -> TestResult {
    every_write_is_read_back(DataReads::Buffered)
}

#[test]
fn shared_images_see_every_write_through_eviction_and_reopen() -> TestResult {
    every_write_is_read_back(DataReads::Shared)
}

fn every_write_is_read_back(reads: DataReads) -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut model = BTreeMap::new();
    let mut rng = seeded(16);
    {
        let tree = Tree::open(config(dir.path(), reads))?;
        for round in 0..40u64 {
            for _ in 0..150 {
                let key = format!(
                    "shard/{:03}/file/{:06}",
                    rng.random_range(0..30),
                    rng.random_range(0..2000)
                );
                let value = stamped_value(key.as_bytes(), round, 40 + rng.random_range(0..200));
                tree.put(key.as_bytes(), &value)?;
                model.insert(key.into_bytes(), value);
            }
            if round % 10 == 9 {
                tree.checkpoint()?;
            }
            // Reads between writes: the pool is far smaller than the tree, so most of
            // them miss and read pages written back moments ago.
            for _ in 0..50 {
                let i = rng.random_range(0..model.len());
                let (k, v) = model.iter().nth(i).ok_or("model index")?;
                assert_eq!(tree.get(k)?.as_deref(), Some(v.as_slice()));
            }
        }
        let m = tree.metrics();
        assert!(m.bm_evictions > 0, "the pool must evict");
        assert_eq!(
            m.bm_shared_pages > 0,
            reads == DataReads::Shared,
            "pages are shared in place only when asked: {} shared",
            m.bm_shared_pages
        );
    }
    let tree = Tree::open(config(dir.path(), reads))?;
    let got: Vec<(Vec<u8>, Vec<u8>)> = tree.range().iter().collect::<Result<_, _>>()?;
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "a full scan after reopen matches the model");
    tree.check_integrity()?;
    Ok(())
}
