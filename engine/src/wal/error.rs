//! Errors of the log layer.

use std::path::PathBuf;

/// A log that cannot be trusted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WalError {
    /// A damaged record is followed by valid ones: this is not a torn tail.
    #[error("{file}: log record at byte {offset} is corrupt ({reason}) but valid records follow it; the log is damaged before its tail: restore the directory from a backup")]
    CorruptBeforeTail {
        /// The log file.
        file: PathBuf,
        /// Byte offset of the damaged record.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },

    /// Commits are missing between the checkpoint and the log.
    #[error("{file}: the log jumps from commit {expected} to commit {found}: commits in between are lost; restore the directory from a backup")]
    Gap {
        /// The log file.
        file: PathBuf,
        /// The commit the log should hold next.
        expected: u64,
        /// The commit it holds instead.
        found: u64,
    },

    /// A log file's header is damaged and records of no plausible epoch follow it, so the
    /// commits in the file cannot be told apart from garbage.
    #[error("{file}: the log file's header is damaged ({reason}) and {bytes} bytes follow it that match neither neighbouring epoch of the other log file: the commits in it cannot be recovered. Restore the directory from a backup; moving the file away opens the tree without those commits")]
    DamagedHeader {
        /// The log file.
        file: PathBuf,
        /// What is wrong with the header.
        reason: String,
        /// Bytes after the header.
        bytes: u64,
    },

    /// A log file was written by a newer format version of the log.
    #[error("{file} has log format version {found}, newer than the {supported} this build reads: open the tree with a newer aimeta-engine")]
    TooNew {
        /// The log file.
        file: PathBuf,
        /// Version in the header.
        found: u32,
        /// Newest version this build reads.
        supported: u32,
    },
}
