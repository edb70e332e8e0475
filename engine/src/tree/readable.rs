//! The reads a `Tree` and a `Snapshot` share, written once as the provided methods of one
//! trait (as fjall's `Readable`): each implementor names the version it reads, and every
//! read runs against that version.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use arc_swap::Guard;

use super::keys::KeysBuilder;
use super::range::RangeBuilder;
use super::scan::{prefix_end, ScanSource};
use super::shared::Shared;
use crate::btree::{self, Version};
use crate::error::Result;
use crate::page::ValueCell;

/// What one read sees: the tree's shared state and one committed version of it.
///
/// Public only because [`Readable`] names it; nothing outside the engine can build one,
/// so no other type implements the trait.
pub struct ReadView<'a> {
    shared: &'a Shared,
    version: Pinned<'a>,
}

/// How a read view holds its version.
enum Pinned<'a> {
    /// The tree's current version, loaded without touching its reference count: a read
    /// on a `Tree` costs one atomic load, as before there was a trait.
    Current(Guard<Arc<Version>>),
    /// The version a snapshot holds.
    Held(&'a Arc<Version>),
}

impl<'a> ReadView<'a> {
    /// The version that is current now.
    #[inline]
    pub(crate) fn current(shared: &'a Shared) -> Self {
        ReadView {
            shared,
            version: Pinned::Current(shared.current_guard()),
        }
    }

    /// A version a snapshot holds.
    #[inline]
    pub(crate) fn held(shared: &'a Shared, version: &'a Arc<Version>) -> Self {
        ReadView {
            shared,
            version: Pinned::Held(version),
        }
    }

    #[inline]
    fn version(&self) -> &Arc<Version> {
        match &self.version {
            Pinned::Current(guard) => guard,
            Pinned::Held(version) => version,
        }
    }

    #[inline]
    fn pool(&self) -> &crate::pool::BufferPool {
        self.shared.pool()
    }

    /// What a scan over this view reads: it keeps the version alive on its own.
    fn scan(&self) -> ScanSource {
        ScanSource::new(
            self.shared.pool().clone(),
            self.version().clone(),
            self.shared.readahead_pages(),
        )
    }

    /// Entries within the bounds: two descents, no copy of the keys.
    fn count(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Result<u64> {
        btree::count_range(self.pool(), self.version(), lo, hi)
    }
}

/// The reads of one committed version of a tree, shared by [`Tree`](crate::Tree) (the
/// latest commit at the moment of each call) and [`Snapshot`](crate::Snapshot) (the
/// commit it was taken at). Bring it into scope to read: `use aimeta_engine::Readable;`.
///
/// Readers never wait for writers and never block them.
pub trait Readable {
    /// The version the reads of this handle see; the one method an implementor writes.
    #[doc(hidden)]
    fn read_view(&self) -> ReadView<'_>;

    /// The value stored under `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(key, <[u8]>::to_vec)
    }

