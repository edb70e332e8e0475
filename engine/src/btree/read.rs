//! Point reads, counts and the first key of a version: one descent each, no cursor.

use std::ops::Bound;
use std::sync::Arc;

use super::Version;
use crate::error::Result;
use crate::page::decode_overflow_run;
use crate::page::{overflow_pages_for, PageError, PageId, PageKind, ValueCell};
use crate::pool::{Access, BufferPool, Page};

/// Fetches child `idx` of inner page `parent`, checking that it has the kind its level
/// requires (`level` is the child's level, 0 for leaves).
#[inline]
pub(crate) fn child(
    pool: &BufferPool,
    parent: &Page,
    idx: usize,
    level: u32,
    access: Access,
) -> Result<Arc<Page>> {
    let id = parent.inner().child(idx);
    let page = pool.get(id, access)?;
    expect_kind(pool, &page, level)?;
    Ok(page)
}

/// Checks that `page` is a leaf at level 0 and an inner page above.
#[inline]
pub(crate) fn expect_kind(pool: &BufferPool, page: &Page, level: u32) -> Result<()> {
    let want = if level == 0 {
        PageKind::Leaf
    } else {
        PageKind::Inner
    };
    if page.kind() != want {
        return Err(PageError::UnexpectedKind {
            file: pool.path().to_path_buf(),
            page: page.id(),
            expected: want.name(),
            found: page.kind() as u8,
        }
        .into());
    }
    Ok(())
}

/// Descends to the leaf whose range holds `key`.
#[inline]
fn leaf_for(
    pool: &BufferPool,
    v: &Version,
    key: &[u8],
    access: Access,
) -> Result<Option<Arc<Page>>> {
    let Some(root) = &v.root else {
        return Ok(None);
    };
    if v.height == 1 {
        return Ok(Some(root.clone()));
    }
    let mut page = child(pool, root, root.inner().search(key), v.height - 2, access)?;
    for level in (0..v.height.saturating_sub(2)).rev() {
        let idx = page.inner().search(key);
        page = child(pool, &page, idx, level, access)?;
    }
    Ok(Some(page))
}

/// The number of the leaf page whose key range holds `key` (None for an empty tree).
pub fn leaf_page_of(pool: &BufferPool, v: &Version, key: &[u8]) -> Result<Option<PageId>> {
    Ok(leaf_for(pool, v, key, Access::Point)?.map(|p| p.id()))
}

/// Calls `f` with the value stored under `key`, if any; large values are read from their
/// overflow pages into a temporary buffer.
pub fn get_value<R>(
    pool: &BufferPool,
    v: &Version,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> R,
) -> Result<Option<R>> {
    let Some(leaf) = leaf_for(pool, v, key, Access::Point)? else {
        return Ok(None);
    };
    let view = leaf.leaf();
    match view.search(key) {
        Ok(i) => match view.value(i) {
            ValueCell::Inline(bytes) => Ok(Some(f(bytes))),
            cell @ ValueCell::Overflow { .. } => {
                let mut buf = Vec::new();
                read_value(pool, cell, &mut buf)?;
                Ok(Some(f(&buf)))
            }
        },
        Err(_) => Ok(None),
    }
}

/// Appends a value cell's bytes to `out`, reading overflow pages when needed.
pub fn read_value(pool: &BufferPool, cell: ValueCell<'_>, out: &mut Vec<u8>) -> Result<()> {
    match cell {
        ValueCell::Inline(bytes) => out.extend_from_slice(bytes),
        ValueCell::Overflow { first, len } => {
            let ps = pool.geometry().page_bytes();
            let run = pool.read_run(
                first,
                overflow_pages_for(len as usize, ps),
                PageKind::Overflow,
            )?;
            decode_overflow_run(&run, len, ps, out).map_err(|page| PageError::Malformed {
                file: pool.path().to_path_buf(),
                page,
                reason: format!("overflow page does not belong to a value of {len} bytes"),
            })?;
        }
    }
    Ok(())
}

impl Version {
    /// The smallest key of this version (None when it holds none): one descent along
    /// the first children the first time, then kept. Longest-prefix lookups use it to
    /// stop as soon as a candidate is below every key, instead of descending to the
    /// first leaf to find nothing there.
    pub fn first_key(&self, pool: &BufferPool) -> Result<Option<&[u8]>> {
        self.first_key_or_init(|| {
            let Some(root) = &self.root else {
                return Ok(None);
            };
            let mut page = root.clone();
            for level in (0..self.height - 1).rev() {
                page = child(pool, &page, 0, level, Access::Walk)?;
            }
            let leaf = page.leaf();
            Ok((!leaf.is_empty()).then(|| {
                let mut k = Vec::new();
                leaf.key_into(0, &mut k);
                k.into_boxed_slice()
            }))
        })
    }
}

/// Number of keys below `key` (or at most `key` when `inclusive`): one descent that adds
/// the entry counts of the children left of the path.
fn rank(pool: &BufferPool, v: &Version, key: &[u8], inclusive: bool) -> Result<u64> {
    let Some(root) = &v.root else {
        return Ok(0);
    };
    let mut rank = 0u64;
    let mut page: Arc<Page> = root.clone();
    for level in (0..v.height - 1).rev() {
        let inner = page.inner();
        let idx = inner.search(key);
        rank += (0..idx).map(|j| inner.count(j)).sum::<u64>();
        page = child(pool, &page, idx, level, Access::Point)?;
    }
    let leaf = page.leaf();
    rank += match leaf.search(key) {
        Ok(i) => i as u64 + u64::from(inclusive),
        Err(i) => i as u64,
    };
    Ok(rank)
}

/// Entries within the bounds: two descents, whatever the size of the range.
pub fn count_range(
    pool: &BufferPool,
    v: &Version,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
) -> Result<u64> {
    let below_lo = match lo {
        Bound::Unbounded => 0,
        Bound::Included(k) => rank(pool, v, k, false)?,
        Bound::Excluded(k) => rank(pool, v, k, true)?,
    };
    let upto_hi = match hi {
        Bound::Unbounded => v.entries,
        Bound::Included(k) => rank(pool, v, k, true)?,
        Bound::Excluded(k) => rank(pool, v, k, false)?,
    };
    Ok(upto_hi.saturating_sub(below_lo))
}

/// The page holding the first byte of an overflow run, for the integrity check.
pub(crate) fn overflow_run(len: u32, first: PageId, page_size: usize) -> (PageId, u64) {
    (first, overflow_pages_for(len as usize, page_size) as u64)
}
