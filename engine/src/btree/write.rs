//! The write transaction: copy-on-write changes to the tree. A page from an earlier
//! commit is never modified: the first change to it in this transaction copies it to a
//! newly allocated page and schedules the old one to be freed once no snapshot can see it.
//! Pages created by this transaction are private and are changed in place until commit
//! publishes them. Mutations reach the pages through `group`: a batch descends once per
//! page it changes.

use std::sync::Arc;

use super::read::{expect_kind, read_value};
use super::split::{cut_points, leaf_cut_points, shortest_separator};
use crate::error::{Error, Result};
use crate::filter::KeyFilter;
use crate::frame::Allocator;
use crate::page::{encode_overflow_run, lcp, KeyLengths};
use crate::page::{
    overflow_pages_for, value_fits_inline, InnerNode, InnerView, LeafEntry, LeafNode, LeafView,
    PageHeader, PageId, Value, INNER_FIXED,
};
use crate::pool::{Access, BufferPool, Page};

mod group;
mod scratch;
mod swap;

pub use scratch::WriteScratch;

/// One change in a batch.
#[derive(Debug, Clone, Copy)]
pub enum Mutation<'a> {
    /// Insert or replace.
    Put(&'a [u8], &'a [u8]),
    /// Remove if present.
    Delete(&'a [u8]),
}

impl<'a> Mutation<'a> {
    /// The mutations of logged or batched operations, `(key, Some(value))` a put and
    /// `(key, None)` a delete, in their order.
    pub(crate) fn all_of(ops: &'a [(Vec<u8>, Option<Vec<u8>>)]) -> Vec<Mutation<'a>> {
        ops.iter()
            .map(|(k, v)| match v {
                Some(v) => Mutation::Put(k, v),
                None => Mutation::Delete(k),
            })
            .collect()
    }

    fn key(&self) -> &'a [u8] {
        match self {
            Mutation::Put(k, _) | Mutation::Delete(k) => k,
        }
    }
}

/// A node of the new tree that replaces one child of a parent.
#[derive(Debug)]
struct Piece {
    /// Lower bound key of this piece; None for the first piece, which keeps the old one.
    sep: Option<Vec<u8>>,
    id: PageId,
    count: u64,
    /// Encoded size, to detect underfull pieces worth merging.
    bytes: usize,
}

/// What a subtree change did to its parent's entry.
enum Change {
    /// Nothing changed.
    None,
    /// Replace the child by these pieces (none: the child is gone).
    Replace { pieces: Vec<Piece>, delta: i64 },
    /// The child is one page of a fair size (a private copy changed in place): point at
    /// `id`, which holds `count` entries. The common change, made without a vector.
    Patch { id: PageId, count: u64, delta: i64 },
}

/// A page as the transaction sees it.
enum Loaded {
    /// Created by this transaction: its image is in `pages`.
    Private(PageId),
    /// From an earlier commit, shared with readers.
    Shared(Arc<Page>),
}

/// Pages of earlier commits that this transaction replaced: freed at its commit, reused
/// once no snapshot and no recoverable checkpoint can reach them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Freed {
    first: PageId,
    len: u64,
    /// The commit that wrote them (0 when unknown: then they count as durable).
    created: u64,
}

/// A write transaction over one version of the tree.
pub struct WriteTxn<'a> {
    pool: &'a BufferPool,
    alloc: &'a mut Allocator,
    seq: u64,
    ps: usize,
    /// Root after the changes so far.
    pub root: Option<PageId>,
    /// Height after the changes so far.
    pub height: u32,
    /// Entries after the changes so far.
    pub entries: u64,
    /// The log record of the mutations applied (when logging): their count, and the
    /// record begun in place (`wal::start_record`) with them encoded after its header.
    log: Option<(u32, Vec<u8>)>,
    /// The lengths of the keys put, for the new version's key-length set.
    put_lengths: KeyLengths,
    /// The stored-key filter the keys put are added to (before the version that holds
    /// them is published).
    key_filter: Option<&'a KeyFilter>,
    /// Buffers reused from leaf to leaf and, through the writer, from commit to commit
    /// (the log record's buffer among them while `log` does not hold it). Borrowed, not
    /// moved: moving them in and out cost a swap as much as reusing them saved.
    scratch: &'a mut WriteScratch,
    /// The condition of the compare-and-swap being applied (see `swap`), and whether one
    /// is being applied: its leaf checks the condition before changing anything.
    checking_swap: bool,
}

/// What a committed transaction produced.
#[derive(Debug)]
pub struct Committed {
    /// The new root page, resident.
    pub root: Option<Arc<Page>>,
    /// New height.
    pub height: u32,
    /// New entry count.
    pub entries: u64,
    /// The lengths of the keys the transaction put (the new version's key-length set is
    /// the old one's with these).
    pub put_lengths: KeyLengths,
}

impl<'a> WriteTxn<'a> {
    /// Starts commit `seq` over the tree rooted at `root`.
    /// `scratch`: the writer's buffers, which this transaction fills and leaves empty (with
    /// their capacity) for the next one.
    pub fn new(
        pool: &'a BufferPool,
        alloc: &'a mut Allocator,
        scratch: &'a mut WriteScratch,
        seq: u64,
        root: Option<PageId>,
        height: u32,
        entries: u64,
    ) -> Self {
        let ps = pool.geometry().page_bytes();
        debug_assert!(
            scratch.books.is_clear(),
            "an earlier transaction left its books"
        );
        WriteTxn {
            pool,
            alloc,
            seq,
            ps,
            root,
            height,
            entries,
            log: None,
            put_lengths: KeyLengths::empty(),
            key_filter: None,
            scratch,
            checking_swap: false,
        }
    }

