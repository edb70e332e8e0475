//! Applying a batch of mutations in one descent: the batch is sorted by key (one mutation
//! per key, the last the caller gave), then each inner page splits its sorted run among
//! its children by its separators and is rebuilt once from all their changes, and each
//! leaf is decoded once, merged with its run, and encoded once. A batch of contiguous
//! keys, as path keys make, so decodes, sizes, cuts and encodes its one or two leaves
//! once instead of once per key. A single mutation is the batch of one.

use super::{Change, Mutation, Piece, WriteTxn};
use crate::error::{Error, Result};
use crate::page::{InnerNode, InnerView, LeafEntry, LeafNode, LeafView, PageId, ValueCell};

/// `batch` in ascending key order with one mutation per key: the last one given for it.
/// Applying that last one alone leaves the key as applying all of them in order would (a
/// put leaves its value, a delete leaves the key absent), whatever came before it.
fn sorted_last_wins<'m>(batch: &[Mutation<'m>]) -> Vec<Mutation<'m>> {
    let mut sorted = batch.to_vec();
    // Stable: among equal keys the caller's order stays, so the last of a run is the last
    // the caller gave.
    sorted.sort_by(|a, b| a.key().cmp(b.key()));
    let mut out: Vec<Mutation<'m>> = Vec::with_capacity(sorted.len());
    for m in sorted {
        match out.last_mut() {
            Some(last) if last.key() == m.key() => *last = m,
            _ => out.push(m),
        }
    }
    out
}

/// Splits sorted `mutations` into runs by the child of `view` that holds their keys:
/// (child index, child page, end of the run in `mutations`), ascending.
fn runs_by_child(view: &InnerView<'_>, mutations: &[Mutation<'_>]) -> Vec<(usize, PageId, usize)> {
    let n = view.len();
    let mut runs = Vec::new();
    let mut start = 0;
    while start < mutations.len() {
        let idx = view.search(mutations[start].key());
        let mut end = start + 1;
        if idx + 1 < n {
            // The run ends at the first key at or above the next child's separator.
            while end < mutations.len()
                && view.cmp_sep(idx + 1, mutations[end].key()) == std::cmp::Ordering::Greater
            {
                end += 1;
            }
        } else {
            end = mutations.len();
        }
        runs.push((idx, view.child(idx), end));
        start = end;
    }
    runs
}

