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

    /// A log file header is not this engine's.
    #[error("{file} is not an aimeta-engine log ({reason}): move it out of the tree directory")]
    BadHeader {
        /// The log file.
        file: PathBuf,
        /// What is wrong.
        reason: String,
    },
}
