//! Errors of the storage layer.

use std::path::PathBuf;

/// A failed operation on a file, with the file and the offset it touched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The operating system refused or failed an operation.
    #[error("{op} {path} at offset {offset}: {source}")]
    Io {
        /// What was being done: "read", "write", "sync", "open", ...
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// Byte offset of the operation (0 where it has none).
        offset: u64,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// The file ended before the bytes asked for: it was truncated.
    #[error("{path} is truncated: wanted {wanted} bytes at offset {offset} but the file is {file_len} bytes long")]
    ShortRead {
        /// The file.
        path: PathBuf,
        /// Byte offset of the read.
        offset: u64,
        /// Bytes asked for.
        wanted: usize,
        /// Length of the file.
        file_len: u64,
    },
}

impl StorageError {
    /// Wraps an `io::Error` with the operation, file and offset it came from.
    pub fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
        offset: u64,
        source: std::io::Error,
    ) -> Self {
        StorageError::Io {
            op,
            path: path.into(),
            offset,
            source,
        }
    }
}
