//! Tree configuration.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::builder::setters;
use crate::pool::ScanIo;
use crate::storage::{DataReads, FileOpener, StorageOpener};

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
/// Default fill read-around window: 128 KiB, the kernel's usual read-around for a page
/// fault on a mapped file.
pub const DEFAULT_FILL_READAROUND_BYTES: u32 = 128 * 1024;
/// Fewest pages a pool may hold.
pub const MIN_CACHE_PAGES: u64 = 8;

/// The buffer-pool budget as it was given: the last of `cache_bytes` and `cache_frames`
/// wins, and frames are counted in the frame size of the tree that is opened.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CacheBudget {
    /// `DEFAULT_CACHE_FRAMES` frames.
    Default,
    /// This many bytes.
    Bytes(u64),
    /// This many frames.
    Frames(u64),
}

/// How to open a tree. Page and frame sizes apply when the tree is created; an existing
/// tree keeps the sizes recorded in its superblock.
#[derive(Debug, Clone)]
pub struct TreeConfig {
    pub(crate) dir: PathBuf,
    pub(crate) cache: CacheBudget,
    pub(crate) page_size: u32,
    pub(crate) frame_size: u32,
    pub(crate) scan_io: ScanIo,
    pub(crate) readahead_bytes: u32,
    pub(crate) fill_readaround_bytes: u32,
    pub(crate) data_reads: DataReads,
    pub(crate) reserve_cache: bool,
    pub(crate) warm_inner_levels: bool,
    pub(crate) key_filter_bits: u32,
    pub(crate) durability: Durability,
    pub(crate) background_checkpoints: bool,
    pub(crate) checkpoint_interval: Duration,
    pub(crate) checkpoint_log_bytes: u64,
    /// None: held pages never start a checkpoint.
    pub(crate) checkpoint_held_pages: Option<u64>,
    pub(crate) opener: Arc<dyn StorageOpener>,
}

