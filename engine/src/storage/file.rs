//! [`Storage`] over an ordinary file with positioned reads and writes; the data file's
//! reads can be served from a read-only memory map instead of a `pread` per page, or read
//! past the OS page cache (`O_DIRECT`) through an aligned buffer.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use bytemuck::{Pod, Zeroable};
use memmap2::{Mmap, MmapOptions};

use super::{Storage, StorageError};

/// Smallest mapping made; a larger file is mapped at the next power of two of its length,
/// so that a growing file is remapped O(log size) times.
const MIN_MAP_BYTES: u64 = 64 << 20;

/// Reads up to this size (a page miss) are copied out of the map; longer ones (readahead,
/// whole frames, overflow runs) use `pread`, so the kernel sees one request for the range.
const MAX_MAPPED_READ: usize = 16 << 10;

/// Alignment of a direct read's buffer, offset and length: 4 KiB covers devices with
/// 512-byte and 4 KiB logical blocks, and is the engine's smallest page.
const DIRECT_ALIGN: usize = 4096;

/// One aligned block of a direct read's buffer.
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C, align(4096))]
struct AlignedBlock([u8; DIRECT_ALIGN]);

thread_local! {
    /// Each thread's buffer for direct reads, grown to the longest read it has made: the
    /// pool's buffers are not aligned, so a direct read lands here and is copied out (a
    /// 4 KiB copy costs well under a microsecond against the device's ~60 us).
    static DIRECT_BUF: RefCell<Vec<AlignedBlock>> = const { RefCell::new(Vec::new()) };
}

/// A read-only map of the data file, shared by the pages whose images stay in place in it
/// (`DataReads::Shared`): cloning it clones a reference, and the map lives while any page
/// holds one, so a file that grew past it and was remapped larger leaves it valid.
#[derive(Debug, Clone)]
pub struct SharedMap(Arc<Mmap>);

impl SharedMap {
    /// The mapped bytes of `range`, when the map covers it.
    #[inline]
    pub fn get(&self, range: std::ops::Range<usize>) -> Option<&[u8]> {
        self.0.get(range)
    }

    /// Asks the kernel to start reading `len` bytes at `offset` (page-aligned) into the
    /// page cache, without waiting: advice only, so a failure is ignored.
    pub fn will_need(&self, offset: usize, len: usize) {
        let len = len.min(self.0.len().saturating_sub(offset));
        if len > 0 {
            let _ = self.0.advise_range(memmap2::Advice::WillNeed, offset, len);
        }
    }
}

/// The data file opened a second time with `O_DIRECT`, for aligned reads.
#[derive(Debug)]
struct DirectReads {
    file: File,
    /// Cleared for good when the file system refuses a direct read (`EINVAL`): reads then
    /// go through the map.
    enabled: std::sync::atomic::AtomicBool,
}

/// A file accessed with `pread`/`pwrite` (or, when mapped, reads copied out of a memory
/// map), safe to share between threads.
#[derive(Debug)]
pub struct FileStorage {
    file: File,
    path: PathBuf,
    /// Read-only map of the file, when reads go through one. It may extend past the end
    /// of the file; only bytes below `len` are ever read from it.
    map: Option<ArcSwapOption<Mmap>>,
    /// Aligned reads past the OS page cache, when asked for and the file system allows.
    direct: Option<DirectReads>,
    /// The file's length as this handle last set or saw it.
    len: AtomicU64,
}

