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

mod run;
pub use run::RunEnd;

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
    /// Page offset of entry `key_pos`'s plain part, where its value is found.
    key_plain: usize,
    /// Bumped each time the cursor enters a leaf, so that a scan can check a whole leaf
    /// against its end bound once (see [`Cursor::leaf_entered`]).
    leaf_seq: u64,
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
            key_plain: 0,
            leaf_seq: 0,
            leaf_len: 0,
            leaf_steps: 0,
            ra_window: RA_START_PAGES,
            ra_max,
            bounds: None,
            remaining: None,
        }
    }

    /// A cursor like [`Cursor::new`] that uses `path` and `key` (emptied) as its buffers:
    /// ones a finished scan handed back through [`Cursor::take_buffers`].
    pub fn with_buffers(
        pool: Arc<BufferPool>,
        version: Arc<Version>,
        access: Access,
        readahead_max_pages: usize,
        mut path: Vec<(Arc<Page>, usize)>,
        mut key: Vec<u8>,
    ) -> Self {
        path.clear();
        key.clear();
        Cursor {
            path,
            key,
            ..Cursor::new(pool, version, access, readahead_max_pages)
        }
    }

    /// Leaves the cursor without an entry and hands out its path (emptied: the pages it
    /// held are released), its key buffer and its bounds, for another cursor to reuse.
    #[allow(clippy::type_complexity)]
    pub fn take_buffers(&mut self) -> (Vec<(Arc<Page>, usize)>, Vec<u8>, Option<ScanBounds>) {
        self.leave_leaf();
        let mut path = std::mem::take(&mut self.path);
        path.clear();
        (path, std::mem::take(&mut self.key), self.bounds.take())
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
        if self.pos >= view.len() {
            return None;
        }
        // The key's decoding found the entry's cell: its value follows it.
        Some(if self.key_pos == self.pos {
            view.value_at(self.key_plain)
        } else {
            view.value(self.pos)
        })
    }

    /// A number that changes each time the cursor enters a leaf.
    #[inline]
    pub fn leaf_entered(&self) -> u64 {
        self.leaf_seq
    }

    /// Writes the last key of the current leaf (the first with `first`) into `out`; false
    /// without a leaf or on an empty one.
    pub fn leaf_edge_key(&self, first: bool, out: &mut Vec<u8>) -> bool {
        let Some(leaf) = &self.leaf else {
            return false;
        };
        let view = leaf.leaf();
        if view.is_empty() {
            return false;
        }
        view.key_into(if first { 0 } else { view.len() - 1 }, out);
        true
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
                self.key_plain = if self.key_pos != NO_KEY && self.key_pos + 1 == self.pos {
                    // The next entry of a forward scan: one step from the key held.
                    view.step_key(self.pos, self.plen, &mut self.key)
                } else {
                    view.decode_key(self.pos, self.plen, &mut self.key)
                };
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
        self.leaf_seq += 1;
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

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use rand::RngExt as _;

    use super::super::write::tests::{entries, Fixture};
    use super::*;
    use crate::btree::{bulk_load, leaf_page_of, prefix_successor, read_value, Mutation};
    use crate::pool::{Counter, PoolConfig};
    use crate::test_rng::{key, seeded};

    type Model = BTreeMap<Vec<u8>, Vec<u8>>;

    /// A tree of three levels built by write transactions, with its model.
    fn tree(seed: u64, n: usize) -> (Fixture, Model) {
        let mut rng = seeded(seed);
        let mut fx = Fixture::new(100_000);
        let model = entries(&mut rng, n);
        let items: Vec<_> = model.iter().collect();
        for batch in items.chunks(500) {
            fx.put_all(batch.iter().copied());
        }
        assert!(fx.version.height >= 3);
        (fx, model)
    }

    fn cursor(fx: &Fixture, readahead_max_pages: usize) -> Cursor {
        Cursor::new(
            fx.pool.clone(),
            fx.version.clone(),
            Access::Walk,
            readahead_max_pages,
        )
    }

    /// The cursor's entry, or None when it is not on one.
    fn at(c: &Cursor) -> Option<(Vec<u8>, Vec<u8>)> {
        if !c.valid() {
            assert!(c.key().is_empty() && c.value().is_none());
            return None;
        }
        let mut v = Vec::new();
        read_value(c.pool(), c.value().expect("a value"), &mut v).expect("value");
        Some((c.key().to_vec(), v))
    }

    fn owned(e: Option<(&Vec<u8>, &Vec<u8>)>) -> Option<(Vec<u8>, Vec<u8>)> {
        e.map(|(k, v)| (k.clone(), v.clone()))
    }

    #[test]
    fn an_empty_tree_has_no_entry_to_stand_on() {
        let fx = Fixture::new(16);
        let mut c = cursor(&fx, 8);
        c.seek_first().expect("seek");
        assert_eq!(at(&c), None);
        c.seek_last().expect("seek");
        assert_eq!(at(&c), None);
        for q in [&b""[..], b"a", b"\xff"] {
            c.seek_ge(q).expect("seek");
            assert_eq!(at(&c), None);
            c.seek_gt(q).expect("seek");
            assert_eq!(at(&c), None);
            c.seek_le(q).expect("seek");
            assert_eq!(at(&c), None);
            c.seek_lt(q).expect("seek");
            assert_eq!(at(&c), None);
        }
        c.advance().expect("advance");
        c.retreat().expect("retreat");
        assert_eq!(at(&c), None);
    }

    #[test]
    fn walks_visit_every_entry_in_order_across_every_leaf() {
        let (fx, model) = tree(11, 3000);
        let leaves = fx.check().leaf_pages;
        let mut c = cursor(&fx, 8);
        let (mut forward, mut entered) = (Vec::new(), Vec::new());
        c.seek_first().expect("seek");
        while let Some(e) = at(&c) {
            let leaf = c.leaf.as_ref().expect("on a leaf").id();
            if entered.last() != Some(&leaf) {
                entered.push(leaf);
            }
            forward.push(e);
            c.advance().expect("advance");
        }
        assert_eq!(
            forward,
            model
                .iter()
                .map(|e| owned(Some(e)).expect("e"))
                .collect::<Vec<_>>()
        );
        assert_eq!(entered.len() as u64, leaves, "each leaf entered once");
        // Past the end the cursor stays off every entry.
        c.advance().expect("advance");
        assert_eq!(at(&c), None);

        let mut backward = Vec::new();
        c.seek_last().expect("seek");
        while let Some(e) = at(&c) {
            backward.push(e);
            c.retreat().expect("retreat");
        }
        backward.reverse();
        assert_eq!(backward, forward);
    }

    #[test]
    fn seeks_land_where_the_model_says_and_steps_go_on_from_there() {
        use std::ops::Bound::{Excluded, Unbounded};
        let (fx, model) = tree(12, 3000);
        let keys: Vec<&Vec<u8>> = model.keys().collect();
        let mut rng = seeded(13);
        // One cursor for every seek: each starts from where the last one left it.
        let mut c = cursor(&fx, 8);
        let mut queries: Vec<Vec<u8>> = vec![b"".to_vec(), b"\0".to_vec(), b"\xff".to_vec()];
        queries.push(keys[0].clone());
        queries.push(keys[keys.len() - 1].clone());
        for _ in 0..600 {
            let k = keys[rng.random_range(0..keys.len())];
            queries.push(match rng.random_range(0..4) {
                0 => k.clone(),
                1 => k[..rng.random_range(0..k.len())].to_vec(),
                2 => [k.as_slice(), &key(&mut rng, 3)].concat(),
                _ => key(&mut rng, 24),
            });
        }
        for q in &queries {
            let q = q.as_slice();
            c.seek_ge(q).expect("seek");
            assert_eq!(at(&c), owned(model.range(q.to_vec()..).next()), "ge {q:?}");
            let mut after = model.range(q.to_vec()..);
            after.next();
            c.advance().expect("advance");
            assert_eq!(at(&c), owned(after.next()), "after ge {q:?}");

            c.seek_gt(q).expect("seek");
            let gt = model.range::<[u8], _>((Excluded(q), Unbounded)).next();
            assert_eq!(at(&c), owned(gt), "gt {q:?}");

            c.seek_le(q).expect("seek");
            assert_eq!(
                at(&c),
                owned(model.range(..=q.to_vec()).next_back()),
                "le {q:?}"
            );
            let mut before = model.range(..=q.to_vec());
            before.next_back();
            c.retreat().expect("retreat");
            assert_eq!(at(&c), owned(before.next_back()), "before le {q:?}");

            c.seek_lt(q).expect("seek");
            assert_eq!(
                at(&c),
                owned(model.range(..q.to_vec()).next_back()),
                "lt {q:?}"
            );
        }
    }

    #[test]
    fn a_prefix_walk_ends_where_the_prefix_does() {
        let (fx, model) = tree(14, 3000);
        let mut rng = seeded(15);
        let mut c = cursor(&fx, 8);
        for _ in 0..200 {
            let prefix = key(&mut rng, 3);
            let want: Vec<&Vec<u8>> = model.keys().filter(|k| k.starts_with(&prefix)).collect();
            let mut got = Vec::new();
            c.seek_ge(&prefix).expect("seek");
            while c.valid() && c.key().starts_with(&prefix) {
                got.push(c.key().to_vec());
                c.advance().expect("advance");
            }
            assert_eq!(got.iter().collect::<Vec<_>>(), want, "prefix {prefix:?}");
            // The walk stopped on the first key past the prefix: where its successor is.
            let next = prefix_successor(&prefix).and_then(|s| model.range(s..).next());
            assert_eq!(at(&c), owned(next), "prefix {prefix:?}");
        }
    }

    #[test]
    fn a_large_value_is_read_through_the_cursor_pool() {
        let mut fx = Fixture::new(64);
        let big: Vec<u8> = (0..20_000u32).map(|i| (i % 253) as u8).collect();
        fx.commit(|txn| {
            txn.apply(Mutation::Put(b"a", b"small")).expect("put");
            txn.apply(Mutation::Put(b"b", &big)).expect("put");
        });
        let mut c = cursor(&fx, 8);
        c.seek_gt(b"a").expect("seek");
        assert!(matches!(
            c.value(),
            Some(ValueCell::Overflow { len: 20_000, .. })
        ));
        assert_eq!(at(&c), Some((b"b".to_vec(), big)));
    }

    /// Bulk-loaded leaves lie on adjacent pages: what readahead needs. Returns the
    /// fixture, whose pool holds no page yet, the model and the leaf of every key.
    fn cold_bulk_tree() -> (Fixture, Model, HashMap<Vec<u8>, PageId>) {
        let mut rng = seeded(16);
        let mut fx = Fixture::new(100_000);
        let model = entries(&mut rng, 3000);
        let loaded = bulk_load(&fx.pool, &mut fx.alloc, 1, &model).expect("bulk load");
        let probe = BufferPool::new(
            fx.storage.clone(),
            fx.pool.geometry(),
            PoolConfig {
                capacity_pages: 100_000,
                scan_io: ScanIo::Paged,
                fill_readaround_pages: 0,
                share_images: false,
                reserve_buffers: false,
            },
        );
        let root_id = loaded.root.expect("a root");
        let root = probe.get(root_id, Access::Point).expect("root");
        let v = Version::new(1, Some(root), loaded.height, loaded.entries);
        let leaf_of = model
            .keys()
            .map(|k| {
                (
                    k.clone(),
                    leaf_page_of(&probe, &v, k).expect("leaf").expect("some"),
                )
            })
            .collect();
        assert_eq!(fx.pool.occupancy().0, 0, "bulk load bypasses the pool");
        let root = fx.pool.get(root_id, Access::Point).expect("root");
        fx.version = Arc::new(Version::new(1, Some(root), loaded.height, loaded.entries));
        (fx, model, leaf_of)
    }

    /// Scans keys `lo..=hi` as a range does, with readahead of up to 8 pages; returns how
    /// many leaves made resident hold only keys above `hi`, and the readahead pages.
    fn bounded_scan(use_bounds: bool, use_remaining: bool) -> (usize, u64) {
        let (fx, model, leaf_of) = cold_bulk_tree();
        let keys: Vec<&Vec<u8>> = model.keys().collect();
        let (lo, hi) = (keys[keys.len() / 4].clone(), keys[keys.len() / 2].clone());
        let mut c = cursor(&fx, 8);
        if use_bounds {
            c.bounds = Some(ScanBounds {
                lo: Bound::Included(lo.clone()),
                hi: Bound::Included(hi.clone()),
            });
        }
        let mut left = model.range(lo.clone()..=hi.clone()).count() as u64;
        c.seek_ge(&lo).expect("seek");
        while c.valid() && c.key() <= hi.as_slice() {
            left -= 1;
            if use_remaining {
                c.remaining = Some(left);
            }
            c.advance().expect("advance");
        }
        assert_eq!(left, 0, "the scan saw every key in range");
        let mut first_key: HashMap<PageId, &Vec<u8>> = HashMap::new();
        for (k, &leaf) in &leaf_of {
            let e = first_key.entry(leaf).or_insert(k);
            if k < *e {
                *e = k;
            }
        }
        let beyond = first_key
            .iter()
            .filter(|&(&leaf, &first)| first > &hi && fx.pool.is_resident(leaf))
            .count();
        (beyond, fx.pool.counters().get(Counter::ReadaheadPages))
    }

    #[test]
    fn readahead_stays_within_the_end_bound_and_the_entries_wanted() {
        // Unbounded, the doubling window reads leaves past the end of the range...
        let (beyond, readahead) = bounded_scan(false, false);
        assert!(readahead > 0);
        assert!(beyond > 1, "{beyond} leaves past the range without bounds");
        // ...bounded by key or by the count left, at most the one leaf the scan itself
        // enters to find the first key past its end.
        let (beyond, readahead) = bounded_scan(true, false);
        assert!(readahead > 0);
        assert!(beyond <= 1, "{beyond} leaves past the end bound");
        let (beyond, readahead) = bounded_scan(false, true);
        assert!(readahead > 0);
        assert!(beyond <= 1, "{beyond} leaves past the entries wanted");
    }

    #[test]
    fn point_access_and_small_windows_read_no_pages_ahead() {
        let (fx, model, _) = cold_bulk_tree();
        for c in [
            Cursor::new(fx.pool.clone(), fx.version.clone(), Access::Point, 8),
            cursor(&fx, 1),
        ] {
            let mut c = c;
            c.seek_first().expect("seek");
            let mut n = 0;
            while c.valid() {
                n += 1;
                c.advance().expect("advance");
            }
            assert_eq!(n, model.len());
        }
        assert_eq!(fx.pool.counters().get(Counter::ReadaheadPages), 0);
    }
}
