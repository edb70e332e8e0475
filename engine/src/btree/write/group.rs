//! Applying a batch of mutations in one descent: the batch is sorted by key (one mutation
//! per key, the last the caller gave), then each inner page splits its sorted run among
//! its children by its separators and is rebuilt once from all their changes, and each
//! leaf is decoded once, merged with its run, and encoded once. So a batch of contiguous
//! keys, as path keys make, decodes, sizes, cuts and encodes its one or two leaves once
//! instead of once per key. A single mutation is the batch of one.

use super::scratch::Run;
use super::{Change, Loaded, Mutation, Piece, WriteTxn};
use crate::error::{Error, Result};
use crate::page::{
    lcp, InnerNode, InnerView, KeySpans, LeafEntry, LeafNode, LeafView, PageId, ValueCell,
};

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
/// (child index, child page, end of the run in `mutations`), ascending, into `runs`.
fn runs_by_child(view: &InnerView<'_>, mutations: &[Mutation<'_>], runs: &mut Vec<Run>) {
    let n = view.len();
    runs.clear();
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
}

impl WriteTxn<'_> {
    /// Applies `batch`, leaving the tree as applying its mutations one at a time in order
    /// would, and logs them in that order. On an error the transaction must be dropped,
    /// as after a failed `apply`. Returns
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
        for m in mutations {
            if let Mutation::Put(k, _) = m {
                self.put_lengths.insert(k.len());
                if let Some(f) = self.key_filter {
                    f.insert(k);
                }
            }
        }
        let change = match self.root {
            Some(root) => self.modify(root, self.height - 1, mutations, true)?,
            None => self.plant(mutations),
        };
        match change {
            Change::None => Ok(false),
            Change::Replace { pieces, delta } => {
                self.finish_root_change(pieces, delta)?;
                Ok(true)
            }
            Change::Patch { id, delta, .. } => {
                self.finish_root_patch(id, delta)?;
                Ok(true)
            }
        }
    }

    /// The first leaves of an empty tree: the puts of `mutations`.
    fn plant(&mut self, mutations: &[Mutation<'_>]) -> Change {
        let entries: Vec<LeafEntry<'_>> = mutations
            .iter()
            .filter_map(|m| match *m {
                Mutation::Put(k, v) => Some(LeafEntry {
                    key: k.into(),
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
        let mut lcps = Vec::new();
        LeafNode::lcps_of(&entries, &mut lcps);
        Change::Replace {
            pieces: self.encode_leaf(first, &entries, &lcps, true),
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
        // This level's buffers, from the writer's scratch (the recursion below uses the
        // levels under it), given back on the way out.
        let mut level_bufs = self.scratch.take_level(level);
        let (runs, patches) = (&mut level_bufs.runs, &mut level_bufs.patches);
        let n = {
            let v = InnerView::new(self.bytes(&l));
            runs_by_child(&v, mutations, runs);
            v.len()
        };
        let quarter = self.ps / 4;
        let underfull = |p: &Piece| p.bytes < quarter;
        // Children that stay one page of a fair size are patched into a copy of this page;
        // any other change rebuilds it.
        let mut changes: Vec<(usize, Vec<Piece>)> = Vec::new();
        let mut delta = 0i64;
        let mut start = 0;
        for &(idx, child, end) in runs.iter() {
            let change = self.modify(
                child,
                level - 1,
                &mutations[start..end],
                rightmost && idx + 1 == n,
            )?;
            start = end;
            match change {
                Change::None => {}
                Change::Patch {
                    id,
                    count,
                    delta: d,
                } => {
                    delta += d;
                    patches.push((idx, id, count));
                }
                Change::Replace { pieces, delta: d } => {
                    delta += d;
                    match pieces.as_slice() {
                        [p] if p.sep.is_none() && !underfull(p) => {
                            patches.push((idx, p.id, p.count))
                        }
                        _ => changes.push((idx, pieces)),
                    }
                }
            }
        }
        if changes.is_empty() && patches.is_empty() {
            self.scratch.give_back_level(level, level_bufs);
            return Ok(Change::None);
        }
        if changes.is_empty() {
            // Each changed child is still one page of a fair size: point at the new pages.
            let nid = self.make_private(&l);
            let buf = self
                .scratch
                .books
                .pages
                .get_mut(&nid)
                .ok_or_else(|| Error::Integrity {
                    reason: "private page vanished".into(),
                })?;
            for &(idx, child, count) in level_bufs.patches.iter() {
                InnerView::patch_child(buf, idx, child, count);
            }
            let total = InnerView::new(buf).total();
            self.scratch.give_back_level(level, level_bufs);
            return Ok(Change::Patch {
                id: nid,
                count: total,
                delta,
            });
        }
        // The rebuild takes every change in child order, patches as one-page pieces.
        for &(idx, id, count) in level_bufs.patches.iter() {
            let one = Piece {
                sep: None,
                id,
                count,
                bytes: self.ps,
            };
            changes.push((idx, vec![one]));
        }
        changes.sort_unstable_by_key(|&(idx, _)| idx);
        self.scratch.give_back_level(level, level_bufs);
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
        if self.checking_swap {
            // A compare-and-swap (one mutation): its condition, before anything changes.
            let verdict = {
                let view = LeafView::new(self.bytes(&l));
                let key = mutations.first().map_or(&[][..], |m| m.key());
                let current = view.search(key).ok().map(|i| view.value(i));
                self.swap_verdict(current)?
            };
            if let Some(current) = verdict {
                self.swap_failed(current);
                return Ok(Change::None);
            }
        }
        // Where each mutation's key is in the leaf, in a buffer of the writer's scratch.
        let mut found = std::mem::take(&mut self.scratch.found);
        found.clear();
        let (n, in_place) = {
            let view = LeafView::new(self.bytes(&l));
            let mut in_place = true;
            found.extend(mutations.iter().map(|m| {
                let at = view.search(m.key());
                in_place &= match (at, *m) {
                    (Ok(i), Mutation::Put(k, v)) => {
                        matches!(view.value(i), ValueCell::Inline(old) if old.len() == v.len())
                            && self.inline_ok(k, v)
                    }
                    _ => false,
                };
                at
            }));
            (view.len(), in_place)
        };
        if in_place {
            // Only same-length inline overwrites: the page keeps its layout.
            let nid = self.make_private(&l);
            if let Some(buf) = self.scratch.books.pages.get_mut(&nid) {
                for (m, at) in mutations.iter().zip(&found) {
                    if let (Mutation::Put(_, v), Ok(i)) = (*m, *at) {
                        LeafView::overwrite_inline_value(buf, i, v);
                    }
                }
            }
            self.scratch.found = found;
            return Ok(Change::Patch {
                id: nid,
                count: n as u64,
                delta: 0,
            });
        }
        let changes_nothing = mutations
            .iter()
            .zip(&found)
            .all(|(m, at)| matches!((m, at), (Mutation::Delete(_), Err(_))));
        if changes_nothing {
            self.scratch.found = found;
            return Ok(Change::None);
        }
        // Appending past the last entry of the last leaf: fill pages left to right.
        let append = rightmost
            && matches!(
                (mutations.last(), found.last()),
                (Some(Mutation::Put(..)), Some(Err(i))) if *i == n
            );
        // The leaf is decoded into buffers taken from the transaction, so that its entries
        // borrow them (and the mutations) while `self` changes.
        let mut image = std::mem::take(&mut self.scratch.leaf_image);
        image.clear();
        image.extend_from_slice(self.bytes(&l));
        let mut keys = std::mem::take(&mut self.scratch.leaf_keys);
        let mut spans = std::mem::take(&mut self.scratch.leaf_spans);
        let mut lcps = std::mem::take(&mut self.scratch.leaf_lcps);
        let change = self.merge_leaf(
            &l,
            &image,
            (&mut keys, &mut spans, &mut lcps),
            mutations,
            &found,
            append,
        );
        self.scratch.leaf_image = image;
        self.scratch.leaf_keys = keys;
        self.scratch.leaf_spans = spans;
        self.scratch.leaf_lcps = lcps;
        self.scratch.found = found;
        Ok(change)
    }

    /// The rest of [`WriteTxn::modify_leaf`]: `image` (a copy of leaf `l`) merged with
    /// `mutations` (found at `found` in it), encoded once into as many pages as needed.
    #[allow(clippy::too_many_arguments)]
    fn merge_leaf(
        &mut self,
        l: &Loaded,
        image: &[u8],
        (keys, spans, old_lcps): (&mut Vec<u8>, &mut KeySpans, &mut Vec<u32>),
        mutations: &[Mutation<'_>],
        found: &[std::result::Result<usize, usize>],
        append: bool,
    ) -> Change {
        let old = LeafNode::decode_borrowed(&LeafView::new(image), keys, spans, old_lcps);
        let mut merged = MergedLeaf::new(old.len() + mutations.len(), old_lcps);
        merged.lcps = std::mem::take(&mut self.scratch.merged_lcps);
        merged.lcps.clear();
        let mut delta = 0i64;
        let mut rest = old.into_iter().enumerate();
        let mut next = 0;
        for (m, at) in mutations.iter().zip(found.iter().copied()) {
            let (before, present) = match at {
                Ok(i) => (i, true),
                Err(i) => (i, false),
            };
            for (j, e) in rest.by_ref().take(before - next) {
                merged.push_old(j, e);
            }
            next = before;
            let old_entry = if present {
                next += 1;
                rest.next()
            } else {
                None
            };
            match (*m, old_entry) {
                (Mutation::Delete(_), None) => {}
                (Mutation::Delete(_), Some((_, gone))) => {
                    self.free_value(&gone.value);
                    delta -= 1;
                }
                (Mutation::Put(k, v), Some((j, mut kept))) => {
                    self.free_value(&kept.value);
                    kept.value = self.store_value(k, v);
                    merged.push_old(j, kept);
                }
                (Mutation::Put(k, v), None) => {
                    let value = self.store_value(k, v);
                    merged.push_new(LeafEntry {
                        key: k.into(),
                        value,
                    });
                    delta += 1;
                }
            }
        }
        for (j, e) in rest {
            merged.push_old(j, e);
        }
        let MergedLeaf { entries, lcps, .. } = merged;
        let change = if entries.is_empty() {
            self.retire(l);
            Change::Replace {
                pieces: Vec::new(),
                delta,
            }
        } else {
            let pieces = self.write_leaf(l, &entries, &lcps, append);
            Change::Replace { pieces, delta }
        };
        self.scratch.merged_lcps = lcps;
        change
    }
}

/// A changed leaf's entries as they are merged, with each one's common prefix with the
/// entry before it: known from the old page while two entries were neighbours there (or
/// only deleted entries lay between them: for ascending keys the common prefix of two
/// keys is the least of those between them), compared only beside a new key.
struct MergedLeaf<'e, 'o> {
    entries: Vec<LeafEntry<'e>>,
    lcps: Vec<u32>,
    /// The old page's common prefixes, by old entry.
    old_lcps: &'o [u32],
    /// The old entry the last pushed entry was, if it was one.
    last_old: Option<usize>,
}

impl<'e, 'o> MergedLeaf<'e, 'o> {
    fn new(capacity: usize, old_lcps: &'o [u32]) -> Self {
        MergedLeaf {
            entries: Vec::with_capacity(capacity),
            lcps: Vec::new(),
            old_lcps,
            last_old: None,
        }
    }

    /// Appends old entry `j`.
    fn push_old(&mut self, j: usize, entry: LeafEntry<'e>) {
        let lcp_prev = match (self.entries.last(), self.last_old) {
            (None, _) => 0,
            (Some(_), Some(i)) if i < j => {
                self.old_lcps[i + 1..=j].iter().copied().min().unwrap_or(0)
            }
            (Some(previous), _) => lcp(&previous.key, &entry.key) as u32,
        };
        self.lcps.push(lcp_prev);
        self.entries.push(entry);
        self.last_old = Some(j);
    }

    /// Appends a new entry.
    fn push_new(&mut self, entry: LeafEntry<'e>) {
        let lcp_prev = match self.entries.last() {
            None => 0,
            Some(previous) => lcp(&previous.key, &entry.key) as u32,
        };
        self.lcps.push(lcp_prev);
        self.entries.push(entry);
        self.last_old = None;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::RngExt as _;

    use super::super::tests::{entries, Fixture};
    use super::*;
    use crate::btree::{CheckReport, Version};
    use crate::test_rng::{key, seeded, Rng};

    /// An owned mutation: (key, Some(value) for a put, None for a delete).
    type Op = (Vec<u8>, Option<Vec<u8>>);

    fn borrowed(ops: &[Op]) -> Vec<Mutation<'_>> {
        ops.iter()
            .map(|(k, v)| match v {
                Some(v) => Mutation::Put(k, v),
                None => Mutation::Delete(k),
            })
            .collect()
    }

    /// Applies `ops` to `model` one at a time, in order.
    fn apply_in_order(model: &mut BTreeMap<Vec<u8>, Vec<u8>>, ops: &[Op]) {
        for (k, v) in ops {
            match v {
                Some(v) => model.insert(k.clone(), v.clone()),
                None => model.remove(k),
            };
        }
    }

    /// Every entry of `v`, by a read of each model key and the entry count.
    fn assert_holds(fx: &Fixture, v: &Version, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
        assert_eq!(v.entries, model.len() as u64);
        for (k, val) in model {
            assert_eq!(fx.get(v, k).as_ref(), Some(val), "key {k:?}");
        }
        let report = fx.check();
        assert_eq!(report.entries, model.len() as u64);
    }

    /// A random value: mostly small, sometimes large enough for an overflow run.
    fn value(rng: &mut Rng, byte: u8) -> Vec<u8> {
        match rng.random_range(0..10) {
            0 => vec![byte; rng.random_range(1500..9000)],
            _ => vec![byte; rng.random_range(0..250)],
        }
    }

    #[test]
    fn sorting_keeps_the_last_mutation_of_each_key_in_key_order() {
        let batch = [
            Mutation::Put(b"b", b"1"),
            Mutation::Put(b"a", b"1"),
            Mutation::Delete(b"b"),
            Mutation::Put(b"c", b"1"),
            Mutation::Put(b"b", b"2"),
            Mutation::Delete(b"c"),
        ];
        let sorted: Vec<(&[u8], Option<&[u8]>)> = sorted_last_wins(&batch)
            .into_iter()
            .map(|m| match m {
                Mutation::Put(k, v) => (k, Some(v)),
                Mutation::Delete(k) => (k, None),
            })
            .collect();
        let want: Vec<(&[u8], Option<&[u8]>)> =
            vec![(b"a", Some(b"1")), (b"b", Some(b"2")), (b"c", None)];
        assert_eq!(sorted, want);
        assert!(sorted_last_wins(&[]).is_empty());
    }

    #[test]
    fn repeated_keys_in_a_batch_end_as_in_order_application() {
        let mut fx = Fixture::new(100_000);
        let mut model = BTreeMap::new();
        let mut rng = seeded(14);
        let base = entries(&mut rng, 600);
        fx.put_all(&base);
        model.extend(base.clone());
        let present: Vec<Vec<u8>> = base.keys().step_by(7).cloned().collect();
        // Put, delete, put of one key (new and present), put then delete, delete then put,
        // and the same-length overwrite twice (the in-place path).
        let mut ops: Vec<Op> = vec![
            (b"new/key".to_vec(), Some(b"first".to_vec())),
            (b"new/key".to_vec(), None),
            (b"new/key".to_vec(), Some(b"second".to_vec())),
            (present[0].clone(), Some(vec![1; 5000])),
            (present[0].clone(), None),
            (present[0].clone(), Some(b"back".to_vec())),
            (present[1].clone(), Some(b"gone soon".to_vec())),
            (present[1].clone(), None),
            (b"never/stays".to_vec(), Some(vec![2; 3000])),
            (b"never/stays".to_vec(), None),
            (present[2].clone(), None),
            (present[2].clone(), Some(vec![3; 4000])),
        ];
        // And a random mix over a few keys, so that most repeat many times.
        let pool: Vec<Vec<u8>> = present[3..12]
            .iter()
            .cloned()
            .chain((0..6).map(|i| format!("pool/{i}").into_bytes()))
            .collect();
        for _ in 0..200 {
            let k = pool[rng.random_range(0..pool.len())].clone();
            let v = rng.random_range(0..3) > 0;
            ops.push((k.clone(), v.then(|| value(&mut rng, k[0]))));
        }
        let (v, changed) = fx.commit(|txn| {
            let txn_ops = borrowed(&ops);
            txn.apply_all(&txn_ops).expect("batch")
        });
        assert!(changed);
        apply_in_order(&mut model, &ops);
        assert_eq!(fx.get(&v, b"new/key"), Some(b"second".to_vec()));
        assert_eq!(fx.get(&v, &present[0]), Some(b"back".to_vec()));
        assert_eq!(fx.get(&v, &present[1]), None);
        assert_eq!(fx.get(&v, b"never/stays"), None);
        assert_holds(&fx, &v, &model);

        // The same batch one mutation at a time gives the same contents.
        let mut one_by_one = Fixture::new(100_000);
        one_by_one.put_all(&base);
        let (w, ()) = one_by_one.commit(|txn| {
            for m in borrowed(&ops) {
                txn.apply(m).expect("apply");
            }
        });
        assert_holds(&one_by_one, &w, &model);
    }

    #[test]
    fn the_log_records_a_batch_in_the_callers_order() {
        let mut fx = Fixture::new(1000);
        let mut txn =
            WriteTxn::new(&fx.pool, &mut fx.alloc, &mut fx.scratch, 1, None, 0, 0).with_log();
        let batch = [
            Mutation::Put(b"z", b"1"),
            Mutation::Delete(b"a"),
            Mutation::Put(b"m", b"2"),
            Mutation::Put(b"z", b"3"),
        ];
        assert!(txn.apply_all(&batch).expect("batch"));
        let mut want = Vec::new();
        crate::wal::encode_ops(&mut want, b"", b"z", Some(b"1"));
        crate::wal::encode_ops(&mut want, b"z", b"a", None);
        crate::wal::encode_ops(&mut want, b"a", b"m", Some(b"2"));
        crate::wal::encode_ops(&mut want, b"m", b"z", Some(b"3"));
        assert_eq!(txn.log_payload(), Some((4, want.as_slice())));
        assert_eq!(txn.get(b"z").expect("get"), Some(b"3".to_vec()));
        assert_eq!(txn.entries, 2);
    }

    #[test]
    fn a_batch_across_many_leaves_splits_and_merges_them_and_agrees_with_a_model() {
        let mut rng = seeded(1414);
        let mut fx = Fixture::new(100_000);
        let mut model = BTreeMap::new();
        // Into the empty tree: one batch plants many leaves and the levels above them.
        let first: Vec<Op> = entries(&mut rng, 2500)
            .into_iter()
            .map(|(k, v)| (k, Some(v)))
            .rev()
            .collect();
        let (v, changed) = fx.commit(|txn| txn.apply_all(&borrowed(&first)).expect("plant"));
        assert!(changed);
        apply_in_order(&mut model, &first);
        assert!(v.height >= 2, "height {}", v.height);
        assert_holds(&fx, &v, &model);
        // Batches of random puts (new keys, overwrites of other lengths, overflow values)
        // and deletes all over the tree: leaves split into several pieces at once.
        for round in 0..6 {
            let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
            let ops: Vec<Op> = (0..800)
                .map(|_| match rng.random_range(0..10) {
                    0..=2 => (keys[rng.random_range(0..keys.len())].clone(), None),
                    3..=4 => {
                        let k = keys[rng.random_range(0..keys.len())].clone();
                        let v = value(&mut rng, k[0]);
                        (k, Some(v))
                    }
                    _ => {
                        let k = key(&mut rng, 24);
                        let v = value(&mut rng, k[0]);
                        (k, Some(v))
                    }
                })
                .collect();
            let before = fx.check();
            let (v, _) = fx.commit(|txn| txn.apply_all(&borrowed(&ops)).expect("batch"));
            apply_in_order(&mut model, &ops);
            assert_holds(&fx, &v, &model);
            assert!(
                fx.check().leaf_pages > before.leaf_pages,
                "round {round}: {before:?}"
            );
        }
        assert!(fx.check().overflow_pages > 0);
        // One batch deletes nine keys in ten, in shuffled order: underfull leaves merge,
        // inner pages too, and the tree gets lower.
        let before = fx.check();
        let before_height = fx.version.height;
        let mut doomed: Vec<Op> = model
            .keys()
            .filter(|_| rng.random_range(0..10) != 0)
            .map(|k| (k.clone(), None))
            .collect();
        for i in (1..doomed.len()).rev() {
            doomed.swap(i, rng.random_range(0..=i));
        }
        let (v, changed) = fx.commit(|txn| txn.apply_all(&borrowed(&doomed)).expect("deletes"));
        assert!(changed);
        apply_in_order(&mut model, &doomed);
        assert_holds(&fx, &v, &model);
        let after = fx.check();
        assert!(
            after.leaf_pages * 3 < before.leaf_pages,
            "{before:?} {after:?}"
        );
        assert!(
            after.inner_pages < before.inner_pages,
            "{before:?} {after:?}"
        );
        assert!(
            v.height < before_height,
            "height {before_height} -> {}",
            v.height
        );
        // Deleting the rest in one batch empties the tree and frees every run.
        let rest: Vec<Op> = model.keys().map(|k| (k.clone(), None)).collect();
        let (v, _) = fx.commit(|txn| txn.apply_all(&borrowed(&rest)).expect("delete all"));
        assert!(v.root.is_none());
        assert_eq!((v.height, v.entries), (0, 0));
        assert_eq!(fx.check(), CheckReport::default());
    }

    #[test]
    fn a_batch_of_a_chain_of_path_keys_fills_its_leaves_once() {
        // Path keys: each the one before plus a 7-byte segment, 40-byte values, batches of
        // fifteen as the trace's requests write them.
        let mut rng = seeded(7);
        let mut fx = Fixture::new(100_000);
        let mut model = BTreeMap::new();
        for _ in 0..60 {
            let mut k = b"kv/llama70b".to_vec();
            let mut ops = Vec::new();
            for _ in 0..rng.random_range(1..40) {
                k.extend(format!("/{:06x}", rng.random_range(0..1u32 << 24)).as_bytes());
                if k.len() > crate::btree::MAX_KEY_LEN {
                    break;
                }
                ops.push((k.clone(), Some(vec![k[k.len() - 1]; 40])));
            }
            for chunk in ops.chunks(15) {
                let (v, _) = fx.commit(|txn| txn.apply_all(&borrowed(chunk)).expect("batch"));
                apply_in_order(&mut model, chunk);
                assert_eq!(v.entries, model.len() as u64);
            }
        }
        let v = fx.version.clone();
        assert_holds(&fx, &v, &model);
    }

    #[test]
    fn an_empty_batch_changes_nothing() {
        let mut rng = seeded(5);
        let mut fx = Fixture::new(1000);
        for tree in ["empty", "full"] {
            if tree == "full" {
                fx.put_all(&entries(&mut rng, 300));
            }
            let before = fx.version.clone();
            let mut txn = WriteTxn::new(
                &fx.pool,
                &mut fx.alloc,
                &mut fx.scratch,
                before.seq + 1,
                before.root.as_ref().map(|p| p.id()),
                before.height,
                before.entries,
            )
            .with_log();
            assert!(!txn.apply_all(&[]).expect("empty batch"), "{tree}");
            assert!(txn.is_empty(), "{tree}");
            assert_eq!(txn.log_payload(), Some((0, &[][..])), "{tree}");
            let root = before.root.as_ref().map(|p| p.id());
            assert_eq!(
                (txn.root, txn.height, txn.entries),
                (root, before.height, before.entries)
            );
        }
    }

    #[test]
    fn a_batch_of_deletes_of_missing_keys_changes_nothing() {
        let mut rng = seeded(6);
        let mut fx = Fixture::new(1000);
        let model = entries(&mut rng, 2000);
        fx.put_all(&model);
        let before = fx.version.clone();
        let (pages, free) = (fx.alloc.page_count(), fx.alloc.free_pages());
        let missing: Vec<Vec<u8>> = (0..500)
            .map(|_| key(&mut rng, 24))
            .filter(|k| !model.contains_key(k))
            .chain([b"".to_vec(), vec![0xFF; 30]])
            .collect();
        let ops: Vec<Op> = missing.iter().map(|k| (k.clone(), None)).collect();
        let (v, (changed, untouched)) = fx.commit(|txn| {
            let changed = txn.apply_all(&borrowed(&ops)).expect("deletes");
            (changed, txn.is_empty())
        });
        assert!(!changed);
        assert!(untouched, "no page was copied");
        assert_eq!(
            v.root.as_ref().map(|p| p.id()),
            before.root.as_ref().map(|p| p.id())
        );
        assert_eq!((v.height, v.entries), (before.height, before.entries));
        assert_eq!(
            (fx.alloc.page_count(), fx.alloc.free_pages()),
            (pages, free)
        );
        assert_holds(&fx, &v, &model);
        // The same into an empty tree.
        let mut empty = Fixture::new(100);
        let (v, changed) = empty.commit(|txn| txn.apply_all(&borrowed(&ops)).expect("deletes"));
        assert!(!changed);
        assert!(v.root.is_none());
    }
}
