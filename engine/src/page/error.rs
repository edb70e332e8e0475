//! Errors of the page layer: what is wrong with which page of which file.

use std::path::{Path, PathBuf};

use super::kind::{PageId, PageKind};

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

    /// The page passed its checksum but breaks a rule of its kind's layout: its own bytes
    /// show what is wrong.
    #[error("{file}: page {page} is corrupt: {source}")]
    Corrupt {
        /// The data file.
        file: PathBuf,
        /// Page number.
        page: u64,
        /// Which structural rule failed.
        #[source]
        source: Corruption,
    },

    /// The page, or a reference to it, contradicts the rest of the file: a page number
    /// outside the data area, an overflow run of another value, an image on disk that is
    /// not the one in memory.
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

/// What is wrong with the layout of one page that passed its checksum. Found when a page
/// enters memory, before any accessor reads it, so that none can read out of bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Corruption {
    /// The kind byte names no page kind.
    #[error("unknown page kind byte {byte}")]
    UnknownKind {
        /// The kind byte found.
        byte: u8,
    },

    /// The entry count and prefix length put the end of the slot array past the page.
    #[error("{} header claims {entries} entries and a {prefix_len}-byte prefix, more than the page holds", kind.name())]
    SlotsPastEnd {
        /// Leaf or inner.
        kind: PageKind,
        /// Entry count from the header.
        entries: usize,
        /// Prefix length from the page.
        prefix_len: usize,
    },

    /// A slot points into the slot array, or so near the end of the page that the fixed
    /// part of its cell does not fit.
    #[error("{} slot {slot} points outside the cell area ({offset})", kind.name())]
    SlotOutsideCells {
        /// Leaf or inner.
        kind: PageKind,
        /// Index of the slot.
        slot: usize,
        /// The page offset it holds.
        offset: usize,
    },

    /// A cell's key or value runs past the end of the page.
    #[error("{} cell {cell} runs past the end of the page", kind.name())]
    CellPastEnd {
        /// Leaf or inner.
        kind: PageKind,
        /// Index of the cell.
        cell: usize,
    },

    /// An inner page without children: every inner page routes to at least one.
    #[error("inner page with no child")]
    NoChild,

    /// An inner cell points at a superblock page (0 or 1).
    #[error("inner cell {cell} points at reserved page {child}")]
    ReservedChild {
        /// Index of the cell.
        cell: usize,
        /// The child page number it holds.
        child: PageId,
    },

    /// A leaf's restart interval is not a power of two (the search masks with it).
    #[error("leaf restart interval {interval} is not a power of two")]
    RestartInterval {
        /// The interval found.
        interval: usize,
    },

    /// A front-coded cell shares more bytes with the key before it than that key has.
    #[error("leaf cell {cell} shares {shared} bytes with a {previous_len}-byte key")]
    SharesTooMuch {
        /// Index of the cell.
        cell: usize,
        /// Bytes it claims to share.
        shared: usize,
        /// Length of the previous key without the page prefix.
        previous_len: usize,
    },

    /// A restart cell shares bytes with the key before it: a restart stores its whole key.
    #[error(
        "leaf cell {cell} shares {shared} bytes with a {previous_len}-byte key but is a restart"
    )]
    RestartShares {
        /// Index of the cell.
        cell: usize,
        /// Bytes it claims to share.
        shared: usize,
        /// Length of the previous key without the page prefix.
        previous_len: usize,
    },

    /// A leaf cell decodes to an empty key, which the tree never stores.
    #[error("leaf cell {cell} holds an empty key")]
    EmptyKey {
        /// Index of the cell.
        cell: usize,
    },

    /// A free-list page's extent count is more than the page can hold.
    #[error("free-list page claims {extents} extents, more than it holds")]
    FreeListOverfull {
        /// Extent count from the header.
        extents: usize,
    },
}

impl Corruption {
    /// The error for page `page` of `file` corrupt in this way.
    pub fn at(self, file: &Path, page: PageId) -> PageError {
        PageError::Corrupt {
            file: file.to_path_buf(),
            page,
            source: self,
        }
    }
}
