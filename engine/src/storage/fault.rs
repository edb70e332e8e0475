//! Fault injection over any storage: fail after N operations, short (torn) writes, fsync
//! errors, and slow storage (every write delayed, or one chosen write or sync stalled
//! until the test lets it go), as a plan shared by every file opened through the opener.
//!
//! Slow writes stand in for a checkpointer that is descheduled in the middle of its flush:
//! they hold a window open in which writers, readers and the evictor run beside it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::{DataReads, Storage, StorageError, StorageOpener};

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
    /// Microseconds each write sleeps before it reaches the file (0: none).
    pub write_delay_us: AtomicU64,
    /// Writes left before one stalls: it waits, before reaching the file, until
    /// [`FaultPlan::release_stall`] is called.
    pub stall_write_after: AtomicI64,
    /// Syncs left before one stalls, as [`FaultPlan::stall_write_after`] for writes.
    pub stall_sync_after: AtomicI64,
    /// Only files whose name contains this are affected (empty: all).
    pub only_files: String,
    /// Set once any fault fired.
    pub fired: AtomicBool,
    stall: Stall,
}

/// Stalled writes: how many have stalled so far and how many of those were released.
#[derive(Debug, Default)]
struct Stall {
    state: Mutex<StallCounts>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct StallCounts {
    stalled: u64,
    released: u64,
}

impl FaultPlan {
    /// A plan that breaks nothing until told to.
    pub fn new(only_files: &str) -> Arc<Self> {
        Arc::new(FaultPlan {
            fail_after_ops: AtomicI64::new(-1),
            torn_write_after: AtomicI64::new(-1),
            fsync_fail_after: AtomicI64::new(-1),
            write_delay_us: AtomicU64::new(0),
            stall_write_after: AtomicI64::new(-1),
            stall_sync_after: AtomicI64::new(-1),
            only_files: only_files.to_string(),
            fired: AtomicBool::new(false),
            stall: Stall::default(),
        })
    }

    /// Delays every write of the affected files by `delay` from now on (zero: no delay).
    pub fn delay_writes(&self, delay: Duration) {
        let us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.write_delay_us.store(us, Ordering::SeqCst);
    }

    /// Stalls the write `n` writes from now (1: the next one; a negative `n`: none) until
    /// [`FaultPlan::release_stall`]; other writes go on meanwhile.
    pub fn stall_write(&self, n: i64) {
        self.stall_write_after.store(n, Ordering::SeqCst);
    }

    /// Stalls the sync `n` syncs from now (1: the next one; a negative `n`: none) until
    /// [`FaultPlan::release_stall`]; other operations go on meanwhile.
    pub fn stall_sync(&self, n: i64) {
        self.stall_sync_after.store(n, Ordering::SeqCst);
    }

    /// Waits up to `timeout` for a write or sync to be stalled; true when one is.
    pub fn wait_for_stall(&self, timeout: Duration) -> bool {
        let st = lock(&self.stall.state);
        let (st, _) = self
            .stall
            .cv
            .wait_timeout_while(st, timeout, |s| s.stalled == s.released)
            .unwrap_or_else(|e| e.into_inner());
        st.stalled > st.released
    }

    /// Lets every stalled write go on.
    pub fn release_stall(&self) {
        let mut st = lock(&self.stall.state);
        st.released = st.stalled;
        self.stall.cv.notify_all();
    }

    /// The slow-storage faults, applied before a write reaches the file.
    fn slow_down(&self) {
        self.stall_on(&self.stall_write_after);
        let us = self.write_delay_us.load(Ordering::Relaxed);
        if us > 0 {
            std::thread::sleep(Duration::from_micros(us));
        }
    }

    /// Waits for [`FaultPlan::release_stall`] when the count `c` reaches zero now; only
    /// the operation that brought it there stalls.
    fn stall_on(&self, c: &AtomicI64) {
        if self.tick(c) {
            c.store(-1, Ordering::SeqCst);
            let mut st = lock(&self.stall.state);
            st.stalled += 1;
            let me = st.stalled;
            self.stall.cv.notify_all();
            while st.released < me {
                st = self.stall.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
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

impl<O> FaultyOpener<O> {
    fn wrap(&self, path: &Path, inner: Arc<dyn Storage>) -> Arc<dyn Storage> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !self.plan.only_files.is_empty() && !name.contains(&self.plan.only_files) {
            return inner;
        }
        Arc::new(FaultyFile {
            inner,
            plan: self.plan.clone(),
        })
    }
}

impl<O: StorageOpener> StorageOpener for FaultyOpener<O> {
    fn open(&self, path: &Path, create: bool) -> Result<Arc<dyn Storage>, StorageError> {
        Ok(self.wrap(path, self.inner.open(path, create)?))
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn open_data(
        &self,
        path: &Path,
        create: bool,
        reads: DataReads,
    ) -> Result<Arc<dyn Storage>, StorageError> {
        Ok(self.wrap(path, self.inner.open_data(path, create, reads)?))
    }
}

#[derive(Debug)]
struct FaultyFile {
    inner: Arc<dyn Storage>,
    plan: Arc<FaultPlan>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
        self.plan.slow_down();
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
        self.plan.stall_on(&self.plan.stall_sync_after);
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

    fn drop_cached(&self, offset: u64, len: u64) {
        self.inner.drop_cached(offset, len);
    }
}
