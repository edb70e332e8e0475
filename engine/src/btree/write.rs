//! The write transaction: copy-on-write changes to the tree, applied one mutation at a
//! time. A page from an earlier commit is never modified: the first change to it in this
//! transaction copies it to a newly allocated page and schedules the old one to be freed
//! once no snapshot can see it. Pages created by this transaction are private and are
//! changed in place until commit publishes them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::read::{expect_kind, read_value};
use super::split::{cut_points, leaf_cut_points, shortest_separator};
use crate::error::{Error, Result};
use crate::frame::Allocator;
use crate::page::{decode_overflow_run, encode_overflow_run};
use crate::page::{
    overflow_pages_for, value_fits_inline, InnerNode, InnerView, LeafEntry, LeafNode, LeafView,
    PageHeader, PageId, Value, ValueCell, INNER_FIXED,
};
use crate::pool::{Access, BufferPool, Page};

/// One change in a batch.
#[derive(Debug, Clone, Copy)]
pub enum Mutation<'a> {
    /// Insert or replace.
    Put(&'a [u8], &'a [u8]),
    /// Remove if present.
    Delete(&'a [u8]),
}

impl<'a> Mutation<'a> {
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
struct Freed {
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
    pages: HashMap<PageId, Vec<u8>>,
    allocated: HashSet<PageId>,
    runs: HashMap<PageId, u64>,
    overflow: HashMap<PageId, Vec<u8>>,
    frees: Vec<Freed>,
    /// The mutations applied, encoded for the log (when logging).
    log: Option<(u32, Vec<u8>)>,
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
}

impl<'a> WriteTxn<'a> {
    /// Starts commit `seq` over the tree rooted at `root`.
    pub fn new(
        pool: &'a BufferPool,
        alloc: &'a mut Allocator,
        seq: u64,
        root: Option<PageId>,
        height: u32,
        entries: u64,
    ) -> Self {
        let ps = pool.geometry().page_bytes();
        WriteTxn {
            pool,
            alloc,
            seq,
            ps,
            root,
            height,
            entries,
            pages: HashMap::new(),
            allocated: HashSet::new(),
            runs: HashMap::new(),
            overflow: HashMap::new(),
            frees: Vec::new(),
            log: None,
        }
    }

    /// Records every applied mutation for the write-ahead log.
    pub fn with_log(mut self) -> Self {
        self.log = Some((0, Vec::new()));
        self
    }

    /// The mutations applied so far, encoded for the log: (count, payload).
    pub fn log_payload(&self) -> Option<(u32, &[u8])> {
        self.log.as_ref().map(|(n, p)| (*n, p.as_slice()))
    }

    /// True when nothing has changed.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty() && self.frees.is_empty() && self.runs.is_empty()
    }

    fn load(&self, id: PageId, level: u32) -> Result<Loaded> {
        if self.pages.contains_key(&id) {
            return Ok(Loaded::Private(id));
        }
        let page = self.pool.get(id, Access::Point)?;
        expect_kind(self.pool, &page, level)?;
        Ok(Loaded::Shared(page))
    }

    fn bytes<'s>(&'s self, l: &'s Loaded) -> &'s [u8] {
        match l {
            Loaded::Private(id) => self.pages.get(id).map_or(&[][..], |v| v.as_slice()),
            Loaded::Shared(p) => p.bytes(),
        }
    }

    fn alloc_page(&mut self) -> PageId {
        let id = self.alloc.alloc(1);
        self.allocated.insert(id);
        id
    }

