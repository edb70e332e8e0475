//! Leaf pages: sorted keys, front-coded under a page-wide prefix, with inline values or
//! overflow references.
//!
//! | offset   | size | field                                                   |
//! |----------|------|---------------------------------------------------------|
//! | 0        | 32   | common header (count = number of keys)                  |
//! | 32       | 2    | prefix length P: bytes every key in the page starts with |
//! | 34       | 2    | restart interval R: 1 (plain) or 16 (front-coded)       |
//! | 36       | P    | the prefix                                              |
//! | 36+P     | 2n   | slot array: page offset of each cell, in key order      |
//! | ...      |      | free space                                              |
//! | ...      |      | cells, packed towards the end of the page               |
//!
//! In a front-coded page (R > 1) a cell is
//! `shared u16 | frag_len u16 | value word u32 | frag | payload`: key `i` without the page
//! prefix is the first `shared` bytes of key `i - 1` (without the prefix) followed by
//! `frag`. Entries `0, R, 2R, ...` are restarts: their `shared` is 0, so their `frag` is
//! the whole key after the prefix, and a search binary-searches them without decoding
//! anything, then decodes forward at most `R - 1` entries. In a plain page (R = 1) every
//! entry is a restart and the cell has no `shared` field:
//! `frag_len u16 | value word u32 | frag | payload`. The encoder front-codes a page only
//! when that saves at least an eighth of its bytes (long keys that differ in their last
//! bytes, as in KV-cache chains); keys that are already short after the page prefix
//! (dataset manifests) stay plain and are searched as fast as before.
//!
//! The value word's bit 31 marks an overflow value; its low 31 bits are the value's
//! length. The payload is the value itself, or the u64 number of the first page of its
//! overflow run.

use std::cmp::Ordering;
use std::mem::size_of;

use super::header::{
    lcp, query_rest, read_u16, read_u32, read_u64, write_u16, write_u32, write_u64,
};
use super::slotted::{Slotted, PREFIX_LEN_AT, SLOT, SLOTTED_FIXED};
use super::{PageHeader, PageId, PageKind};

/// Offset of the prefix bytes; everything before it is fixed.
pub const LEAF_FIXED: usize = SLOTTED_FIXED;
/// Offset of the restart interval.
pub const RESTART_AT: usize = PREFIX_LEN_AT + size_of::<u16>();
/// Bytes of the `shared` field that starts a front-coded cell.
const SHARED_LEN: usize = size_of::<u16>();
/// Bytes of a plain cell before its key fragment: `frag_len u16 | value word u32`; in a
/// front-coded cell they follow `shared`.
const PLAIN_CELL_FIXED: usize = size_of::<u16>() + size_of::<u32>();
/// Bytes of a front-coded cell before its key fragment (the larger cell header, which
/// the inline-value limit assumes).
pub const LEAF_CELL_FIXED: usize = SHARED_LEN + PLAIN_CELL_FIXED;
/// Restart interval of a front-coded page: every 16th key is stored whole.
pub const LEAF_RESTART: usize = 16;
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

/// Where a search in a leaf ended, with what it learned about the predecessor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Key `i` equals the query.
    Found(usize),
    /// No key equals the query; `i` keys are below it. When `i > 0`, key `i - 1` is
    /// `pred_len` bytes long and shares its first `pred_lcp` bytes with the query.
    Missing {
        /// Insertion index.
        i: usize,
        /// Length of the common prefix of key `i - 1` and the query.
        pred_lcp: usize,
        /// Length of key `i - 1`.
        pred_len: usize,
    },
}

/// A read-only view of a leaf page that passed [`LeafView::validate`].
#[derive(Debug, Clone, Copy)]
pub struct LeafView<'a> {
    s: Slotted<'a>,
    r: usize,
    /// Offset of `frag_len` in a cell: 2 when front-coded, 0 when plain.
    sh: usize,
}

