//! A torn record at the end of the log is zeroed (and counted); damage that a later
//! record proves had already reached the disk is an error naming the log, never a silent
//! truncation.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use aimeta_engine::storage::{FaultPlan, FaultyOpener, SimDisk};
use aimeta_engine::{Durability, Error, OpenError, Readable, Tree, TreeConfig};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Bytes of one logged `put` of an 8-byte key and a 4-byte value, padded to 8.
const RECORD: usize = 56;
const HEADER: usize = 32;

struct Setup {
    disk: SimDisk,
    plan: Arc<FaultPlan>,
    dir: tempfile::TempDir,
    sync: bool,
}

impl Setup {
    fn new(sync: bool) -> Result<Self, std::io::Error> {
        Ok(Setup {
            disk: SimDisk::new(),
            plan: FaultPlan::new(""),
            dir: tempfile::tempdir()?,
            sync,
        })
    }

    fn open(&self) -> Result<Tree, OpenError> {
        Tree::open(
            TreeConfig::new(self.dir.path())
                .durability(Durability::Wal { sync: self.sync })
                .background_checkpoints(false)
                .storage(Arc::new(FaultyOpener {
                    inner: self.disk.clone(),
                    plan: self.plan.clone(),
                })),
        )
    }

    /// Commits 100 puts after a checkpoint, then the process dies without closing.
    fn write_and_die(&self) -> Result<(), Error> {
        let tree = self.open()?;
        tree.checkpoint()?;
        for i in 0..100u32 {
            tree.put(format!("key-{i:04}").as_bytes(), &i.to_le_bytes())?;
        }
        self.plan.fail_after_ops.store(0, Ordering::SeqCst);
        drop(tree);
        self.plan.fail_after_ops.store(-1, Ordering::SeqCst);
        Ok(())
    }

    /// The log file holding the 100 commits: their records, then only zeros (a log file
    /// grows by chunks of zeros and is filled with them ahead of its epoch).
    fn active_log(&self) -> Result<(std::path::PathBuf, Vec<u8>), String> {
        let end = HEADER + 100 * RECORD;
        for name in ["wal-0.log", "wal-1.log"] {
            let path = self.dir.path().join(name);
            let bytes = self.disk.read_raw(&path).ok_or("no log file")?;
            if bytes.len() >= end
                && bytes[end - RECORD..end].iter().any(|&b| b != 0)
                && bytes[end..].iter().all(|&b| b == 0)
            {
                return Ok((path, bytes));
            }
        }
        Err("no log file holds exactly the 100 commits".into())
    }

    /// Writes the 100 commits, dies, and flips a byte inside the 11th record of the log.
    fn damage_the_eleventh_record(&self) -> Result<(), Box<dyn std::error::Error>> {
        self.write_and_die()?;
        let (path, mut bytes) = self.active_log()?;
        bytes[HEADER + 10 * RECORD + 30] ^= 0x55;
        self.disk.write_raw(&path, bytes);
        Ok(())
    }
}

#[test]
fn a_torn_tail_is_zeroed_and_counted() -> TestResult {
    let s = Setup::new(false)?;
    s.write_and_die()?;
    let (path, mut bytes) = s.active_log()?;
    // Half of one more record, as a crash in the middle of a write leaves it.
    let end = HEADER + 100 * RECORD;
    let last = bytes[end - RECORD..end].to_vec();
    bytes[end..end + RECORD / 2].copy_from_slice(&last[..RECORD / 2]);
    s.disk.write_raw(&path, bytes);
    let tree = s.open()?;
    assert_eq!(tree.metrics().wal_torn_tails, 1);
    assert_eq!(tree.metrics().wal_replayed_records, 100);
    for i in 0..100u32 {
        assert_eq!(
            tree.get(format!("key-{i:04}").as_bytes())?,
            Some(i.to_le_bytes().to_vec())
        );
    }
    tree.check_integrity()?;
    drop(tree);
    // The zeroed tail is gone for good: the next open finds nothing torn.
    assert_eq!(s.open()?.metrics().wal_torn_tails, 0);
    Ok(())
}

#[test]
fn damage_in_the_unsynced_part_keeps_the_commits_before_it() -> TestResult {
    // With `sync: false` nothing after the checkpoint was known to be on disk, so damage
    // there may be what a power loss leaves: recovery keeps the prefix before it.
    let s = Setup::new(false)?;
    s.damage_the_eleventh_record()?;
    let tree = s.open()?;
    assert_eq!(tree.len(), 10);
    assert_eq!(tree.metrics().wal_torn_tails, 1);
    tree.check_integrity()?;
    Ok(())
}

#[test]
fn damage_before_a_synced_record_is_an_error_naming_the_log() -> TestResult {
    // With `sync: true` every later record says the damaged one had reached the disk.
    let s = Setup::new(true)?;
    s.damage_the_eleventh_record()?;
    let err = s
        .open()
        .expect_err("damage before synced records must not be skipped");
    assert!(matches!(err, OpenError::Wal(_)), "{err}");
    assert!(err.is_corruption());
    let msg = err.to_string();
    assert!(
        msg.contains("wal-") && msg.contains("before its tail") && msg.contains("byte 592"),
        "{msg}"
    );
    Ok(())
}
