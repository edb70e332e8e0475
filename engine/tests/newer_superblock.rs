//! A superblock copy written by a newer format version refuses the open, whichever copy it
//! is and whatever the other copy says, and nothing in the directory is written: opening
//! from the older copy would replay the log and overwrite the newer superblock, a
//! downgrade that destroys what the newer build wrote.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use aimeta_engine::storage::{FaultPlan, FaultyOpener, FileOpener};
use aimeta_engine::testing::{Superblock, FORMAT_VERSION, META_LEN};
use aimeta_engine::{Durability, OpenError, Tree, TreeConfig};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn config(dir: &Path) -> TreeConfig {
    TreeConfig::new(dir)
        .durability(Durability::Wal { sync: true })
        .background_checkpoints(false)
}

/// Every file of the directory but the lock, with its bytes.
fn files(dir: &Path) -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != "LOCK" {
            out.push((name, std::fs::read(entry.path())?));
        }
    }
    out.sort();
    Ok(out)
}

#[test]
fn a_newer_version_in_either_superblock_copy_refuses_the_open_and_writes_nothing() -> TestResult {
    for slot in 0..2usize {
        let dir = tempfile::tempdir()?;
        let plan = FaultPlan::new("");
        let tree = Tree::open(config(dir.path()).storage(Arc::new(FaultyOpener {
            inner: FileOpener,
            plan: plan.clone(),
        })))?;
        for i in 0..50u32 {
            tree.put(&i.to_be_bytes(), b"checkpointed")?;
        }
        tree.checkpoint()?;
        tree.put(b"after", b"in the log only")?;
        tree.checkpoint()?;
        // Commits the next open would replay and checkpoint, rewriting a superblock copy.
        for i in 0..20u32 {
            tree.put(&(1000 + i).to_be_bytes(), b"logged")?;
        }
        // The process dies: nothing more reaches the files.
        plan.fail_after_ops.store(0, Ordering::SeqCst);
        drop(tree);

        let path = dir.path().join("data.aimkv");
        let mut bytes = std::fs::read(&path)?;
        let at = slot * 4096;
        let sb = Superblock::decode(&bytes[at..at + META_LEN]).map_err(|e| e.to_string())?;
        Superblock {
            version: FORMAT_VERSION + 1,
            ..sb
        }
        .encode(&mut bytes[at..at + META_LEN]);
        std::fs::write(&path, &bytes)?;
        let before = files(dir.path())?;

        let e = Tree::open(config(dir.path())).expect_err("a newer superblock copy");
        assert!(
            matches!(e, OpenError::FormatTooNew { found, .. } if found == FORMAT_VERSION + 1),
            "slot {slot}: {e}"
        );
        assert!(e.to_string().contains("newer aimeta-engine"), "{e}");
        assert!(
            files(dir.path())? == before,
            "slot {slot}: the refused open changed the directory"
        );
    }
    Ok(())
}
