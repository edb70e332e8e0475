//! The engine's top-level error, wrapping the typed errors of each layer.

use std::path::PathBuf;

pub use crate::page::PageError;
pub use crate::storage::StorageError;
pub use crate::wal::WalError;

/// Result alias used across the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can refuse or fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing the data file failed at the operating-system level.
    #[error(transparent)]
    Storage(#[from] StorageError),

    /// A page failed its checksum or structural checks: the file is corrupt.
    #[error(transparent)]
    Page(#[from] PageError),

    /// The write-ahead log is damaged before its tail.
    #[error(transparent)]
    Wal(#[from] WalError),

    /// An earlier write or fsync failed, so the tree refuses writes; reads still work.
    #[error("writes are refused because an earlier write or fsync failed ({reason}); reads still work: reopen the tree to recover from its log")]
    WritesRefused {
        /// The failure that stopped writes.
        reason: String,
    },

    /// Keys must hold at least one byte.
    #[error("empty key: keys must be 1 to {max} bytes long")]
    EmptyKey {
        /// The largest key length accepted.
        max: usize,
    },

    /// A key longer than the engine accepts.
    #[error("key of {len} bytes is too long: keys must be 1 to {max} bytes long")]
    KeyTooLarge {
        /// Length of the rejected key.
        len: usize,
        /// The largest key length accepted.
        max: usize,
    },

    /// A value longer than the engine accepts.
    #[error("value of {len} bytes is too large: values may be at most {max} bytes; split it or store it elsewhere and keep a reference")]
    ValueTooLarge {
        /// Length of the rejected value.
        len: usize,
        /// The largest value length accepted.
        max: usize,
    },

    /// The tree directory holds files that are not this engine's.
    #[error("{dir} holds {found:?}, which is not an aimeta-engine tree: give Tree::open an empty or new directory, or one made by this engine")]
    ForeignDirectory {
        /// The directory given to `TreeConfig::new`.
        dir: PathBuf,
        /// One of the unexpected entries found there.
        found: String,
    },

    /// The data file's superblock does not start with this engine's magic number.
    #[error("{file} is not an aimeta-engine data file (bad magic number {found:02x?}): point TreeConfig at the right directory")]
    BadMagic {
        /// The data file.
        file: PathBuf,
        /// The first bytes found where the magic number belongs.
        found: [u8; 8],
    },

    /// The data file was written by a newer build of the engine.
    #[error("{file} has format version {found}, newer than the {supported} this build reads: open it with a newer aimeta-engine")]
    FormatTooNew {
        /// The data file.
        file: PathBuf,
        /// Format version recorded in the file.
        found: u32,
        /// Newest format version this build understands.
        supported: u32,
    },

    /// The data file was written in an older format version that this build no longer
    /// reads (version 1 stored leaf keys without front coding).
    #[error("{file} has format version {found}, older than the {supported} this build reads (the page layout changed and files are not converted in place): export its contents with the aimeta-engine build that wrote it and bulk-load them into a new directory, or delete the directory if it holds a cache")]
    FormatTooOld {
        /// The data file.
        file: PathBuf,
        /// Format version recorded in the file.
        found: u32,
        /// The format version this build reads and writes.
        supported: u32,
    },

    /// Both superblock copies failed their checks.
    #[error("{file}: both superblock copies are corrupt ({first}; {second}); restore the directory from a backup")]
    SuperblockCorrupt {
        /// The data file.
        file: PathBuf,
        /// Why the first copy was rejected.
        first: String,
        /// Why the second copy was rejected.
        second: String,
    },

    /// The buffer-pool budget cannot hold the pages the tree needs at once.
    #[error("buffer pool budget of {given} bytes is below the minimum of {min} bytes ({min_pages} pages of {page_size} bytes): raise TreeConfig::cache_bytes")]
    CacheTooSmall {
        /// Budget requested.
        given: u64,
        /// Smallest budget accepted.
        min: u64,
        /// The same minimum counted in pages.
        min_pages: u64,
        /// Page size of the tree.
        page_size: u32,
    },

    /// A configuration value is out of range.
    #[error("invalid configuration: {reason}")]
    InvalidConfig {
        /// What is wrong and what is accepted.
        reason: String,
    },

    /// `bulk_load` was called on a tree that already holds entries.
    #[error("bulk_load needs an empty tree, but this one holds {entries} entries: load into a new directory or use write batches")]
    BulkLoadNotEmpty {
        /// Entries already in the tree.
        entries: u64,
    },

    /// `bulk_load` input was not strictly ascending.
    #[error("bulk_load input must be sorted and free of duplicates, but entry {index} is not greater than the one before it: sort and deduplicate the input")]
    BulkLoadUnsorted {
        /// Zero-based position of the offending entry.
        index: u64,
    },

    /// A structural invariant failed while checking or walking the tree.
    #[error("tree integrity check failed: {reason}")]
    Integrity {
        /// Which invariant failed and where.
        reason: String,
    },
}

/// Which check a corrupt page failed, for callers that branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PageErrorKind {
    /// The stored checksum does not match the contents.
    Checksum,
    /// The header names another page.
    WrongPage,
    /// The page is of the wrong kind for its place in the tree.
    WrongKind,
    /// The layout is impossible.
    Malformed,
}

impl Error {
    /// For page corruption, which check failed.
    pub fn page_error_kind(&self) -> Option<PageErrorKind> {
        match self {
            Error::Page(PageError::ChecksumMismatch { .. }) => Some(PageErrorKind::Checksum),
            Error::Page(PageError::WrongPageId { .. }) => Some(PageErrorKind::WrongPage),
            Error::Page(PageError::UnexpectedKind { .. }) => Some(PageErrorKind::WrongKind),
            Error::Page(_) => Some(PageErrorKind::Malformed),
            _ => None,
        }
    }

    /// True when the error reports on-disk corruption rather than bad input or an I/O failure.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::Page(_)
                | Error::Wal(_)
                | Error::SuperblockCorrupt { .. }
                | Error::Integrity { .. }
        )
    }
}
