//! A checkpoint syncs the log before its switch, outside the writer's lock: with
//! asynchronous commits the log may hold tens of megabytes not yet on disk, and a sync of
//! them taken while commits wait stalled an ingesting writer for a tenth of a second
//! (docs/performance.md, twenty-fourth session). Here the log's first sync during a
//! checkpoint stalls until the test lets it go; an asynchronous commit made meanwhile
//! must complete, while a synchronous one must wait for the sync (it is acknowledged only
//! once on disk) and complete after it; after the checkpoint and a reopen every
//! acknowledged key is there. Without a log there is no log sync to stall.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use aimeta_engine::storage::{FaultPlan, FaultyOpener, SimDisk};
use aimeta_engine::{Durability, Readable, Tree, TreeConfig};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn open(
    disk: &SimDisk,
    plan: &Arc<FaultPlan>,
    dir: &std::path::Path,
    sync: bool,
) -> Result<Tree, aimeta_engine::OpenError> {
    Tree::open(
        TreeConfig::new(dir)
            .durability(Durability::Wal { sync })
            .background_checkpoints(false)
            .storage(Arc::new(FaultyOpener {
                inner: disk.clone(),
                plan: plan.clone(),
            })),
    )
}

#[test]
fn a_commit_completes_while_the_checkpoints_log_sync_is_stalled() -> TestResult {
    commit_beside_a_stalled_log_sync(false)
}

#[test]
fn a_sync_commit_waits_for_the_checkpoints_stalled_log_sync_and_then_completes() -> TestResult {
    commit_beside_a_stalled_log_sync(true)
}

fn commit_beside_a_stalled_log_sync(sync: bool) -> TestResult {
    let disk = SimDisk::new();
    let plan = FaultPlan::new("wal-");
    let dir = tempfile::tempdir()?;
    let tree = open(&disk, &plan, dir.path(), sync)?;
    for i in 0..2_000u32 {
        tree.put(&i.to_be_bytes(), &[7u8; 100])?;
    }

    plan.stall_sync(1);
    let checkpointer = {
        let tree = tree.clone();
        thread::spawn(move || tree.checkpoint())
    };
    assert!(
        plan.wait_for_stall(Duration::from_secs(30)),
        "the checkpoint never synced the log"
    );

    // The checkpoint's first log sync is stalled: a commit must not wait for it.
    let (done, committed) = mpsc::channel();
    let writer = {
        let tree = tree.clone();
        thread::spawn(move || {
            let r = tree.put(b"during the stalled sync", b"acknowledged");
            let _ = done.send(());
            r
        })
    };
    // A synchronous commit cannot be acknowledged before a sync: a short wait shows it.
    let wait = Duration::from_millis(if sync { 300 } else { 10_000 });
    let completed = committed.recv_timeout(wait).is_ok();
    plan.release_stall();
    writer.join().map_err(|_| "writer panicked")??;
    checkpointer.join().map_err(|_| "checkpointer panicked")??;
    if sync {
        assert!(
            !completed,
            "a synchronous commit was acknowledged while the log's sync was stalled"
        );
    } else {
        assert!(
            completed,
            "a commit waited for the log sync of a checkpoint (the sync held the writer's lock)"
        );
    }

    drop(tree);
    let tree = open(&disk, &plan, dir.path(), sync)?;
    assert_eq!(tree.len(), 2_001);
    assert_eq!(
        tree.get(b"during the stalled sync")?.as_deref(),
        Some(&b"acknowledged"[..])
    );
    Ok(())
}