    /// Frees a page that the new tree no longer uses.
    fn retire(&mut self, l: &Loaded) {
        match l {
            Loaded::Private(id) => {
                self.pages.remove(id);
                if self.allocated.remove(id) {
                    self.alloc.release(*id, 1);
                }
            }
            Loaded::Shared(p) => self.frees.push(Freed {
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
                let mut buf = p.bytes().to_vec();
                self.retire(l);
                let id = self.alloc_page();
                if let Some(mut h) = PageHeader::read(&buf) {
                    h.id = id;
                    h.txn = self.seq;
                    h.write(&mut buf);
                }
                self.pages.insert(id, buf);
                id
            }
        }
    }

    fn inline_ok(&self, key: &[u8], value: &[u8]) -> bool {
        value_fits_inline(self.ps, key.len(), value.len())
    }

    fn store_value(&mut self, key: &[u8], v: &[u8]) -> Value {
        if self.inline_ok(key, v) {
            return Value::Inline(v.to_vec());
        }
        let n = overflow_pages_for(v.len(), self.ps);
        let first = self.alloc.alloc(n as u64);
        self.runs.insert(first, n as u64);
        let buf = encode_overflow_run(v, first, self.seq, self.ps);
        self.overflow.insert(first, buf);
        Value::Overflow {
            first,
            len: v.len() as u32,
        }
    }

    fn free_value(&mut self, v: &Value) {
        if let Value::Overflow { first, len } = v {
            let n = overflow_pages_for(*len as usize, self.ps) as u64;
            if self.runs.remove(first).is_some() {
                self.overflow.remove(first);
                self.alloc.release(*first, n);
            } else {
                // Creation commit unknown: treat it as durable (waits for a checkpoint).
                self.frees.push(Freed {
                    first: *first,
                    len: n,
                    created: 0,
                });
            }
        }
    }

    /// Reads the current value of `key` as this transaction sees it.
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
        let mut out = Vec::new();
        match view.value(i) {
            ValueCell::Overflow { first, len } if self.overflow.contains_key(&first) => {
                // This transaction encoded the run itself: it always decodes.
                let _ = decode_overflow_run(&self.overflow[&first], len, self.ps, &mut out);
            }
            cell => read_value(self.pool, cell, &mut out)?,
        }
        Ok(Some(out))
    }

