//! Errors of the page layer: what is wrong with which page of which file.

use std::path::PathBuf;

/// A page read from disk that cannot be trusted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PageError {
    /// The checksum stored in the page does not match its contents.
    #[error("{file}: page {page} is corrupt: stored checksum {stored:#010x} but the contents hash to {computed:#010x}")]
    ChecksumMismatch {
        /// The data file.
        file: PathBuf,
        /// Page number within the file.
        page: u64,
        /// Checksum found in the page header.
        stored: u32,
        /// Checksum computed over the page as read.
        computed: u32,
    },

    /// The page header names another page: a misdirected or lost write.
    #[error("{file}: page {page} is corrupt: its header says it is page {found}")]
    WrongPageId {
        /// The data file.
        file: PathBuf,
        /// Page number that was read.
        page: u64,
        /// Page number recorded in the header.
        found: u64,
    },

    /// The page is of a different kind than the tree structure says it must be.
    #[error("{file}: page {page} is corrupt: the tree expects a page of kind {expected} there, but it holds kind byte {found}")]
    UnexpectedKind {
        /// The data file.
        file: PathBuf,
        /// Page number.
        page: u64,
        /// The kind the tree expects at this place.
        expected: &'static str,
        /// The kind byte found.
        found: u8,
    },

    /// The page passed its checksum but its layout is impossible.
    #[error("{file}: page {page} is corrupt: {reason}")]
    Malformed {
        /// The data file.
        file: PathBuf,
        /// Page number.
        page: u64,
        /// Which structural rule failed.
        reason: String,
    },
}
