//! Leaf pages: sorted keys, prefix-compressed, with inline values or overflow references.
//!
//! | offset   | size | field                                                   |
//! |----------|------|---------------------------------------------------------|
//! | 0        | 32   | common header (count = number of keys)                  |
//! | 32       | 2    | prefix length P: bytes every key in the page starts with |
//! | 34       | 2    | reserved, 0                                             |
//! | 36       | P    | the prefix                                              |
//! | 36+P     | 2n   | slot array: page offset of each cell, in key order      |
//! | ...      |      | free space                                              |
//! | ...      |      | cells, packed towards the end of the page               |
//!
//! A cell is `suffix_len u16 | value word u32 | suffix | payload`. The value word's bit 31
//! marks an overflow value; its low 31 bits are the value's length. The payload is the
//! value itself, or the u64 number of the first page of its overflow run.

use std::cmp::Ordering;
use std::mem::size_of;

use super::header::{
    cmp_prefixed, lcp, query_rest, read_u16, read_u32, read_u64, write_u16, write_u32, write_u64,
};
use super::slotted::{Slotted, PREFIX_LEN_AT, SLOT, SLOTTED_FIXED};
use super::{PageHeader, PageId, PageKind};

/// Offset of the prefix bytes; everything before it is fixed.
pub const LEAF_FIXED: usize = SLOTTED_FIXED;
/// Bytes of a cell before its suffix.
pub const LEAF_CELL_FIXED: usize = size_of::<u16>() + size_of::<u32>();
/// Bit of the value word that marks an overflow value.
const OVERFLOW_BIT: u32 = 1 << 31;

/// A value as stored in a leaf cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueCell<'a> {
    /// The value's bytes, in the page.
    Inline(&'a [u8]),
    /// The value lives in `pages_for(len)` contiguous overflow pages from `first`.
    Overflow {
        /// First page of the run.
        first: PageId,
        /// Value length in bytes.
        len: u32,
    },
}

/// A read-only view of a leaf page that passed [`LeafView::validate`].
#[derive(Debug, Clone, Copy)]
pub struct LeafView<'a> {
    s: Slotted<'a>,
}

