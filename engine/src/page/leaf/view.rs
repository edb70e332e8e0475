//! Reading a leaf page in place: the view, its searches and key decoding. Every accessor
//! trusts a page that passed [`LeafView::validate`](super::validate).

use std::cmp::Ordering;

use super::layout::{fragment_len_at, OVERFLOW_BIT, PLAIN_CELL_FIXED, RESTART_AT, VALUE_WORD_AT};
use crate::page::header::{lcp, query_rest, read_u16, read_u32, read_u64};
use crate::page::slotted::Slotted;
use crate::page::PageId;

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

/// What [`LeafView::locate`] found: the search result and, for `Err(i)` with `i > 0`,
/// the measures of key `i - 1` (without the page prefix) against the query.
type Located = (Result<usize, usize>, usize, usize);

/// A read-only view of a leaf page that passed [`LeafView::validate`].
#[derive(Debug, Clone, Copy)]
pub struct LeafView<'a> {
    slotted: Slotted<'a>,
    restart_interval: usize,
    /// Offset of the fragment length in a cell: 2 when front-coded, 0 when plain.
    fragment_len_at: usize,
}

impl<'a> LeafView<'a> {
    /// Views a validated leaf page.
    #[inline]
    pub fn new(page: &'a [u8]) -> Self {
        let restart_interval = (read_u16(page, RESTART_AT) as usize).max(1);
        LeafView {
            slotted: Slotted::new(page),
            restart_interval,
            fragment_len_at: fragment_len_at(restart_interval),
        }
    }

    /// Number of keys.
    #[inline]
    pub fn len(&self) -> usize {
        self.slotted.count
    }

