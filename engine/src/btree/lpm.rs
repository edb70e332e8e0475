//! Longest-prefix lookup: the longest stored key that is a prefix of a query.
//!
//! Seek to the greatest key `k <= q`. If `k` is a prefix of `q`, it is the answer. If not,
//! no stored key longer than `l = lcp(k, q)` can be a prefix of `q` (such a key would lie
//! strictly between `k` and `q`), so repeat with `q[..l]`. Each round shortens the query;
//! the cursor tries its current leaf before descending again, so the usual extra rounds
//! cost a binary search in a page already held. When the leaf holding `q` has no key
//! `<= q`, the predecessor lies in an earlier leaf below the leaf's lower fence `F`, and
//! `lcp(pred, q) <= lcp(F, q)`; the loop continues from that bound without reading the
//! earlier leaf, which may hold nothing of use. Every candidate length is snapped down to
//! one in the version's key-length set (a superset of its keys' lengths): on path keys of
//! fixed-width segments a round goes from the predecessor's common prefix straight to the
//! level below it, and a miss whose common prefix is shorter than every key ends at once,
//! where checking the predecessor of each shorter prefix would read another leaf each.
//! With a stored-key filter (`crate::filter`), the lookup first finds the shortest
//! candidate the filter lets through, going up: most misses end there without a page,
//! and no answer is shorter than it.
//! Correct on any key set, unlike bisecting over candidate lengths with point gets, which
//! needs every prefix of a stored key to be stored too.

use std::cmp::Ordering;
use std::sync::Arc;

use super::read::child;
use super::Version;
use crate::error::Result;
use crate::filter::PrefixHasher;
use crate::page::{cmp_prefixed, lcp, Probe, ValueCell};
use crate::pool::{Access, BufferPool, Counter, Page};

/// A page a lookup holds: the root borrowed from the version, or a child from the pool.
enum Held<'a> {
    Root(&'a Page),
    Child(Arc<Page>),
}

impl std::ops::Deref for Held<'_> {
    type Target = Page;
    #[inline]
    fn deref(&self) -> &Page {
        match self {
            Held::Root(p) => p,
            Held::Child(p) => p,
        }
    }
}

/// Length of the common prefix of `prefix ++ suffix` and `q`.
#[inline]
fn lcp_prefixed(prefix: &[u8], suffix: &[u8], q: &[u8]) -> usize {
    let m = lcp(prefix, q);
    if m < prefix.len() {
        m
    } else {
        m + lcp(suffix, &q[m..])
    }
}

/// Descends to the leaf whose range holds `q`; also returns the leaf's lower fence, as
/// the deepest ancestor that did not take its first child and the child it took.
#[allow(clippy::type_complexity)]
fn descend<'a>(
    pool: &BufferPool,
    v: &'a Version,
    root: &'a Page,
    q: &[u8],
) -> Result<(Held<'a>, Option<(Held<'a>, usize)>)> {
    let mut page = Held::Root(root);
    let mut fence = None;
    for level in (0..v.height - 1).rev() {
        let idx = page.inner().search(q);
        let next = child(pool, &page, idx, level, Access::Walk)?;
        if idx > 0 {
            fence = Some((page, idx));
        }
        page = Held::Child(next);
    }
    Ok((page, fence))
}

