//! Building leaf pages: the entries a writer edits, their exact encoded size, and the
//! encoder (plus the decoders back to entries). The layout is in `layout.rs`.
//!
//! Entries borrow where they can: a writer decodes a leaf into entries whose keys lie in
//! one reused buffer and whose values lie in the page image, and a new entry borrows the
//! caller's key and value, so that changing a leaf allocates per page, not per entry.

use std::borrow::Cow;

use super::layout::{
    fragment_len_at, LEAF_CELL_FIXED, LEAF_FIXED, LEAF_RESTART, OVERFLOW_BIT, OVERFLOW_PAYLOAD,
    PLAIN_CELL_FIXED, RESTART_AT, VALUE_WORD_AT,
};
use super::view::{LeafView, ValueCell};
use crate::page::header::{lcp, write_u16, write_u32, write_u64};
use crate::page::slotted::{PREFIX_LEN_AT, SLOT};
use crate::page::{PageHeader, PageId, PageKind};

/// A value in a decoded leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value<'a> {
    /// Stored in the leaf.
    Inline(Cow<'a, [u8]>),
    /// Stored in an overflow run.
    Overflow {
        /// First page of the run.
        first: PageId,
        /// Value length in bytes.
        len: u32,
    },
}

impl<'a> Value<'a> {
    /// Bytes the value takes in its cell.
    #[inline]
    pub fn stored_len(&self) -> usize {
        match self {
            Value::Inline(value) => value.len(),
            Value::Overflow { .. } => OVERFLOW_PAYLOAD,
        }
    }

    /// The value of a cell, borrowing the page's bytes.
    pub fn from_cell(cell: ValueCell<'a>) -> Self {
        match cell {
            ValueCell::Inline(value) => Value::Inline(Cow::Borrowed(value)),
            ValueCell::Overflow { first, len } => Value::Overflow { first, len },
        }
    }

    /// The same value owning its bytes.
    #[cfg(test)]
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Inline(value) => Value::Inline(Cow::Owned(value.into_owned())),
            Value::Overflow { first, len } => Value::Overflow { first, len },
        }
    }
}

/// One key and its value in a decoded leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafEntry<'a> {
    /// The whole key.
    pub key: Cow<'a, [u8]>,
    /// Its value.
    pub value: Value<'a>,
}

impl LeafEntry<'_> {
    /// An entry with an inline value, for tests.
    #[cfg(test)]
    pub fn inline(key: &[u8], value: &[u8]) -> LeafEntry<'static> {
        LeafEntry {
            key: Cow::Owned(key.to_vec()),
            value: Value::Inline(Cow::Owned(value.to_vec())),
        }
    }
}

/// The exact encoded size of a run of ascending entries, grown one entry at a time: the
/// bulk loader and the splitter use it to fill pages.
#[derive(Debug, Clone, Copy, Default)]
pub struct LeafSizer {
    /// Entries so far.
    entries: usize,
    /// Page prefix length: the common prefix of the first and the last key.
    prefix_len: usize,
    /// Front-coded: slots, cell headers, stored values and the fragments of non-restart
    /// entries.
    coded: usize,
    /// Plain: slots, cell headers, stored values and whole keys.
    plain: usize,
    /// Whole lengths of the restart keys (their fragments are these minus the prefix).
    restart_keys: usize,
    /// Restart entries.
    restarts: usize,
}

impl LeafSizer {
    /// The run with one more entry: a `key_len`-byte key sharing `lcp_prev` bytes with
    /// the previous key of the run and `lcp_first` with the first (both ignored for the
    /// first entry), whose value takes `stored` bytes in its cell.
    #[inline]
    pub fn with(self, key_len: usize, lcp_prev: usize, lcp_first: usize, stored: usize) -> Self {
        let mut run = self;
        if run.entries == 0 {
            run.prefix_len = key_len.min(u16::MAX as usize);
        } else {
            run.prefix_len = run.prefix_len.min(lcp_first);
        }
        if run.entries.is_multiple_of(LEAF_RESTART) {
            run.restarts += 1;
            run.restart_keys += key_len;
        } else {
            run.coded += key_len - lcp_prev;
        }
        run.coded += SLOT + LEAF_CELL_FIXED + stored;
        run.plain += SLOT + PLAIN_CELL_FIXED + stored + key_len;
        run.entries += 1;
        run
    }

    /// The restart interval the run is encoded with and the bytes it takes as one page:
    /// front-coded when that saves at least an eighth of the plain size.
    #[inline]
    pub fn choice(&self) -> (usize, usize) {
        let prefix = LEAF_FIXED + self.prefix_len;
        let coded = prefix + self.coded + self.restart_keys - self.restarts * self.prefix_len;
        let plain = prefix + self.plain - self.entries * self.prefix_len;
        if coded * 8 <= plain * 7 {
            (LEAF_RESTART, coded)
        } else {
            (1, plain)
        }
    }