    /// True when the leaf holds no key.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slotted.count == 0
    }

    /// Bytes every key in the page starts with.
    #[inline]
    pub fn prefix(&self) -> &'a [u8] {
        self.slotted.prefix()
    }

    /// The restart interval.
    #[cfg(test)]
    pub fn restart_interval(&self) -> usize {
        self.restart_interval
    }

    /// The restart at or before entry `i`: the entry decoding `i` starts from.
    #[inline]
    pub fn restart_of(&self, i: usize) -> usize {
        // The interval is a power of two (validated).
        i & !(self.restart_interval - 1)
    }

    /// Page offset of cell `i`.
    #[inline]
    pub(super) fn cell(&self, i: usize) -> usize {
        self.slotted.cell(i)
    }

    /// Page offset of cell `i`'s fragment length, the start of its plain part.
    #[inline]
    pub(super) fn plain_part(&self, i: usize) -> usize {
        self.cell(i) + self.fragment_len_at
    }

    /// Entry `i`'s cell: bytes shared with key `i - 1` (after the page prefix) and the
    /// fragment that follows them.
    #[inline(always)]
    pub fn parts(&self, i: usize) -> (usize, &'a [u8]) {
        let (shared, fragment, _) = self.parts_and_plain(i);
        (shared, fragment)
    }

    /// [`LeafView::parts`] and the page offset of the cell's plain part.
    #[inline(always)]
    fn parts_and_plain(&self, i: usize) -> (usize, &'a [u8], usize) {
        let page = self.slotted.page;
        let cell = self.cell(i);
        let shared = if self.fragment_len_at != 0 {
            read_u16(page, cell) as usize
        } else {
            0
        };
        let plain = cell + self.fragment_len_at;
        let fragment_len = read_u16(page, plain) as usize;
        let fragment = plain + PLAIN_CELL_FIXED;
        (shared, &page[fragment..fragment + fragment_len], plain)
    }

    /// Key `restart` without the page prefix, for a restart (a multiple of the interval).
    #[inline]
    fn restart_suffix(&self, restart: usize) -> &'a [u8] {
        self.parts(restart).1
    }

    /// Value `i`.
    #[inline]
    pub fn value(&self, i: usize) -> ValueCell<'a> {
        self.value_at(self.plain_part(i))
    }

    /// The value of the entry whose plain part starts at page offset `plain`, as
    /// [`LeafView::step_key`] and [`LeafView::decode_key`] return it: a scan decodes an
    /// entry's key and value from one slot read.
    #[inline]
    pub fn value_at(&self, plain: usize) -> ValueCell<'a> {
        let page = self.slotted.page;
        let fragment_len = read_u16(page, plain) as usize;
        let word = read_u32(page, plain + VALUE_WORD_AT);
        let payload = plain + PLAIN_CELL_FIXED + fragment_len;
        if word & OVERFLOW_BIT != 0 {
            ValueCell::Overflow {
                first: read_u64(page, payload),
                len: word & !OVERFLOW_BIT,
            }
        } else {
            ValueCell::Inline(&page[payload..payload + word as usize])
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
    /// `i`; `prefix_len` is the length of the page prefix at the start of `key`. Returns
    /// the page offset of entry `i`'s plain part (see [`LeafView::value_at`]).
    #[inline(always)]
    pub fn step_key(&self, i: usize, prefix_len: usize, key: &mut Vec<u8>) -> usize {
        let (shared, fragment, plain) = self.parts_and_plain(i);
        key.truncate(prefix_len + shared);
        key.extend_from_slice(fragment);
        plain
    }

    /// Writes key `i`'s suffix after the first `prefix_len` bytes of `key` (the page
    /// prefix), copying each byte once: its fragment, then, walking back towards its
    /// restart, the fragments of earlier entries that supply the bytes it shares. A jump
    /// into a front-coded run costs one cell read per entry walked, not a copy of every
    /// key. Returns the page offset of entry `i`'s plain part.
    pub fn decode_key(&self, i: usize, prefix_len: usize, key: &mut Vec<u8>) -> usize {
        let (shared, fragment, plain) = self.parts_and_plain(i);
        if shared == 0 {
            // A plain page's entry, or a restart: the fragment is the whole suffix.
            key.truncate(prefix_len);
            key.extend_from_slice(fragment);
            return plain;
        }
        key.truncate(prefix_len);
        key.resize(prefix_len + shared + fragment.len(), 0);
        let out = &mut key[prefix_len..];
        out[shared..].copy_from_slice(fragment);
        // Bytes [0, missing) of the entry before `earlier` are still to be written;
        // validation guarantees that no entry shares more than its predecessor's length.
        let mut missing = shared;
        let mut earlier = i;
        while missing > 0 && earlier > self.restart_of(i) {
            earlier -= 1;
            let (earlier_shared, earlier_fragment) = self.parts(earlier);
            if earlier_shared < missing {
                out[earlier_shared..missing]
                    .copy_from_slice(&earlier_fragment[..missing - earlier_shared]);
                missing = earlier_shared;
            }
        }
        plain
    }

    /// Length of key `i` without the page prefix, without copying bytes.
    fn suffix_len(&self, i: usize) -> usize {
        let mut len = 0;
        for entry in self.restart_of(i)..=i {
            let (shared, fragment) = self.parts(entry);
            len = shared + fragment.len();
        }
        len
    }

    /// Compares the first key with `query` (the caller has checked the leaf is not empty).
    #[inline]
    pub fn cmp_first(&self, query: &[u8]) -> Ordering {
        match query_rest(self.prefix(), query) {
            Ok(rest) => self.restart_suffix(0).cmp(rest),
            Err(order) => order.reverse(),
        }
    }

    /// Compares the key of the last restart (on a plain page, the last key) with `query`;
    /// the caller has checked the leaf is not empty. Needs no decoding.
    #[inline]
    pub fn cmp_last_restart(&self, query: &[u8]) -> Ordering {
        let last = self.restart_of(self.slotted.count - 1);
        match query_rest(self.prefix(), query) {
            Ok(rest) => self.restart_suffix(last).cmp(rest),
            Err(order) => order.reverse(),
        }
    }

    /// Finds `query`: `Ok(i)` when key `i` equals it, else `Err(i)` where it would be
    /// inserted.
    #[inline]
    pub fn search(&self, query: &[u8]) -> Result<usize, usize> {
        let query_suffix = match query_rest(self.prefix(), query) {
            Ok(rest) => rest,
            Err(Ordering::Less) => return Err(0),
            Err(_) => return Err(self.slotted.count),
        };
        match self.locate::<false>(query_suffix) {
            (Ok(i), ..) => Ok(i),
            (Err(i), ..) => Err(i),
        }
    }

    /// Like [`search`](Self::search), and also measures the predecessor against `query`,
    /// from the decoding the search does anyway (longest-prefix lookups need it).
    #[inline]
    pub fn probe(&self, query: &[u8]) -> Probe {
        let prefix_len = self.slotted.prefix_len;
        match query_rest(self.prefix(), query) {
            Ok(query_suffix) => match self.locate::<true>(query_suffix) {
                (Ok(i), ..) => Probe::Found(i),
                (Err(i), matched, len) => Probe::Missing {
                    i,
                    pred_lcp: prefix_len + matched,
                    pred_len: prefix_len + len,
                },
            },
            Err(Ordering::Less) => Probe::Missing {
                i: 0,
                pred_lcp: 0,
                pred_len: 0,
            },
            Err(_) => {
                let count = self.slotted.count;
                Probe::Missing {
                    i: count,
                    pred_lcp: lcp(self.prefix(), query),
                    pred_len: if count == 0 {
                        0
                    } else {
                        prefix_len + self.suffix_len(count - 1)
                    },
                }
            }
        }
    }

    /// Searches for `query_suffix` (a query without the page prefix). Returns the result
    /// and, for `Err(i)` with `i > 0`, the common-prefix length of key `i - 1` (without
    /// the prefix) with `query_suffix` and that key's length.
    ///
    /// Binary search over the restarts, then a forward decode of one restart run that
    /// never copies: it tracks `matched`, the common-prefix length of the previous key
    /// (which is below the query) and the query. An entry that shares more than `matched`
    /// bytes with the previous key differs from the query where the previous key did,
    /// the same way, so it is below the query too and its bytes need not be read;
    /// otherwise its first `shared` bytes are those of the query, and only its fragment
    /// is compared. Without `PRED`, the predecessor's measures are not computed when no
    /// decoding needs them.
    #[inline]
    fn locate<const PRED: bool>(&self, query_suffix: &[u8]) -> Located {
        let count = self.slotted.count;
        let interval = self.restart_interval;
        if interval == 1 {
            return self.locate_plain::<PRED>(query_suffix);
        }
        let (mut low, mut high) = (0usize, count.div_ceil(interval));
        while low < high {
            let mid = low + (high - low) / 2;
            match self.restart_suffix(mid * interval).cmp(query_suffix) {
                Ordering::Less => low = mid + 1,
                Ordering::Greater => high = mid,
                Ordering::Equal => return (Ok(mid * interval), 0, 0),
            }
        }
        if low == 0 {
            return (Err(0), 0, 0);
        }
        let start = (low - 1) * interval;
        let end = (start + interval).min(count);
        let first = self.restart_suffix(start);
        if !PRED && end == start + 1 {
            return (Err(end), 0, 0);
        }
        let mut matched = lcp(first, query_suffix);
        let mut previous_len = first.len();
        for i in start + 1..end {
            let (shared, fragment) = self.parts(i);
            if shared > matched {
                previous_len = shared + fragment.len();
                continue;
            }
            let rest = &query_suffix[shared..];
            let common = lcp(fragment, rest);
            if common == fragment.len() {
                if common == rest.len() {
                    return (Ok(i), 0, 0);
                }
            } else if common == rest.len() || fragment[common] > rest[common] {
                return (Err(i), matched, previous_len);
            }
            matched = shared + common;
            previous_len = shared + fragment.len();
        }
        (Err(end), matched, previous_len)
    }

    /// Key `i` without the page prefix, in a plain page.
    #[inline(always)]
    fn plain_suffix(&self, i: usize) -> &'a [u8] {
        let page = self.slotted.page;
        let cell = self.cell(i);
        let fragment_len = read_u16(page, cell) as usize;
        &page[cell + PLAIN_CELL_FIXED..cell + PLAIN_CELL_FIXED + fragment_len]
    }

    /// [`locate`](Self::locate) in a plain page: a binary search over whole suffixes.
    #[inline]
    fn locate_plain<const PRED: bool>(&self, query_suffix: &[u8]) -> Located {
        let (mut low, mut high) = (0usize, self.slotted.count);
        while low < high {
            let mid = low + (high - low) / 2;
            match self.plain_suffix(mid).cmp(query_suffix) {
                Ordering::Less => low = mid + 1,
                Ordering::Greater => high = mid,
                Ordering::Equal => return (Ok(mid), 0, 0),
            }
        }
        if !PRED || low == 0 {
            return (Err(low), 0, 0);
        }
        let predecessor = self.plain_suffix(low - 1);
        (Err(low), lcp(predecessor, query_suffix), predecessor.len())
    }

    /// Replaces inline value `i` in a private copy of the page with `value` of the same
    /// length.
    pub fn overwrite_inline_value(page: &mut [u8], i: usize, value: &[u8]) -> bool {
        let plain = LeafView::new(page).plain_part(i);
        let fragment_len = read_u16(page, plain) as usize;
        let word = read_u32(page, plain + VALUE_WORD_AT);
        if word & OVERFLOW_BIT != 0 || word as usize != value.len() {
            return false;
        }
        let at = plain + PLAIN_CELL_FIXED + fragment_len;
        page[at..at + value.len()].copy_from_slice(value);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::LEAF_FIXED;
    use super::super::{LeafEntry, LeafNode};
    use super::*;
    use crate::page::slotted::SLOT;
    use crate::test_rng::{key, seeded};
    use rand::RngExt as _;

    #[test]
    fn encode_search_decode_round_trip_with_shared_prefix() {
        let entries: Vec<_> = (0..50u32)
            .map(|i| {
                LeafEntry::inline(
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
            let entries: Vec<_> = keys.iter().map(|k| LeafEntry::inline(k, &k[..1])).collect();
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
                assert_eq!(k[..], e.key[..]);
                // Decoding from the restart (a jump) agrees, whatever the buffer held after
                // the prefix.
                d.truncate(plen);
                d.resize(plen, 0);
                d[..plen].copy_from_slice(v.prefix());
                d.extend_from_slice(b"leftover bytes of another key");
                v.decode_key(i, plen, &mut d);
                assert_eq!(d[..], e.key[..], "entry {i}");
            }
            for _ in 0..200 {
                let mut q = head.clone();
                q.extend(key(&mut rng, 14));
                if rng.random_ratio(1, 4) {
                    q = entries[rng.random_range(0..entries.len())].key.to_vec();
                }
                let want = entries.binary_search_by(|e| e.key[..].cmp(&q[..]));
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
}