    /// Adds every key put to `filter`.
    pub fn with_key_filter(mut self, filter: Option<&'a KeyFilter>) -> Self {
        self.key_filter = filter;
        self
    }

    /// Records every applied mutation for the write-ahead log.
    pub fn with_log(mut self) -> Self {
        let mut record = std::mem::take(&mut self.scratch.log);
        crate::wal::start_record(&mut record);
        self.log = Some((0, record));
        self
    }

    /// The mutations applied so far, encoded for the log: (count, payload).
    #[cfg(test)]
    pub fn log_payload(&self) -> Option<(u32, &[u8])> {
        self.log
            .as_ref()
            .map(|(n, r)| (*n, &r[crate::wal::OPS_AT..]))
    }

    /// The log record begun by [`WriteTxn::with_log`], holding every mutation applied, to
    /// be sealed and appended in place (`Wal::append_started`): (count, record).
    pub fn take_log(&mut self) -> Option<(u32, Vec<u8>)> {
        self.log.take()
    }

    /// Gives back the log record's buffer once the record is appended, for the next
    /// transaction.
    pub fn return_log_buffer(&mut self, record: Vec<u8>) {
        self.scratch.log = record;
    }

    /// True when nothing has changed.
    pub fn is_empty(&self) -> bool {
        self.scratch.books.pages.is_empty()
            && self.scratch.books.frees.is_empty()
            && self.scratch.books.runs.is_empty()
    }

    fn load(&self, id: PageId, level: u32) -> Result<Loaded> {
        if self.scratch.books.pages.contains_key(&id) {
            return Ok(Loaded::Private(id));
        }
        let page = self.pool.get(id, Access::Point)?;
        expect_kind(self.pool, &page, level)?;
        Ok(Loaded::Shared(page))
    }

    fn bytes<'s>(&'s self, l: &'s Loaded) -> &'s [u8] {
        match l {
            Loaded::Private(id) => self
                .scratch
                .books
                .pages
                .get(id)
                .map_or(&[][..], |v| v.as_slice()),
            Loaded::Shared(p) => p.bytes(),
        }
    }

    fn alloc_page(&mut self) -> PageId {
        let id = self.alloc.alloc_page();
        self.scratch.books.allocated.insert(id);
        id
    }

    /// Frees a page that the new tree no longer uses.
    fn retire(&mut self, l: &Loaded) {
        match l {
            Loaded::Private(id) => {
                self.scratch.books.pages.remove(id);
                if self.scratch.books.allocated.remove(id) {
                    self.alloc.give_back_page(*id);
                }
            }
            Loaded::Shared(p) => self.scratch.books.frees.push(Freed {
                first: p.id(),
                len: 1,
                created: p.txn(),
            }),
        }
    }

    /// A private page to write `l`'s new image into: `l` itself when private, else a new page.
    fn target(&mut self, l: &Loaded) -> PageId {
        match l {
            Loaded::Private(id) => *id,
            Loaded::Shared(_) => {
                self.retire(l);
                self.alloc_page()
            }
        }
    }

    /// Copies `l` into a private page (unless it is one) and returns its number.
    fn make_private(&mut self, l: &Loaded) -> PageId {
        match l {
            Loaded::Private(id) => *id,
            Loaded::Shared(p) => {
                // Into a spare page's buffer when the pool has one: copy-on-write frees
                // a page for each it copies, so a steady writer allocates none.
                let mut buf = self.pool.page_buffer();
                buf.clear();
                buf.extend_from_slice(p.bytes());
                self.retire(l);
                let id = self.alloc_page();
                if let Some(mut h) = PageHeader::read(&buf) {
                    h.id = id;
                    h.txn = self.seq;
                    h.write(&mut buf);
                }
                self.scratch.books.pages.insert(id, buf);
                id
            }
        }
    }

    fn inline_ok(&self, key: &[u8], value: &[u8]) -> bool {
        value_fits_inline(self.ps, key.len(), value.len())
    }

