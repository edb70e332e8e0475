//! Range scans: bounds, prefix, direction and limit, yielding keys with values.

use std::ops::{Bound, RangeBounds};

use super::builder::{into_iter_by_iter, setters};
use super::scan::{prefix_end, recycle, ScanSource};
use super::spare;
use crate::btree::{read_value, Cursor, RunEnd};
use crate::error::Result;
use crate::page::ValueCell;

/// Builds a range scan. Bounds and a prefix combine (their intersection is scanned).
#[derive(Debug)]
pub struct RangeBuilder {
    source: ScanSource,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    prefix: Option<Vec<u8>>,
    rev: bool,
    limit: Option<usize>,
}

/// The tighter of two bounds on the same side of a range: of two lower bounds (`lower`)
/// the higher one, of two upper bounds the lower one; an excluded key beats the same key
/// included. The other one's key goes back to the thread's spare buffers.
fn tighter(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>, lower: bool) -> Bound<Vec<u8>> {
    let a_wins = match (&a, &b) {
        (Bound::Unbounded, _) => false,
        (_, Bound::Unbounded) => true,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            let beyond = if lower { x > y } else { x < y };
            beyond || (x == y && matches!(a, Bound::Excluded(_)))
        }
    };
    let (kept, dropped) = if a_wins { (a, b) } else { (b, a) };
    spare::give_bound(dropped);
    kept
}

impl RangeBuilder {
    pub(crate) fn new(source: ScanSource) -> Self {
        RangeBuilder {
            source,
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
            prefix: None,
            rev: false,
            limit: None,
        }
    }

    setters! {
        /// Only keys starting with `p`.
        prefix(p: impl AsRef<[u8]>) => prefix = Some(spare::copy(p.as_ref()));
        /// Keys >= `k`.
        from(k: impl AsRef<[u8]>) => lo = Bound::Included(spare::copy(k.as_ref()));
        /// Keys > `k`.
        after(k: impl AsRef<[u8]>) => lo = Bound::Excluded(spare::copy(k.as_ref()));
        /// Keys <= `k`.
        to(k: impl AsRef<[u8]>) => hi = Bound::Included(spare::copy(k.as_ref()));
        /// Keys < `k`.
        until(k: impl AsRef<[u8]>) => hi = Bound::Excluded(spare::copy(k.as_ref()));
        /// Descending order.
        rev() => rev = true;
        /// At most `n` entries.
        limit(n: usize) => limit = Some(n);
    }

    /// Keys within `r` (`a..b`, `a..=b`, `..`, with byte-slice ends).
    pub fn bounds<K: AsRef<[u8]>, R: RangeBounds<K>>(mut self, r: R) -> Self {
        self.lo = r.start_bound().map(|k| spare::copy(k.as_ref()));
        self.hi = r.end_bound().map(|k| spare::copy(k.as_ref()));
        self
    }

    /// Starts the scan.
    pub fn iter(self) -> Range {
        let (mut lo, mut hi) = (self.lo, self.hi);
        if let Some(p) = self.prefix {
            hi = tighter(hi, prefix_end(&p), false);
            lo = tighter(lo, Bound::Included(p), true);
        }
        let mut cursor = self
            .source
            .cursor(spare::copy_bound(&lo), spare::copy_bound(&hi));
        cursor.remaining = self.limit.map(|n| n as u64);
        Range {
            cursor,
            lo,
            hi,
            rev: self.rev,
            left: self.limit,
            started: false,
            done: false,
            value: spare::bytes(),
            leaf_checked: None,
            edge: spare::bytes(),
        }
    }
}

into_iter_by_iter!(RangeBuilder => Range, Result<(Vec<u8>, Vec<u8>)>);

/// A running range scan over one snapshot.
#[derive(Debug)]
pub struct Range {
    cursor: Cursor,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    rev: bool,
    left: Option<usize>,
    started: bool,
    done: bool,
    value: Vec<u8>,
    /// The last leaf (by `Cursor::leaf_entered`) checked against the far bound, and
    /// whether all its keys are within it, so that its entries need no comparison; and a
    /// buffer for its edge key.
    leaf_checked: Option<(u64, bool)>,
    edge: Vec<u8>,
}

impl Range {
    // Inlined into `next_entry`, whose per-entry cost it is (a call here cost 23
    // instructions an entry under callgrind).
    #[inline(always)]
    fn position(&mut self) -> Result<()> {
        let c = &mut self.cursor;
        if !self.started {
            self.started = true;
            match (self.rev, &self.lo, &self.hi) {
                (false, Bound::Included(k), _) => c.seek_ge(k)?,
                (false, Bound::Excluded(k), _) => c.seek_gt(k)?,
                (false, Bound::Unbounded, _) => c.seek_first()?,
                (true, _, Bound::Included(k)) => c.seek_le(k)?,
                (true, _, Bound::Excluded(k)) => c.seek_lt(k)?,
                (true, _, Bound::Unbounded) => c.seek_last()?,
            }
        } else if self.rev {
            c.retreat()?;
        } else {
            c.advance()?;
        }
        Ok(())
    }

    /// Whether the cursor's key is within the far bound. The near bound holds by
    /// construction: the scan starts by seeking to it and only moves away from it, so a
    /// forward scan checks only `hi` and a reverse scan only `lo`. And it checks the leaf's
    /// far edge once when it enters the leaf: when the edge is inside, so is every entry of
    /// the leaf, which then costs no comparison (one per entry only in the scan's last leaf).
    fn in_range(&mut self) -> bool {
        let unbounded = if self.rev {
            matches!(self.lo, Bound::Unbounded)
        } else {
            matches!(self.hi, Bound::Unbounded)
        };
        if unbounded {
            return true;
        }
        self.leaf_inside() || self.within(self.cursor.key())
    }

