//! The cursor behind scans, key listings and longest-prefix lookups. It keeps its
//! root-to-leaf path, so stepping to the next leaf goes through the parent instead of
//! descending again, and a new seek re-uses every held page its path shares with the old
//! one. Sequential leaf steps trigger readahead: the adjacent leaves that the parent says
//! the scan still needs (by its end bound and by the entries still wanted, from the
//! per-child counts) are fetched in one read, with a window that doubles up to a cap.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use super::read::child;
use super::Version;
use crate::error::Result;
use crate::page::{PageId, ValueCell};
use crate::pool::{Access, BufferPool, Page, ScanIo};

/// Scan direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Ascending keys.
    Forward,
    /// Descending keys.
    Backward,
}

/// The key range a scan will stay within, so readahead never reads past it.
#[derive(Debug, Clone)]
pub struct ScanBounds {
    /// Lower bound.
    pub lo: Bound<Vec<u8>>,
    /// Upper bound.
    pub hi: Bound<Vec<u8>>,
}

/// `Cursor::key_pos` when the key buffer holds no entry's key.
const NO_KEY: usize = usize::MAX;

/// First readahead window, in pages.
const RA_START_PAGES: usize = 2;

/// A position in one version of the tree.
#[derive(Debug)]
pub struct Cursor {
    pool: Arc<BufferPool>,
    version: Arc<Version>,
    access: Access,
    path: Vec<(Arc<Page>, usize)>,
    leaf: Option<Arc<Page>>,
    pos: usize,
    /// The current key: the leaf's prefix, then the suffix of entry `key_pos`.
    key: Vec<u8>,
    plen: usize,
    /// The entry whose key `key` holds; `NO_KEY` when none.
    key_pos: usize,
    /// Entries in `leaf` (0 without one), kept so that stepping need not parse its header.
    leaf_len: usize,
    leaf_steps: u32,
    ra_window: usize,
    ra_max: usize,
    /// Where the scan must stop; bounds readahead.
    pub bounds: Option<ScanBounds>,
    /// Entries the consumer still wants; bounds readahead exactly through the counts.
    pub remaining: Option<u64>,
}

impl Cursor {
    /// A cursor over `version`; `readahead_max_pages` of 0 or 1 disables readahead.
    pub fn new(
        pool: Arc<BufferPool>,
        version: Arc<Version>,
        access: Access,
        readahead_max_pages: usize,
    ) -> Self {
        let ra_max = if pool.scan_io() == ScanIo::FullFrame || access != Access::Walk {
            0
        } else {
            readahead_max_pages
        };
        Cursor {
            pool,
            version,
            access,
            path: Vec::new(),
            leaf: None,
            pos: 0,
            key: Vec::new(),
            plen: 0,
            key_pos: NO_KEY,
            leaf_len: 0,
            leaf_steps: 0,
            ra_window: RA_START_PAGES,
            ra_max,
            bounds: None,
            remaining: None,
        }
    }