    /// The value to store for `key`: `v` itself when it fits in the leaf, else the
    /// overflow run written for it.
    fn store_value<'v>(&mut self, key: &[u8], v: &'v [u8]) -> Value<'v> {
        if self.inline_ok(key, v) {
            return Value::Inline(v.into());
        }
        let n = overflow_pages_for(v.len(), self.ps);
        let first = self.alloc.alloc(n as u64);
        self.scratch.books.runs.insert(first, n as u64);
        let buf = encode_overflow_run(v, first, self.seq, self.ps);
        self.scratch.books.overflow.insert(first, buf);
        Value::Overflow {
            first,
            len: v.len() as u32,
        }
    }

    fn free_value(&mut self, v: &Value<'_>) {
        if let Value::Overflow { first, len } = v {
            let n = overflow_pages_for(*len as usize, self.ps) as u64;
            if self.scratch.books.runs.remove(first).is_some() {
                self.scratch.books.overflow.remove(first);
                self.alloc.release(*first, n);
            } else {
                // Creation commit unknown: treat it as durable (waits for a checkpoint).
                self.scratch.books.frees.push(Freed {
                    first: *first,
                    len: n,
                    created: 0,
                });
            }
        }
    }

    /// Reads the current value of `key` as this transaction sees it.
    #[cfg(test)]
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let Some(mut id) = self.root else {
            return Ok(None);
        };
        for level in (1..self.height).rev() {
            let l = self.load(id, level)?;
            let v = InnerView::new(self.bytes(&l));
            id = v.child(v.search(key));
        }
        let l = self.load(id, 0)?;
        let view = LeafView::new(self.bytes(&l));
        let Ok(i) = view.search(key) else {
            return Ok(None);
        };
        self.owned_value(view.value(i)).map(Some)
    }

    /// Applies one mutation; returns false when it changed nothing (a missing delete).
    pub fn apply(&mut self, m: Mutation<'_>) -> Result<bool> {
        self.log_mutations(std::slice::from_ref(&m));
        self.apply_sorted(std::slice::from_ref(&m))
    }

    /// Records `mutations` for the log, in the order given.
    fn log_mutations(&mut self, mutations: &[Mutation<'_>]) {
        let Some((n, payload)) = &mut self.log else {
            return;
        };
        // Sized first: a batch of long keys would otherwise grow the record by doubling.
        payload.reserve(
            mutations
                .iter()
                .map(|m| match *m {
                    Mutation::Put(k, v) => crate::wal::encoded_op_len(k, Some(v)),
                    Mutation::Delete(k) => crate::wal::encoded_op_len(k, None),
                })
                .sum(),
        );
        // Each key front-coded against the one before it in this call (the first of a
        // call against nothing: an earlier call's last key is not kept).
        let mut prev: &[u8] = &[];
        for m in mutations {
            match *m {
                Mutation::Put(k, v) => crate::wal::encode_ops(payload, prev, k, Some(v)),
                Mutation::Delete(k) => crate::wal::encode_ops(payload, prev, k, None),
            }
            prev = m.key();
            *n += 1;
        }
    }

    /// Sets the tree after the root was changed in place into page `id` (its children are
    /// the old root's: nothing to grow), with the entry count moved by `delta`.
    fn finish_root_patch(&mut self, id: PageId, delta: i64) -> Result<()> {
        self.move_entries(delta)?;
        self.root = Some(id);
        self.collapse_root()
    }

    /// Moves the entry count by `delta`.
    fn move_entries(&mut self, delta: i64) -> Result<()> {
        self.entries = self
            .entries
            .checked_add_signed(delta)
            .ok_or_else(|| Error::Integrity {
                reason: "entry count went negative".into(),
            })?;
        Ok(())
    }

    /// Sets the tree after a change of the root: the entry count moved by `delta`, and
    /// `pieces` replaced the old root.
    fn finish_root_change(&mut self, pieces: Vec<Piece>, delta: i64) -> Result<()> {
        self.move_entries(delta)?;
        self.grow_root(pieces);
        self.collapse_root()
    }

    /// Makes `pieces`, what replaced the old root, the tree: none leaves it empty, one is
    /// the root, more get new inner levels above them until one page holds them all. A
    /// split gives two or three pieces, so one level is the rule; but when a child's split
    /// lowers the root's page prefix (a separator below all others under a long shared
    /// prefix, as path keys make), the root's separators grow and it splits into more
    /// pieces than one page holds. Each level has fewer pages than the one below it
    /// (`MIN_INNER_CHILDREN`).
    fn grow_root(&mut self, mut pieces: Vec<Piece>) {
        if pieces.is_empty() {
            self.root = None;
            self.height = 0;
            return;
        }
        while pieces.len() > 1 {
            let node = InnerNode {
                seps: pieces
                    .iter_mut()
                    .map(|p| p.sep.take().unwrap_or_default())
                    .collect(),
                children: pieces.iter().map(|p| p.id).collect(),
                counts: pieces.iter().map(|p| p.count).collect(),
            };
            let first = self.alloc_page();
            pieces = self.encode_inner(first, node, false);
            self.height += 1;
        }
        self.root = Some(pieces[0].id);
    }

    /// While the root is an inner page with one child, the child becomes the root.
    fn collapse_root(&mut self) -> Result<()> {
        while self.height > 1 {
            let Some(root) = self.root else {
                break;
            };
            let l = self.load(root, self.height - 1)?;
            let v = InnerView::new(self.bytes(&l));
            if v.len() != 1 {
                break;
            }
            let only = v.child(0);
            self.retire(&l);
            self.root = Some(only);
            self.height -= 1;
        }
        Ok(())
    }

    /// Encodes leaf entries into one or more private pages, the first in place of `l`.
    fn write_leaf(
        &mut self,
        l: &Loaded,
        entries: &[LeafEntry<'_>],
        lcps: &[u32],
        append: bool,
    ) -> Vec<Piece> {
        let first = self.target(l);
        self.encode_leaf(first, entries, lcps, append)
    }

    /// Encodes leaf entries into private pages: `first` (already allocated) and as many
    /// new ones as its cuts need. `lcps` holds each entry's common prefix with the entry
    /// before it ([`LeafNode::sizer_with`]), so that no pass compares the keys again.
    fn encode_leaf(
        &mut self,
        first: PageId,
        entries: &[LeafEntry<'_>],
        lcps: &[u32],
        append: bool,
    ) -> Vec<Piece> {
        // Most changes leave the leaf within its page: measured once, encoded once.
        let whole = LeafNode::sizer_with(entries, lcps);
        if whole.size() <= self.ps {
            let mut buf = self.pool.page_buffer();
            LeafNode::encode_measured(entries, lcps, &whole, first, self.seq, &mut buf);
            self.scratch.books.pages.insert(first, buf);
            return vec![Piece {
                sep: None,
                id: first,
                count: entries.len() as u64,
                bytes: whole.size(),
            }];
        }
        let cuts = leaf_cut_points(entries, lcps, self.ps, append);
        let mut bounds = vec![0];
        bounds.extend(&cuts);
        bounds.push(entries.len());
        let mut pieces = Vec::with_capacity(bounds.len() - 1);
        for w in bounds.windows(2) {
            let (group, group_lcps) = (&entries[w[0]..w[1]], &lcps[w[0]..w[1]]);
            let id = if w[0] == 0 { first } else { self.alloc_page() };
            let mut buf = self.pool.page_buffer();
            // Each piece measured once, for its encoding and its size.
            let run = LeafNode::sizer_with(group, group_lcps);
            LeafNode::encode_measured(group, group_lcps, &run, id, self.seq, &mut buf);
            let sep = (w[0] > 0).then(|| shortest_separator(&entries[w[0] - 1].key, &group[0].key));
            pieces.push(Piece {
                sep,
                id,
                count: group.len() as u64,
                bytes: run.size(),
            });
            self.scratch.books.pages.insert(id, buf);
        }
        pieces
    }

    /// Encodes an inner node into one or more private pages, the first in place of `l`.
    fn write_inner(&mut self, l: &Loaded, node: InnerNode, append: bool) -> Vec<Piece> {
        let first = self.target(l);
        self.encode_inner(first, node, append)
    }

    /// Encodes an inner node into private pages: `first` (already allocated) and as many
    /// new ones as its cuts need.
    fn encode_inner(&mut self, first: PageId, node: InnerNode, append: bool) -> Vec<Piece> {
        let plen = InnerNode::prefix_len(&node.seps);
        let sizes: Vec<usize> = node
            .seps
            .iter()
            .enumerate()
            .map(|(i, s)| InnerNode::child_size(s, i.max(1), plen.min(s.len())))
            .collect();
        let cuts = cut_points(&sizes, INNER_FIXED + plen, self.ps, append);
        let mut bounds = vec![0];
        bounds.extend(&cuts);
        bounds.push(node.len());
        let mut pieces = Vec::with_capacity(bounds.len() - 1);
        for w in bounds.windows(2) {
            let mut part = InnerNode {
                seps: node.seps[w[0]..w[1]].to_vec(),
                children: node.children[w[0]..w[1]].to_vec(),
                counts: node.counts[w[0]..w[1]].to_vec(),
            };
            let sep = (w[0] > 0).then(|| std::mem::take(&mut part.seps[0]));
            part.seps[0].clear();
            let id = if w[0] == 0 { first } else { self.alloc_page() };
            let mut buf = self.pool.page_buffer();
            part.encode(id, self.seq, &mut buf);
            pieces.push(Piece {
                sep,
                id,
                count: part.total(),
                bytes: part.encoded_len(),
            });
            self.scratch.books.pages.insert(id, buf);
        }
        pieces
    }

    /// Merges child `idx` of `node` with a sibling when both fit in one page.
    fn try_merge(&mut self, node: &mut InnerNode, idx: usize, child_level: u32) -> Result<()> {
        let (a, b) = if idx + 1 < node.len() {
            (idx, idx + 1)
        } else {
            (idx - 1, idx)
        };
        let la = self.load(node.children[a], child_level)?;
        let lb = self.load(node.children[b], child_level)?;
        let merged = if child_level == 0 {
            match self.merge_leaves(&la, &lb) {
                Some(id) => id,
                None => return Ok(()),
            }
        } else {
            let mut left = InnerNode::decode(&InnerView::new(self.bytes(&la)));
            let right = InnerNode::decode(&InnerView::new(self.bytes(&lb)));
            for (k, sep) in right.seps.into_iter().enumerate() {
                left.seps
                    .push(if k == 0 { node.seps[b].clone() } else { sep });
            }
            left.children.extend(right.children);
            left.counts.extend(right.counts);
            if left.encoded_len() > self.ps {
                return Ok(());
            }
            let id = self.target(&la);
            let mut buf = self.pool.page_buffer();
            left.encode(id, self.seq, &mut buf);
            self.scratch.books.pages.insert(id, buf);
            id
        };
        self.retire(&lb);
        node.children[a] = merged;
        node.counts[a] += node.counts[b];
        node.seps.remove(b);
        node.children.remove(b);
        node.counts.remove(b);
        Ok(())
    }

    /// Writes leaves `la` and `lb` (neighbours, in that order) as one page in place of
    /// `la` when they fit in one; None when they do not. Decoded into borrowed entries,
    /// with each one's common prefix with the one before taken from the pages, so that
    /// the usual outcome after deletes, a pair that does not fit, costs no allocation per
    /// entry and no key comparison.
    fn merge_leaves(&mut self, la: &Loaded, lb: &Loaded) -> Option<PageId> {
        let mut images = std::mem::take(&mut self.scratch.leaf_image);
        images.clear();
        images.extend_from_slice(self.bytes(la));
        let split = images.len();
        images.extend_from_slice(self.bytes(lb));
        let (image_a, image_b) = images.split_at(split);
        let mut keys_a = std::mem::take(&mut self.scratch.leaf_keys);
        let mut spans_a = std::mem::take(&mut self.scratch.leaf_spans);
        let mut lcps = std::mem::take(&mut self.scratch.leaf_lcps);
        let (mut keys_b, mut spans_b, mut lcps_b) = (Vec::new(), Vec::new(), Vec::new());
        let mut entries = LeafNode::decode_borrowed(
            &LeafView::new(image_a),
            &mut keys_a,
            &mut spans_a,
            &mut lcps,
        );
        let right = LeafNode::decode_borrowed(
            &LeafView::new(image_b),
            &mut keys_b,
            &mut spans_b,
            &mut lcps_b,
        );
        match (entries.last(), right.first()) {
            (Some(last), Some(first)) => {
                lcps.push(lcp(&last.key, &first.key) as u32);
                lcps.extend_from_slice(&lcps_b[1..]);
            }
            (None, Some(_)) => lcps.clone_from(&lcps_b),
            (_, None) => {}
        }
        entries.extend(right);
        let run = LeafNode::sizer_with(&entries, &lcps);
        let merged = (run.size() <= self.ps).then(|| {
            let id = self.target(la);
            let mut buf = self.pool.page_buffer();
            LeafNode::encode_measured(&entries, &lcps, &run, id, self.seq, &mut buf);
            self.scratch.books.pages.insert(id, buf);
            id
        });
        drop(entries);
        self.scratch.leaf_image = images;
        self.scratch.leaf_keys = keys_a;
        self.scratch.leaf_spans = spans_a;
        self.scratch.leaf_lcps = lcps;
        merged
    }

    /// Publishes the transaction's pages to the pool (dirty), writes its overflow values,
    /// and schedules the pages it replaced to be freed. Returns the new root.
    pub fn commit(self) -> Result<Committed> {
        self.pool.ensure_len(self.alloc.page_count())?;
        for (first, buf) in self.scratch.books.overflow.drain() {
            self.pool.write_run(first, &buf)?;
        }
        let mut root_page = None;
        for (id, buf) in self.scratch.books.pages.drain() {
            let page = self.pool.install(buf)?;
            if Some(id) == self.root {
                root_page = Some(page);
            }
        }
        let root = match (self.root, root_page) {
            (Some(_), Some(p)) => Some(p),
            (Some(id), None) => {
                let p = self.pool.get(id, Access::Point)?;
                expect_kind(self.pool, &p, self.height - 1)?;
                Some(p)
            }
            (None, _) => None,
        };
        for Freed {
            first,
            len,
            created,
        } in self.scratch.books.frees.drain(..)
        {
            self.alloc.defer(first, len, created, self.seq);
        }
        self.scratch.books.clear();
        Ok(Committed {
            root,
            height: self.height,
            entries: self.entries,
            put_lengths: self.put_lengths,
        })
    }
}

impl Drop for WriteTxn<'_> {
    /// An uncommitted transaction returns every page it allocated, and leaves the
    /// writer's bookkeeping empty for the next one.
    fn drop(&mut self) {
        for id in self.scratch.books.allocated.drain() {
            self.alloc.give_back_page(id);
        }
        for (first, n) in self.scratch.books.runs.drain() {
            self.alloc.release(first, n);
        }
        self.scratch.books.clear();
    }
}

#[cfg(test)]
pub(in crate::btree) mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use rand::RngExt as _;

    use super::*;
    use crate::btree::{check_tree, get_value, CheckReport, Version};
    use crate::frame::Geometry;
    use crate::pool::{Counter, PoolConfig, ScanIo};
    use crate::storage::{SimDisk, Storage, StorageOpener as _};
    use crate::test_rng::{key, seeded, Rng};

    /// Page size of the fixture's file.
    pub(in crate::btree) const PAGE: usize = 4096;

    /// A tree over a simulated file, changed through `WriteTxn` and published as `Tree`
    /// does (root pinned), except that no freed page is ever reclaimed: every version
    /// committed stays readable.
    pub(in crate::btree) struct Fixture {
        pub(in crate::btree) pool: Arc<BufferPool>,
        pub(in crate::btree) alloc: Allocator,
        pub(in crate::btree) version: Arc<Version>,
        pub(in crate::btree) storage: Arc<dyn Storage>,
        pub(in crate::btree) scratch: WriteScratch,
    }

    impl Fixture {
        /// An empty tree under a pool of `capacity_pages`.
        pub(in crate::btree) fn new(capacity_pages: usize) -> Self {
            let storage = SimDisk::new()
                .open(Path::new("/sim/data"), true)
                .expect("open the simulated file");
            let geo = Geometry::new(PAGE as u32, 8 * PAGE as u32).expect("geometry");
            let cfg = PoolConfig {
                capacity_pages,
                scan_io: ScanIo::Paged,
                fill_readaround_pages: 0,
                share_images: false,
                reserve_buffers: false,
            };
            Fixture {
                pool: Arc::new(BufferPool::new(storage.clone(), geo, cfg)),
                alloc: Allocator::new(geo, 0, []),
                version: Arc::new(Version::empty(0)),
                storage,
                scratch: WriteScratch::new(),
            }
        }

        /// Runs `f` in the next write transaction, commits it and makes the result the
        /// current version.
        pub(in crate::btree) fn commit<R>(
            &mut self,
            f: impl FnOnce(&mut WriteTxn<'_>) -> R,
        ) -> (Arc<Version>, R) {
            let cur = self.version.clone();
            let seq = cur.seq + 1;
            let root = cur.root.as_ref().map(|p| p.id());
            let mut txn = WriteTxn::new(
                &self.pool,
                &mut self.alloc,
                &mut self.scratch,
                seq,
                root,
                cur.height,
                cur.entries,
            );
            let r = f(&mut txn);
            let c = txn.commit().expect("commit");
            if let Some(p) = &c.root {
                self.pool.set_pinned(p, true);
            }
            if let Some(old) = &cur.root {
                if c.root.as_ref().map(|p| p.id()) != Some(old.id()) {
                    self.pool.set_pinned(old, false);
                }
            }
            self.version = Arc::new(Version::new(seq, c.root, c.height, c.entries));
            (self.version.clone(), r)
        }

        /// Puts every entry of `items` in one commit.
        pub(in crate::btree) fn put_all<'i>(
            &mut self,
            items: impl IntoIterator<Item = (&'i Vec<u8>, &'i Vec<u8>)>,
        ) -> Arc<Version> {
            self.commit(|txn| {
                for (k, v) in items {
                    txn.apply(Mutation::Put(k, v)).expect("put");
                }
            })
            .0
        }

        /// The value of `key` in version `v`.
        pub(in crate::btree) fn get(&self, v: &Version, key: &[u8]) -> Option<Vec<u8>> {
            get_value(&self.pool, v, key, <[u8]>::to_vec).expect("get")
        }

        /// The integrity check of the current version.
        pub(in crate::btree) fn check(&self) -> CheckReport {
            check_tree(&self.pool, &self.version, &self.alloc.not_live()).expect("check")
        }
    }

    /// `n` distinct random keys with values of 150 to 250 bytes: about 18 entries a leaf,
    /// so a few thousand make a tree of three levels.
    pub(in crate::btree) fn entries(rng: &mut Rng, n: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut out = BTreeMap::new();
        while out.len() < n {
            let k = key(rng, 24);
            let v = vec![k[0]; rng.random_range(150..250)];
            out.insert(k, v);
        }
        out
    }

    fn assert_reads(fx: &Fixture, v: &Version, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
        assert_eq!(v.entries, model.len() as u64);
        for (k, val) in model {
            assert_eq!(fx.get(v, k).as_ref(), Some(val), "key {k:?}");
        }
    }

    #[test]
    fn puts_split_leaves_and_inner_pages_and_every_entry_reads_back() {
        let mut rng = seeded(1);
        let mut fx = Fixture::new(100_000);
        let mut model = BTreeMap::new();
        let all = entries(&mut rng, 4000);
        let items: Vec<_> = all.iter().collect();
        for batch in items.chunks(1000) {
            fx.put_all(batch.iter().copied());
            model.extend(batch.iter().map(|&(k, v)| (k.clone(), v.clone())));
            let report = fx.check();
            assert_eq!(report.entries, model.len() as u64);
        }
        let v = fx.version.clone();
        assert!(v.height >= 3, "height {}", v.height);
        let report = fx.check();
        assert!(report.inner_pages >= 3, "{report:?}");
        assert!(report.leaf_pages >= 4000 / 40, "{report:?}");
        assert_eq!(report.overflow_pages, 0);
        assert_reads(&fx, &v, &model);
        assert_eq!(fx.get(&v, b"not/a/key/of/the/alphabet/x"), None);
    }

    #[test]
    fn deletes_merge_underfull_pages_and_collapse_the_root() {
        let mut rng = seeded(2);
        let mut fx = Fixture::new(100_000);
        let mut model = entries(&mut rng, 3000);
        fx.put_all(&model);
        let before = fx.check();
        let before_height = fx.version.height;
        assert!(before_height >= 3);
        // Delete nine keys in ten, in no particular order.
        let mut doomed: Vec<Vec<u8>> = model
            .keys()
            .filter(|_| rng.random_range(0..10) != 0)
            .cloned()
            .collect();
        for i in (1..doomed.len()).rev() {
            doomed.swap(i, rng.random_range(0..=i));
        }
        fx.commit(|txn| {
            for k in &doomed {
                assert!(txn.apply(Mutation::Delete(k)).expect("delete"));
            }
        });
        for k in &doomed {
            model.remove(k);
        }
        let after = fx.check();
        assert_eq!(after.entries, model.len() as u64);
        // Without merging, most leaves would keep one or two entries each (seed 2: 167
        // leaves before, 40 after).
        assert!(
            after.leaf_pages * 3 < before.leaf_pages,
            "{} leaves before, {} after",
            before.leaf_pages,
            after.leaf_pages
        );
        // Inner pages merged too, and the root with one child left gave way to it (seed 2:
        // three inner pages and three levels before, one and two after).
        assert!(
            after.inner_pages < before.inner_pages,
            "{before:?} {after:?}"
        );
        assert!(fx.version.height < before_height);
        let v = fx.version.clone();
        assert_reads(&fx, &v, &model);
        // All but one key gone: a lone leaf at the root; then nothing at all.
        let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        let (v, _) = fx.commit(|txn| {
            for k in &keys[1..] {
                txn.apply(Mutation::Delete(k)).expect("delete");
            }
        });
        assert_eq!((v.height, v.entries), (1, 1));
        assert_eq!(fx.check().leaf_pages, 1);
        let (v, missing) = fx.commit(|txn| {
            txn.apply(Mutation::Delete(&keys[0])).expect("delete");
            txn.apply(Mutation::Delete(&keys[0])).expect("delete again")
        });
        assert!(!missing, "a delete of a missing key changes nothing");
        assert!(v.root.is_none());
        assert_eq!((v.height, v.entries), (0, 0));
        assert_eq!(fx.check(), CheckReport::default());
    }

    #[test]
    fn random_puts_and_deletes_agree_with_a_model() {
        let mut rng = seeded(3);
        let mut fx = Fixture::new(100_000);
        let mut model = BTreeMap::new();
        for _ in 0..12 {
            let ops: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..300)
                .map(|_| {
                    let k = key(&mut rng, 12);
                    let v = match rng.random_range(0..10) {
                        0..=2 => None,
                        3 => Some(vec![b'x'; rng.random_range(1500..9000)]),
                        _ => Some(vec![k[0]; rng.random_range(0..300)]),
                    };
                    (k, v)
                })
                .collect();
            let (_, changed) = fx.commit(|txn| {
                ops.iter()
                    .map(|(k, v)| match v {
                        Some(v) => txn.apply(Mutation::Put(k, v)).expect("put"),
                        None => txn.apply(Mutation::Delete(k)).expect("delete"),
                    })
                    .collect::<Vec<bool>>()
            });
            for ((k, v), changed) in ops.into_iter().zip(changed) {
                match v {
                    Some(v) => {
                        assert!(changed);
                        model.insert(k, v);
                    }
                    None => assert_eq!(changed, model.remove(&k).is_some()),
                }
            }
            let report = fx.check();
            assert_eq!(report.entries, model.len() as u64);
            let v = fx.version.clone();
            assert_reads(&fx, &v, &model);
        }
        assert!(fx.check().overflow_pages > 0);
    }

    /// `n` keys of a 1,500-byte run of `byte`, then '/' and six hex digits, 40-byte values.
    fn under_long_prefix(rng: &mut Rng, byte: u8, n: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut out = BTreeMap::new();
        while out.len() < n {
            let mut k = vec![byte; 1500];
            k.extend(format!("/{:06x}", rng.random_range(0..1u32 << 24)).as_bytes());
            out.insert(k, vec![byte; 40]);
        }
        out
    }

    #[test]
    fn keys_beside_a_long_shared_prefix_grow_the_root_by_as_many_levels_as_needed() {
        // 4,500 keys under one 1,500-byte prefix: the root stores its separators in a few
        // bytes each after its page prefix.
        let mut rng = seeded(31_550);
        let mut fx = Fixture::new(100_000);
        let mut model = under_long_prefix(&mut rng, b'p', 4500);
        fx.put_all(&model);
        let mut heights = vec![fx.version.height];
        // Keys under other long prefixes, above and below, 50 a commit: separators
        // between the groups share no prefix, so the root's separators take 1,500 bytes
        // more each and it splits into more pieces (48 with this seed) than one page
        // holds (they need four levels above them).
        let mut added = Vec::new();
        for byte in [b'q', b'a'] {
            let more = under_long_prefix(&mut rng, byte, 50);
            let (v, ()) = fx.commit(|txn| {
                for (k, value) in &more {
                    txn.apply(Mutation::Put(k, value)).expect("put");
                }
            });
            heights.push(v.height);
            added.extend(more.keys().cloned());
            model.extend(more);
            let report = fx.check();
            assert_eq!(report.entries, model.len() as u64);
            assert_eq!(report.overflow_pages, 0);
            assert_reads(&fx, &v, &model);
        }
        assert!(
            heights.windows(2).any(|w| w[1] >= w[0] + 2),
            "heights {heights:?}"
        );
        // Deleting them again merges the tree back and every entry still reads.
        fx.commit(|txn| {
            for k in &added {
                assert!(txn.apply(Mutation::Delete(k)).expect("delete"));
            }
        });
        for k in &added {
            model.remove(k);
        }
        assert_eq!(fx.check().entries, model.len() as u64);
        let v = fx.version.clone();
        assert_reads(&fx, &v, &model);
    }

    #[test]
    fn the_first_change_copies_a_shared_page_and_later_ones_change_the_copy() {
        let mut fx = Fixture::new(1000);
        let (v1, _) = fx.commit(|txn| {
            txn.apply(Mutation::Put(b"a", b"1")).expect("put");
            txn.apply(Mutation::Put(b"b", b"2")).expect("put");
        });
        let leaf = v1.root.as_ref().expect("root").id();
        let (v2, ()) = fx.commit(|txn| {
            txn.apply(Mutation::Put(b"b", b"3"))
                .expect("same-length overwrite");
            txn.apply(Mutation::Put(b"c", b"44")).expect("put");
            txn.apply(Mutation::Delete(b"a")).expect("delete");
            let freed: Vec<(PageId, u64, u64)> = txn
                .scratch
                .books
                .frees
                .iter()
                .map(|f| (f.first, f.len, f.created))
                .collect();
            assert_eq!(freed, vec![(leaf, 1, 1)], "the old leaf is freed once");
            assert_eq!(
                txn.scratch.books.pages.len(),
                1,
                "one private copy, changed in place"
            );
            assert_eq!(txn.get(b"b").expect("get"), Some(b"3".to_vec()));
            assert_eq!(txn.get(b"a").expect("get"), None);
        });
        let new_leaf = v2.root.as_ref().expect("root").id();
        assert_ne!(new_leaf, leaf);
        assert_eq!(v2.root.as_ref().expect("root").txn(), 2);
        assert_eq!(
            fx.alloc.not_live()(leaf),
            Some("freed by an earlier commit")
        );
        // The old version still reads as it was committed.
        assert_eq!(fx.get(&v1, b"a"), Some(b"1".to_vec()));
        assert_eq!(fx.get(&v1, b"b"), Some(b"2".to_vec()));
        assert_eq!(fx.get(&v1, b"c"), None);
        assert_eq!(fx.get(&v2, b"a"), None);
        assert_eq!(fx.get(&v2, b"b"), Some(b"3".to_vec()));
        assert_eq!(fx.get(&v2, b"c"), Some(b"44".to_vec()));
        assert_eq!((v1.seq, v1.entries, v2.seq, v2.entries), (1, 2, 2, 2));
    }

    #[test]
    fn a_large_value_takes_an_overflow_run_that_is_freed_with_it() {
        let mut fx = Fixture::new(1000);
        let big: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let bigger = vec![9u8; 13_000];
        let (free_at_start, pages_at_start) = (fx.alloc.free_pages(), fx.alloc.page_count());
        let (v1, first) = fx.commit(|txn| {
            txn.apply(Mutation::Put(b"k", &big)).expect("put");
            assert_eq!(txn.get(b"k").expect("get"), Some(big.clone()));
            let replaced = *txn.scratch.books.runs.keys().next().expect("a run");
            // Replaced in the same transaction: the first run was never committed and
            // goes straight back to the free space.
            txn.apply(Mutation::Put(b"k", &bigger)).expect("put");
            assert!(!txn.scratch.books.runs.contains_key(&replaced));
            assert_eq!(
                txn.scratch.books.runs.values().copied().collect::<Vec<_>>(),
                vec![4]
            );
            assert!(txn.scratch.books.frees.is_empty());
            *txn.scratch.books.runs.keys().next().expect("a run")
        });
        // One leaf and the four pages of the second run are in use; the file grew by
        // whole frames of free pages to find four contiguous ones.
        let grown = fx.alloc.page_count() - pages_at_start;
        assert_eq!(fx.alloc.free_pages(), free_at_start + grown - 5);
        assert_eq!(fx.check().overflow_pages, 4);
        assert_eq!(fx.get(&v1, b"k"), Some(bigger.clone()));
        let leaf = v1.root.as_ref().expect("root").id();
        fx.commit(|txn| {
            txn.apply(Mutation::Put(b"j", b"small")).expect("put");
            txn.apply(Mutation::Delete(b"k")).expect("delete");
            let mut freed: Vec<(PageId, u64, u64)> = txn
                .scratch
                .books
                .frees
                .iter()
                .map(|f| (f.first, f.len, f.created))
                .collect();
            freed.sort_unstable();
            // The run's creator is not known from the leaf: 0, as if durable.
            let mut want = vec![(leaf, 1, 1), (first, 4, 0)];
            want.sort_unstable();
            assert_eq!(freed, want);
        });
        assert_eq!(fx.check().overflow_pages, 0);
        // Nothing was reclaimed: the first version still reads its value.
        assert_eq!(fx.get(&v1, b"k"), Some(bigger));
    }

    #[test]
    fn a_dropped_transaction_gives_back_every_page_it_took() {
        let mut rng = seeded(4);
        let mut fx = Fixture::new(100_000);
        let model = entries(&mut rng, 500);
        fx.put_all(&model);
        let (free, pages) = (fx.alloc.free_pages(), fx.alloc.page_count());
        let extents = fx.alloc.extents_for_checkpoint(&[]);
        let more = entries(&mut rng, 2000);
        {
            let cur = fx.version.clone();
            let mut txn = WriteTxn::new(
                &fx.pool,
                &mut fx.alloc,
                &mut fx.scratch,
                cur.seq + 1,
                cur.root.as_ref().map(|p| p.id()),
                cur.height,
                cur.entries,
            );
            for (k, v) in &more {
                txn.apply(Mutation::Put(k, v)).expect("put");
            }
            txn.apply(Mutation::Put(b"big", &[1u8; 20_000]))
                .expect("put");
            assert!(!txn.is_empty());
        }
        // The file may have grown; every page of the growth is free, nothing else changed.
        let grown = fx.alloc.page_count() - pages;
        assert_eq!(fx.alloc.free_pages(), free + grown);
        let mut want = extents;
        if grown > 0 {
            match want.last_mut() {
                Some((s, l)) if *s + *l == pages => *l += grown,
                _ => want.push((pages, grown)),
            }
        }
        assert_eq!(fx.alloc.extents_for_checkpoint(&[]), want);
        let v = fx.version.clone();
        assert_reads(&fx, &v, &model);
        assert_eq!(fx.get(&v, b"big"), None);
    }

    #[test]
    fn the_log_payload_holds_every_mutation_applied() {
        let mut fx = Fixture::new(1000);
        let cur = fx.version.clone();
        let txn = WriteTxn::new(&fx.pool, &mut fx.alloc, &mut fx.scratch, 1, None, 0, 0);
        assert!(txn.log_payload().is_none(), "not logging");
        drop(txn);
        let mut txn = WriteTxn::new(
            &fx.pool,
            &mut fx.alloc,
            &mut fx.scratch,
            cur.seq + 1,
            None,
            0,
            0,
        )
        .with_log();
        assert!(txn.apply(Mutation::Put(b"a", b"1")).expect("put"));
        assert!(!txn.apply(Mutation::Delete(b"zz")).expect("missing delete"));
        assert!(txn.apply(Mutation::Put(b"b", b"22")).expect("put"));
        let mut want = Vec::new();
        // Each apply is its own call: nothing front-coded across them.
        crate::wal::encode_ops(&mut want, b"", b"a", Some(b"1"));
        crate::wal::encode_ops(&mut want, b"", b"zz", None);
        crate::wal::encode_ops(&mut want, b"", b"b", Some(b"22"));
        assert_eq!(txn.log_payload(), Some((3, want.as_slice())));
        // A batch front-codes each key against the one before it, in the caller's order.
        let batch = [
            Mutation::Put(b"kv/m/h0/h1", b"x"),
            Mutation::Put(b"kv/m/h0", b"y"),
            Mutation::Delete(b"kv/m/h0/h2"),
        ];
        assert!(txn.apply_all(&batch).expect("batch"));
        crate::wal::encode_ops(&mut want, b"", b"kv/m/h0/h1", Some(b"x"));
        crate::wal::encode_ops(&mut want, b"kv/m/h0/h1", b"kv/m/h0", Some(b"y"));
        crate::wal::encode_ops(&mut want, b"kv/m/h0", b"kv/m/h0/h2", None);
        assert_eq!(txn.log_payload(), Some((6, want.as_slice())));
    }

    #[test]
    fn commits_under_a_tiny_pool_write_evicted_pages_back_and_read_them_again() {
        let mut rng = seeded(5);
        let mut fx = Fixture::new(8);
        let model = entries(&mut rng, 1500);
        let items: Vec<_> = model.iter().collect();
        for batch in items.chunks(300) {
            fx.put_all(batch.iter().copied());
        }
        assert!(fx.pool.occupancy().0 <= 8);
        assert!(fx.pool.counters().get(Counter::DirtyWritebacks) > 0);
        assert!(fx.pool.counters().get(Counter::PageMisses) > 0);
        let report = fx.check();
        assert_eq!(report.entries, 1500);
        let v = fx.version.clone();
        assert_reads(&fx, &v, &model);
        // What the pool wrote back plus one flush is the whole tree on disk.
        fx.pool.flush_dirty().expect("flush");
        let geo = fx.pool.geometry();
        let cfg = PoolConfig {
            capacity_pages: 64,
            scan_io: ScanIo::Paged,
            fill_readaround_pages: 0,
            share_images: false,
            reserve_buffers: false,
        };
        let cold = BufferPool::new(fx.storage.clone(), geo, cfg);
        let root = v.root.as_ref().expect("root").id();
        let root = cold.get(root, Access::Point).expect("root from disk");
        let again = Version::new(v.seq, Some(root), v.height, v.entries);
        for (k, val) in &model {
            let got = get_value(&cold, &again, k, <[u8]>::to_vec).expect("get");
            assert_eq!(got.as_ref(), Some(val));
        }
    }
}