    /// Whether every key of the cursor's leaf is within the far bound: its far edge key is,
    /// checked once per leaf entered.
    fn leaf_inside(&mut self) -> bool {
        let seq = self.cursor.leaf_entered();
        match self.leaf_checked {
            Some((checked, inside)) if checked == seq => inside,
            _ => {
                let inside =
                    self.cursor.leaf_edge_key(self.rev, &mut self.edge) && self.within(&self.edge);
                self.leaf_checked = Some((seq, inside));
                inside
            }
        }
    }

    /// Whether `k` is within the far bound.
    fn within(&self, k: &[u8]) -> bool {
        if self.rev {
            match &self.lo {
                Bound::Included(l) => k >= l.as_slice(),
                Bound::Excluded(l) => k > l.as_slice(),
                Bound::Unbounded => true,
            }
        } else {
            match &self.hi {
                Bound::Included(h) => k <= h.as_slice(),
                Bound::Excluded(h) => k < h.as_slice(),
                Bound::Unbounded => true,
            }
        }
    }

    /// The next entry, borrowed from the page (or an internal buffer for large values):
    /// the zero-copy form of `next`.
    pub fn next_entry(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.done || self.left == Some(0) {
            self.done = true;
            return Ok(None);
        }
        self.cursor.remaining = self.left.map(|n| n as u64);
        if let Err(e) = self.position() {
            self.done = true;
            return Err(e);
        }
        if !self.cursor.valid() || !self.in_range() {
            self.done = true;
            return Ok(None);
        }
        if let Some(n) = &mut self.left {
            *n -= 1;
        }
        match self.cursor.value() {
            Some(ValueCell::Inline(v)) => Ok(Some((self.cursor.key(), v))),
            Some(cell) => {
                self.value.clear();
                if let Err(e) = read_value(self.cursor.pool(), cell, &mut self.value) {
                    self.done = true;
                    return Err(e);
                }
                Ok(Some((self.cursor.key(), &self.value)))
            }
            None => {
                self.done = true;
                Ok(None)
            }
        }
    }

    /// Hands each remaining entry to `visit`, in order, until it returns false or the
    /// range ends; returns the number of entries visited. The same entries as calling
    /// [`Range::next_entry`] until it returns None (and the two mix: the scan goes on
    /// after the last entry either handed out), but a forward scan visits each leaf's
    /// entries in one loop, without stepping the cursor entry by entry: the fast path of
    /// a scan whose consumer takes entries as they come.
    pub fn for_each_entry(&mut self, visit: &mut dyn FnMut(&[u8], &[u8]) -> bool) -> Result<usize> {
        let mut visited = 0;
        if self.rev {
            while let Some((k, v)) = self.next_entry()? {
                visited += 1;
                if !visit(k, v) {
                    break;
                }
            }
            return Ok(visited);
        }
        while !self.done && self.left != Some(0) {
            self.cursor.remaining = self.left.map(|n| n as u64);
            if let Err(e) = self.position() {
                self.done = true;
                return Err(e);
            }
            if !self.cursor.valid() {
                self.done = true;
                break;
            }
            // A leaf whose last key is within the far bound needs no comparison per entry.
            let check = if matches!(self.hi, Bound::Unbounded) || self.leaf_inside() {
                &Bound::Unbounded
            } else {
                &self.hi
            };
            let max = self.left.unwrap_or(usize::MAX);
            let (n, end) = match self
                .cursor
                .run_forward_in_leaf(max, check, &mut self.value, visit)
            {
                Ok(run) => run,
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            };
            visited += n;
            if let Some(left) = &mut self.left {
                *left -= n;
            }
            match end {
                RunEnd::Exhausted if n > 0 => {}
                RunEnd::Stopped => break,
                // Out of range, or a leaf that had nothing from the position (only an
                // empty tree's root leaf).
                _ => {
                    self.done = true;
                    break;
                }
            }
        }
        Ok(visited)
    }
}

/// A scan's buffers go to the next scan on this thread: one in steady state allocates
/// nothing (`engine/tests/no_alloc_reads.rs`).
impl Drop for Range {
    fn drop(&mut self) {
        recycle(&mut self.cursor);
        spare::give_bound(std::mem::replace(&mut self.lo, Bound::Unbounded));
        spare::give_bound(std::mem::replace(&mut self.hi, Bound::Unbounded));
        spare::give(std::mem::take(&mut self.value));
        spare::give(std::mem::take(&mut self.edge));
    }
}

impl Iterator for Range {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_entry() {
            Ok(Some((k, v))) => Some(Ok((k.to_vec(), v.to_vec()))),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inc(k: &[u8]) -> Bound<Vec<u8>> {
        Bound::Included(k.to_vec())
    }

    fn exc(k: &[u8]) -> Bound<Vec<u8>> {
        Bound::Excluded(k.to_vec())
    }

    #[test]
    fn the_tighter_lower_bound_is_the_higher_and_the_tighter_upper_bound_the_lower() {
        assert_eq!(tighter(inc(b"a"), inc(b"b"), true), inc(b"b"));
        assert_eq!(tighter(inc(b"a"), inc(b"b"), false), inc(b"a"));
        assert_eq!(tighter(Bound::Unbounded, exc(b"m"), true), exc(b"m"));
        assert_eq!(tighter(exc(b"m"), Bound::Unbounded, false), exc(b"m"));
        // On the same key, excluding it is tighter on either side, whichever comes first.
        for lower in [true, false] {
            assert_eq!(tighter(inc(b"k"), exc(b"k"), lower), exc(b"k"));
            assert_eq!(tighter(exc(b"k"), inc(b"k"), lower), exc(b"k"));
        }
    }
}
