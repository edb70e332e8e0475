//! The engine's errors, one type per operation as redb has them: [`OpenError`] for
//! `Tree::open`, [`Error`] for reads and writes, and the layers' own errors
//! ([`StorageError`], [`PageError`], [`WalError`]) inside both. Each converts into
//! [`Error`], the umbrella, with `From`, so `?` gathers them in one type.

use std::path::PathBuf;

pub use crate::page::PageError;
pub use crate::storage::StorageError;
pub use crate::wal::WalError;

/// Result alias used across the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can refuse or fail with: what a read or a write returns, and
/// every other error converted into it.
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

    /// Opening the tree failed for a reason only opening has (an [`OpenError`] converted
    /// with `From`; its storage, page and log errors become the variants above).
    #[error(transparent)]
    Open(OpenError),

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

/// Why `Tree::open` refused or failed to open a tree directory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The tree directory holds files that are not this engine's.
    #[error("{dir} holds {found:?}, which is not an aimeta-engine tree: give Tree::open an empty or new directory, or one made by this engine")]
    ForeignDirectory {
        /// The directory given to `TreeConfig::new`.
        dir: PathBuf,
        /// One of the unexpected entries found there.
        found: String,
    },

    /// Another process has the tree open.
    #[error("{dir} is open in another process: close it there first")]
    AlreadyOpen {
        /// The directory given to `TreeConfig::new`.
        dir: PathBuf,
    },

    /// A configuration value is out of range.
    #[error("invalid configuration: {reason}")]
    InvalidConfig {
        /// What is wrong and what is accepted.
        reason: String,
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

    /// Creating, listing, locking, reading or writing the tree's files failed at the
    /// operating-system level.
    #[error(transparent)]
    Storage(#[from] StorageError),

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
        /// The oldest format version this build reads.
        supported: u32,
    },

    /// The write-ahead log cannot be replayed: damaged before its tail or in a header its
    /// records do not restore, missing commits, or written by a newer build.
    #[error(transparent)]
    Wal(#[from] WalError),

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

    /// The free list the superblock names is damaged.
    #[error("{file}: the free list is corrupt at page {page} ({reason}); restore the directory from a backup")]
    FreeListCorrupt {
        /// The data file.
        file: PathBuf,
        /// The free-list page that failed.
        page: u64,
        /// What is wrong with it.
        reason: String,
    },

    /// A page read while opening (the root, a free-list page, a page the log replays
    /// into) failed its checksum or structural checks: the data file is corrupt.
    #[error(transparent)]
    Page(#[from] PageError),

    /// Reading the existing tree or replaying its log failed with an error a read or a
    /// write returns too (an integrity failure, say); converting it into [`Error`] gives
    /// that error back.
    #[error(transparent)]
    Recovery(Box<Error>),
}

impl From<OpenError> for Error {
    /// Storage, page and log errors keep their own variants of [`Error`], so a caller
    /// matches them alike whichever operation failed; the rest become [`Error::Open`].
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::Storage(e) => Error::Storage(e),
            OpenError::Page(e) => Error::Page(e),
            OpenError::Wal(e) => Error::Wal(e),
            OpenError::Recovery(e) => *e,
            other => Error::Open(other),
        }
    }
}

impl From<Error> for OpenError {
    /// What reading or replaying during open returns: storage, page and log errors keep
    /// their variants, anything else is [`OpenError::Recovery`].
    fn from(e: Error) -> Self {
        match e {
            Error::Storage(e) => OpenError::Storage(e),
            Error::Page(e) => OpenError::Page(e),
            Error::Wal(e) => OpenError::Wal(e),
            Error::Open(e) => e,
            other => OpenError::Recovery(Box::new(other)),
        }
    }
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

fn kind_of(e: &PageError) -> PageErrorKind {
    match e {
        PageError::ChecksumMismatch { .. } => PageErrorKind::Checksum,
        PageError::WrongPageId { .. } => PageErrorKind::WrongPage,
        PageError::UnexpectedKind { .. } => PageErrorKind::WrongKind,
        _ => PageErrorKind::Malformed,
    }
}

impl Error {
    /// For page corruption, which check failed.
    pub fn page_error_kind(&self) -> Option<PageErrorKind> {
        match self {
            Error::Page(e) => Some(kind_of(e)),
            Error::Open(e) => e.page_error_kind(),
            _ => None,
        }
    }

