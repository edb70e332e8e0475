//! Longest-prefix lookup: the longest stored key that is a prefix of a query.
//!
//! Seek to the greatest key `k <= q`. If `k` is a prefix of `q`, it is the answer. If not,
//! no stored key longer than `l = lcp(k, q)` can be a prefix of `q` (such a key would lie
//! strictly between `k` and `q`), so repeat with `q[..l]`. Each round shortens the query;
//! the cursor tries its current leaf before descending again, so the usual extra rounds
//! cost a binary search in a page already held. Correct on any key set, unlike bisecting
//! over candidate lengths with point gets, which needs every prefix of a stored key to be
//! stored too.

use super::Cursor;
use crate::error::Result;
use crate::page::lcp;

/// Leaves the cursor on the longest stored prefix of `query` and returns its length, or
/// returns None when no stored key is a prefix of `query`.
pub fn longest_prefix(cursor: &mut Cursor, query: &[u8]) -> Result<Option<usize>> {
    let mut len = query.len();
    while len > 0 {
        let q = &query[..len];
        cursor.seek_le(q)?;
        if !cursor.valid() {
            return Ok(None);
        }
        let k = cursor.key();
        if q.starts_with(k) {
            return Ok(Some(k.len()));
        }
        len = lcp(k, q);
    }
    Ok(None)
}
