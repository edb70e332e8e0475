//! checkpoint() is a barrier: after it returns, a reopen replays nothing. The background
//! checkpointer runs by log size and stops when the tree is dropped.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aimeta_engine::storage::{FaultPlan, FaultyOpener, SimDisk};
use aimeta_engine::{Durability, Readable, Tree, TreeConfig};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn after_a_checkpoint_a_crash_replays_nothing() -> TestResult {
    let disk = SimDisk::new();
    let plan = FaultPlan::new("");
    let dir = tempfile::tempdir()?;
    let open = || {
        Tree::open(
            TreeConfig::new(dir.path())
                .durability(Durability::Wal { sync: false })
                .background_checkpoints(false)
                .storage(Arc::new(FaultyOpener {
                    inner: disk.clone(),
                    plan: plan.clone(),
                })),
        )
    };
    let tree = open()?;
    for i in 0..500u32 {
        tree.put(&i.to_be_bytes(), &[7u8; 40])?;
    }
    tree.checkpoint()?;
    plan.fail_after_ops.store(0, Ordering::SeqCst);
    drop(tree);
    plan.fail_after_ops.store(-1, Ordering::SeqCst);
    disk.crash();
    let tree = open()?;
    assert_eq!(tree.metrics().wal_replayed_records, 0);
    assert_eq!(tree.len(), 500);
    tree.check_integrity()?;
    Ok(())
}

#[test]
fn the_background_checkpointer_runs_by_log_size_and_stops_on_drop() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = Tree::open(
        TreeConfig::new(dir.path())
            .durability(Durability::Wal { sync: false })
            .checkpoint_log_bytes(32 * 1024)
            .checkpoint_interval(Duration::from_secs(3600)),
    )?;
    for i in 0..2000u32 {
        tree.put(&i.to_be_bytes(), &[1u8; 100])?;
    }
    // Wait for the event, not for a duration: the checkpointer was kicked by the writes.
    let deadline = Instant::now() + Duration::from_secs(60);
    while tree.metrics().checkpoints == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let m = tree.metrics();
    assert!(
        m.checkpoints > 0,
        "the log passed its threshold but no checkpoint ran"
    );
    assert!(m.checkpoint_seq > 0);
    drop(tree);
    // The thread is gone and the directory can be opened again at once.
    let tree = Tree::open(TreeConfig::new(dir.path()))?;
    assert_eq!(tree.len(), 2000);
    assert_eq!(tree.metrics().wal_replayed_records, 0);
    Ok(())
}
