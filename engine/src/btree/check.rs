//! The integrity check: walks every page a version references, overflow runs included,
//! and verifies the invariants that reads rely on: for each tree page, its on-disk image
//! (checksum, page number, kind, structure, and the same bytes as a clean resident image);
//! for each overflow run, every page's checksum, number, kind and value length; key order
//! within and across pages, separator bounds, per-child counts, uniform depth; and that no
//! page is referenced twice or is free, freed, or outside the file. Used by tests,
//! crash-recovery checks and `Tree::check_integrity`.

use std::collections::HashSet;
use std::sync::Arc;

use super::read::{child, overflow_run, read_value};
use super::Version;
use crate::error::{Error, Result};
use crate::page::{PageId, ValueCell};
use crate::pool::{Access, BufferPool, Page};

/// Why a page cannot belong to the tree (free, freed, outside the file), if it cannot.
pub type NotLive<'a> = &'a dyn Fn(PageId) -> Option<&'static str>;

/// What the check found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Inner pages.
    pub inner_pages: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Overflow pages.
    pub overflow_pages: u64,
    /// Entries.
    pub entries: u64,
}

fn fail(reason: String) -> Error {
    Error::Integrity { reason }
}

/// Runs every check of this module over version `v`; `not_live` tells pages that the tree
/// must not reference.
pub fn check_tree(pool: &BufferPool, v: &Version, not_live: NotLive<'_>) -> Result<CheckReport> {
    let mut report = CheckReport::default();
    let mut seen = HashSet::new();
    if let Some(root) = &v.root {
        let count = walk(
            pool,
            root.clone(),
            v.height - 1,
            None,
            None,
            &mut seen,
            not_live,
            &mut report,
        )?;
        if count != v.entries {
            return Err(fail(format!(
                "tree holds {count} entries but its version says {}",
                v.entries
            )));
        }
    } else if v.entries != 0 || v.height != 0 {
        return Err(fail("empty tree with nonzero entries or height".into()));
    }
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
fn walk(
    pool: &BufferPool,
    page: Arc<Page>,
    level: u32,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
    seen: &mut HashSet<PageId>,
    not_live: NotLive<'_>,
    report: &mut CheckReport,
) -> Result<u64> {
    let id = page.id();
    if !seen.insert(id) {
        return Err(fail(format!("page {id} is referenced twice")));
    }
    if let Some(why) = not_live(id) {
        return Err(fail(format!("page {id} is in the tree but {why}")));
    }
    pool.check_on_disk(&page)?;
    let in_bounds = |k: &[u8]| lo.is_none_or(|l| k >= l) && hi.is_none_or(|h| k < h);
    if level == 0 {
        report.leaf_pages += 1;
        let view = page.leaf();
        let mut prev: Option<Vec<u8>> = None;
        let mut key = view.prefix().to_vec();
        let plen = key.len();
        for i in 0..view.len() {
            // Front coding: restarts hold their whole suffix, and no entry claims more
            // bytes of its predecessor than it has.
            let (shared, _) = view.parts(i);
            if view.restart_of(i) == i && shared != 0 {
                return Err(fail(format!(
                    "leaf {id}: restart entry {i} shares {shared} bytes with the key before it"
                )));
            }
            if plen + shared > key.len() {
                return Err(fail(format!(
                    "leaf {id}: entry {i} shares {shared} bytes with a shorter key"
                )));
            }
            view.step_key(i, plen, &mut key);
            if prev.as_deref().is_some_and(|p| p >= key.as_slice()) {
                return Err(fail(format!(
                    "leaf {id}: key {i} is not above the one before it"
                )));
            }
            if !in_bounds(&key) {
                return Err(fail(format!(
                    "leaf {id}: key {i} lies outside the range its parent gives"
                )));
            }
            if let ValueCell::Overflow { first, len } = view.value(i) {
                report.overflow_pages += check_overflow(pool, id, first, len, seen, not_live)?;
            }
            prev = Some(key.clone());
        }
        if view.is_empty() {
            return Err(fail(format!("leaf {id} is empty")));
        }
        report.entries += view.len() as u64;
        return Ok(view.len() as u64);
    }
    report.inner_pages += 1;
    let inner = page.inner();
    let n = inner.len();
    let mut total = 0;
    let mut seps: Vec<Vec<u8>> = Vec::with_capacity(n);
    for i in 0..n {
        let mut s = Vec::new();
        if i > 0 {
            inner.sep_into(i, &mut s);
            if !in_bounds(&s) {
                return Err(fail(format!(
                    "inner {id}: separator {i} lies outside the node's range"
                )));
            }
            if i > 1 && seps[i - 1] >= s {
                return Err(fail(format!(
                    "inner {id}: separator {i} is not above the one before it"
                )));
            }
        }
        seps.push(s);
    }
    for i in 0..n {
        let c_lo = if i == 0 { lo } else { Some(seps[i].as_slice()) };
        let c_hi = if i + 1 < n {
            Some(seps[i + 1].as_slice())
        } else {
            hi
        };
        let c = child(pool, &page, i, level - 1, Access::Point)?;
        let count = walk(pool, c, level - 1, c_lo, c_hi, seen, not_live, report)?;
        if count != inner.count(i) {
            return Err(fail(format!(
                "inner {id}: child {i} holds {count} entries but the page records {}",
                inner.count(i)
            )));
        }
        total += count;
    }
    Ok(total)
}

/// Checks the overflow run of a value of `len` bytes starting at page `first`, referenced
/// by leaf `leaf`: each page referenced once, live, and readable as the read path reads it
/// (checksum, own number, overflow kind, the value's length). Returns the run's pages.
fn check_overflow(
    pool: &BufferPool,
    leaf: PageId,
    first: PageId,
    len: u32,
    seen: &mut HashSet<PageId>,
    not_live: NotLive<'_>,
) -> Result<u64> {
    let ps = pool.geometry().page_bytes();
    let (first, n) = overflow_run(len, first, ps);
    for p in first..first + n {
        if !seen.insert(p) {
            return Err(fail(format!(
                "overflow page {p} of leaf {leaf} is referenced twice"
            )));
        }
        if let Some(why) = not_live(p) {
            return Err(fail(format!(
                "overflow page {p} of leaf {leaf} is in the tree but {why}"
            )));
        }
    }
    // The read path's own decoding: checksum, number and kind of each page, and the
    // value's length in each header.
    let mut value = Vec::with_capacity(len as usize);
    read_value(pool, ValueCell::Overflow { first, len }, &mut value)?;
    Ok(n)
}