    /// Applies one mutation; returns false when it changed nothing (a missing delete).
    pub fn apply(&mut self, m: Mutation<'_>) -> Result<bool> {
        if let Some((n, payload)) = &mut self.log {
            match m {
                Mutation::Put(k, v) => crate::wal::encode_ops(payload, k, Some(v)),
                Mutation::Delete(k) => crate::wal::encode_ops(payload, k, None),
            }
            *n += 1;
        }
        let Some(root) = self.root else {
            if let Mutation::Put(k, v) = m {
                let value = self.store_value(k, v);
                let id = self.alloc_page();
                let entries = vec![LeafEntry {
                    key: k.to_vec(),
                    value,
                }];
                let mut buf = vec![0u8; self.ps];
                LeafNode::encode(&entries, id, self.seq, &mut buf);
                self.pages.insert(id, buf);
                self.root = Some(id);
                self.height = 1;
                self.entries = 1;
                return Ok(true);
            }
            return Ok(false);
        };
        let change = self.modify(root, self.height - 1, m, true)?;
        let Change::Replace { pieces, delta } = change else {
            return Ok(false);
        };
        self.entries = self
            .entries
            .checked_add_signed(delta)
            .ok_or_else(|| Error::Integrity {
                reason: "entry count went negative".into(),
            })?;
        match pieces.len() {
            0 => {
                self.root = None;
                self.height = 0;
            }
            1 => self.root = Some(pieces[0].id),
            _ => {
                let node = InnerNode {
                    seps: pieces
                        .iter()
                        .map(|p| p.sep.clone().unwrap_or_default())
                        .collect(),
                    children: pieces.iter().map(|p| p.id).collect(),
                    counts: pieces.iter().map(|p| p.count).collect(),
                };
                let id = self.alloc_page();
                let mut buf = vec![0u8; self.ps];
                node.encode(id, self.seq, &mut buf);
                self.pages.insert(id, buf);
                self.root = Some(id);
                self.height += 1;
            }
        }
        self.collapse_root()?;
        Ok(true)
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

    fn modify(
        &mut self,
        id: PageId,
        level: u32,
        m: Mutation<'_>,
        rightmost: bool,
    ) -> Result<Change> {
        if level == 0 {
            return self.modify_leaf(id, m, rightmost);
        }
        let l = self.load(id, level)?;
        let (idx, child_id, n) = {
            let v = InnerView::new(self.bytes(&l));
            let i = v.search(m.key());
            (i, v.child(i), v.len())
        };
        let Change::Replace { pieces, delta } =
            self.modify(child_id, level - 1, m, rightmost && idx + 1 == n)?
        else {
            return Ok(Change::None);
        };
        let underfull = |p: &Piece| p.bytes < self.ps / 4;
        if pieces.len() == 1 && pieces[0].sep.is_none() && !underfull(&pieces[0]) {
            let nid = self.make_private(&l);
            let buf = self.pages.get_mut(&nid).ok_or_else(|| Error::Integrity {
                reason: "private page vanished".into(),
            })?;
            InnerView::patch_child(buf, idx, pieces[0].id, pieces[0].count);
            let total = InnerView::new(buf).total();
            return Ok(Change::Replace {
                pieces: vec![Piece {
                    sep: None,
                    id: nid,
                    count: total,
                    bytes: self.ps,
                }],
                delta,
            });
        }
        let mut node = InnerNode::decode(&InnerView::new(self.bytes(&l)));
        let merge_candidate = pieces.len() == 1 && underfull(&pieces[0]);
        let old_sep = std::mem::take(&mut node.seps[idx]);
        node.seps.remove(idx);
        node.children.remove(idx);
        node.counts.remove(idx);
        for (k, p) in pieces.into_iter().enumerate() {
            let sep = if k == 0 {
                old_sep.clone()
            } else {
                p.sep.unwrap_or_default()
            };
            node.seps.insert(idx + k, sep);
            node.children.insert(idx + k, p.id);
            node.counts.insert(idx + k, p.count);
        }
        if let Some(first) = node.seps.first_mut() {
            first.clear();
        }
        if merge_candidate && node.len() > 1 {
            self.try_merge(&mut node, idx, level - 1)?;
        }
        if node.is_empty() {
            self.retire(&l);
            return Ok(Change::Replace {
                pieces: Vec::new(),
                delta,
            });
        }
        let pieces = self.write_inner(&l, node, rightmost)?;
        Ok(Change::Replace { pieces, delta })
    }

    fn modify_leaf(&mut self, id: PageId, m: Mutation<'_>, rightmost: bool) -> Result<Change> {
        let l = self.load(id, 0)?;
        let (found, n, same_len_inline) = {
            let view = LeafView::new(self.bytes(&l));
            let found = view.search(m.key());
            let same = match (found, m) {
                (Ok(i), Mutation::Put(k, v)) => {
                    matches!(view.value(i), ValueCell::Inline(old) if old.len() == v.len())
                        && self.inline_ok(k, v)
                }
                _ => false,
            };
            (found, view.len(), same)
        };
        if let (true, Ok(i), Mutation::Put(_, v)) = (same_len_inline, found, m) {
            let nid = self.make_private(&l);
            if let Some(buf) = self.pages.get_mut(&nid) {
                LeafView::overwrite_inline_value(buf, i, v);
            }
            return Ok(Change::Replace {
                pieces: vec![Piece {
                    sep: None,
                    id: nid,
                    count: n as u64,
                    bytes: self.ps,
                }],
                delta: 0,
            });
        }
        let mut node = LeafNode::decode(&LeafView::new(self.bytes(&l)));
        let (delta, append) = match (m, found) {
            (Mutation::Delete(_), Err(_)) => return Ok(Change::None),
            (Mutation::Delete(_), Ok(i)) => {
                let old = node.entries.remove(i);
                self.free_value(&old.value);
                (-1, false)
            }
            (Mutation::Put(k, v), Ok(i)) => {
                let old = std::mem::replace(&mut node.entries[i].value, Value::Inline(Vec::new()));
                self.free_value(&old);
                node.entries[i].value = self.store_value(k, v);
                (0, false)
            }
            (Mutation::Put(k, v), Err(i)) => {
                let value = self.store_value(k, v);
                node.entries.insert(
                    i,
                    LeafEntry {
                        key: k.to_vec(),
                        value,
                    },
                );
                (1, rightmost && i + 1 == node.entries.len())
            }
        };
        if node.entries.is_empty() {
            self.retire(&l);
            return Ok(Change::Replace {
                pieces: Vec::new(),
                delta,
            });
        }
        let pieces = self.write_leaf(&l, node.entries, append);
        Ok(Change::Replace { pieces, delta })
    }

    /// Encodes leaf entries into one or more private pages.
    fn write_leaf(&mut self, l: &Loaded, entries: Vec<LeafEntry>, append: bool) -> Vec<Piece> {
        let cuts = leaf_cut_points(&entries, self.ps, append);
        let mut bounds = vec![0];
        bounds.extend(&cuts);
        bounds.push(entries.len());
        let mut pieces = Vec::with_capacity(bounds.len() - 1);
        for w in bounds.windows(2) {
            let group = &entries[w[0]..w[1]];
            let id = if w[0] == 0 {
                self.target(l)
            } else {
                self.alloc_page()
            };
            let mut buf = vec![0u8; self.ps];
            LeafNode::encode(group, id, self.seq, &mut buf);
            let sep = (w[0] > 0).then(|| shortest_separator(&entries[w[0] - 1].key, &group[0].key));
            pieces.push(Piece {
                sep,
                id,
                count: group.len() as u64,
                bytes: LeafNode::encoded_len(group),
            });
            self.pages.insert(id, buf);
        }
        pieces
    }

    /// Encodes an inner node into one or more private pages.
    fn write_inner(&mut self, l: &Loaded, node: InnerNode, append: bool) -> Result<Vec<Piece>> {
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
            let id = if w[0] == 0 {
                self.target(l)
            } else {
                self.alloc_page()
            };
            let mut buf = vec![0u8; self.ps];
            part.encode(id, self.seq, &mut buf);
            pieces.push(Piece {
                sep,
                id,
                count: part.total(),
                bytes: part.encoded_len(),
            });
            self.pages.insert(id, buf);
        }
        Ok(pieces)
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
            let mut entries = LeafNode::decode(&LeafView::new(self.bytes(&la))).entries;
            entries.extend(LeafNode::decode(&LeafView::new(self.bytes(&lb))).entries);
            if LeafNode::encoded_len(&entries) > self.ps {
                return Ok(());
            }
            let id = self.target(&la);
            let mut buf = vec![0u8; self.ps];
            LeafNode::encode(&entries, id, self.seq, &mut buf);
            self.pages.insert(id, buf);
            id
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
            let mut buf = vec![0u8; self.ps];
            left.encode(id, self.seq, &mut buf);
            self.pages.insert(id, buf);
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

    /// Publishes the transaction's pages to the pool (dirty), writes its overflow values,
    /// and schedules the pages it replaced to be freed. Returns the new root.
    pub fn commit(mut self) -> Result<Committed> {
        self.pool.ensure_len(self.alloc.page_count())?;
        for (first, buf) in std::mem::take(&mut self.overflow) {
            self.pool.write_run(first, &buf)?;
        }
        let mut root_page = None;
        for (id, buf) in std::mem::take(&mut self.pages) {
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
        } in std::mem::take(&mut self.frees)
        {
            self.alloc.defer(first, len, created, self.seq);
        }
        self.allocated.clear();
        self.runs.clear();
        Ok(Committed {
            root,
            height: self.height,
            entries: self.entries,
        })
    }
}

impl Drop for WriteTxn<'_> {
    /// An uncommitted transaction returns every page it allocated.
    fn drop(&mut self) {
        for id in self.allocated.drain() {
            self.alloc.release(id, 1);
        }
        for (first, n) in self.runs.drain() {
            self.alloc.release(first, n);
        }
    }
}