    /// True when the error reports on-disk corruption rather than bad input or an I/O failure.
    pub fn is_corruption(&self) -> bool {
        match self {
            Error::Page(_) | Error::Wal(_) | Error::Integrity { .. } => true,
            Error::Open(e) => e.is_corruption(),
            _ => false,
        }
    }
}

impl OpenError {
    /// For page corruption, which check failed.
    pub fn page_error_kind(&self) -> Option<PageErrorKind> {
        match self {
            OpenError::Page(e) => Some(kind_of(e)),
            OpenError::Recovery(e) => e.page_error_kind(),
            _ => None,
        }
    }

    /// True when the error reports on-disk corruption rather than bad input, a refused
    /// directory or an I/O failure.
    pub fn is_corruption(&self) -> bool {
        match self {
            OpenError::Page(_)
            | OpenError::Wal(_)
            | OpenError::SuperblockCorrupt { .. }
            | OpenError::FreeListCorrupt { .. } => true,
            OpenError::Recovery(e) => e.is_corruption(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    fn io_failure() -> StorageError {
        StorageError::io(
            "read",
            "/trees/a/data.aimkv",
            4096,
            std::io::Error::other("disk gone"),
        )
    }

    #[test]
    fn every_error_can_cross_threads_and_box_into_dyn_error() {
        fn check<E: std::error::Error + Send + Sync + 'static>() {}
        check::<Error>();
        check::<OpenError>();
    }

    #[test]
    fn an_open_error_converts_into_the_same_variant_of_the_umbrella_error() {
        let e = Error::from(OpenError::Storage(io_failure()));
        assert!(matches!(
            e,
            Error::Storage(StorageError::Io { offset: 4096, .. })
        ));
        // The chain reaches the operating system's error, as before the conversion.
        let source = e.source().expect("the I/O error is the source");
        assert_eq!(source.to_string(), "disk gone");

        let refused = OpenError::CacheTooSmall {
            given: 4096,
            min: 32768,
            min_pages: 8,
            page_size: 4096,
        };
        let message = refused.to_string();
        let e = Error::from(refused);
        assert!(matches!(
            e,
            Error::Open(OpenError::CacheTooSmall { given: 4096, .. })
        ));
        assert_eq!(e.to_string(), message);
        assert!(
            message.contains("raise TreeConfig::cache_bytes"),
            "{message}"
        );
        assert!(!e.is_corruption());
    }

    #[test]
    fn a_read_error_met_while_opening_converts_back_unchanged() {
        let during_open = OpenError::from(Error::Integrity {
            reason: "leaf 7 is out of order".into(),
        });
        assert!(matches!(during_open, OpenError::Recovery(_)));
        assert!(during_open.is_corruption());
        assert_eq!(
            during_open.to_string(),
            "tree integrity check failed: leaf 7 is out of order"
        );
        assert!(matches!(Error::from(during_open), Error::Integrity { .. }));
        // Storage, page and log errors keep their own variants in both directions.
        assert!(matches!(
            OpenError::from(Error::Storage(io_failure())),
            OpenError::Storage(_)
        ));
    }

    #[test]
    fn superblock_and_free_list_damage_are_corruption_and_a_refused_directory_is_not() {
        let corrupt = OpenError::SuperblockCorrupt {
            file: "/trees/a/data.aimkv".into(),
            first: "checksum mismatch".into(),
            second: "bad magic".into(),
        };
        assert!(corrupt.is_corruption());
        assert!(Error::from(corrupt).is_corruption());
        let free_list = OpenError::FreeListCorrupt {
            file: "/trees/a/data.aimkv".into(),
            page: 9,
            reason: "the page has no header".into(),
        };
        assert!(free_list.is_corruption());
        assert!(free_list.to_string().contains("page 9"), "{free_list}");
        let foreign = OpenError::ForeignDirectory {
            dir: "/trees/a".into(),
            found: "notes.txt".into(),
        };
        assert!(!foreign.is_corruption());
        assert_eq!(foreign.page_error_kind(), None);
    }
}
