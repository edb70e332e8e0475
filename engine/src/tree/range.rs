//! Range scans: bounds, prefix, direction and limit, yielding keys with values.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::btree::{prefix_successor, read_value, Cursor, ScanBounds, Version};
use crate::error::Result;
use crate::page::ValueCell;
use crate::pool::{Access, BufferPool};

/// Builds a range scan. Bounds and a prefix combine (their intersection is scanned).
#[derive(Debug)]
pub struct RangeBuilder {
    pool: Arc<BufferPool>,
    version: Arc<Version>,
    readahead_pages: usize,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    prefix: Option<Vec<u8>>,
    rev: bool,
    limit: Option<usize>,
}

/// The tighter of two lower bounds.
fn max_lo(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            if x > y || (x == y && matches!(a, Bound::Excluded(_))) {
                a
            } else {
                b
            }
        }
    }
}

/// The tighter of two upper bounds.
fn min_hi(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            if x < y || (x == y && matches!(a, Bound::Excluded(_))) {
                a
            } else {
                b
            }
        }
    }
}

impl RangeBuilder {
    pub(crate) fn new(
        pool: Arc<BufferPool>,
        version: Arc<Version>,
        readahead_pages: usize,
    ) -> Self {
        RangeBuilder {
            pool,
            version,
            readahead_pages,
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
            prefix: None,
            rev: false,
            limit: None,
        }
    }

    /// Only keys starting with `p`.
    pub fn prefix(mut self, p: impl AsRef<[u8]>) -> Self {
        self.prefix = Some(p.as_ref().to_vec());
        self
    }

    /// Keys >= `k`.
    pub fn from(mut self, k: impl AsRef<[u8]>) -> Self {
        self.lo = Bound::Included(k.as_ref().to_vec());
        self
    }

    /// Keys > `k`.
    pub fn after(mut self, k: impl AsRef<[u8]>) -> Self {
        self.lo = Bound::Excluded(k.as_ref().to_vec());
        self
    }

    /// Keys <= `k`.
    pub fn to(mut self, k: impl AsRef<[u8]>) -> Self {
        self.hi = Bound::Included(k.as_ref().to_vec());
        self
    }

    /// Keys < `k`.
    pub fn until(mut self, k: impl AsRef<[u8]>) -> Self {
        self.hi = Bound::Excluded(k.as_ref().to_vec());
        self
    }

    /// Keys within `r` (`a..b`, `a..=b`, `..`, with byte-slice ends).
    pub fn bounds<K: AsRef<[u8]>, R: RangeBounds<K>>(mut self, r: R) -> Self {
        self.lo = r.start_bound().map(|k| k.as_ref().to_vec());
        self.hi = r.end_bound().map(|k| k.as_ref().to_vec());
        self
    }

    /// Descending order.
    pub fn rev(mut self) -> Self {
        self.rev = true;
        self
    }

    /// At most `n` entries.
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = Some(n);
        self
    }

    /// Starts the scan.
    pub fn iter(self) -> Range {
        let (mut lo, mut hi) = (self.lo, self.hi);
        if let Some(p) = self.prefix {
            let p_hi = match prefix_successor(&p) {
                Some(s) => Bound::Excluded(s),
                None => Bound::Unbounded,
            };
            lo = max_lo(lo, Bound::Included(p));
            hi = min_hi(hi, p_hi);
        }
        let mut cursor = Cursor::new(self.pool, self.version, Access::Walk, self.readahead_pages);
        cursor.bounds = Some(ScanBounds {
            lo: lo.clone(),
            hi: hi.clone(),
        });
        cursor.remaining = self.limit.map(|n| n as u64);
        Range {
            cursor,
            lo,
            hi,
            rev: self.rev,
            left: self.limit,
            started: false,
            done: false,
            value: Vec::new(),
        }
    }
}

impl IntoIterator for RangeBuilder {
    type Item = Result<(Vec<u8>, Vec<u8>)>;
    type IntoIter = Range;
    fn into_iter(self) -> Range {
        self.iter()
    }
}

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
}

impl Range {
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
    /// forward scan checks only `hi` and a reverse scan only `lo` (one comparison per entry).
    fn in_range(&self) -> bool {
        let k = self.cursor.key();
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