impl WriteTxn<'_> {
    /// Applies `batch` atomically within this transaction, leaving the tree as applying
    /// its mutations one at a time in order would, and logs them in that order. Returns
    /// false when nothing changed (an empty batch, or only deletes of missing keys).
    pub fn apply_all(&mut self, batch: &[Mutation<'_>]) -> Result<bool> {
        self.log_mutations(batch);
        let sorted = sorted_last_wins(batch);
        self.apply_sorted(&sorted)
    }

    /// Applies `mutations`, ascending and one per key, in one descent per changed page.
    pub(super) fn apply_sorted(&mut self, mutations: &[Mutation<'_>]) -> Result<bool> {
        if mutations.is_empty() {
            return Ok(false);
        }
        let change = match self.root {
            Some(root) => self.modify(root, self.height - 1, mutations, true)?,
            None => self.plant(mutations),
        };
        let Change::Replace { pieces, delta } = change else {
            return Ok(false);
        };
        self.finish_root_change(pieces, delta)?;
        Ok(true)
    }

    /// The first leaves of an empty tree: the puts of `mutations`.
    fn plant(&mut self, mutations: &[Mutation<'_>]) -> Change {
        let entries: Vec<LeafEntry> = mutations
            .iter()
            .filter_map(|m| match *m {
                Mutation::Put(k, v) => Some(LeafEntry {
                    key: k.to_vec(),
                    value: self.store_value(k, v),
                }),
                Mutation::Delete(_) => None,
            })
            .collect();
        if entries.is_empty() {
            return Change::None;
        }
        let first = self.alloc_page();
        self.height = 1;
        Change::Replace {
            pieces: self.encode_leaf(first, &entries, true),
            delta: entries.len() as i64,
        }
    }

    /// Applies sorted `mutations`, all within the key range of page `id` at `level`.
    /// `rightmost`: the page is the last of its level (appends there fill pages).
    fn modify(
        &mut self,
        id: PageId,
        level: u32,
        mutations: &[Mutation<'_>],
        rightmost: bool,
    ) -> Result<Change> {
        if level == 0 {
            return self.modify_leaf(id, mutations, rightmost);
        }
        let l = self.load(id, level)?;
        let (runs, n) = {
            let v = InnerView::new(self.bytes(&l));
            (runs_by_child(&v, mutations), v.len())
        };
        let mut changes: Vec<(usize, Vec<Piece>)> = Vec::new();
        let mut delta = 0i64;
        let mut start = 0;
        for (idx, child, end) in runs {
            let change = self.modify(
                child,
                level - 1,
                &mutations[start..end],
                rightmost && idx + 1 == n,
            )?;
            start = end;
            if let Change::Replace { pieces, delta: d } = change {
                delta += d;
                changes.push((idx, pieces));
            }
        }
        if changes.is_empty() {
            return Ok(Change::None);
        }
        let quarter = self.ps / 4;
        let underfull = |p: &Piece| p.bytes < quarter;
        if changes
            .iter()
            .all(|(_, p)| p.len() == 1 && p[0].sep.is_none() && !underfull(&p[0]))
        {
            // Each changed child is still one page of a fair size: point at the new pages.
            let nid = self.make_private(&l);
            let buf = self.pages.get_mut(&nid).ok_or_else(|| Error::Integrity {
                reason: "private page vanished".into(),
            })?;
            for (idx, pieces) in &changes {
                InnerView::patch_child(buf, *idx, pieces[0].id, pieces[0].count);
            }
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
        let old = InnerNode::decode(&InnerView::new(self.bytes(&l)));
        let extra: usize = changes.iter().map(|(_, p)| p.len()).sum();
        let mut node = InnerNode {
            seps: Vec::with_capacity(old.len() + extra),
            children: Vec::with_capacity(old.len() + extra),
            counts: Vec::with_capacity(old.len() + extra),
        };
        // Children whose new pages are underfull: merged with a sibling below if they fit.
        let mut candidates = Vec::new();
        let mut changes = changes.into_iter().peekable();
        let children = old.children.into_iter().zip(old.counts);
        for (i, (sep, (child, count))) in old.seps.into_iter().zip(children).enumerate() {
            let Some((_, pieces)) = changes.next_if(|(idx, _)| *idx == i) else {
                node.seps.push(sep);
                node.children.push(child);
                node.counts.push(count);
                continue;
            };
            // The first piece keeps the child's separator; none at all drops it, and the
            // child's range joins its left sibling's.
            let mut old_sep = Some(sep);
            for p in pieces {
                if underfull(&p) {
                    candidates.push(node.len());
                }
                let sep = match old_sep.take() {
                    Some(sep) => sep,
                    None => p.sep.unwrap_or_default(),
                };
                node.seps.push(sep);
                node.children.push(p.id);
                node.counts.push(p.count);
            }
        }
        if let Some(first) = node.seps.first_mut() {
            first.clear();
        }
        // From the right: a merge removes the child after the one merged into, so the
        // candidates to its left keep their places.
        for c in candidates.into_iter().rev() {
            if node.len() > 1 && c < node.len() {
                self.try_merge(&mut node, c, level - 1)?;
            }
        }
        if node.is_empty() {
            self.retire(&l);
            return Ok(Change::Replace {
                pieces: Vec::new(),
                delta,
            });
        }
        let pieces = self.write_inner(&l, node, rightmost);
        Ok(Change::Replace { pieces, delta })
    }

    /// Applies sorted `mutations` to leaf `id`: its entries merged with them, encoded
    /// once into as many pages as they need.
    fn modify_leaf(
        &mut self,
        id: PageId,
        mutations: &[Mutation<'_>],
        rightmost: bool,
    ) -> Result<Change> {
        let l = self.load(id, 0)?;
        let (found, n, in_place) = {
            let view = LeafView::new(self.bytes(&l));
            let mut in_place = true;
            let found: Vec<std::result::Result<usize, usize>> = mutations
                .iter()
                .map(|m| {
                    let at = view.search(m.key());
                    in_place &= match (at, *m) {
                        (Ok(i), Mutation::Put(k, v)) => {
                            matches!(view.value(i), ValueCell::Inline(old) if old.len() == v.len())
                                && self.inline_ok(k, v)
                        }
                        _ => false,
                    };
                    at
                })
                .collect();
            (found, view.len(), in_place)
        };
        if in_place {
            // Only same-length inline overwrites: the page keeps its layout.
            let nid = self.make_private(&l);
            if let Some(buf) = self.pages.get_mut(&nid) {
                for (m, at) in mutations.iter().zip(&found) {
                    if let (Mutation::Put(_, v), Ok(i)) = (*m, *at) {
                        LeafView::overwrite_inline_value(buf, i, v);
                    }
                }
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
        let changes_nothing = mutations
            .iter()
            .zip(&found)
            .all(|(m, at)| matches!((m, at), (Mutation::Delete(_), Err(_))));
        if changes_nothing {
            return Ok(Change::None);
        }
        // Appending past the last entry of the last leaf: fill pages left to right.
        let append = rightmost
            && matches!(
                (mutations.last(), found.last()),
                (Some(Mutation::Put(..)), Some(Err(i))) if *i == n
            );
        let old = LeafNode::decode(&LeafView::new(self.bytes(&l))).entries;
        let mut entries = Vec::with_capacity(old.len() + mutations.len());
        let mut delta = 0i64;
        let mut rest = old.into_iter();
        let mut next = 0;
        for (m, at) in mutations.iter().zip(found) {
            let (before, present) = match at {
                Ok(i) => (i, true),
                Err(i) => (i, false),
            };
            entries.extend(rest.by_ref().take(before - next));
            next = before;
            let old_entry = if present {
                next += 1;
                rest.next()
            } else {
                None
            };
            match (*m, old_entry) {
                (Mutation::Delete(_), None) => {}
                (Mutation::Delete(_), Some(gone)) => {
                    self.free_value(&gone.value);
                    delta -= 1;
                }
                (Mutation::Put(k, v), Some(mut kept)) => {
                    self.free_value(&kept.value);
                    kept.value = self.store_value(k, v);
                    entries.push(kept);
                }
                (Mutation::Put(k, v), None) => {
                    entries.push(LeafEntry {
                        key: k.to_vec(),
                        value: self.store_value(k, v),
                    });
                    delta += 1;
                }
            }
        }
        entries.extend(rest);
        if entries.is_empty() {
            self.retire(&l);
            return Ok(Change::Replace {
                pieces: Vec::new(),
                delta,
            });
        }
        let pieces = self.write_leaf(&l, &entries, append);
        Ok(Change::Replace { pieces, delta })
    }
}
