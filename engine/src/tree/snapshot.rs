//! Snapshots: several reads that see the tree as of one commit.

use std::ops::RangeBounds;
use std::sync::Arc;

use super::handle::as_ref_bound;
use super::keys::KeysBuilder;
use super::range::RangeBuilder;
use super::shared::Shared;
use crate::btree::{self, prefix_successor, Version};
use crate::error::Result;
use crate::page::ValueCell;

/// A read view of one commit. Holding it keeps the pages of that commit from being
/// reused, so drop it when done.
#[derive(Clone)]
pub struct Snapshot {
    shared: Arc<Shared>,
    version: Arc<Version>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("seq", &self.version.seq)
            .finish_non_exhaustive()
    }
}

impl Snapshot {
    pub(crate) fn new(shared: Arc<Shared>, version: Arc<Version>) -> Self {
        Snapshot { shared, version }
    }

    /// The commit this snapshot sees.
    pub fn seq(&self) -> u64 {
        self.version.seq
    }

    /// Entries in this snapshot.
    pub fn len(&self) -> u64 {
        self.version.entries
    }

    /// True when the snapshot holds no entry.
    pub fn is_empty(&self) -> bool {
        self.version.entries == 0
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        btree::get_value(&self.shared.pool, &self.version, key, |b| b.to_vec())
    }

    /// Calls `f` with the value stored under `key`, without copying it.
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        btree::get_value(&self.shared.pool, &self.version, key, f)
    }

    /// A range scan builder over this snapshot.
    pub fn range(&self) -> RangeBuilder {
        RangeBuilder::new(
            self.shared.pool.clone(),
            self.version.clone(),
            self.shared.readahead_pages,
        )
    }

    /// A key listing builder over this snapshot.
    pub fn scan_keys(&self) -> KeysBuilder {
        KeysBuilder::new(
            self.shared.pool.clone(),
            self.version.clone(),
            self.shared.readahead_pages,
        )
    }

    /// The longest stored key that is a prefix of `query`, with its value.
    pub fn longest_prefix_record(&self, query: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.longest_prefix_with(query, None, |k, v| (k.to_vec(), v.to_vec()))
    }

    /// The longest stored key that is a prefix of `query` and ends at a `boundary` byte
    /// of `query` (or at its end), with its value: for `/`-separated paths, the deepest
    /// stored ancestor. Right on any key set, and it skips partial-segment candidates.
    pub fn longest_prefix_record_at(
        &self,
        query: &[u8],
        boundary: u8,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.longest_prefix_with(query, Some(boundary), |k, v| (k.to_vec(), v.to_vec()))
    }

    /// Calls `f` with the longest stored prefix of `query` (ending at a `boundary` byte of
    /// `query` when one is given) and its value, without copies.
    pub fn longest_prefix_with<R>(
        &self,
        query: &[u8],
        boundary: Option<u8>,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        longest_prefix_on(&self.shared.pool, &self.version, query, boundary, f)
    }

    /// Entries whose keys lie within `range`.
    pub fn count<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<u64> {
        count_in(&self.shared.pool, &self.version, range)
    }

    /// The leaf page whose key range holds `key`: a diagnostic for I/O accounting.
    pub fn leaf_page_of(&self, key: &[u8]) -> Result<Option<u64>> {
        btree::leaf_page_of(&self.shared.pool, &self.version, key)
    }

    /// Tree height in this snapshot (0 when empty, 1 for a lone leaf).
    pub fn height(&self) -> u32 {
        self.version.height
    }

    /// Entries whose keys start with `prefix`.
    pub fn count_prefix(&self, prefix: &[u8]) -> Result<u64> {
        let hi = match prefix_successor(prefix) {
            Some(s) => std::ops::Bound::Excluded(s),
            None => std::ops::Bound::Unbounded,
        };
        btree::count_range(
            &self.shared.pool,
            &self.version,
            std::ops::Bound::Included(prefix),
            as_ref_bound(&hi),
        )
    }
}

/// Entries of `v` within `range`: two descents, no copy of the bounds.
pub(crate) fn count_in<K: AsRef<[u8]>, R: RangeBounds<K>>(
    pool: &crate::pool::BufferPool,
    v: &Version,
    range: R,
) -> Result<u64> {
    btree::count_range(
        pool,
        v,
        range.start_bound().map(|k| k.as_ref()),
        range.end_bound().map(|k| k.as_ref()),
    )
}

/// The longest stored prefix of `query` in `v` (ending at a `boundary` byte of `query`
/// when one is given) and its value, passed to `f`; overflow values are read into a
/// temporary buffer. No cursor and no allocation for inline values.
pub(crate) fn longest_prefix_on<R>(
    pool: &crate::pool::BufferPool,
    v: &Version,
    query: &[u8],
    boundary: Option<u8>,
    f: impl FnOnce(&[u8], &[u8]) -> R,
) -> Result<Option<R>> {
    btree::longest_prefix_in(pool, v, query, boundary, |k, cell| match cell {
        ValueCell::Inline(bytes) => Ok(f(k, bytes)),
        other => {
            let mut buf = Vec::new();
            btree::read_value(pool, other, &mut buf)?;
            Ok(f(k, &buf))
        }
    })
}