impl<'a> LeafView<'a> {
    /// Views a validated leaf page.
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        let r = (read_u16(buf, RESTART_AT) as usize).max(1);
        LeafView {
            s: Slotted::new(buf),
            r,
            sh: if r > 1 { SHARED_LEN } else { 0 },
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

    /// The restart interval.
    #[cfg(test)]
    pub fn restart_interval(&self) -> usize {
        self.r
    }

    /// The restart at or before entry `i`: the entry decoding `i` starts from.
    #[inline]
    pub fn restart_of(&self, i: usize) -> usize {
        // The interval is a power of two (validated).
        i & !(self.r - 1)
    }

    #[inline]
    fn cell(&self, i: usize) -> usize {
        self.s.cell(i)
    }

    /// Entry `i`'s cell: bytes shared with key `i - 1` (after the page prefix) and the
    /// fragment that follows them.
    #[inline(always)]
    pub fn parts(&self, i: usize) -> (usize, &'a [u8]) {
        let buf = self.s.buf;
        let c = self.cell(i);
        let shared = if self.sh != 0 {
            read_u16(buf, c) as usize
        } else {
            0
        };
        let at = c + self.sh;
        let fl = read_u16(buf, at) as usize;
        let frag = at + PLAIN_CELL_FIXED;
        (shared, &buf[frag..frag + fl])
    }

    /// Key `r` without the page prefix, for a restart `r` (a multiple of the interval).
    #[inline]
    fn restart_suffix(&self, r: usize) -> &'a [u8] {
        self.parts(r).1
    }