impl<'a> LeafView<'a> {
    /// Views a validated leaf page.
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        LeafView {
            s: Slotted::new(buf),
        }
    }

    /// Number of keys.
    #[inline]
    pub fn len(&self) -> usize {
        self.s.n
    }

    /// True when the leaf holds no key.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.s.n == 0
    }

    /// Bytes every key in the page starts with.
    #[inline]
    pub fn prefix(&self) -> &'a [u8] {
        self.s.prefix()
    }

    #[inline]
    fn cell(&self, i: usize) -> usize {
        self.s.cell(i)
    }

    /// Key `i` without the page prefix.
    #[inline]
    pub fn suffix(&self, i: usize) -> &'a [u8] {
        let c = self.cell(i);
        let sl = read_u16(self.s.buf, c) as usize;
        &self.s.buf[c + LEAF_CELL_FIXED..c + LEAF_CELL_FIXED + sl]
    }

    /// Value `i`.
    #[inline]
    pub fn value(&self, i: usize) -> ValueCell<'a> {
        let c = self.cell(i);
        let sl = read_u16(self.s.buf, c) as usize;
        let word = read_u32(self.s.buf, c + 2);
        let at = c + LEAF_CELL_FIXED + sl;
        if word & OVERFLOW_BIT != 0 {
            ValueCell::Overflow {
                first: read_u64(self.s.buf, at),
                len: word & !OVERFLOW_BIT,
            }
        } else {
            ValueCell::Inline(&self.s.buf[at..at + word as usize])
        }
    }

    /// Writes key `i` (prefix and suffix) into `out`.
    #[inline]
    pub fn key_into(&self, i: usize, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(self.prefix());
        out.extend_from_slice(self.suffix(i));
    }

    /// Compares key `i` with `q`.
    #[inline]
    pub fn cmp_key(&self, i: usize, q: &[u8]) -> Ordering {
        cmp_prefixed(self.prefix(), self.suffix(i), q)
    }

    /// Finds `q`: `Ok(i)` when key `i` equals it, else `Err(i)` where it would be inserted.
    #[inline]
    pub fn search(&self, q: &[u8]) -> Result<usize, usize> {
        let qs = match query_rest(self.prefix(), q) {
            Ok(rest) => rest,
            Err(Ordering::Less) => return Err(0),
            Err(_) => return Err(self.s.n),
        };
        let (mut lo, mut hi) = (0usize, self.s.n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.suffix(mid).cmp(qs) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Checks that every slot and cell lies inside the page, so that the accessors above
    /// cannot read out of bounds. Called once when a page enters memory.
    pub fn validate(buf: &[u8]) -> Result<(), String> {
        let plen = Slotted::new(buf).plen;
        Slotted::validate(buf, "leaf", LEAF_CELL_FIXED, |i, c, fixed| {
            let sl = read_u16(fixed, 0) as usize;
            let word = read_u32(fixed, 2);
            let payload = if word & OVERFLOW_BIT != 0 {
                size_of::<u64>()
            } else {
                word as usize
            };
            if plen + sl == 0 {
                return Err(format!("leaf cell {i} holds an empty key"));
            }
            Ok(c + LEAF_CELL_FIXED + sl + payload)
        })
    }

    /// Replaces inline value `i` in a private copy of the page with `v` of the same length.
    pub fn overwrite_inline_value(buf: &mut [u8], i: usize, v: &[u8]) -> bool {
        let view = LeafView::new(buf);
        let c = view.cell(i);
        let sl = read_u16(buf, c) as usize;
        let word = read_u32(buf, c + 2);
        if word & OVERFLOW_BIT != 0 || word as usize != v.len() {
            return false;
        }
        let at = c + LEAF_CELL_FIXED + sl;
        buf[at..at + v.len()].copy_from_slice(v);
        true
    }
}

/// A value in a decoded leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Stored in the leaf.
    Inline(Vec<u8>),
    /// Stored in an overflow run.
    Overflow {
        /// First page of the run.
        first: PageId,
        /// Value length in bytes.
        len: u32,
    },
}

impl Value {
    /// Bytes the value takes in its cell.
    #[inline]
    pub fn stored_len(&self) -> usize {
        match self {
            Value::Inline(v) => v.len(),
            Value::Overflow { .. } => size_of::<u64>(),
        }
    }

    /// Converts a borrowed cell into an owned value.
    pub fn from_cell(c: ValueCell<'_>) -> Self {
        match c {
            ValueCell::Inline(v) => Value::Inline(v.to_vec()),
            ValueCell::Overflow { first, len } => Value::Overflow { first, len },
        }
    }
}

/// One key and its value in a decoded leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafEntry {
    /// The whole key.
    pub key: Vec<u8>,
    /// Its value.
    pub value: Value,
}

impl LeafEntry {
    /// Bytes this entry takes (slot and cell) when the page prefix is `plen` bytes.
    #[inline]
    pub fn size_with_prefix(&self, plen: usize) -> usize {
        SLOT + LEAF_CELL_FIXED + self.key.len() - plen + self.value.stored_len()
    }
}

/// A leaf decoded for modification by a writer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeafNode {
    /// Entries in ascending key order.
    pub entries: Vec<LeafEntry>,
}

impl LeafNode {
    /// Decodes a validated leaf page.
    pub fn decode(view: &LeafView<'_>) -> Self {
        let mut entries = Vec::with_capacity(view.len());
        for i in 0..view.len() {
            let mut key = Vec::with_capacity(view.prefix().len() + view.suffix(i).len());
            view.key_into(i, &mut key);
            entries.push(LeafEntry {
                key,
                value: Value::from_cell(view.value(i)),
            });
        }
        LeafNode { entries }
    }

    /// Length of the prefix shared by all entries of `entries`.
    pub fn prefix_len(entries: &[LeafEntry]) -> usize {
        match (entries.first(), entries.last()) {
            (Some(a), Some(b)) => lcp(&a.key, &b.key).min(u16::MAX as usize),
            _ => 0,
        }
    }

