//! A forward run over the entries of the cursor's current leaf, in one loop: the fast
//! path of range scans that hand each entry to a visitor (`Range::for_each_entry`). The
//! per-entry work of stepping one entry at a time (re-checking the cursor's state, finding
//! the leaf's view again, re-reading its header) is done once per leaf instead.

use std::ops::Bound;

use super::{Cursor, NO_KEY};
use crate::btree::read_value;
use crate::error::Result;
use crate::page::ValueCell;

/// How a leaf run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The leaf's entries (or the `max` asked for) were all visited.
    Exhausted,
    /// The visitor returned false after the last entry visited.
    Stopped,
    /// The next entry lies past the far bound; it was not visited.
    OutOfRange,
}

impl Cursor {
    /// Visits, in key order, the entries of the current leaf from the cursor's position
    /// (which must be valid), at most `max` of them. Each key is checked against `hi`
    /// first (pass `Bound::Unbounded` when the whole leaf is known to be inside). Values
    /// held in overflow pages are read into `value_buf`. Returns the number visited and
    /// why the run ended. The cursor is left on the last entry visited, as if stepped to
    /// it one entry at a time (on its start when none was), or, when the run ended out of
    /// range, on the first entry past the bound.
    pub fn run_forward_in_leaf(
        &mut self,
        max: usize,
        hi: &Bound<Vec<u8>>,
        value_buf: &mut Vec<u8>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(usize, RunEnd)> {
        let Cursor {
            pool,
            leaf,
            pos,
            key,
            plen,
            key_pos,
            key_plain,
            leaf_len,
            ..
        } = self;
        let Some(leaf) = leaf.as_ref() else {
            return Ok((0, RunEnd::Exhausted));
        };
        let view = leaf.leaf();
        let start = *pos;
        let end = (*leaf_len).min(start.saturating_add(max));
        let mut i = start;
        let mut why = RunEnd::Exhausted;
        while i < end {
            let plain = if *key_pos == i {
                *key_plain
            } else if *key_pos != NO_KEY && *key_pos + 1 == i {
                view.step_key(i, *plen, key)
            } else {
                view.decode_key(i, *plen, key)
            };
            *key_pos = i;
            *key_plain = plain;
            let inside = match hi {
                Bound::Unbounded => true,
                Bound::Included(h) => key.as_slice() <= h.as_slice(),
                Bound::Excluded(h) => key.as_slice() < h.as_slice(),
            };
            if !inside {
                why = RunEnd::OutOfRange;
                break;
            }
            let go = match view.value_at(plain) {
                ValueCell::Inline(v) => visit(key, v),
                cell => {
                    value_buf.clear();
                    read_value(pool, cell, value_buf)?;
                    visit(key, value_buf)
                }
            };
            i += 1;
            if !go {
                why = RunEnd::Stopped;
                break;
            }
        }
        let visited = i - start;
        // The key buffer holds entry `i` after an out-of-range stop, else the last one
        // visited: the position follows it.
        *pos = match why {
            RunEnd::OutOfRange => i,
            _ if visited > 0 => i - 1,
            _ => start,
        };
        Ok((visited, why))
    }
}