impl TreeConfig {
    /// A tree in directory `dir` (created when missing) with default settings: 4 KiB
    /// pages, 512 KiB frames, a 256 MiB pool and paged reads.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        TreeConfig {
            dir: dir.as_ref().to_path_buf(),
            cache: CacheBudget::Default,
            page_size: DEFAULT_PAGE_SIZE,
            frame_size: DEFAULT_FRAME_SIZE,
            scan_io: ScanIo::Paged,
            readahead_bytes: DEFAULT_READAHEAD_BYTES,
            fill_readaround_bytes: DEFAULT_FILL_READAROUND_BYTES,
            data_reads: DataReads::Mapped,
            reserve_cache: false,
            warm_inner_levels: true,
            key_filter_bits: 0,
            durability: Durability::Wal { sync: false },
            background_checkpoints: true,
            checkpoint_interval: DEFAULT_CHECKPOINT_INTERVAL,
            checkpoint_log_bytes: DEFAULT_CHECKPOINT_LOG_BYTES,
            checkpoint_held_pages: None,
            opener: Arc::new(FileOpener),
        }
    }

    setters! {
        /// What commits promise (default `Durability::Wal { sync: false }`).
        durability(d: Durability) => durability = d;
        /// Runs the background checkpointer (default on).
        background_checkpoints(on: bool) => background_checkpoints = on;
        /// The background checkpointer runs at least this often while there are changes.
        checkpoint_interval(every: Duration) => checkpoint_interval = every;
        /// The background checkpointer runs once the log holds this many bytes.
        checkpoint_log_bytes(bytes: u64) => checkpoint_log_bytes = bytes;
        /// The background checkpointer runs once this many pages wait for it while the
        /// pool writes changed pages back: pages that commits replaced and no reader
        /// needs, which the durable checkpoint still references, so that only a newer
        /// checkpoint brings them back into use. Until then each page written back goes
        /// to a new place and the file grows. Default: off. A quarter of the pool's pages
        /// made swaps past the budget grow the file by a fifth as much, but the trace
        /// replay's lookups read 4 to 9 % more pages, by when the checkpoints ran
        /// (docs/performance.md, 2026-12-03, eighth session).
        checkpoint_held_pages(pages: u64) => checkpoint_held_pages = Some(pages);
        /// Opens the tree's files through `opener` instead of the file system: tests pass a
        /// simulated disk or a fault injector.
        storage(opener: Arc<dyn StorageOpener>) => opener = opener;
        /// Buffer-pool budget in bytes.
        cache_bytes(bytes: u64) => cache = CacheBudget::Bytes(bytes);
        /// Buffer-pool budget in frames (the seed report's form: 512 frames = 256 MiB).
        cache_frames(frames: u64) => cache = CacheBudget::Frames(frames);
        /// Page size for a new tree (a power of two from 4 to 32 KiB).
        page_size(bytes: u32) => page_size = bytes;
        /// Frame size for a new tree (a power of two, at least two pages).
        frame_size(bytes: u32) => frame_size = bytes;
        /// How scans and longest-prefix lookups read missing pages; `ScanIo::FullFrame`
        /// reproduces the peer engine's whole-frame reads for comparison.
        scan_io(mode: ScanIo) => scan_io = mode;
        /// Largest readahead request of a sequential scan, in bytes (0 disables readahead).
        readahead_bytes(bytes: u32) => readahead_bytes = bytes;
        /// While the whole data file fits in the pool and the pool has not yet evicted, a
        /// page miss reads the aligned window of this many bytes around the page (default
        /// 128 KiB; 0 reads only the page): a store that fits warms at sequential speed.
        fill_readaround_bytes(bytes: u32) => fill_readaround_bytes = bytes;
        /// How the data file's page misses reach the device (default `DataReads::Mapped`,
        /// through the OS page cache; `DataReads::Direct` bypasses it, for a pool that is
        /// given all the memory there is, as under a memory cgroup).
        data_reads(reads: DataReads) => data_reads = reads;
        /// Allocates the pool's whole budget when the tree opens, a buffer for every page,
        /// with the memory touched (default off): a miss on a cold pool then copies into a
        /// ready buffer instead of waiting for the OS to supply new memory, a page fault
        /// per 4 KiB that cost about 4 us a miss here. The budget is then in use from the
        /// start, as a database server's shared buffers are. No effect with
        /// `DataReads::Shared`, whose clean pages are the OS page cache's.
        reserve_cache(on: bool) => reserve_cache = on;
        /// Reads the inner levels below the root into the pool when the tree opens, level by
        /// level while they hold at most half of it (default on): a cold pool then misses
        /// only on leaves, and the bulk loader's inner pages come in a few sequential
        /// requests instead of one random read each on first use.
        warm_inner_levels(on: bool) => warm_inner_levels = on;
        /// Keeps a filter of the stored keys at this many bits a key (0, the default: no
        /// filter; 10 rejects about 99 % of absent keys; at most 32). Longest-prefix
        /// lookups skip the candidates it rules out, so most misses read no leaf. Its
        /// memory comes out of the pool's budget; it lives in `keys.filter`, written at
        /// checkpoints, and is rebuilt from the keys when that file does not match.
        key_filter_bits(bits: u32) => key_filter_bits = bits;
    }

    /// The tree's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The budget in bytes, given the frame size in use.
    pub(crate) fn budget_bytes(&self, frame_size: u32) -> u64 {
        match self.cache {
            CacheBudget::Bytes(b) => b,
            CacheBudget::Frames(f) => f.saturating_mul(u64::from(frame_size)),
            CacheBudget::Default => DEFAULT_CACHE_FRAMES * u64::from(frame_size),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_budget_given_wins_and_frames_count_in_the_trees_frame_size() {
        let config = TreeConfig::new("/unused");
        assert_eq!(config.budget_bytes(1 << 16), DEFAULT_CACHE_FRAMES << 16);
        let config = config.cache_bytes(1 << 20).cache_frames(3);
        assert_eq!(config.budget_bytes(1 << 16), 3 << 16);
        let config = config.cache_bytes(1 << 20);
        assert_eq!(config.budget_bytes(1 << 16), 1 << 20);
    }

    #[test]
    fn each_setter_sets_its_own_field() {
        let config = TreeConfig::new("/unused")
            .durability(Durability::None)
            .background_checkpoints(false)
            .checkpoint_interval(Duration::from_secs(2))
            .checkpoint_log_bytes(7)
            .checkpoint_held_pages(9)
            .page_size(8192)
            .frame_size(1 << 20)
            .scan_io(ScanIo::FullFrame)
            .readahead_bytes(0)
            .reserve_cache(true)
            .key_filter_bits(10);
        assert_eq!(config.key_filter_bits, 10);
        assert!(config.reserve_cache);
        assert_eq!(config.durability, Durability::None);
        assert!(!config.background_checkpoints);
        assert_eq!(config.checkpoint_interval, Duration::from_secs(2));
        assert_eq!(config.checkpoint_log_bytes, 7);
        assert_eq!(config.checkpoint_held_pages, Some(9));
        assert_eq!((config.page_size, config.frame_size), (8192, 1 << 20));
        assert_eq!(config.scan_io, ScanIo::FullFrame);
        assert_eq!(config.readahead_bytes, 0);
        assert_eq!(config.dir(), Path::new("/unused"));
    }
}