    /// Bytes the run takes as one page.
    #[inline]
    pub fn size(&self) -> usize {
        self.choice().1
    }

    /// The page prefix the run is encoded with.
    #[inline]
    pub fn prefix_len(&self) -> usize {
        self.prefix_len
    }
}

/// A leaf decoded for modification by a writer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeafNode {
    /// Entries in ascending key order.
    pub entries: Vec<LeafEntry<'static>>,
}

/// Where each whole key of a decoded leaf lies in its key buffer.
pub type KeySpans = Vec<std::ops::Range<usize>>;

impl LeafNode {
    /// Decodes a validated leaf page into entries that own their bytes.
    #[cfg(test)]
    pub fn decode(view: &LeafView<'_>) -> Self {
        let mut keys = Vec::new();
        let mut spans = KeySpans::new();
        let mut lcps = Vec::new();
        let entries = Self::decode_borrowed(view, &mut keys, &mut spans, &mut lcps)
            .into_iter()
            .map(|e| LeafEntry {
                key: Cow::Owned(e.key.into_owned()),
                value: e.value.into_owned(),
            })
            .collect();
        LeafNode { entries }
    }

    /// Decodes a validated leaf page into entries that borrow: the whole keys are written
    /// one after another into `keys` (their places into `spans`; both cleared first and
    /// reused by the caller from leaf to leaf), the values are the page's own bytes. Each
    /// key's common prefix with the key before it goes to `lcps` (0 for the first): the
    /// page stores it for every front-coded entry, so a writer re-encoding the leaf need
    /// not compare long keys again (see [`LeafNode::sizer_with`]).
    pub fn decode_borrowed<'a>(
        view: &LeafView<'a>,
        keys: &'a mut Vec<u8>,
        spans: &mut KeySpans,
        lcps: &mut Vec<u32>,
    ) -> Vec<LeafEntry<'a>> {
        keys.clear();
        spans.clear();
        lcps.clear();
        let prefix = view.prefix();
        let prefix_len = prefix.len();
        // Each key is built at the end of `keys`: the bytes it shares with the key
        // before it are copied from that key, then its fragment follows.
        let mut previous = 0..0;
        for i in 0..view.len() {
            let (shared, fragment) = view.parts(i);
            let start = keys.len();
            if i == 0 || view.restart_of(i) == i {
                keys.extend_from_slice(prefix);
            } else {
                keys.extend_from_within(previous.start..previous.start + prefix_len + shared);
            }
            keys.extend_from_slice(fragment);
            let span = start..keys.len();
            let lcp_prev = if i == 0 {
                0
            } else if view.restart_of(i) == i {
                // A restart stores no shared length: measured.
                lcp(&keys[previous.clone()], &keys[span.clone()])
            } else {
                prefix_len + shared
            };
            lcps.push(lcp_prev as u32);
            spans.push(span.clone());
            previous = span;
        }
        let keys: &'a [u8] = keys;
        spans
            .iter()
            .enumerate()
            .map(|(i, span)| LeafEntry {
                key: Cow::Borrowed(&keys[span.clone()]),
                value: Value::from_cell(view.value(i)),
            })
            .collect()
    }

    /// Each entry's common prefix with the one before it, into `out` (0 for the first):
    /// what [`LeafNode::sizer_with`] and [`LeafNode::encode_measured`] take.
    pub fn lcps_of(entries: &[LeafEntry<'_>], out: &mut Vec<u32>) {
        out.clear();
        out.extend(entries.iter().enumerate().map(|(i, e)| match i {
            0 => 0,
            _ => lcp(&entries[i - 1].key, &e.key) as u32,
        }));
    }

    /// The run of all of `entries` given `lcps`, each entry's common prefix with the entry before
    /// it (the first ignored): no key is compared.
    pub fn sizer_with(entries: &[LeafEntry<'_>], lcps: &[u32]) -> LeafSizer {
        debug_assert_eq!(entries.len(), lcps.len());
        let mut run = LeafSizer::default();
        for (i, (entry, &shared)) in entries.iter().zip(lcps).enumerate() {
            let stored = entry.value.stored_len();
            let shared = if i == 0 { 0 } else { shared as usize };
            // Every test's writes check the hints a writer carried over from the old page.
            debug_assert!(
                i == 0 || shared == lcp(&entries[i - 1].key, &entry.key),
                "entry {i}: common prefix {shared} given, {} measured",
                lcp(&entries[i - 1].key, &entry.key)
            );
            run = match i {
                0 => run.with(entry.key.len(), 0, entry.key.len(), stored),
                _ => run.with(entry.key.len(), shared, shared, stored),
            };
        }
        run
    }

    /// The run of all of `entries`: what they take as one page, and how they would be
    /// coded (pass it to [`LeafNode::encode_measured`] to encode without measuring again).
    #[cfg(test)]
    pub fn sizer(entries: &[LeafEntry<'_>]) -> LeafSizer {
        // For ascending keys the prefix shared with the first key is the least shared
        // with the one before so far: one comparison per key instead of two.
        let mut run = LeafSizer::default();
        let mut previous: Option<&LeafEntry<'_>> = None;
        for entry in entries {
            let stored = entry.value.stored_len();
            run = match previous {
                None => run.with(entry.key.len(), 0, entry.key.len(), stored),
                Some(p) => {
                    let shared = lcp(&p.key, &entry.key);
                    run.with(entry.key.len(), shared, shared, stored)
                }
            };
            previous = Some(entry);
        }
        run
    }

    /// Bytes `entries` take when encoded as one page.
    #[cfg(test)]
    pub fn encoded_len(entries: &[LeafEntry<'_>]) -> usize {
        Self::sizer(entries).size()
    }

    /// Encodes `entries` as leaf page `id` written by commit `txn` into `out` (one page,
    /// whatever it held: every byte is written). The caller has checked that they fit.
    /// Does not seal.
    pub fn encode(entries: &[LeafEntry<'_>], id: PageId, txn: u64, out: &mut [u8]) {
        let mut lcps = Vec::new();
        Self::lcps_of(entries, &mut lcps);
        Self::encode_measured(
            entries,
            &lcps,
            &Self::sizer_with(entries, &lcps),
            id,
            txn,
            out,
        );
    }

    /// [`LeafNode::encode`] with `lcps` (each entry's common prefix with the one before
    /// it) and `run`, their [`LeafNode::sizer_with`], already known: a writer measures a
    /// changed leaf to see whether it must split, and comparing long path keys again
    /// for each pass was most of what re-encoding a leaf cost.
    pub fn encode_measured(
        entries: &[LeafEntry<'_>],
        lcps: &[u32],
        run: &LeafSizer,
        id: PageId,
        txn: u64,
        out: &mut [u8],
    ) {
        debug_assert_eq!(entries.len(), lcps.len());
        // Every byte is written once: the header here, the slots and cells below, zeros in
        // the free space between them; `out` may hold anything (a recycled page).
        out[..LEAF_FIXED].fill(0);
        // The run's prefix, the least of the common prefixes it was measured with, so
        // that the page is exactly the size measured.
        let prefix_len = run.prefix_len();
        let (restart_interval, _) = run.choice();
        let plain_at = fragment_len_at(restart_interval);
        PageHeader {
            kind: PageKind::Leaf,
            count: entries.len() as u16,
            id,
            txn,
            aux: 0,
        }
        .write(out);
        write_u16(out, PREFIX_LEN_AT, prefix_len as u16);
        write_u16(out, RESTART_AT, restart_interval as u16);
        if let Some(first) = entries.first() {
            out[LEAF_FIXED..LEAF_FIXED + prefix_len].copy_from_slice(&first.key[..prefix_len]);
        }
        let mut end = out.len();
        for (i, (entry, &lcp_prev)) in entries.iter().zip(lcps).enumerate() {
            let suffix = &entry.key[prefix_len..];
            let shared = if i % restart_interval == 0 {
                0
            } else {
                (lcp_prev as usize - prefix_len).min(u16::MAX as usize)
            };
            let fragment = &suffix[shared..];
            let cell_len = plain_at + PLAIN_CELL_FIXED + fragment.len() + entry.value.stored_len();
            end -= cell_len;
            write_u16(out, LEAF_FIXED + prefix_len + SLOT * i, end as u16);
            if plain_at != 0 {
                write_u16(out, end, shared as u16);
            }
            let plain = end + plain_at;
            let word_at = plain + VALUE_WORD_AT;
            write_u16(out, plain, fragment.len() as u16);
            let body = plain + PLAIN_CELL_FIXED;
            out[body..body + fragment.len()].copy_from_slice(fragment);
            let payload = body + fragment.len();
            match &entry.value {
                Value::Inline(value) => {
                    write_u32(out, word_at, value.len() as u32);
                    out[payload..payload + value.len()].copy_from_slice(value);
                }
                Value::Overflow { first, len } => {
                    write_u32(out, word_at, len | OVERFLOW_BIT);
                    write_u64(out, payload, *first);
                }
            }
        }
        out[LEAF_FIXED + prefix_len + SLOT * entries.len()..end].fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::header::{read_u16, read_u32, read_u64};
    use crate::test_rng::{key, seeded};
    use rand::RngExt as _;

    #[test]
    fn decoded_common_prefixes_are_the_keys_own() {
        // Front-coded pages (long shared heads) and plain ones (short random keys), with
        // restarts where the page stores no shared length and the prefix is measured.
        let mut rng = seeded(0x1C95_0016);
        let (mut keys, mut spans, mut lcps, mut want) =
            (Vec::new(), KeySpans::new(), Vec::new(), Vec::new());
        let mut front_coded = 0;
        for round in 0..200 {
            let head = if round % 2 == 0 {
                b"kv/llama70b/".repeat(rng.random_range(1..6))
            } else {
                Vec::new()
            };
            let mut set = std::collections::BTreeSet::new();
            let branches: Vec<Vec<u8>> = (0..3).map(|_| key(&mut rng, 30)).collect();
            let n = rng.random_range(1..40);
            while set.len() < n {
                // Keys under a few long branches share most of their suffixes, so that
                // front coding pays on the even rounds.
                let mut k = head.clone();
                if round % 2 == 0 {
                    k.extend(&branches[rng.random_range(0..3)]);
                }
                k.extend(key(&mut rng, 12));
                set.insert(k);
            }
            let entries: Vec<LeafEntry<'static>> =
                set.iter().map(|k| LeafEntry::inline(k, b"v")).collect();
            let mut page = vec![0u8; 4096];
            LeafNode::encode(&entries, 3, 1, &mut page);
            // A recycled buffer's old bytes leave no trace.
            let mut recycled = vec![0xA5u8; 4096];
            LeafNode::encode(&entries, 3, 1, &mut recycled);
            assert_eq!(recycled, page, "round {round}");
            let view = LeafView::new(&page);
            front_coded += usize::from(view.restart_interval() > 1);
            let decoded = LeafNode::decode_borrowed(&view, &mut keys, &mut spans, &mut lcps);
            assert_eq!(decoded, entries);
            LeafNode::lcps_of(&entries, &mut want);
            assert_eq!(lcps, want, "round {round}");
        }
        assert!(
            (20..180).contains(&front_coded),
            "{front_coded} of 200 pages front-coded"
        );
    }

    #[test]
    fn the_encoder_writes_the_documented_layout() {
        // Two 52-byte keys that differ in their last byte, then "b": no page prefix, and
        // front coding saves more than an eighth.
        let mut first = b"a".to_vec();
        first.extend([b'x'; 50]);
        let mut second = first.clone();
        first.push(b'0');
        second.push(b'1');
        let entries = vec![
            LeafEntry::inline(&first, b"va"),
            LeafEntry {
                key: Cow::Owned(second),
                value: Value::Overflow {
                    first: 77,
                    len: 5000,
                },
            },
            LeafEntry::inline(b"b", b""),
        ];
        let mut page = vec![0u8; 512];
        LeafNode::encode(&entries, 9, 4, &mut page);
        assert_eq!(PageHeader::read(&page).map(|h| h.count), Some(3));
        assert_eq!(read_u16(&page, 32), 0, "prefix length");
        assert_eq!(read_u16(&page, 34) as usize, LEAF_RESTART);
        // Slots from 36; cells packed from the end in entry order.
        let cells = [0, 1, 2].map(|i| read_u16(&page, 36 + 2 * i) as usize);
        assert_eq!(
            cells,
            [512 - (8 + 52 + 2), 450 - (8 + 1 + 8), 433 - (8 + 1)]
        );
        let [restart, shared, last] = cells;
        // Entry 0, a restart: shared 0, the whole key as fragment, value word 2, "va".
        assert_eq!(read_u16(&page, restart), 0);
        assert_eq!(read_u16(&page, restart + 2), 52);
        assert_eq!(read_u32(&page, restart + 4), 2);
        assert_eq!(&page[restart + 8..restart + 60], first.as_slice());
        assert_eq!(&page[restart + 60..restart + 62], b"va");
        // Entry 1 shares 51 bytes: fragment "1", an overflow word and the run's page.
        assert_eq!(read_u16(&page, shared), 51);
        assert_eq!(read_u16(&page, shared + 2), 1);
        assert_eq!(read_u32(&page, shared + 4), OVERFLOW_BIT | 5000);
        assert_eq!(page[shared + 8], b'1');
        assert_eq!(read_u64(&page, shared + 9), 77);
        // Entry 2 shares nothing.
        assert_eq!(read_u16(&page, last), 0);
        assert_eq!(read_u16(&page, last + 2), 1);
        assert_eq!(read_u32(&page, last + 4), 0);
        assert_eq!(page[last + 8], b'b');
        assert_eq!(LeafNode::encoded_len(&entries), 512 - (last - (36 + 6)));
        assert_eq!(LeafNode::decode(&LeafView::new(&page)).entries, entries);
    }
}