    /// Value `i`.
    #[inline]
    pub fn value(&self, i: usize) -> ValueCell<'a> {
        let c = self.cell(i) + self.sh;
        let fl = read_u16(self.s.buf, c) as usize;
        let word = read_u32(self.s.buf, c + 2);
        let at = c + PLAIN_CELL_FIXED + fl;
        if word & OVERFLOW_BIT != 0 {
            ValueCell::Overflow {
                first: read_u64(self.s.buf, at),
                len: word & !OVERFLOW_BIT,
            }
        } else {
            ValueCell::Inline(&self.s.buf[at..at + word as usize])
        }
    }

    /// Writes key `i` (prefix and suffix) into `out`, decoding from its restart.
    #[inline]
    pub fn key_into(&self, i: usize, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(self.prefix());
        self.decode_key(i, out.len(), out);
    }

    /// Turns `key`, holding key `i - 1` (or anything, when `i` is a restart), into key
    /// `i`; `plen` is the length of the page prefix at the start of `key`.
    #[inline]
    pub fn step_key(&self, i: usize, plen: usize, key: &mut Vec<u8>) {
        let (shared, frag) = self.parts(i);
        key.truncate(plen + shared);
        key.extend_from_slice(frag);
    }

    /// Writes key `i`'s suffix after the first `plen` bytes of `key` (the page prefix),
    /// copying each byte once: its fragment, then, walking back towards its restart, the
    /// fragments of earlier entries that supply the bytes it shares. A jump into a
    /// front-coded run costs one cell read per entry walked, not a copy of every key.
    pub fn decode_key(&self, i: usize, plen: usize, key: &mut Vec<u8>) {
        let (shared, frag) = self.parts(i);
        if shared == 0 {
            // A plain page's entry, or a restart: the fragment is the whole suffix.
            key.truncate(plen);
            key.extend_from_slice(frag);
            return;
        }
        key.truncate(plen);
        key.resize(plen + shared + frag.len(), 0);
        let out = &mut key[plen..];
        out[shared..].copy_from_slice(frag);
        // Bytes [0, need) of the entry before `j` are still to be written; validation
        // guarantees that no entry shares more than its predecessor's length.
        let mut need = shared;
        let mut j = i;
        while need > 0 && j > self.restart_of(i) {
            j -= 1;
            let (sh, fr) = self.parts(j);
            if sh < need {
                out[sh..need].copy_from_slice(&fr[..need - sh]);
                need = sh;
            }
        }
    }

    /// Length of key `i` without the page prefix, without copying bytes.
    fn suffix_len(&self, i: usize) -> usize {
        let mut len = 0;
        for j in self.restart_of(i)..=i {
            let (shared, frag) = self.parts(j);
            len = shared + frag.len();
        }
        len
    }

    /// Compares the first key with `q` (the caller has checked the leaf is not empty).
    #[inline]
    pub fn cmp_first(&self, q: &[u8]) -> Ordering {
        match query_rest(self.prefix(), q) {
            Ok(rest) => self.restart_suffix(0).cmp(rest),
            Err(o) => o.reverse(),
        }
    }

    /// Compares the key of the last restart (on a plain page, the last key) with `q`; the
    /// caller has checked the leaf is not empty. Needs no decoding.
    #[inline]
    pub fn cmp_last_restart(&self, q: &[u8]) -> Ordering {
        let last = self.restart_of(self.s.n - 1);
        match query_rest(self.prefix(), q) {
            Ok(rest) => self.restart_suffix(last).cmp(rest),
            Err(o) => o.reverse(),
        }
    }

    /// Finds `q`: `Ok(i)` when key `i` equals it, else `Err(i)` where it would be inserted.
    #[inline]
    pub fn search(&self, q: &[u8]) -> Result<usize, usize> {
        let qs = match query_rest(self.prefix(), q) {
            Ok(rest) => rest,
            Err(Ordering::Less) => return Err(0),
            Err(_) => return Err(self.s.n),
        };
        match self.locate::<false>(qs) {
            (Ok(i), ..) => Ok(i),
            (Err(i), ..) => Err(i),
        }
    }

    /// Like [`search`](Self::search), and also measures the predecessor against `q`,
    /// from the decoding the search does anyway (longest-prefix lookups need it).
    #[inline]
    pub fn probe(&self, q: &[u8]) -> Probe {
        let plen = self.s.plen;
        match query_rest(self.prefix(), q) {
            Ok(qs) => match self.locate::<true>(qs) {
                (Ok(i), ..) => Probe::Found(i),
                (Err(i), m, len) => Probe::Missing {
                    i,
                    pred_lcp: plen + m,
                    pred_len: plen + len,
                },
            },
            Err(Ordering::Less) => Probe::Missing {
                i: 0,
                pred_lcp: 0,
                pred_len: 0,
            },
            Err(_) => {
                let n = self.s.n;
                Probe::Missing {
                    i: n,
                    pred_lcp: lcp(self.prefix(), q),
                    pred_len: if n == 0 {
                        0
                    } else {
                        plen + self.suffix_len(n - 1)
                    },
                }
            }
        }
    }

    /// Searches for `qs` (a query without the page prefix). Returns the result and, for
    /// `Err(i)` with `i > 0`, the common-prefix length of key `i - 1` (without the
    /// prefix) with `qs` and that key's length.
    ///
    /// Binary search over the restarts, then a forward decode of one restart run that
    /// never copies: it tracks `m`, the common-prefix length of the previous key (which
    /// is below `qs`) and `qs`. An entry that shares more than `m` bytes with the
    /// previous key differs from `qs` where the previous key did, the same way, so it is
    /// below `qs` too and its bytes need not be read; otherwise its first `shared` bytes
    /// are those of `qs`, and only its fragment is compared.
    /// Without `PRED`, the predecessor's measures are not computed when no decoding
    /// needs them.
    #[inline]
    fn locate<const PRED: bool>(&self, qs: &[u8]) -> (Result<usize, usize>, usize, usize) {
        let n = self.s.n;
        let r = self.r;
        if r == 1 {
            return self.locate_plain::<PRED>(qs);
        }
        let (mut lo, mut hi) = (0usize, n.div_ceil(r));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.restart_suffix(mid * r).cmp(qs) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return (Ok(mid * r), 0, 0),
            }
        }
        if lo == 0 {
            return (Err(0), 0, 0);
        }
        let start = (lo - 1) * r;
        let end = (start + r).min(n);
        let first = self.restart_suffix(start);
        if !PRED && end == start + 1 {
            return (Err(end), 0, 0);
        }
        let mut m = lcp(first, qs);
        let mut prev_len = first.len();
        for i in start + 1..end {
            let (shared, frag) = self.parts(i);
            if shared > m {
                prev_len = shared + frag.len();
                continue;
            }
            let rest = &qs[shared..];
            let l = lcp(frag, rest);
            if l == frag.len() {
                if l == rest.len() {
                    return (Ok(i), 0, 0);
                }
            } else if l == rest.len() || frag[l] > rest[l] {
                return (Err(i), m, prev_len);
            }
            m = shared + l;
            prev_len = shared + frag.len();
        }
        (Err(end), m, prev_len)
    }

    /// Key `i` without the page prefix, in a plain page.
    #[inline(always)]
    fn plain_suffix(&self, i: usize) -> &'a [u8] {
        let buf = self.s.buf;
        let c = self.cell(i);
        let fl = read_u16(buf, c) as usize;
        &buf[c + PLAIN_CELL_FIXED..c + PLAIN_CELL_FIXED + fl]
    }

    /// [`locate`](Self::locate) in a plain page: a binary search over whole suffixes.
    #[inline]
    fn locate_plain<const PRED: bool>(&self, qs: &[u8]) -> (Result<usize, usize>, usize, usize) {
        let (mut lo, mut hi) = (0usize, self.s.n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.plain_suffix(mid).cmp(qs) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return (Ok(mid), 0, 0),
            }
        }
        if !PRED || lo == 0 {
            return (Err(lo), 0, 0);
        }
        let pred = self.plain_suffix(lo - 1);
        (Err(lo), lcp(pred, qs), pred.len())
    }

    /// Checks that every slot and cell lies inside the page and that every key decodes
    /// (restarts share nothing, no entry shares more than its predecessor's length), so
    /// that the accessors above cannot read out of bounds. Called once when a page
    /// enters memory.
    pub fn validate(buf: &[u8]) -> Result<(), String> {
        let len = buf.len();
        let s = Slotted::new(buf);
        let (n, plen) = (s.n, s.plen);
        let r = read_u16(buf, RESTART_AT) as usize;
        if !r.is_power_of_two() {
            return Err(format!("leaf restart interval {r} is not a power of two"));
        }
        let slots_start = SLOTTED_FIXED + plen;
        let slots_end = slots_start + SLOT * n;
        if slots_end > len {
            return Err(format!(
                "leaf header claims {n} entries and a {plen}-byte prefix, more than the page holds"
            ));
        }
        let slots = &buf[slots_start..slots_end];
        let outside =
            |i: usize, c: usize| format!("leaf slot {i} points outside the cell area ({c})");
        let past = |i: usize| format!("leaf cell {i} runs past the end of the page");
        let payload = |word: u32| {
            if word & OVERFLOW_BIT != 0 {
                size_of::<u64>()
            } else {
                word as usize
            }
        };
        // Runs on every page read: one tight loop per layout.
        if r == 1 {
            for (i, slot) in slots.chunks_exact(SLOT).enumerate() {
                let c = u16::from_le_bytes([slot[0], slot[1]]) as usize;
                let Some(h) = buf.get(c..c + PLAIN_CELL_FIXED).filter(|_| c >= slots_end) else {
                    return Err(outside(i, c));
                };
                let fl = u16::from_le_bytes([h[0], h[1]]) as usize;
                let word = u32::from_le_bytes([h[2], h[3], h[4], h[5]]);
                if plen + fl == 0 {
                    return Err(format!("leaf cell {i} holds an empty key"));
                }
                if c + PLAIN_CELL_FIXED + fl + payload(word) > len {
                    return Err(past(i));
                }
            }
            return Ok(());
        }
        let mut prev_len = 0usize;
        // Entries until the next restart (0: this one is).
        let mut to_restart = 0usize;
        for (i, slot) in slots.chunks_exact(SLOT).enumerate() {
            let c = u16::from_le_bytes([slot[0], slot[1]]) as usize;
            let Some(h) = buf.get(c..c + LEAF_CELL_FIXED).filter(|_| c >= slots_end) else {
                return Err(outside(i, c));
            };
            let shared = u16::from_le_bytes([h[0], h[1]]) as usize;
            let fl = u16::from_le_bytes([h[2], h[3]]) as usize;
            let word = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
            let restart = to_restart == 0;
            to_restart = if restart { r - 1 } else { to_restart - 1 };
            if shared > prev_len || (shared != 0 && restart) {
                return Err(format!(
                    "leaf cell {i} shares {shared} bytes with a {prev_len}-byte key{}",
                    if restart { " but is a restart" } else { "" }
                ));
            }
            if plen + shared + fl == 0 {
                return Err(format!("leaf cell {i} holds an empty key"));
            }
            if c + LEAF_CELL_FIXED + fl + payload(word) > len {
                return Err(past(i));
            }
            prev_len = shared + fl;
        }
        Ok(())
    }

    /// Replaces inline value `i` in a private copy of the page with `v` of the same length.
    pub fn overwrite_inline_value(buf: &mut [u8], i: usize, v: &[u8]) -> bool {
        let view = LeafView::new(buf);
        let c = view.cell(i) + view.sh;
        let fl = read_u16(buf, c) as usize;
        let word = read_u32(buf, c + 2);
        if word & OVERFLOW_BIT != 0 || word as usize != v.len() {
            return false;
        }
        let at = c + PLAIN_CELL_FIXED + fl;
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

/// The exact encoded size of a run of ascending entries, grown one entry at a time: the
/// bulk loader and the splitter use it to fill pages.
#[derive(Debug, Clone, Copy, Default)]
pub struct LeafSizer {
    /// Entries so far.
    pub n: usize,
    /// Page prefix length: the common prefix of the first and the last key.
    plen: usize,
    /// Front-coded: slots, cell headers, stored values and the fragments of non-restart
    /// entries.
    body: usize,
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
        let mut s = self;
        if s.n == 0 {
            s.plen = key_len.min(u16::MAX as usize);
        } else {
            s.plen = s.plen.min(lcp_first);
        }
        if s.n.is_multiple_of(LEAF_RESTART) {
            s.restarts += 1;
            s.restart_keys += key_len;
        } else {
            s.body += key_len - lcp_prev;
        }
        s.body += SLOT + LEAF_CELL_FIXED + stored;
        s.plain += SLOT + PLAIN_CELL_FIXED + stored + key_len;
        s.n += 1;
        s
    }

    /// Adds `e`, which follows `prev` (None for the first entry) and `first` in the run.
    #[inline]
    pub fn with_entry(self, first: &LeafEntry, prev: Option<&LeafEntry>, e: &LeafEntry) -> Self {
        let (lcp_prev, lcp_first) = match prev {
            Some(p) => (lcp(&p.key, &e.key), lcp(&first.key, &e.key)),
            None => (0, e.key.len()),
        };
        self.with(e.key.len(), lcp_prev, lcp_first, e.value.stored_len())
    }

    /// The restart interval the run is encoded with and the bytes it takes as one page:
    /// front-coded when that saves at least an eighth of the plain size.
    #[inline]
    pub fn choice(&self) -> (usize, usize) {
        let coded =
            LEAF_FIXED + self.plen + self.body + self.restart_keys - self.restarts * self.plen;
        let plain = LEAF_FIXED + self.plen + self.plain - self.n * self.plen;
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
        let mut key = view.prefix().to_vec();
        let plen = key.len();
        for i in 0..view.len() {
            view.step_key(i, plen, &mut key);
            entries.push(LeafEntry {
                key: key.clone(),
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

    fn sizer(entries: &[LeafEntry]) -> LeafSizer {
        let mut s = LeafSizer::default();
        for (i, e) in entries.iter().enumerate() {
            s = s.with_entry(&entries[0], i.checked_sub(1).map(|p| &entries[p]), e);
        }
        s
    }

    /// Bytes `entries` take when encoded as one page.
    pub fn encoded_len(entries: &[LeafEntry]) -> usize {
        Self::sizer(entries).size()
    }

    /// Where to cut `entries` (ascending) so that each piece fits in a `page_size` page:
    /// the index where each piece after the first starts, empty when everything fits.
    /// Sizes are exact (each piece gets its own prefix and restarts). Appends fill the
    /// left page, so ascending inserts leave full pages behind; otherwise two pieces of
    /// near-equal size are preferred.
    pub fn cuts(entries: &[LeafEntry], page_size: usize, append: bool) -> Vec<usize> {
        let n = entries.len();
        if Self::encoded_len(entries) <= page_size {
            return Vec::new();
        }
        if !append && n >= 2 {
            let mut best: Option<(usize, usize)> = None;
            let mut left = LeafSizer::default();
            for c in 1..n {
                left = left.with_entry(
                    &entries[0],
                    (c - 1).checked_sub(1).map(|p| &entries[p]),
                    &entries[c - 1],
                );
                let ls = left.size();
                if ls > page_size {
                    break;
                }
                let rs = Self::encoded_len(&entries[c..]);
                if rs <= page_size {
                    let skew = ls.abs_diff(rs);
                    if best.is_none_or(|(_, b)| skew < b) {
                        best = Some((c, skew));
                    }
                }
            }
            if let Some((c, _)) = best {
                return vec![c];
            }
        }
        let mut cuts = Vec::new();
        let mut start = 0;
        let mut run = LeafSizer::default();
        for (i, e) in entries.iter().enumerate() {
            let prev = (i > start).then(|| &entries[i - 1]);
            let next = run.with_entry(&entries[start], prev, e);
            if run.n > 0 && next.size() > page_size {
                cuts.push(i);
                start = i;
                run = LeafSizer::default().with_entry(e, None, e);
            } else {
                run = next;
            }
        }
        cuts
    }

    /// Encodes `entries` as leaf page `id` written by commit `txn` into `out` (one page,
    /// zero-filled first). The caller has checked that they fit. Does not seal.
    pub fn encode(entries: &[LeafEntry], id: PageId, txn: u64, out: &mut [u8]) {
        out.fill(0);
        let plen = Self::prefix_len(entries);
        let (r, _) = Self::sizer(entries).choice();
        let sh = if r > 1 { SHARED_LEN } else { 0 };
        PageHeader {
            kind: PageKind::Leaf,
            count: entries.len() as u16,
            id,
            txn,
            aux: 0,
        }
        .write(out);
        write_u16(out, PREFIX_LEN_AT, plen as u16);
        write_u16(out, RESTART_AT, r as u16);
        if let Some(first) = entries.first() {
            out[LEAF_FIXED..LEAF_FIXED + plen].copy_from_slice(&first.key[..plen]);
        }
        let mut end = out.len();
        let mut prev: &[u8] = &[];
        for (i, e) in entries.iter().enumerate() {
            let suffix = &e.key[plen..];
            let shared = if i % r == 0 {
                0
            } else {
                lcp(prev, suffix).min(u16::MAX as usize)
            };
            let frag = &suffix[shared..];
            prev = suffix;
            let cell_len = sh + PLAIN_CELL_FIXED + frag.len() + e.value.stored_len();
            end -= cell_len;
            write_u16(out, LEAF_FIXED + plen + SLOT * i, end as u16);
            if sh != 0 {
                write_u16(out, end, shared as u16);
            }
            let word_at = end + sh + 2;
            write_u16(out, end + sh, frag.len() as u16);
            let body = end + sh + PLAIN_CELL_FIXED;
            out[body..body + frag.len()].copy_from_slice(frag);
            let at = body + frag.len();
            match &e.value {
                Value::Inline(v) => {
                    write_u32(out, word_at, v.len() as u32);
                    out[at..at + v.len()].copy_from_slice(v);
                }
                Value::Overflow { first, len } => {
                    write_u32(out, word_at, len | OVERFLOW_BIT);
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
        // Short suffixes after the prefix: front coding would save little.
        assert_eq!(v.restart_interval(), 1);
        assert_eq!(v.search(b"ds/laion/shard-00001/sample-00000007"), Ok(7));
        assert_eq!(v.search(b"ds/laion/shard-00001/sample-000000070"), Err(8));
        assert_eq!(v.search(b"ds/"), Err(0));
        assert_eq!(v.search(b"ds/laion/shard-00002"), Err(50));
        assert_eq!(v.search(b"a"), Err(0));
        assert_eq!(v.value(3), ValueCell::Inline(&3u32.to_le_bytes()));
        assert_eq!(LeafNode::decode(&v).entries, entries);
        assert_eq!(
            v.cmp_first(b"ds/laion/shard-00001/sample-00000000"),
            Ordering::Equal
        );
        assert_eq!(v.cmp_first(b"ds/"), Ordering::Greater);
        assert_eq!(v.cmp_first(b"e"), Ordering::Less);
        assert_eq!(LeafNode::encoded_len(&entries), 4096 - free_space(&page));
    }

    /// Bytes between the end of the slot array and the first cell.
    fn free_space(page: &[u8]) -> usize {
        let v = LeafView::new(page);
        let first_cell = (0..v.len()).map(|i| v.cell(i)).min().unwrap_or(page.len());
        first_cell - (LEAF_FIXED + v.prefix().len() + SLOT * v.len())
    }

    use crate::test_rng::{key, seeded};
    use rand::RngExt as _;

    #[test]
    fn front_coded_search_probe_and_decode_agree_with_brute_force() {
        let mut rng = seeded(0x9E37_79B9_7F4A_7C15);
        let mut coded = 0;
        for round in 0..300 {
            let mut keys = std::collections::BTreeSet::new();
            let head = b"kv/llama70b/".repeat((round % 3) as usize);
            let n: u64 = rng.random_range(1..=120);
            while (keys.len() as u64) < n {
                let mut k = head.clone();
                if round % 2 == 1 {
                    // Chains: every 5th prefix of a long random path.
                    let path = key(&mut rng, 60);
                    for l in (5..=path.len()).step_by(5) {
                        let mut k = k.clone();
                        k.extend(&path[..l]);
                        keys.insert(k);
                    }
                    continue;
                }
                k.extend(key(&mut rng, 12));
                keys.insert(k);
            }
            let entries: Vec<_> = keys.iter().map(|k| entry(k, &k[..1])).collect();
            if LeafNode::encoded_len(&entries) > 4096 {
                continue;
            }
            let mut page = vec![0u8; 4096];
            LeafNode::encode(&entries, 5, 1, &mut page);
            LeafView::validate(&page).expect("valid");
            assert_eq!(LeafNode::encoded_len(&entries), 4096 - free_space(&page));
            let v = LeafView::new(&page);
            coded += usize::from(v.restart_interval() > 1);
            assert_eq!(LeafNode::decode(&v).entries, entries);
            let plen = v.prefix().len();
            // Stepping forward from the previous key (a scan) gives every key.
            let mut k = v.prefix().to_vec();
            let mut d = Vec::new();
            for (i, e) in entries.iter().enumerate() {
                v.step_key(i, plen, &mut k);
                assert_eq!(k, e.key);
                // Decoding from the restart (a jump) agrees, whatever the buffer held after
                // the prefix.
                d.truncate(plen);
                d.resize(plen, 0);
                d[..plen].copy_from_slice(v.prefix());
                d.extend_from_slice(b"leftover bytes of another key");
                v.decode_key(i, plen, &mut d);
                assert_eq!(d, e.key, "entry {i}");
            }
            for _ in 0..200 {
                let mut q = head.clone();
                q.extend(key(&mut rng, 14));
                if rng.random_ratio(1, 4) {
                    q = entries[rng.random_range(0..entries.len())].key.clone();
                }
                let want = entries.binary_search_by(|e| e.key.as_slice().cmp(&q));
                assert_eq!(v.search(&q), want, "{:?}", String::from_utf8_lossy(&q));
                let got = v.probe(&q);
                match want {
                    Ok(i) => assert_eq!(got, Probe::Found(i)),
                    Err(i) => {
                        let (pl, pn) = if i == 0 {
                            (0, 0)
                        } else {
                            (lcp(&entries[i - 1].key, &q), entries[i - 1].key.len())
                        };
                        if i == 0 {
                            assert!(matches!(got, Probe::Missing { i: 0, .. }));
                        } else {
                            assert_eq!(
                                got,
                                Probe::Missing {
                                    i,
                                    pred_lcp: pl,
                                    pred_len: pn
                                },
                                "{:?}",
                                String::from_utf8_lossy(&q)
                            );
                        }
                    }
                }
            }
        }
        assert!(coded > 50, "{coded} front-coded pages");
    }

    #[test]
    fn cuts_give_pieces_that_fit() {
        let mut rng = seeded(0x2545_F491_4F6C_DD1D);
        for append in [false, true] {
            let mut keys = std::collections::BTreeSet::new();
            while keys.len() < 400 {
                let mut k = b"kv/llama70b/".to_vec();
                k.extend(key(&mut rng, 30));
                keys.insert(k);
            }
            let entries: Vec<_> = keys.iter().map(|k| entry(k, &[7u8; 40])).collect();
            let cuts = LeafNode::cuts(&entries, 4096, append);
            assert!(!cuts.is_empty());
            let mut b = vec![0];
            b.extend(&cuts);
            b.push(entries.len());
            for w in b.windows(2) {
                assert!(w[0] < w[1]);
                assert!(LeafNode::encoded_len(&entries[w[0]..w[1]]) <= 4096);
            }
        }
    }

    #[test]
    fn validate_rejects_a_restart_that_shares_and_an_overlong_share() {
        // Pairs of long keys that differ in their last byte: front-coded.
        let entries: Vec<_> = (0..20u8)
            .map(|i| {
                let mut k = vec![b'a' + i / 2];
                k.extend([b'x'; 50]);
                k.push(b'0' + i % 2);
                entry(&k, b"v")
            })
            .collect();
        let mut page = vec![0u8; 4096];
        LeafNode::encode(&entries, 1, 1, &mut page);
        LeafView::validate(&page).expect("valid");
        let v = LeafView::new(&page);
        assert_eq!(v.restart_interval(), LEAF_RESTART);
        let (c16, c3) = (v.cell(16), v.cell(3));
        let mut bad = page.clone();
        write_u16(&mut bad, c16, 1);
        assert!(LeafView::validate(&bad).is_err());
        let mut bad = page.clone();
        write_u16(&mut bad, c3, 100);
        assert!(LeafView::validate(&bad).is_err());
    }

    #[test]
    fn validate_rejects_a_slot_past_the_page() {
        let mut page = vec![0u8; 4096];
        LeafNode::encode(&[entry(b"a", b"1")], 1, 1, &mut page);
        write_u16(&mut page, LEAF_FIXED + 1, 4095);
        assert!(LeafView::validate(&page).is_err());
    }
}
