//! Longest-prefix lookup: the longest stored key that is a prefix of a query.
//!
//! Seek to the greatest key `k <= q`. If `k` is a prefix of `q`, it is the answer. If not,
//! no stored key longer than `l = lcp(k, q)` can be a prefix of `q` (such a key would lie
//! strictly between `k` and `q`), so repeat with `q[..l]`. Each round shortens the query;
//! the cursor tries its current leaf before descending again, so the usual extra rounds
//! cost a binary search in a page already held. When the leaf holding `q` has no key
//! `<= q`, the predecessor lies in an earlier leaf below the leaf's lower fence `F`, and
//! `lcp(pred, q) <= lcp(F, q)`; the loop continues from that bound without reading the
//! earlier leaf, which may hold nothing of use. Correct on any key set, unlike bisecting
//! over candidate lengths with point gets, which needs every prefix of a stored key to be
//! stored too.

use super::cursor::SeekLe;
use super::Cursor;
use crate::error::Result;
use crate::page::lcp;

/// Leaves the cursor on the longest stored prefix of `query` and returns its length, or
/// returns None when no stored key is a prefix of `query`. With a `boundary` byte, only
/// prefixes that end where `query` has that byte (or at its end) count: the longest
/// stored ancestor of a `/`-separated path, whatever else is stored.
pub fn longest_prefix(
    cursor: &mut Cursor,
    query: &[u8],
    boundary: Option<u8>,
) -> Result<Option<usize>> {
    // The longest allowed candidate length <= n.
    let snap = |n: usize| match boundary {
        None => n,
        Some(_) if n == query.len() => n,
        Some(d) => query[..=n.min(query.len() - 1)]
            .iter()
            .rposition(|&b| b == d)
            .unwrap_or(0),
    };
    let mut len = query.len();
    while len > 0 {
        let q = &query[..len];
        match cursor.seek_le_in_leaf(q)? {
            SeekLe::None => return Ok(None),
            SeekLe::Found => {
                let k = cursor.key();
                if q.starts_with(k) && snap(k.len()) == k.len() {
                    return Ok(Some(k.len()));
                }
                len = snap(lcp(k, q).min(len - 1));
            }
            // Candidates at or above the fence would lie in the leaf just searched.
            SeekLe::Fence(f) => {
                let m = lcp(&f, q);
                len = snap(if m == f.len() { m.saturating_sub(1) } else { m }.min(len - 1));
            }
        }
    }
    Ok(None)
}
