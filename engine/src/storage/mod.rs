//! The storage layer: the byte-addressed files under the buffer pool (the data file) and
//! the write-ahead log (its two files). Both reach their files only through [`Storage`],
//! opened by a [`StorageOpener`], so tests can put a simulated or fault-injecting disk
//! underneath.

mod error;
mod fault;
mod file;
mod sim;

pub use error::StorageError;
pub use fault::{FaultPlan, FaultyOpener};
pub use file::{FileStorage, SharedMap};

pub use sim::{SimDisk, SimFile};

use std::path::Path;
use std::sync::Arc;

/// Opens the files of a tree (data file and logs). The default opens real files; tests
/// pass a [`SimDisk`] or a [`FaultyOpener`] through `TreeConfig::storage`.
pub trait StorageOpener: Send + Sync + std::fmt::Debug + 'static {
    /// Opens `path`, creating it when `create` is set and it does not exist.
    fn open(&self, path: &Path, create: bool) -> Result<Arc<dyn Storage>, StorageError>;
    /// True when `path` exists and holds at least one byte.
    fn exists(&self, path: &Path) -> bool;
    /// Opens the tree's data file: like `open`, for a file that only ever grows, so an
    /// implementation may serve its reads from a memory map or, as `reads` asks, past the
    /// OS page cache.
    fn open_data(
        &self,
        path: &Path,
        create: bool,
        reads: DataReads,
    ) -> Result<Arc<dyn Storage>, StorageError> {
        let _ = reads;
        self.open(path, create)
    }
}

/// Opens real files.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileOpener;

impl StorageOpener for FileOpener {
    fn open(&self, path: &Path, create: bool) -> Result<Arc<dyn Storage>, StorageError> {
        Ok(Arc::new(FileStorage::open(path, create)?))
    }

    fn exists(&self, path: &Path) -> bool {
        std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
    }

    fn open_data(
        &self,
        path: &Path,
        create: bool,
        reads: DataReads,
    ) -> Result<Arc<dyn Storage>, StorageError> {
        Ok(Arc::new(match reads {
            DataReads::Mapped | DataReads::Shared => FileStorage::open_mapped(path, create)?,
            DataReads::Direct => FileStorage::open_direct(path, create)?,
            DataReads::Buffered => FileStorage::open(path, create)?,
        }))
    }
}

/// How the data file's reads reach the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DataReads {
    /// Copied out of a read-only memory map: what was read stays in the OS page cache,
    /// which serves the next miss on it without touching the device. Best when memory
    /// beyond the pool's budget is free to use.
    #[default]
    Mapped,
    /// Page-aligned reads bypass the OS page cache (`O_DIRECT`) into an aligned buffer:
    /// a miss costs one device read and charges no page cache to the process. Best when
    /// the page cache counts against the same budget as the pool (a memory cgroup), so
    /// that caching a page twice only shrinks what can be cached. Unaligned reads, and
    /// every read on a file system that refuses `O_DIRECT`, go through the map.
    Direct,
    /// Each miss is a `pread` through the OS page cache, with no map: what was read stays
    /// in the page cache as with `Mapped`, and a miss costs a system call instead of a
    /// page fault (no reclaim inside a fault, no map to grow). Under a memory cgroup the
    /// page cache holds what the cgroup's memory beyond the pool can keep, as it does for
    /// every other engine that reads through it.
    Buffered,
    /// Served in place from a read-only memory map: the pool keeps no copy of a clean page,
    /// only a reference to the OS page cache's, so a page is cached once, where the kernel
    /// keeps it, and the pool's budget bounds the pages it holds references to and the
    /// images commits build. Best when the page cache and the pool count against one
    /// budget (a memory cgroup); without one, the page cache is bounded by nothing of the
    /// engine's. Storage that cannot share its bytes (a simulated or fault-injecting disk)
    /// is read as with `Mapped`.
    Shared,
}

/// A random-access file. The buffer pool reads and writes pages through it and the log
/// appends and reads its records through it, so tests can put a fault-injecting
/// implementation underneath.
pub trait Storage: Send + Sync + std::fmt::Debug + 'static {
    /// Fills `buf` from `offset`; reading past the end is a [`StorageError::ShortRead`].
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), StorageError>;
    /// Writes all of `buf` at `offset`, growing the file if needed.
    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), StorageError>;
    /// Makes every completed write durable (fdatasync).
    fn sync(&self) -> Result<(), StorageError>;
    /// Current length in bytes.
    fn len(&self) -> Result<u64, StorageError>;
    /// True when the file holds no byte.
    fn is_empty(&self) -> Result<bool, StorageError> {
        Ok(self.len()? == 0)
    }
    /// Grows or shrinks the file to `len` bytes.
    fn set_len(&self, len: u64) -> Result<(), StorageError>;
    /// The path the file lives at, for error messages.
    fn path(&self) -> &Path;
    /// A read-only map of the file covering at least its first `end` bytes, all of them
    /// within the file, when this storage reads through one; None otherwise (the caller
    /// copies with [`Storage::read_at`]).
    fn shared_map(&self, end: u64) -> Option<SharedMap> {
        let _ = end;
        None
    }
    /// Advises the OS that the `len` bytes at `offset`, written, will not be read through
    /// its page cache soon (`posix_fadvise(DONTNEED)`): it drops the clean pages and starts
    /// writing the dirty ones, so that a second advice later drops those too. The log uses
    /// it: under a memory cgroup, whose limit counts the page cache, a writer's log pages
    /// otherwise pushed out the pages readers miss on. Advice only: nothing changes on
    /// disk, and a failure is ignored.
    fn drop_cached(&self, offset: u64, len: u64) {
        let _ = (offset, len);
    }
}
