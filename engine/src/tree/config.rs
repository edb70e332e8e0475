//! Tree configuration.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::pool::ScanIo;
use crate::storage::{FileOpener, StorageOpener};

/// What a commit promises when it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// No log: commits reach the file at the next checkpoint. A crash loses what was
    /// committed since the last checkpoint and never corrupts the tree.
    None,
    /// Each commit is appended to the log before it returns. `sync: false`: handed to the
    /// OS, so a process crash loses nothing acknowledged and a power loss may lose a
    /// suffix of commits, never one in the middle. `sync: true`: on disk before the
    /// commit returns; concurrent committers share one fdatasync.
    Wal {
        /// fdatasync the log before each commit returns.
        sync: bool,
    },
}

/// Default: checkpoint once the log holds 64 MiB.
pub const DEFAULT_CHECKPOINT_LOG_BYTES: u64 = 64 << 20;
/// Default: checkpoint at least every 30 seconds while there are changes.
pub const DEFAULT_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(30);

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
    pub(crate) durability: Durability,
    pub(crate) background_checkpoints: bool,
    pub(crate) checkpoint_interval: Duration,
    pub(crate) checkpoint_log_bytes: u64,
    pub(crate) opener: Arc<dyn StorageOpener>,
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
            durability: Durability::Wal { sync: false },
            background_checkpoints: true,
            checkpoint_interval: DEFAULT_CHECKPOINT_INTERVAL,
            checkpoint_log_bytes: DEFAULT_CHECKPOINT_LOG_BYTES,
            opener: Arc::new(FileOpener),
        }
    }

    /// What commits promise (default `Durability::Wal { sync: false }`).
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// Runs the background checkpointer (default on).
    pub fn background_checkpoints(mut self, on: bool) -> Self {
        self.background_checkpoints = on;
        self
    }

    /// The background checkpointer runs at least this often while there are changes.
    pub fn checkpoint_interval(mut self, every: Duration) -> Self {
        self.checkpoint_interval = every;
        self
    }

    /// The background checkpointer runs once the log holds this many bytes.
    pub fn checkpoint_log_bytes(mut self, bytes: u64) -> Self {
        self.checkpoint_log_bytes = bytes;
        self
    }

    /// Opens the tree's files through `opener` instead of the file system: tests pass a
    /// simulated disk or a fault injector.
    pub fn storage(mut self, opener: Arc<dyn StorageOpener>) -> Self {
        self.opener = opener;
        self
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
