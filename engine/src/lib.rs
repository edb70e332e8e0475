//! aimeta-engine: an embedded ordered key-value store built for AI-metadata workloads
//! (dataset shard manifests, KV-cache chain indexes).
//!
//! A copy-on-write B+tree of pages (4 KiB by default) grouped in blob frames (512 KiB)
//! lives in one data file under a buffer pool whose unit of residency and of I/O is the
//! page: a cache miss reads the pages it needs, never a whole frame, on every read path.
//! Pages are prefix-compressed and inner pages carry per-child entry counts, so a count is
//! two descents. Readers never wait: each sees one committed version.
//!
//! Reads are the methods of the [`Readable`] trait, implemented by [`Tree`] (each read
//! sees the latest commit) and by [`Snapshot`] (every read sees the commit it was taken
//! at). Opening fails with an [`OpenError`]; reads and writes with an [`Error`], which
//! every error of the crate converts into.
//!
//! ```
//! use aimeta_engine::{KeyItem, Readable, Tree, TreeConfig};
//!
//! # fn main() -> Result<(), aimeta_engine::Error> {
//! let dir = tempfile::tempdir().expect("temp dir");
//! let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(64 << 20))?;
//! tree.put(b"ds/laion/shard-00001/sample-00000001", b"offset=0")?;
//! tree.put(b"ds/laion/shard-00001/sample-00000002", b"offset=24")?;
//! tree.put(b"ds/laion/shard-00002/sample-00000001", b"offset=0")?;
//! tree.put(b"kv/llama70b/0a1b2c3d", b"block 7")?;
//!
//! // A prefix scan with values, limited to 100 entries.
//! let shard: Vec<_> = tree.range().prefix(b"ds/laion/shard-00001/").limit(100).iter().collect::<Result<_, _>>()?;
//! assert_eq!(shard.len(), 2);
//!
//! // An S3-style listing: keys rolled up at '/'.
//! let listing: Vec<_> = tree.scan_keys().prefix(b"ds/laion/").delimiter(b'/').iter().collect::<Result<_, _>>()?;
//! assert_eq!(listing, vec![
//!     KeyItem::CommonPrefix(b"ds/laion/shard-00001/".to_vec()),
//!     KeyItem::CommonPrefix(b"ds/laion/shard-00002/".to_vec()),
//! ]);
//!
//! // The longest stored key that is a prefix of a query.
//! let hit = tree.longest_prefix_record(b"kv/llama70b/0a1b2c3d/99aa88bb")?;
//! assert_eq!(hit, Some((b"kv/llama70b/0a1b2c3d".to_vec(), b"block 7".to_vec())));
//!
//! // Counts, compare-and-swap, checkpoints.
//! assert_eq!(tree.count_prefix(b"ds/")?, 3);
//! assert!(tree.compare_and_swap(b"kv/llama70b/0a1b2c3d", Some(b"block 7"), Some(b"block 8"))?.is_ok());
//!
//! // A snapshot reads through the same trait, and keeps seeing its commit.
//! let snapshot = tree.snapshot();
//! tree.delete(b"kv/llama70b/0a1b2c3d")?;
//! assert_eq!(snapshot.get(b"kv/llama70b/0a1b2c3d")?, Some(b"block 8".to_vec()));
//! assert_eq!(tree.get(b"kv/llama70b/0a1b2c3d")?, None);
//! tree.checkpoint()?;
//! assert_eq!(tree.metrics().bm_scan_full_blob_reads, 0);
//! # Ok(())
//! # }
//! ```

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod btree;
mod error;
mod filter;
mod frame;
mod page;
mod pool;
pub mod storage;
#[cfg(test)]
mod test_rng;
#[doc(hidden)]
pub mod testing;
mod tree;
mod wal;

pub use btree::{CheckReport, KeyItem, Mutation, MAX_KEY_LEN, MAX_VALUE_LEN};
pub use error::{Error, OpenError, PageError, PageErrorKind, Result, StorageError, WalError};
/// What is wrong with a page's layout, carried by [`PageError::Corrupt`].
pub use page::Corruption;
pub use pool::{Metrics, ScanIo};
pub use storage::DataReads;
pub use tree::{
    CasConflict, Durability, Keys, KeysBuilder, Range, RangeBuilder, Readable, Snapshot, Tree,
    TreeConfig, WriteBatch,
};

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