    /// Calls `f` with the value stored under `key` without copying it out of the page
    /// (a value kept in overflow pages is read into a temporary buffer first).
    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        let view = self.read_view();
        btree::get_value(view.pool(), view.version(), key, f)
    }

    /// A range scan builder: `.prefix(p)`, bounds, `.rev()`, `.limit(n)`, then iterate.
    /// The scan reads the version this call sees, however long it runs.
    fn range(&self) -> RangeBuilder {
        RangeBuilder::new(self.read_view().scan())
    }

    /// A key-only listing builder: `.prefix(p)`, `.delimiter(b'/')`, `.start_after(k)`,
    /// `.limit(n)`, then iterate. The listing reads the version this call sees.
    fn scan_keys(&self) -> KeysBuilder {
        KeysBuilder::new(self.read_view().scan())
    }

    /// The longest stored key that is a prefix of `query`, with its value.
    fn longest_prefix_record(&self, query: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.longest_prefix_with(query, None, |k, v| (k.to_vec(), v.to_vec()))
    }

    /// The longest stored key that is a prefix of `query` and ends at a `boundary` byte
    /// of `query` (or at its end), with its value: for `/`-separated paths, the deepest
    /// stored ancestor. Right on any key set, and it skips partial-segment candidates.
    fn longest_prefix_record_at(
        &self,
        query: &[u8],
        boundary: u8,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.longest_prefix_with(query, Some(boundary), |k, v| (k.to_vec(), v.to_vec()))
    }

    /// Calls `f` with the longest stored prefix of `query` (ending at a `boundary` byte of
    /// `query` when one is given) and its value, without copies: no cursor, and no
    /// allocation unless the value is kept in overflow pages.
    fn longest_prefix_with<R>(
        &self,
        query: &[u8],
        boundary: Option<u8>,
        f: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        let view = self.read_view();
        let pool = view.pool();
        btree::longest_prefix_in(
            pool,
            view.version(),
            query,
            boundary,
            |k, cell| match cell {
                ValueCell::Inline(bytes) => Ok(f(k, bytes)),
                other => {
                    let mut buf = Vec::new();
                    btree::read_value(pool, other, &mut buf)?;
                    Ok(f(k, &buf))
                }
            },
        )
    }

    /// Entries whose keys lie within `range`: two descents, whatever its size.
    fn count<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<u64> {
        self.read_view().count(
            range.start_bound().map(|k| k.as_ref()),
            range.end_bound().map(|k| k.as_ref()),
        )
    }

    /// Entries whose keys start with `prefix`: two descents.
    fn count_prefix(&self, prefix: &[u8]) -> Result<u64> {
        let end = prefix_end(prefix);
        self.read_view()
            .count(Bound::Included(prefix), end.as_ref().map(Vec::as_slice))
    }

    /// Entries in the version read.
    fn len(&self) -> u64 {
        self.read_view().version().entries
    }

    /// True when the version read holds no entry.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::KeyItem;
    use crate::tree::{Tree, TreeConfig};

    /// Every read of the trait, gathered so that two handles can be compared.
    fn reads(r: &impl Readable) -> Result<Vec<String>> {
        let range: Vec<_> = r.range().prefix(b"a/").iter().collect::<Result<_>>()?;
        let keys: Vec<KeyItem> = r
            .scan_keys()
            .delimiter(b'/')
            .iter()
            .collect::<Result<_>>()?;
        Ok(vec![
            format!("{:?}", r.get(b"a/1")?),
            format!("{:?}", r.get_with(b"a/2", <[u8]>::len)?),
            format!("{range:?}"),
            format!("{keys:?}"),
            format!("{:?}", r.longest_prefix_record(b"a/1/x")?),
            format!("{:?}", r.longest_prefix_record_at(b"a/1x", b'/')?),
            format!(
                "{:?}",
                r.longest_prefix_with(b"b/1", None, |k, v| k.len() + v.len())?
            ),
            format!("{}", r.count(&b"a/"[..]..&b"b/"[..])?),
            format!("{}", r.count_prefix(b"a/")?),
            format!("{} {}", r.len(), r.is_empty()),
        ])
    }

    #[test]
    fn a_snapshot_reads_its_commit_and_the_tree_the_latest_through_the_same_methods() -> Result<()>
    {
        let dir = tempfile::tempdir().expect("tempdir");
        let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(16 * 4096))?;
        for k in ["a/1", "a/2", "b/1"] {
            tree.put(k.as_bytes(), b"v")?;
        }
        let before = tree.snapshot();
        let seen = reads(&before)?;
        assert_eq!(reads(&tree)?, seen);
        assert_eq!(seen[0], "Some([118])");
        assert_eq!(seen[8], "2");
        assert_eq!(seen[9], "3 false");

        tree.delete(b"a/1")?;
        tree.put(b"a/3", &[7; 9000])?;
        assert_eq!(reads(&before)?, seen, "the snapshot still sees its commit");
        let now = reads(&tree)?;
        assert_eq!(now[0], "None");
        assert_eq!(now[1], "Some(1)");
        assert_eq!(now[8], "2");
        assert_eq!(now[9], "3 false");
        assert_ne!(now[2], seen[2]);
        // A value in overflow pages comes through the zero-copy lookup too.
        assert_eq!(
            tree.longest_prefix_with(b"a/3/x", Some(b'/'), |k, v| (k.to_vec(), v.len()))?,
            Some((b"a/3".to_vec(), 9000))
        );
        Ok(())
    }
}
