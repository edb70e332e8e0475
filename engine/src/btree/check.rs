//! The integrity check: walks every page of a version and verifies the invariants that
//! reads rely on. Used by tests, crash-recovery checks and `Tree::check_integrity`.

use std::collections::HashSet;
use std::sync::Arc;

use super::read::{child, overflow_run};
use super::Version;
use crate::error::{Error, Result};
use crate::page::{PageId, ValueCell};
use crate::pool::{Access, BufferPool, Page};

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

/// Verifies key order within and across pages, separator bounds, per-child counts,
/// uniform depth and that no page is used twice or is free. `is_free` reports free pages.
pub fn check_tree(
    pool: &BufferPool,
    v: &Version,
    is_free: &dyn Fn(PageId) -> bool,
) -> Result<CheckReport> {
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
            is_free,
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
    is_free: &dyn Fn(PageId) -> bool,
    report: &mut CheckReport,
) -> Result<u64> {
    let id = page.id();
    if !seen.insert(id) {
        return Err(fail(format!("page {id} is referenced twice")));
    }
    if is_free(id) {
        return Err(fail(format!("page {id} is in use but also free")));
    }
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
                let (first, n) = overflow_run(len, first, pool.geometry().page_bytes());
                for p in first..first + n {
                    if !seen.insert(p) || is_free(p) {
                        return Err(fail(format!(
                            "overflow page {p} of leaf {id} is shared or free"
                        )));
                    }
                }
                report.overflow_pages += n;
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
        let count = walk(pool, c, level - 1, c_lo, c_hi, seen, is_free, report)?;
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