    /// Bytes `entries` take when encoded as one page.
    pub fn encoded_len(entries: &[LeafEntry]) -> usize {
        let plen = Self::prefix_len(entries);
        LEAF_FIXED
            + plen
            + entries
                .iter()
                .map(|e| e.size_with_prefix(plen))
                .sum::<usize>()
    }

    /// Encodes `entries` as leaf page `id` written by commit `txn` into `out` (one page,
    /// zero-filled first). The caller has checked that they fit. Does not seal.
    pub fn encode(entries: &[LeafEntry], id: PageId, txn: u64, out: &mut [u8]) {
        out.fill(0);
        let plen = Self::prefix_len(entries);
        PageHeader {
            kind: PageKind::Leaf,
            count: entries.len() as u16,
            id,
            txn,
            aux: 0,
        }
        .write(out);
        write_u16(out, PREFIX_LEN_AT, plen as u16);
        if let Some(first) = entries.first() {
            out[LEAF_FIXED..LEAF_FIXED + plen].copy_from_slice(&first.key[..plen]);
        }
        let mut end = out.len();
        for (i, e) in entries.iter().enumerate() {
            let suffix = &e.key[plen..];
            let cell_len = LEAF_CELL_FIXED + suffix.len() + e.value.stored_len();
            end -= cell_len;
            write_u16(out, LEAF_FIXED + plen + SLOT * i, end as u16);
            write_u16(out, end, suffix.len() as u16);
            let body = end + LEAF_CELL_FIXED;
            out[body..body + suffix.len()].copy_from_slice(suffix);
            let at = body + suffix.len();
            match &e.value {
                Value::Inline(v) => {
                    write_u32(out, end + 2, v.len() as u32);
                    out[at..at + v.len()].copy_from_slice(v);
                }
                Value::Overflow { first, len } => {
                    write_u32(out, end + 2, len | OVERFLOW_BIT);
                    write_u64(out, at, *first);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(k: &[u8], v: &[u8]) -> LeafEntry {
        LeafEntry {
            key: k.to_vec(),
            value: Value::Inline(v.to_vec()),
        }
    }

    #[test]
    fn encode_search_decode_round_trip_with_shared_prefix() {
        let entries: Vec<_> = (0..50u32)
            .map(|i| {
                entry(
                    format!("ds/laion/shard-00001/sample-{i:08}").as_bytes(),
                    &i.to_le_bytes(),
                )
            })
            .collect();
        let mut page = vec![0u8; 4096];
        assert!(LeafNode::encoded_len(&entries) <= 4096);
        LeafNode::encode(&entries, 5, 1, &mut page);
        LeafView::validate(&page).expect("valid");
        let v = LeafView::new(&page);
        assert_eq!(v.prefix(), b"ds/laion/shard-00001/sample-000000");
        assert_eq!(v.search(b"ds/laion/shard-00001/sample-00000007"), Ok(7));
        assert_eq!(v.search(b"ds/laion/shard-00001/sample-000000070"), Err(8));
        assert_eq!(v.search(b"ds/"), Err(0));
        assert_eq!(v.search(b"ds/laion/shard-00002"), Err(50));
        assert_eq!(v.search(b"a"), Err(0));
        assert_eq!(v.value(3), ValueCell::Inline(&3u32.to_le_bytes()));
        assert_eq!(LeafNode::decode(&v).entries, entries);
        assert_eq!(
            v.cmp_key(7, b"ds/laion/shard-00001/sample-00000007"),
            Ordering::Equal
        );
        assert_eq!(v.cmp_key(7, b"ds/"), Ordering::Greater);
    }

    #[test]
    fn validate_rejects_a_slot_past_the_page() {
        let mut page = vec![0u8; 4096];
        LeafNode::encode(&[entry(b"a", b"1")], 1, 1, &mut page);
        write_u16(&mut page, LEAF_FIXED + 1, 4095);
        assert!(LeafView::validate(&page).is_err());
    }
}
