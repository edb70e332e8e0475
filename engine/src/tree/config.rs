//! Tree configuration.

use std::path::{Path, PathBuf};

use crate::pool::ScanIo;

/// Default page size: 4 KiB.
pub const DEFAULT_PAGE_SIZE: u32 = 4096;
/// Default frame size: 512 KiB.
pub const DEFAULT_FRAME_SIZE: u32 = 512 * 1024;
/// Default pool: 512 frames of 512 KiB = 256 MiB.
pub const DEFAULT_CACHE_FRAMES: u64 = 512;
/// Default readahead cap: 64 KiB.
pub const DEFAULT_READAHEAD_BYTES: u32 = 64 * 1024;
/// Fewest pages a pool may hold.
pub const MIN_CACHE_PAGES: u64 = 8;

/// How to open a tree. Page and frame sizes apply when the tree is created; an existing
/// tree keeps the sizes recorded in its superblock.
#[derive(Debug, Clone)]
pub struct TreeConfig {
    pub(crate) dir: PathBuf,
    pub(crate) cache_bytes: Option<u64>,
    pub(crate) cache_frames: Option<u64>,
    pub(crate) page_size: u32,
    pub(crate) frame_size: u32,
    pub(crate) scan_io: ScanIo,
    pub(crate) readahead_bytes: u32,
}

impl TreeConfig {
    /// A tree in directory `dir` (created when missing) with default settings: 4 KiB
    /// pages, 512 KiB frames, a 256 MiB pool and paged reads.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        TreeConfig {
            dir: dir.as_ref().to_path_buf(),
            cache_bytes: None,
            cache_frames: None,
            page_size: DEFAULT_PAGE_SIZE,
            frame_size: DEFAULT_FRAME_SIZE,
            scan_io: ScanIo::Paged,
            readahead_bytes: DEFAULT_READAHEAD_BYTES,
        }
    }

    /// Buffer-pool budget in bytes.
    pub fn cache_bytes(mut self, bytes: u64) -> Self {
        self.cache_bytes = Some(bytes);
        self.cache_frames = None;
        self
    }

    /// Buffer-pool budget in frames (the seed report's form: 512 frames = 256 MiB).
    pub fn cache_frames(mut self, frames: u64) -> Self {
        self.cache_frames = Some(frames);
        self.cache_bytes = None;
        self
    }

    /// Page size for a new tree (a power of two from 4 to 32 KiB).
    pub fn page_size(mut self, bytes: u32) -> Self {
        self.page_size = bytes;
        self
    }

    /// Frame size for a new tree (a power of two, at least two pages).
    pub fn frame_size(mut self, bytes: u32) -> Self {
        self.frame_size = bytes;
        self
    }

    /// How scans and longest-prefix lookups read missing pages; `ScanIo::FullFrame`
    /// reproduces the peer engine's whole-frame reads for comparison.
    pub fn scan_io(mut self, mode: ScanIo) -> Self {
        self.scan_io = mode;
        self
    }

    /// Largest readahead request of a sequential scan, in bytes (0 disables readahead).
    pub fn readahead_bytes(mut self, bytes: u32) -> Self {
        self.readahead_bytes = bytes;
        self
    }

    /// The tree's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The budget in bytes, given the frame size in use.
    pub(crate) fn budget_bytes(&self, frame_size: u32) -> u64 {
        match (self.cache_bytes, self.cache_frames) {
            (Some(b), _) => b,
            (None, Some(f)) => f.saturating_mul(u64::from(frame_size)),
            (None, None) => DEFAULT_CACHE_FRAMES * u64::from(frame_size),
        }
    }
}
