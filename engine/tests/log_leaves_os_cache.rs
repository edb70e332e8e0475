//! The log leaves the OS page cache behind the appends: a log is read only by recovery,
//! and under a memory cgroup its pages would push out the data file's pages that readers
//! miss on. Without a sync per commit, whole chunks behind the appends are advised out
//! (each twice: the first advice starts its write, the second drops it); with one, the
//! synced whole pages; at a checkpoint's switch, the whole file. The data file's written
//! pages are left to the OS (advising them out cost re-reads; docs/performance.md).

use std::sync::Arc;

use aimeta_engine::storage::SimDisk;
use aimeta_engine::{Durability, Readable, Tree, TreeConfig};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const CHUNK: u64 = 1 << 20;

fn open(
    disk: &SimDisk,
    dir: &std::path::Path,
    sync: bool,
) -> Result<Tree, aimeta_engine::OpenError> {
    Tree::open(
        TreeConfig::new(dir)
            .durability(Durability::Wal { sync })
            .background_checkpoints(false)
            .storage(Arc::new(disk.clone())),
    )
}

#[test]
fn async_appends_advise_the_log_out_behind_them_in_chunks() -> TestResult {
    let disk = SimDisk::new();
    let dir = tempfile::tempdir()?;
    let log = dir.path().join("wal-0.log");
    let tree = open(&disk, dir.path(), false)?;
    for i in 0..30_000u32 {
        tree.put(&i.to_be_bytes(), &[7u8; 100])?;
    }
    let chunks = disk.dropped_ranges(&log);
    assert!(
        chunks.len() >= 2,
        "the log passed two chunk boundaries: {chunks:?}"
    );
    // Whole chunks, each advised twice: the second advice starts where the last one did.
    let mut from = 0;
    for &(offset, len, _) in &chunks {
        assert_eq!(offset % CHUNK, 0);
        assert_eq!(len % CHUNK, 0);
        assert!(offset <= from, "a chunk was skipped: {chunks:?}");
        from = offset + len;
    }
    assert_eq!(chunks[1].0, chunks[0].0 + chunks[0].1 - CHUNK);
    assert!(disk
        .dropped_ranges(&dir.path().join("data.aimkv"))
        .is_empty());

    // The switch advises the whole file out, nothing unsynced in it.
    tree.checkpoint()?;
    let all = disk.dropped_ranges(&log);
    assert_eq!(
        all.last().map(|&(o, _, unsynced)| (o, unsynced)),
        Some((0, false))
    );

    drop(tree);
    let tree = open(&disk, dir.path(), false)?;
    assert_eq!(tree.len(), 30_000);
    Ok(())
}

#[test]
fn sync_commits_advise_out_only_synced_whole_pages() -> TestResult {
    let disk = SimDisk::new();
    let dir = tempfile::tempdir()?;
    let tree = open(&disk, dir.path(), true)?;
    for i in 0..300u32 {
        tree.put(&i.to_be_bytes(), &[9u8; 100])?;
    }
    let dropped = disk.dropped_ranges(&dir.path().join("wal-0.log"));
    assert!(!dropped.is_empty());
    assert!(dropped
        .iter()
        .all(|&(o, len, unsynced)| !unsynced && o % 4096 == 0 && len % 4096 == 0));
    drop(tree);
    let tree = open(&disk, dir.path(), true)?;
    assert_eq!(tree.len(), 300);
    Ok(())
}