    /// True when the cursor is on an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.pos < self.leaf_len
    }

    /// The current key (empty when not valid).
    #[inline]
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current value cell, when valid.
    #[inline]
    pub fn value(&self) -> Option<ValueCell<'_>> {
        let leaf = self.leaf.as_ref()?;
        let view = leaf.leaf();
        (self.pos < view.len()).then(|| view.value(self.pos))
    }

    /// The pool, for reading overflow values.
    pub fn pool(&self) -> &BufferPool {
        &self.pool
    }

    /// Decodes the key of entry `pos` into the key buffer: one step from the previous
    /// entry when the buffer holds it (forward scans), else from the entry's restart.
    fn load_key(&mut self) {
        if let Some(leaf) = &self.leaf {
            let view = leaf.leaf();
            if self.pos < view.len() {
                if self.key_pos == self.pos {
                    return;
                }
                if self.key_pos != NO_KEY && self.key_pos + 1 == self.pos {
                    // The next entry of a forward scan: one step from the key held.
                    view.step_key(self.pos, self.plen, &mut self.key);
                } else {
                    view.decode_key(self.pos, self.plen, &mut self.key);
                }
                self.key_pos = self.pos;
                return;
            }
        }
        self.clear_key();
    }

    fn clear_key(&mut self) {
        self.key.clear();
        self.key_pos = NO_KEY;
    }

    fn enter_leaf(&mut self, leaf: Arc<Page>) {
        self.clear_key();
        self.key.extend_from_slice(leaf.leaf().prefix());
        self.plen = self.key.len();
        self.leaf_len = leaf.leaf().len();
        self.leaf = Some(leaf);
    }

    fn leave_leaf(&mut self) {
        self.leaf = None;
        self.leaf_len = 0;
        self.clear_key();
    }

    /// Descends to the leaf for `q` (or the first/last leaf when `q` is None), re-using
    /// the held pages that the new path shares with the old one.
    fn descend(&mut self, q: Option<&[u8]>, dir: Direction) -> Result<()> {
        self.leaf_steps = 0;
        self.ra_window = RA_START_PAGES;
        let Some(root) = self.version.root.clone() else {
            self.path.clear();
            self.leave_leaf();
            return Ok(());
        };
        let inner_levels = (self.version.height - 1) as usize;
        let old_len = self.path.len();
        let mut page = root;
        for d in 0..inner_levels {
            let view = page.inner();
            let idx = match (q, dir) {
                (Some(q), _) => view.search(q),
                (None, Direction::Forward) => 0,
                (None, Direction::Backward) => view.len() - 1,
            };
            let child_id = view.child(idx);
            let level = (inner_levels - 1 - d) as u32;
            let held = if d + 1 < old_len && self.path[d + 1].0.id() == child_id {
                Some(self.path[d + 1].0.clone())
            } else if level == 0 {
                self.leaf.as_ref().filter(|l| l.id() == child_id).cloned()
            } else {
                None
            };
            let next = match held {
                Some(p) => p,
                None => child(&self.pool, &page, idx, level, self.access)?,
            };
            if d < self.path.len() {
                self.path[d] = (page, idx);
            } else {
                self.path.push((page, idx));
            }
            page = next;
        }
        self.path.truncate(inner_levels);
        if self.leaf.as_ref().is_none_or(|l| l.id() != page.id()) {
            self.enter_leaf(page);
        }
        Ok(())
    }

    /// Positions at the first entry >= `q`.
    pub fn seek_ge(&mut self, q: &[u8]) -> Result<()> {
        if !self.local_seek_ge(q) {
            self.descend(Some(q), Direction::Forward)?;
            let view = self.leaf_len_and_search(q);
            self.pos = match view {
                Some(Ok(i)) | Some(Err(i)) => i,
                None => 0,
            };
        }
        self.settle_forward()
    }

    /// Positions at the first entry > `q`.
    pub fn seek_gt(&mut self, q: &[u8]) -> Result<()> {
        self.seek_ge(q)?;
        self.step_past(q, Direction::Forward)
    }

    /// Positions at the last entry <= `q`, trying the current leaf first.
    pub fn seek_le(&mut self, q: &[u8]) -> Result<()> {
        if let Some(leaf) = &self.leaf {
            let view = leaf.leaf();
            if !view.is_empty() && view.cmp_first(q) != Ordering::Greater {
                match view.search(q) {
                    Ok(i) => {
                        self.pos = i;
                        self.load_key();
                        return Ok(());
                    }
                    Err(i) if i < view.len() => {
                        self.pos = i - 1;
                        self.load_key();
                        return Ok(());
                    }
                    Err(_) => {}
                }
            }
        }
        self.descend(Some(q), Direction::Backward)?;
        match self.leaf_len_and_search(q) {
            Some(Ok(i)) => {
                self.pos = i;
                self.load_key();
                Ok(())
            }
            Some(Err(i)) if i > 0 => {
                self.pos = i - 1;
                self.load_key();
                Ok(())
            }
            _ => {
                self.pos = 0;
                self.retreat()
            }
        }
    }

    /// Positions at the last entry < `q`.
    pub fn seek_lt(&mut self, q: &[u8]) -> Result<()> {
        self.seek_le(q)?;
        self.step_past(q, Direction::Backward)
    }

    /// Moves one entry on in `dir` when the cursor is on `q` itself: what turns an
    /// inclusive seek into an exclusive one.
    fn step_past(&mut self, q: &[u8], dir: Direction) -> Result<()> {
        if !self.valid() || self.key != q {
            return Ok(());
        }
        match dir {
            Direction::Forward => self.advance(),
            Direction::Backward => self.retreat(),
        }
    }

    /// Positions at the first entry.
    pub fn seek_first(&mut self) -> Result<()> {
        self.descend(None, Direction::Forward)?;
        self.pos = 0;
        self.settle_forward()
    }

    /// Positions at the last entry.
    pub fn seek_last(&mut self) -> Result<()> {
        self.descend(None, Direction::Backward)?;
        match &self.leaf {
            Some(l) if !l.leaf().is_empty() => {
                self.pos = l.leaf().len() - 1;
                self.load_key();
                Ok(())
            }
            _ => {
                self.pos = 0;
                self.retreat()
            }
        }
    }

    /// Moves to the next entry.
    pub fn advance(&mut self) -> Result<()> {
        self.pos += 1;
        self.settle_forward()
    }

    /// Moves to the previous entry.
    pub fn retreat(&mut self) -> Result<()> {
        loop {
            if self.leaf.is_none() {
                self.clear_key();
                return Ok(());
            }
            if self.pos > 0 {
                self.pos -= 1;
                self.load_key();
                return Ok(());
            }
            if !self.step_leaf(Direction::Backward)? {
                return Ok(());
            }
            self.pos = self.leaf_len;
        }
    }

    fn settle_forward(&mut self) -> Result<()> {
        while self.leaf.is_some() {
            if self.pos < self.leaf_len {
                self.load_key();
                return Ok(());
            }
            if !self.step_leaf(Direction::Forward)? {
                break;
            }
            self.pos = 0;
        }
        self.clear_key();
        Ok(())
    }

    fn leaf_len_and_search(&self, q: &[u8]) -> Option<std::result::Result<usize, usize>> {
        self.leaf.as_ref().map(|l| l.leaf().search(q))
    }

    /// Seeks within the current leaf when `q` falls between its first and last keys.
    fn local_seek_ge(&mut self, q: &[u8]) -> bool {
        let Some(leaf) = &self.leaf else {
            return false;
        };
        let view = leaf.leaf();
        let n = view.len();
        // Past the last restart (the last key of a plain page) the answer is likely in a
        // later leaf: descending costs less than a search here that finds nothing.
        if n == 0
            || view.cmp_first(q) == Ordering::Greater
            || view.cmp_last_restart(q) == Ordering::Less
        {
            return false;
        }
        match view.search(q) {
            Ok(i) => self.pos = i,
            Err(i) if i < n => self.pos = i,
            // Above the last key: the next leaf may hold it.
            Err(_) => return false,
        }
        true
    }

    /// Moves to the adjacent leaf through the nearest ancestor with a sibling; false
    /// (and an invalid cursor) at the end of the tree.
    fn step_leaf(&mut self, dir: Direction) -> Result<bool> {
        let mut d = self.path.len();
        loop {
            if d == 0 {
                self.leave_leaf();
                return Ok(false);
            }
            d -= 1;
            let (page, idx) = &self.path[d];
            let n = page.inner().len();
            let movable = match dir {
                Direction::Forward => idx + 1 < n,
                Direction::Backward => *idx > 0,
            };
            if movable {
                break;
            }
        }
        let leaf_parent = d + 1 == self.path.len();
        {
            let (_, idx) = &mut self.path[d];
            match dir {
                Direction::Forward => *idx += 1,
                Direction::Backward => *idx -= 1,
            }
        }
        self.leaf_steps += 1;
        if leaf_parent {
            self.maybe_readahead(dir)?;
        }
        let inner_levels = self.path.len();
        let mut cur = d;
        loop {
            let (page, idx) = &self.path[cur];
            let level = (inner_levels - 1 - cur) as u32;
            let next = child(&self.pool, page, *idx, level, self.access)?;
            if level == 0 {
                self.enter_leaf(next);
                return Ok(true);
            }
            let edge = match dir {
                Direction::Forward => 0,
                Direction::Backward => next.inner().len() - 1,
            };
            cur += 1;
            self.path[cur] = (next, edge);
        }
    }

    /// Issues one coalesced read for the adjacent leaves the scan still needs, when the
    /// next leaf is not resident and the access looks sequential.
    fn maybe_readahead(&mut self, dir: Direction) -> Result<()> {
        if self.ra_max < 2 {
            return Ok(());
        }
        let trigger = if self.remaining.is_some() { 1 } else { 2 };
        if self.leaf_steps < trigger {
            return Ok(());
        }
        let Some((parent, i)) = self.path.last() else {
            return Ok(());
        };
        let inner = parent.inner();
        let first = inner.child(*i);
        if self.pool.is_resident(first) {
            return Ok(());
        }
        let n = inner.len();
        let window = self.ra_window.min(self.ra_max);
        let mut run = 1usize;
        let mut covered = inner.count(*i);
        while run < window {
            let j = match dir {
                Direction::Forward => i + run,
                Direction::Backward => match i.checked_sub(run) {
                    Some(j) => j,
                    None => break,
                },
            };
            if j >= n {
                break;
            }
            let want: PageId = match dir {
                Direction::Forward => first + run as u64,
                Direction::Backward => match first.checked_sub(run as u64) {
                    Some(p) => p,
                    None => break,
                },
            };
            if inner.child(j) != want || self.pool.is_resident(want) {
                break;
            }
            if self.remaining.is_some_and(|r| covered >= r) {
                break;
            }
            if let Some(b) = &self.bounds {
                let inside = match dir {
                    // Child j holds keys >= sep_j.
                    Direction::Forward => match &b.hi {
                        Bound::Unbounded => true,
                        Bound::Included(h) => inner.cmp_sep(j, h) != Ordering::Greater,
                        Bound::Excluded(h) => inner.cmp_sep(j, h) == Ordering::Less,
                    },
                    // Child j holds keys < sep_{j+1}.
                    Direction::Backward => match &b.lo {
                        Bound::Unbounded => true,
                        Bound::Included(l) | Bound::Excluded(l) => {
                            inner.cmp_sep(j + 1, l) == Ordering::Greater
                        }
                    },
                };
                if !inside {
                    break;
                }
            }
            covered += inner.count(j);
            run += 1;
        }
        if run < 2 {
            return Ok(());
        }
        let start = match dir {
            Direction::Forward => first,
            Direction::Backward => first + 1 - run as u64,
        };
        self.pool.readahead(start, run)?;
        self.ra_window = (self.ra_window * 2).min(self.ra_max);
        Ok(())
    }
}
