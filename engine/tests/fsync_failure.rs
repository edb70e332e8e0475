//! After a failed fsync the tree refuses writes with a clear error (it does not retry and
//! carry on), and reads keep working.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use aimeta_engine::storage::{FaultPlan, FaultyOpener, FileOpener};
use aimeta_engine::{Durability, Error, OpenError, Readable, Tree, TreeConfig};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn open(dir: &std::path::Path, plan: &Arc<FaultPlan>, sync: bool) -> Result<Tree, OpenError> {
    Tree::open(
        TreeConfig::new(dir)
            .durability(Durability::Wal { sync })
            .background_checkpoints(false)
            .storage(Arc::new(FaultyOpener {
                inner: FileOpener,
                plan: plan.clone(),
            })),
    )
}

#[test]
fn a_failed_log_fsync_stops_writes_but_not_reads() -> TestResult {
    let dir = tempfile::tempdir()?;
    let plan = FaultPlan::new("wal");
    let tree = open(dir.path(), &plan, true)?;
    tree.put(b"before", b"1")?;
    plan.fsync_fail_after.store(1, Ordering::SeqCst);
    let err = tree.put(b"during", b"2").expect_err("the fsync fails");
    assert!(err.to_string().contains("injected fault"), "{err}");
    let err = tree.put(b"after", b"3").expect_err("writes are refused");
    assert!(matches!(err, Error::WritesRefused { .. }), "{err}");
    assert!(err.to_string().contains("reads still work"), "{err}");
    assert!(matches!(
        tree.delete(b"before"),
        Err(Error::WritesRefused { .. })
    ));
    assert!(matches!(
        tree.checkpoint(),
        Err(Error::WritesRefused { .. }) | Err(_)
    ));
    assert_eq!(tree.get(b"before")?, Some(b"1".to_vec()));
    assert_eq!(tree.range().iter().count(), 2);
    // A reopen recovers from the log: the acknowledged write is there.
    drop(tree);
    plan.fsync_fail_after.store(-1, Ordering::SeqCst);
    let tree = open(dir.path(), &plan, true)?;
    assert_eq!(tree.get(b"before")?, Some(b"1".to_vec()));
    tree.put(b"again", b"4")?;
    Ok(())
}

#[test]
fn a_failed_data_fsync_at_checkpoint_stops_writes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let plan = FaultPlan::new("data");
    let tree = open(dir.path(), &plan, false)?;
    for i in 0..100u32 {
        tree.put(&i.to_be_bytes(), b"v")?;
    }
    plan.fsync_fail_after.store(1, Ordering::SeqCst);
    assert!(tree.checkpoint().is_err());
    assert!(matches!(
        tree.put(b"x", b"y"),
        Err(Error::WritesRefused { .. })
    ));
    assert_eq!(tree.get(&7u32.to_be_bytes())?, Some(b"v".to_vec()));
    drop(tree);
    plan.fsync_fail_after.store(-1, Ordering::SeqCst);
    let tree = open(dir.path(), &plan, false)?;
    assert_eq!(tree.len(), 100);
    tree.check_integrity()?;
    Ok(())
}
