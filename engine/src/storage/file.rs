//! [`Storage`] over an ordinary file with positioned reads and writes.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::{Storage, StorageError};

/// A data file accessed with `pread`/`pwrite`, safe to share between threads.
#[derive(Debug)]
pub struct FileStorage {
    file: File,
    path: PathBuf,
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
        Ok(FileStorage {
            file,
            path: path.to_path_buf(),
        })
    }
}

impl Storage for FileStorage {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), StorageError> {
        match self.file.read_exact_at(buf, offset) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(StorageError::ShortRead {
                    path: self.path.clone(),
                    offset,
                    wanted: buf.len(),
                    file_len: self.len().unwrap_or(0),
                })
            }
            Err(e) => Err(StorageError::io("read", &self.path, offset, e)),
        }
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), StorageError> {
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| StorageError::io("write", &self.path, offset, e))
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
        self.file
            .set_len(len)
            .map_err(|e| StorageError::io("truncate", &self.path, len, e))
    }

    fn path(&self) -> &Path {
        &self.path
    }
}
