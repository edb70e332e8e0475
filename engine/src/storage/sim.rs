//! An in-memory disk for crash tests: every file keeps the bytes written so far, the bytes
//! made durable by the last `sync`, and the writes in between. `SimDisk::crash` throws
//! away everything not synced; `SimDisk::crash_reordered` keeps a random subset of the
//! unsynced writes, some of them torn, as a disk cache may on power loss, so that a
//! missing fsync between two dependent writes shows up.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{Storage, StorageError, StorageOpener};

#[derive(Debug, Default, Clone)]
struct FileState {
    current: Vec<u8>,
    durable: Vec<u8>,
    /// Writes since the last sync: (offset, bytes); a length change is (len, empty).
    pending: Vec<(u64, Vec<u8>)>,
    /// Ranges advised out of the page cache (`Storage::drop_cached`): (offset, len, and
    /// whether a write in it was not synced yet).
    dropped: Vec<(u64, u64, bool)>,
}

/// A set of in-memory files keyed by path, shared by every storage opened from it.
#[derive(Debug, Default, Clone)]
pub struct SimDisk {
    files: Arc<Mutex<HashMap<PathBuf, FileState>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SimDisk {
    /// An empty disk.
    pub fn new() -> Self {
        Self::default()
    }

    /// An independent copy of the disk as it is now: crash it without touching this one.
    pub fn fork(&self) -> SimDisk {
        SimDisk {
            files: Arc::new(Mutex::new(lock(&self.files).clone())),
        }
    }

    /// The ranges advised out of the page cache in the file at `path`, in order: (offset,
    /// length, whether it held a write not yet synced when it was advised).
    pub fn dropped_ranges(&self, path: &Path) -> Vec<(u64, u64, bool)> {
        lock(&self.files)
            .get(path)
            .map(|f| f.dropped.clone())
            .unwrap_or_default()
    }

    /// Forgets every byte not made durable by a sync.
    pub fn crash(&self) {
        for f in lock(&self.files).values_mut() {
            f.current = f.durable.clone();
            f.pending.clear();
        }
    }

    /// Power loss with a disk cache: each unsynced write independently survives whole,
    /// survives torn (its first half), or is lost; `seed` makes the choice repeatable.
    pub fn crash_reordered(&self, seed: u64) {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut files = lock(&self.files);
        let mut names: Vec<PathBuf> = files.keys().cloned().collect();
        names.sort();
        for name in names {
            let Some(f) = files.get_mut(&name) else {
                continue;
            };
            let mut img = f.durable.clone();
            for (off, bytes) in std::mem::take(&mut f.pending) {
                if bytes.is_empty() {
                    if next() % 2 == 0 {
                        img.resize(off as usize, 0);
                    }
                    continue;
                }
                let keep = match next() % 3 {
                    0 => 0,
                    1 => bytes.len() / 2,
                    _ => bytes.len(),
                };
                let end = off as usize + keep;
                if img.len() < end {
                    img.resize(end, 0);
                }
                img[off as usize..end].copy_from_slice(&bytes[..keep]);
            }
            f.current = img.clone();
            f.durable = img;
        }
    }

    /// The current bytes of a file (tests corrupt them through `write_raw`).
    pub fn read_raw(&self, path: &Path) -> Option<Vec<u8>> {
        lock(&self.files).get(path).map(|f| f.current.clone())
    }

    /// Replaces a file's bytes, durable ones included.
    pub fn write_raw(&self, path: &Path, bytes: Vec<u8>) {
        let mut files = lock(&self.files);
        let f = files.entry(path.to_path_buf()).or_default();
        f.current = bytes.clone();
        f.durable = bytes;
        f.pending.clear();
    }
}

impl StorageOpener for SimDisk {
    fn open(&self, path: &Path, create: bool) -> Result<Arc<dyn Storage>, StorageError> {
        let mut files = lock(&self.files);
        if !files.contains_key(path) {
            if !create {
                return Err(StorageError::io(
                    "open",
                    path,
                    0,
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no such simulated file"),
                ));
            }
            files.insert(path.to_path_buf(), FileState::default());
        }
        Ok(Arc::new(SimFile {
            disk: self.clone(),
            path: path.to_path_buf(),
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        lock(&self.files)
            .get(path)
            .is_some_and(|f| !f.current.is_empty())
    }
}

/// One file of a [`SimDisk`].
#[derive(Debug)]
pub struct SimFile {
    disk: SimDisk,
    path: PathBuf,
}

impl SimFile {
    fn with<R>(&self, f: impl FnOnce(&mut FileState) -> R) -> R {
        let mut files = lock(&self.disk.files);
        f(files.entry(self.path.clone()).or_default())
    }
}

impl Storage for SimFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), StorageError> {
        self.with(|f| {
            let start = offset as usize;
            let end = start + buf.len();
            if end > f.current.len() {
                return Err(StorageError::ShortRead {
                    path: self.path.clone(),
                    offset,
                    wanted: buf.len(),
                    file_len: f.current.len() as u64,
                });
            }
            buf.copy_from_slice(&f.current[start..end]);
            Ok(())
        })
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), StorageError> {
        self.with(|f| {
            let start = offset as usize;
            let end = start + buf.len();
            if f.current.len() < end {
                f.current.resize(end, 0);
            }
            f.current[start..end].copy_from_slice(buf);
            f.pending.push((offset, buf.to_vec()));
            Ok(())
        })
    }

    fn sync(&self) -> Result<(), StorageError> {
        self.with(|f| {
            f.durable = f.current.clone();
            f.pending.clear();
            Ok(())
        })
    }

    fn len(&self) -> Result<u64, StorageError> {
        self.with(|f| Ok(f.current.len() as u64))
    }

    fn set_len(&self, len: u64) -> Result<(), StorageError> {
        self.with(|f| {
            f.current.resize(len as usize, 0);
            f.pending.push((len, Vec::new()));
            Ok(())
        })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn drop_cached(&self, offset: u64, len: u64) {
        self.with(|f| {
            let end = offset.saturating_add(len);
            let unsynced = f.pending.iter().any(|(at, bytes)| {
                !bytes.is_empty() && *at < end && at.saturating_add(bytes.len() as u64) > offset
            });
            f.dropped.push((offset, len, unsynced));
        })
    }
}