impl FileStorage {
    /// Opens `path` for reading and writing, creating it when `create` is set.
    pub fn open(path: &Path, create: bool) -> Result<Self, StorageError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)
            .map_err(|e| StorageError::io("open", path, 0, e))?;
        let len = file
            .metadata()
            .map_err(|e| StorageError::io("stat", path, 0, e))?
            .len();
        Ok(FileStorage {
            file,
            path: path.to_path_buf(),
            map: None,
            direct: None,
            len: AtomicU64::new(len),
        })
    }

    /// Opens a file that only grows (the data file), with reads served from a memory map:
    /// a page miss then costs a copy out of the OS page cache instead of a system call.
    /// Shrinking such a file is refused.
    pub fn open_mapped(path: &Path, create: bool) -> Result<Self, StorageError> {
        let mut f = Self::open(path, create)?;
        f.map = Some(ArcSwapOption::empty());
        Ok(f)
    }

    /// Opens the data file like [`FileStorage::open_mapped`], with page-aligned reads past
    /// the OS page cache (`O_DIRECT`): a miss is then one device read and leaves nothing in
    /// the page cache. A file system that refuses `O_DIRECT` (at open or at the first
    /// read) leaves every read to the map.
    pub fn open_direct(path: &Path, create: bool) -> Result<Self, StorageError> {
        let mut f = Self::open_mapped(path, create)?;
        f.direct = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .ok()
            .map(|file| DirectReads {
                file,
                enabled: std::sync::atomic::AtomicBool::new(true),
            });
        Ok(f)
    }

    /// True while aligned reads bypass the OS page cache.
    pub fn reads_direct(&self) -> bool {
        self.direct
            .as_ref()
            .is_some_and(|d| d.enabled.load(Ordering::Relaxed))
    }

    /// Reads `buf` at `offset` with `O_DIRECT` when it can: `Ok(false)` when this read
    /// must go another way (unaligned, past the known end, or direct reads are off or
    /// refused). The caller has checked that the bytes lie within the file.
    fn read_direct(&self, buf: &mut [u8], offset: u64) -> Result<bool, StorageError> {
        let Some(direct) = self.direct.as_ref() else {
            return Ok(false);
        };
        let aligned = !buf.is_empty()
            && buf.len().is_multiple_of(DIRECT_ALIGN)
            && offset.is_multiple_of(DIRECT_ALIGN as u64);
        if !aligned || !direct.enabled.load(Ordering::Relaxed) {
            return Ok(false);
        }
        DIRECT_BUF.with_borrow_mut(|blocks| {
            let n = buf.len() / DIRECT_ALIGN;
            if blocks.len() < n {
                blocks.resize(n, AlignedBlock::zeroed());
            }
            let bounce: &mut [u8] = bytemuck::cast_slice_mut(&mut blocks[..n]);
            match direct.file.read_exact_at(bounce, offset) {
                Ok(()) => {
                    buf.copy_from_slice(bounce);
                    Ok(true)
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    // The file system does not do direct I/O after all.
                    direct.enabled.store(false, Ordering::Relaxed);
                    Ok(false)
                }
                Err(e) => Err(self.read_error(e, offset, buf.len())),
            }
        })
    }

    /// Copies `buf.len()` bytes at `offset` out of the map, made (or remade larger) when
    /// the current one does not cover them; false when no map can be made. The caller has
    /// checked that the bytes lie within the file.
    fn copy_from_map(&self, slot: &ArcSwapOption<Mmap>, buf: &mut [u8], offset: u64) -> bool {
        let range = offset as usize..offset as usize + buf.len();
        // The current map, borrowed without touching its reference count.
        if let Some(src) = slot.load().as_deref().and_then(|m| m.get(range.clone())) {
            buf.copy_from_slice(src);
            return true;
        }
        let Some(map) = self.remap(range.end as u64) else {
            return false;
        };
        let Some(src) = map.get(range) else {
            return false;
        };
        buf.copy_from_slice(src);
        slot.store(Some(Arc::new(map)));
        true
    }

    /// The current map when it covers `end` bytes, or a new larger one, made current.
    fn map_covering(&self, slot: &ArcSwapOption<Mmap>, end: u64) -> Option<Arc<Mmap>> {
        if let Some(map) = slot.load_full().filter(|m| m.len() as u64 >= end) {
            return Some(map);
        }
        let map = Arc::new(self.remap(end)?);
        slot.store(Some(map.clone()));
        Some(map)
    }

    /// A map of at least `end` bytes (the next power of two, and at least MIN_MAP_BYTES).
    fn remap(&self, end: u64) -> Option<Mmap> {
        let want = end.max(MIN_MAP_BYTES).checked_next_power_of_two()?;
        let len = usize::try_from(want).ok()?;
        #[allow(unsafe_code)]
        // SAFETY: the map is read-only and private to this handle. Bytes are read from it
        // only below the file's length (`len`), which never decreases for a mapped file
        // (`set_len` refuses to shrink it), so no access can fault past the end of the
        // file. The engine writes a page only while no version in use can reach it
        // (copy-on-write with deferred frees, as in LMDB), so a page being copied out, or
        // held in place by a reader (`SharedMap`), is not being written; the pool drops
        // its own reference to a place before the place is reused (`BufferPool::discard`).
        // A torn copy of a reused page would fail its checksum, as with `pread`.
        let map = unsafe { MmapOptions::new().len(len).map(&self.file) }.ok()?;
        // Page misses are random: without this, a fault on a page not in the OS cache reads
        // its neighbours too and, when memory is short, evicts useful pages for them (the
        // advice LMDB's MDB_NORDAHEAD gives for the same reason).
        let _ = map.advise(memmap2::Advice::Random);
        Some(map)
    }

    fn pread(&self, buf: &mut [u8], offset: u64) -> Result<(), StorageError> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| self.read_error(e, offset, buf.len()))
    }

    /// The error of a failed read of `wanted` bytes at `offset`: a read that meets the end of
    /// the file is a [`StorageError::ShortRead`].
    fn read_error(&self, e: std::io::Error, offset: u64, wanted: usize) -> StorageError {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            StorageError::ShortRead {
                path: self.path.clone(),
                offset,
                wanted,
                file_len: self.len().unwrap_or(0),
            }
        } else {
            StorageError::io("read", &self.path, offset, e)
        }
    }
}