/// The longest-prefix lookup of [`longest_prefix`] on `v` without a cursor: no
/// allocation, no copy of keys (a stored prefix of `query` is `query[..len]`), and no
/// page held beyond the current leaf and the ancestor that bounds it. Later rounds
/// search the same leaf again whenever the shortened query is still inside its range
/// (at or above its lower fence), and descend from the root only when it falls below.
/// Calls `f` with the answer's key and value cell.
pub fn longest_prefix_in<R>(
    pool: &BufferPool,
    v: &Version,
    query: &[u8],
    boundary: Option<u8>,
    f: impl FnOnce(&[u8], ValueCell<'_>) -> Result<R>,
) -> Result<Option<R>> {
    let Some(root) = &v.root else {
        return Ok(None);
    };
    // The longest allowed candidate length <= n: one some stored key has (the version's
    // key-length set) and, with a boundary, one the query continues with it.
    let at_boundary = |n: usize| match boundary {
        None => n,
        Some(_) if n == query.len() => n,
        Some(d) => query[..=n.min(query.len() - 1)]
            .iter()
            .rposition(|&b| b == d)
            .unwrap_or(0),
    };
    // With a stored-key filter: the shortest candidate that may be stored, found going
    // up from the shortest, one pass over the query's bytes. A miss whose candidates the
    // filter all rejects ends here without a page; a hit on path keys stops at its first
    // level, a prefix of a few bytes. No answer is shorter than it.
    let shortest = match &v.key_filter {
        None => 1,
        Some(filter) => {
            let mut hasher = PrefixHasher::new(query);
            let (mut n, mut rejected) = (1, 0);
            let found = loop {
                match v.key_lengths.ceiling(n) {
                    Some(l) if l <= query.len() => {
                        let candidate = boundary.is_none_or(|d| l == query.len() || query[l] == d);
                        if candidate {
                            if filter.may_contain_hash(hasher.hash(l)) {
                                break Some(l);
                            }
                            rejected += 1;
                        }
                        n = l + 1;
                    }
                    _ => break None,
                }
            };
            if rejected > 0 {
                pool.counters().add(Counter::KeyFilterRejects, rejected);
            }
            match found {
                Some(l) => l,
                None => return Ok(None),
            }
        }
    };
    let allowed = |mut n: usize| loop {
        let Some(l) = v.key_lengths.floor(n) else {
            return 0;
        };
        let b = at_boundary(l);
        if b == l {
            return l;
        }
        n = b;
    };
    // Below the shortest candidate the filter lets through nothing can be stored.
    let snap = |n: usize| {
        let l = allowed(n);
        if l < shortest {
            0
        } else {
            l
        }
    };
    let mut held: Option<(Held<'_>, Option<(Held<'_>, usize)>)> = None;
    let mut fresh = true;
    let mut len = snap(query.len());
    while len > 0 {
        let q = &query[..len];
        // The leaf's range is [fence, upper): `q` is below the upper bound because it is
        // a proper prefix of the query the leaf was found for.
        let inside = match &held {
            Some((_, None)) => true,
            Some((_, Some((p, idx)))) => {
                let inner = p.inner();
                cmp_prefixed(inner.prefix(), inner.sep_suffix(*idx), q) != Ordering::Greater
            }
            None => false,
        };
        if !inside {
            // Below every key: no prefix of q is stored (the usual end of a miss, which
            // would otherwise descend to the first leaf to find nothing).
            if !fresh && v.first_key(pool)?.is_none_or(|k| q < k) {
                return Ok(None);
            }
            fresh = false;
            held = Some(descend(pool, v, root, q)?);
        }
        let Some((leaf, fence)) = &held else {
            return Ok(None);
        };
        let view = leaf.leaf();
        match view.probe(q) {
            Probe::Found(i) => return f(q, view.value(i)).map(Some),
            // The search measured the predecessor against q while decoding it: it is a
            // prefix of q when they share all of its bytes.
            Probe::Missing {
                i,
                pred_lcp,
                pred_len,
            } if i > 0 => {
                if pred_lcp == pred_len && snap(pred_len) == pred_len {
                    return f(&query[..pred_len], view.value(i - 1)).map(Some);
                }
                len = snap(pred_lcp.min(len - 1));
            }
            // No key of the leaf is <= q: every stored key <= q is below the fence F,
            // and lcp(pred, q) <= lcp(F, q); F itself is not a candidate when it is a
            // prefix of q, since it would be in this leaf.
            Probe::Missing { .. } => {
                let Some((p, idx)) = fence else {
                    return Ok(None);
                };
                let inner = p.inner();
                let (prefix, suffix) = (inner.prefix(), inner.sep_suffix(*idx));
                let m = lcp_prefixed(prefix, suffix, q);
                let flen = prefix.len() + suffix.len();
                len = snap(if m == flen { m.saturating_sub(1) } else { m }.min(len - 1));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::tree::{Tree, TreeConfig};

    use crate::test_rng::{key, seeded};
    use rand::RngExt as _;

    fn brute(keys: &BTreeSet<Vec<u8>>, q: &[u8], boundary: Option<u8>) -> Option<usize> {
        (1..=q.len())
            .rev()
            .find(|&l| keys.contains(&q[..l]) && boundary.is_none_or(|d| l == q.len() || q[l] == d))
    }

    #[test]
    fn the_lookup_agrees_with_brute_force() {
        agrees_with_brute_force(0);
    }

    #[test]
    fn the_lookup_with_a_key_filter_agrees_with_brute_force() {
        agrees_with_brute_force(10);
    }

    fn agrees_with_brute_force(filter_bits: u32) {
        let dir = tempfile::tempdir().expect("tempdir");
        let tree = Tree::open(
            TreeConfig::new(dir.path())
                .cache_bytes(16 * 4096)
                .key_filter_bits(filter_bits),
        )
        .expect("open");
        let mut rng = seeded(0x2545_F491_4F6C_DD1D);
        let mut keys = BTreeSet::new();
        while keys.len() < 20_000 {
            // Long shared heads make deep trees with long separators.
            let mut k = b"kv/llama70b/".repeat(rng.random_range(0..3));
            k.extend(key(&mut rng, 40));
            keys.insert(k);
        }
        tree.bulk_load(keys.iter().map(|k| (k, k))).expect("load");
        let sh = &tree.shared;
        let v = sh.current_version();
        assert!(v.height >= 3, "height {}", v.height);
        assert_eq!(v.key_filter.is_some(), filter_bits > 0);
        let list: Vec<Vec<u8>> = keys.iter().cloned().collect();
        for n in 0..4000 {
            let q = if n % 3 == 0 {
                let mut q = list[rng.random_range(0..list.len())].clone();
                q.extend(key(&mut rng, 6));
                q
            } else {
                let mut k = b"kv/llama70b/".repeat(rng.random_range(0..3));
                k.extend(key(&mut rng, 50));
                k
            };
            for boundary in [None, Some(b'/')] {
                let want = brute(&keys, &q, boundary);
                let got = longest_prefix_in(sh.pool(), &v, &q, boundary, |k, cell| {
                    assert_eq!(cell, ValueCell::Inline(k));
                    Ok(k.len())
                })
                .expect("lookup");
                assert_eq!(got, want, "query {:?}", String::from_utf8_lossy(&q));
            }
        }
    }
}
