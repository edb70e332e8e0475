//! Fault injection over any storage: fail after N operations, short (torn) writes, and
//! fsync errors, as a plan shared by every file opened through the opener.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use super::{Storage, StorageError, StorageOpener};

/// What to break, shared by every file of a [`FaultyOpener`]. Counters count down on
/// each matching operation; a fault fires when one reaches zero.
#[derive(Debug)]
pub struct FaultPlan {
    /// Operations (reads, writes, syncs) left before every further operation fails.
    pub fail_after_ops: AtomicI64,
    /// Writes left before one is torn: only its first half reaches the file, then it fails.
    pub torn_write_after: AtomicI64,
    /// Syncs left before one fails.
    pub fsync_fail_after: AtomicI64,
    /// Only files whose name contains this are affected (empty: all).
    pub only_files: String,
    /// Set once any fault fired.
    pub fired: AtomicBool,
}

impl FaultPlan {
    /// A plan that breaks nothing until told to.
    pub fn new(only_files: &str) -> Arc<Self> {
        Arc::new(FaultPlan {
            fail_after_ops: AtomicI64::new(-1),
            torn_write_after: AtomicI64::new(-1),
            fsync_fail_after: AtomicI64::new(-1),
            only_files: only_files.to_string(),
            fired: AtomicBool::new(false),
        })
    }

    /// Counts one operation on `c`; true when the fault fires now or has fired.
    fn tick(&self, c: &AtomicI64) -> bool {
        let before = c.load(Ordering::SeqCst);
        if before < 0 {
            return false;
        }
        let now = c.fetch_sub(1, Ordering::SeqCst) - 1;
        if now <= 0 {
            c.store(0, Ordering::SeqCst);
            self.fired.store(true, Ordering::SeqCst);
            return true;
        }
        false
    }
}

/// Opens files through `inner` and wraps them with a shared [`FaultPlan`].
#[derive(Debug, Clone)]
pub struct FaultyOpener<O> {
    /// The opener that does the real work.
    pub inner: O,
    /// The faults to inject.
    pub plan: Arc<FaultPlan>,
}

impl<O: StorageOpener> StorageOpener for FaultyOpener<O> {
    fn open(&self, path: &Path, create: bool) -> Result<Arc<dyn Storage>, StorageError> {
        let inner = self.inner.open(path, create)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !self.plan.only_files.is_empty() && !name.contains(&self.plan.only_files) {
            return Ok(inner);
        }
        Ok(Arc::new(FaultyFile {
            inner,
            plan: self.plan.clone(),
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
}

#[derive(Debug)]
struct FaultyFile {
    inner: Arc<dyn Storage>,
    plan: Arc<FaultPlan>,
}

fn injected(op: &'static str, path: &Path, offset: u64) -> StorageError {
    StorageError::io(op, path, offset, std::io::Error::other("injected fault"))
}

impl Storage for FaultyFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), StorageError> {
        if self.plan.tick(&self.plan.fail_after_ops) {
            return Err(injected("read", self.path(), offset));
        }
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), StorageError> {
        if self.plan.tick(&self.plan.fail_after_ops) {
            return Err(injected("write", self.path(), offset));
        }
        if self.plan.tick(&self.plan.torn_write_after) {
            self.inner.write_at(&buf[..buf.len() / 2], offset)?;
            return Err(injected("write", self.path(), offset));
        }
        self.inner.write_at(buf, offset)
    }

    fn sync(&self) -> Result<(), StorageError> {
        if self.plan.tick(&self.plan.fail_after_ops) || self.plan.tick(&self.plan.fsync_fail_after)
        {
            return Err(injected("sync", self.path(), 0));
        }
        self.inner.sync()
    }

    fn len(&self) -> Result<u64, StorageError> {
        self.inner.len()
    }

    fn set_len(&self, len: u64) -> Result<(), StorageError> {
        if self.plan.tick(&self.plan.fail_after_ops) {
            return Err(injected("truncate", self.path(), len));
        }
        self.inner.set_len(len)
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }
}