impl Storage for FileStorage {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), StorageError> {
        let end = offset.saturating_add(buf.len() as u64);
        if end <= self.len.load(Ordering::Acquire) && self.read_direct(buf, offset)? {
            return Ok(());
        }
        if let Some(slot) = self.map.as_ref().filter(|_| buf.len() <= MAX_MAPPED_READ) {
            if end <= self.len.load(Ordering::Acquire) && self.copy_from_map(slot, buf, offset) {
                return Ok(());
            }
        }
        self.pread(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), StorageError> {
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| StorageError::io("write", &self.path, offset, e))?;
        self.len
            .fetch_max(offset.saturating_add(buf.len() as u64), Ordering::AcqRel);
        Ok(())
    }

    fn sync(&self) -> Result<(), StorageError> {
        self.file
            .sync_data()
            .map_err(|e| StorageError::io("sync", &self.path, 0, e))
    }

    fn len(&self) -> Result<u64, StorageError> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| StorageError::io("stat", &self.path, 0, e))
    }

    fn set_len(&self, len: u64) -> Result<(), StorageError> {
        if self.map.is_some() && len < self.len.load(Ordering::Acquire) {
            return Err(StorageError::io(
                "truncate",
                &self.path,
                len,
                std::io::Error::other("a memory-mapped data file never shrinks"),
            ));
        }
        self.file
            .set_len(len)
            .map_err(|e| StorageError::io("truncate", &self.path, len, e))?;
        if self.map.is_some() {
            // A write racing past the new end may have raised it already.
            self.len.fetch_max(len, Ordering::AcqRel);
        } else {
            self.len.store(len, Ordering::Release);
        }
        Ok(())
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn drop_cached(&self, offset: u64, len: u64) {
        if let Some(len) = std::num::NonZeroU64::new(len) {
            let _ =
                rustix::fs::fadvise(&self.file, offset, Some(len), rustix::fs::Advice::DontNeed);
        }
    }

    fn shared_map(&self, end: u64) -> Option<SharedMap> {
        let slot = self.map.as_ref()?;
        if end > self.len.load(Ordering::Acquire) {
            return None;
        }
        self.map_covering(slot, end).map(SharedMap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_reads_match_pread_as_the_file_grows() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("data");
        let f = FileStorage::open_mapped(&path, true)?;
        let mut buf = [0u8; 8];
        assert!(matches!(
            f.read_at(&mut buf, 0),
            Err(StorageError::ShortRead { .. })
        ));
        f.set_len(4096)?;
        f.write_at(b"abcdefgh", 100)?;
        f.read_at(&mut buf, 100)?;
        assert_eq!(&buf, b"abcdefgh");
        // Past the first mapping: the file grows, reads follow (remapped larger).
        let far = MIN_MAP_BYTES + 4096;
        f.set_len(far + 4096)?;
        f.write_at(b"12345678", far)?;
        f.read_at(&mut buf, far)?;
        assert_eq!(&buf, b"12345678");
        f.write_at(b"ABCDEFGH", 100)?;
        f.read_at(&mut buf, 100)?;
        assert_eq!(&buf, b"ABCDEFGH", "writes are visible through the map");
        assert!(matches!(
            f.read_at(&mut buf, far + 4096),
            Err(StorageError::ShortRead { .. })
        ));
        assert!(f.set_len(10).is_err(), "a mapped file never shrinks");
        // Another handle (a reopen) reads the same bytes.
        drop(f);
        let g = FileStorage::open_mapped(&path, false)?;
        g.read_at(&mut buf, far)?;
        assert_eq!(&buf, b"12345678");
        Ok(())
    }

    /// Bytes this thread has had the block layer read for it (`/proc/thread-self/io`).
    fn thread_read_bytes() -> Result<u64, Box<dyn std::error::Error>> {
        let io = std::fs::read_to_string("/proc/thread-self/io")?;
        let line = io
            .lines()
            .find_map(|l| l.strip_prefix("read_bytes: "))
            .ok_or("no read_bytes in /proc/thread-self/io")?;
        Ok(line.trim().parse()?)
    }

    #[test]
    fn direct_reads_reach_the_device_every_time() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("data");
        let f = FileStorage::open_direct(&path, true)?;
        let page: Vec<u8> = (0..3 * DIRECT_ALIGN).map(|i| (i % 251) as u8).collect();
        f.write_at(&page, 0)?;
        f.sync()?;
        assert!(f.reads_direct(), "ext4 and tmpfs do direct I/O");

        // The pages just written are in the OS page cache; a direct read goes past it.
        let mut buf = vec![0u8; DIRECT_ALIGN];
        let before = thread_read_bytes()?;
        for _ in 0..2 {
            f.read_at(&mut buf, DIRECT_ALIGN as u64)?;
            assert_eq!(buf[..], page[DIRECT_ALIGN..2 * DIRECT_ALIGN]);
        }
        let direct = thread_read_bytes()? - before;
        assert!(
            direct >= 2 * DIRECT_ALIGN as u64,
            "two direct reads read {direct} bytes from the device"
        );

        // Unaligned and multi-page reads are served too, the same bytes either way.
        let mut odd = vec![0u8; 100];
        f.read_at(&mut odd, 5000)?;
        assert_eq!(odd[..], page[5000..5100]);
        let mut all = vec![0u8; 3 * DIRECT_ALIGN];
        f.read_at(&mut all, 0)?;
        assert_eq!(all, page);
        assert!(matches!(
            f.read_at(&mut buf, 3 * DIRECT_ALIGN as u64),
            Err(StorageError::ShortRead { .. })
        ));

        // The same page through the map is a page-cache hit: no device read.
        let m = FileStorage::open_mapped(&path, false)?;
        m.read_at(&mut buf, 0)?;
        let before = thread_read_bytes()?;
        m.read_at(&mut buf, 0)?;
        assert_eq!(thread_read_bytes()? - before, 0);
        assert!(!m.reads_direct());
        Ok(())
    }
}
