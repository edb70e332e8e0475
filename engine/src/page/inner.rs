//! Inner pages: separator keys, child page numbers and per-child entry counts.
//!
//! | offset   | size | field                                                        |
//! |----------|------|--------------------------------------------------------------|
//! | 0        | 32   | common header (count = number of children n >= 1)           |
//! | 32       | 2    | prefix length P shared by separators 1..n                    |
//! | 34       | 2    | reserved, 0                                                  |
//! | 36       | P    | the prefix                                                   |
//! | 36+P     | 2n   | slot array: page offset of each cell, in key order           |
//! | ...      |      | cells, packed towards the end of the page                    |
//!
//! The slotted part is `slotted.rs`'s. A cell (`INNER_CELL_FIXED` bytes before its suffix)
//! is `suffix_len u16 | child u64 (CHILD_AT) | entry count u64 (COUNT_IN_CELL_AT) | suffix`. Child `i` holds the
//! keys `k` with `sep_i <= k < sep_{i+1}`; cell 0 has no separator (its lower bound is the
//! node's own). The per-child entry counts let `count(range)` add whole subtrees instead of
//! walking their entries, and let readahead know exactly how many leaves a scan still needs.

use std::cmp::Ordering;
use std::mem::size_of;

use super::error::Corruption;
use super::header::{cmp_prefixed, lcp, query_rest, read_u16, read_u64, write_u16, write_u64};
use super::slotted::{Slotted, PREFIX_LEN_AT, SLOT, SLOTTED_FIXED};
use super::{PageHeader, PageId, PageKind};

/// Offset of the prefix bytes; everything before it is fixed.
pub const INNER_FIXED: usize = SLOTTED_FIXED;
/// Bytes of a cell before its suffix.
pub const INNER_CELL_FIXED: usize = size_of::<u16>() + 2 * size_of::<u64>();
/// Offset in a cell of the child page number, after the suffix length.
const CHILD_AT: usize = size_of::<u16>();
/// Offset in a cell of the child's entry count.
const COUNT_IN_CELL_AT: usize = CHILD_AT + size_of::<u64>();
const _: () = assert!(COUNT_IN_CELL_AT + size_of::<u64>() == INNER_CELL_FIXED);
/// Children an inner page holds at least, all but the first with a separator as long as
/// the longest key accepted ([`inner_max_separator_len`]). Then the splitter's bound on any
/// two adjacent children (which counts the separator the second gives up to the parent)
/// fits in a page, so every piece of a split but the last holds two children or more: a
/// split always finds its cuts, and a root over any number of pieces is built in levels
/// that shrink.
pub const MIN_INNER_CHILDREN: usize = 3;
/// Pages 0 and 1 hold the superblock: no child points there.
const FIRST_DATA_PAGE: PageId = 2;

/// The longest separator of which a `page_size`-byte inner page holds
/// [`MIN_INNER_CHILDREN`] children, all but the first with such a separator and no page
/// prefix (4 KiB: 2,000 bytes).
pub const fn inner_max_separator_len(page_size: usize) -> usize {
    (page_size - INNER_FIXED - MIN_INNER_CHILDREN * (SLOT + INNER_CELL_FIXED))
        / (MIN_INNER_CHILDREN - 1)
}

/// A read-only view of a validated inner page.
#[derive(Debug, Clone, Copy)]
pub struct InnerView<'a> {
    slotted: Slotted<'a>,
}

impl<'a> InnerView<'a> {
    /// Views a validated inner page.
    #[inline]
    pub fn new(page: &'a [u8]) -> Self {
        InnerView {
            slotted: Slotted::new(page),
        }
    }

    /// Number of children.
    #[inline]
    pub fn len(&self) -> usize {
        self.slotted.count
    }

    /// Prefix shared by separators 1..n.
    #[inline]
    pub fn prefix(&self) -> &'a [u8] {
        self.slotted.prefix()
    }

    #[inline]
    fn cell(&self, i: usize) -> usize {
        self.slotted.cell(i)
    }

    /// Page number of child `i`.
    #[inline]
    pub fn child(&self, i: usize) -> PageId {
        read_u64(self.slotted.page, self.cell(i) + CHILD_AT)
    }

    /// Entries under child `i`.
    #[inline]
    pub fn count(&self, i: usize) -> u64 {
        read_u64(self.slotted.page, self.cell(i) + COUNT_IN_CELL_AT)
    }

    /// Sum of the entries under every child.
    pub fn total(&self) -> u64 {
        (0..self.slotted.count).map(|i| self.count(i)).sum()
    }

    /// Separator `i` (1..n) without the prefix.
    #[inline]
    pub fn sep_suffix(&self, i: usize) -> &'a [u8] {
        let cell = self.cell(i);
        let suffix_len = read_u16(self.slotted.page, cell) as usize;
        &self.slotted.page[cell + INNER_CELL_FIXED..cell + INNER_CELL_FIXED + suffix_len]
    }

    /// Writes separator `i` (1..n) into `out`.
    pub fn sep_into(&self, i: usize, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(self.prefix());
        out.extend_from_slice(self.sep_suffix(i));
    }

    /// Compares separator `i` (1..n) with `q`.
    #[inline]
    pub fn cmp_sep(&self, i: usize, query: &[u8]) -> Ordering {
        cmp_prefixed(self.prefix(), self.sep_suffix(i), query)
    }

    /// The child whose key range holds `query`: the last `i` with `sep_i <= query`, or 0.
    #[inline]
    pub fn search(&self, query: &[u8]) -> usize {
        if self.slotted.count <= 1 {
            return 0;
        }
        let query_suffix = match query_rest(self.prefix(), query) {
            Ok(rest) => rest,
            Err(Ordering::Less) => return 0,
            Err(_) => return self.slotted.count - 1,
        };
        let (mut lo, mut hi) = (1usize, self.slotted.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.sep_suffix(mid) <= query_suffix {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo - 1
    }

    /// Checks that every slot and cell lies inside the page. Called once per page load.
    pub fn validate(page: &[u8]) -> Result<(), Corruption> {
        if Slotted::new(page).count == 0 {
            return Err(Corruption::NoChild);
        }
        Slotted::validate(page, PageKind::Inner, INNER_CELL_FIXED, |i, cell, fixed| {
            let child = read_u64(fixed, CHILD_AT);
            if child < FIRST_DATA_PAGE {
                return Err(Corruption::ReservedChild { cell: i, child });
            }
            Ok(cell + INNER_CELL_FIXED + read_u16(fixed, 0) as usize)
        })
    }

    /// Points child `i` of a private copy of the page at `child` holding `count` entries.
    pub fn patch_child(page: &mut [u8], i: usize, child: PageId, count: u64) {
        let cell = InnerView::new(page).cell(i);
        write_u64(page, cell + CHILD_AT, child);
        write_u64(page, cell + COUNT_IN_CELL_AT, count);
    }
}

/// An inner node decoded for modification by a writer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InnerNode {
    /// Separator of each child; `seps[0]` is unused and kept empty.
    pub seps: Vec<Vec<u8>>,
    /// Child page numbers.
    pub children: Vec<PageId>,
    /// Entries under each child.
    pub counts: Vec<u64>,
}

impl InnerNode {
    /// Decodes a validated inner page.
    pub fn decode(view: &InnerView<'_>) -> Self {
        let children = view.len();
        let mut node = InnerNode {
            seps: Vec::with_capacity(children),
            children: Vec::with_capacity(children),
            counts: Vec::with_capacity(children),
        };
        for i in 0..children {
            let mut sep = Vec::new();
            if i > 0 {
                view.sep_into(i, &mut sep);
            }
            node.seps.push(sep);
            node.children.push(view.child(i));
            node.counts.push(view.count(i));
        }
        node
    }

    /// Number of children.
    pub fn len(&self) -> usize {
        self.children.len()
    }

    /// True when the node has no child.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// Entries under the whole node.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Prefix length shared by separators 1..n of `seps`.
    pub fn prefix_len(seps: &[Vec<u8>]) -> usize {
        match seps.len() {
            0 | 1 => 0,
            2 => seps[1].len().min(u16::MAX as usize),
            n => lcp(&seps[1], &seps[n - 1]).min(u16::MAX as usize),
        }
    }

    /// Bytes child `i` takes (slot and cell) under a prefix of `prefix_len` bytes.
    pub fn child_size(sep: &[u8], i: usize, prefix_len: usize) -> usize {
        let suffix = if i == 0 { 0 } else { sep.len() - prefix_len };
        SLOT + INNER_CELL_FIXED + suffix
    }

    /// Bytes the node takes when encoded as one page.
    pub fn encoded_len(&self) -> usize {
        let prefix_len = Self::prefix_len(&self.seps);
        INNER_FIXED
            + prefix_len
            + self
                .seps
                .iter()
                .enumerate()
                .map(|(i, sep)| Self::child_size(sep, i, prefix_len))
                .sum::<usize>()
    }

    /// Encodes the node as inner page `id` written by commit `txn` into `out` (one page,
    /// whatever it held: every byte is written). The caller has checked that it fits.
    /// Does not seal.
    pub fn encode(&self, id: PageId, txn: u64, out: &mut [u8]) {
        // Every byte is written once: the header here, the slots and cells below, zeros in
        // the free space between them; `out` may hold anything (a recycled page).
        out[..INNER_FIXED].fill(0);
        let prefix_len = Self::prefix_len(&self.seps);
        PageHeader {
            kind: PageKind::Inner,
            count: self.children.len() as u16,
            id,
            txn,
            aux: 0,
        }
        .write(out);
        write_u16(out, PREFIX_LEN_AT, prefix_len as u16);
        if self.seps.len() > 1 {
            out[INNER_FIXED..INNER_FIXED + prefix_len].copy_from_slice(&self.seps[1][..prefix_len]);
        }
        let mut end = out.len();
        for i in 0..self.children.len() {
            let suffix: &[u8] = if i == 0 {
                &[]
            } else {
                &self.seps[i][prefix_len..]
            };
            end -= INNER_CELL_FIXED + suffix.len();
            write_u16(out, INNER_FIXED + prefix_len + SLOT * i, end as u16);
            write_u16(out, end, suffix.len() as u16);
            write_u64(out, end + CHILD_AT, self.children[i]);
            write_u64(out, end + COUNT_IN_CELL_AT, self.counts[i]);
            let body = end + INNER_CELL_FIXED;
            out[body..body + suffix.len()].copy_from_slice(suffix);
        }
        out[INNER_FIXED + prefix_len + SLOT * self.children.len()..end].fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node with children 7 and 8 (70 and 80 entries) split at `sep`, encoded as page 3
    /// of 256 bytes.
    fn two_children(sep: &[u8]) -> (InnerNode, Vec<u8>) {
        let node = InnerNode {
            seps: vec![vec![], sep.to_vec()],
            children: vec![7, 8],
            counts: vec![70, 80],
        };
        let mut page = vec![0u8; 256];
        node.encode(3, 1, &mut page);
        (node, page)
    }

    #[test]
    fn inner_offsets_are_the_documented_ones() {
        assert_eq!(INNER_FIXED, 36);
        assert_eq!((CHILD_AT, COUNT_IN_CELL_AT, INNER_CELL_FIXED), (2, 10, 18));
        let (node, page) = two_children(b"ab");
        // Prefix "ab" at 36, then the two slots; cell 1 is the last one written, lowest.
        assert_eq!(read_u16(&page, 32), 2);
        assert_eq!(&page[36..38], b"ab");
        let cell0 = read_u16(&page, 38) as usize;
        let cell1 = read_u16(&page, 40) as usize;
        assert_eq!((cell0, cell1), (256 - 18, 256 - 36));
        assert_eq!(read_u16(&page, cell0), 0);
        assert_eq!(read_u64(&page, cell0 + 2), 7);
        assert_eq!(read_u64(&page, cell0 + 10), 70);
        assert_eq!(read_u16(&page, cell1), 0, "separator 1 is all prefix");
        assert_eq!(read_u64(&page, cell1 + 2), 8);
        assert_eq!(node.encoded_len(), 36 + 2 + 2 * (2 + 18));
    }

    #[test]
    fn an_inner_page_holds_three_children_with_separators_of_the_longest_length() {
        assert_eq!(inner_max_separator_len(4096), 2000);
        let sep = inner_max_separator_len(4096);
        // Two separators of that length that share no prefix.
        let node = InnerNode {
            seps: vec![vec![], vec![b'a'; sep], vec![b'b'; sep]],
            children: vec![7, 8, 9],
            counts: vec![1, 1, 1],
        };
        assert_eq!(node.encoded_len(), 4096);
        let mut page = vec![0u8; 4096];
        node.encode(3, 1, &mut page);
        InnerView::validate(&page).expect("valid");
        assert_eq!(InnerNode::decode(&InnerView::new(&page)), node);
        assert!(inner_max_separator_len(8192) > sep);
    }

    #[test]
    fn validate_names_what_is_wrong() {
        let (_, page) = two_children(b"b");
        InnerView::validate(&page).expect("valid");
        let mut bad = page.clone();
        InnerView::patch_child(&mut bad, 1, 1, 1);
        assert_eq!(
            InnerView::validate(&bad),
            Err(Corruption::ReservedChild { cell: 1, child: 1 })
        );
        let mut bad = page.clone();
        write_u16(&mut bad, super::super::header::COUNT_AT, 0);
        assert_eq!(InnerView::validate(&bad), Err(Corruption::NoChild));
        let mut bad = page.clone();
        // Prefix "b" at 36, so the slot array starts at 37.
        write_u16(&mut bad, 37, 250);
        assert_eq!(
            InnerView::validate(&bad),
            Err(Corruption::SlotOutsideCells {
                kind: PageKind::Inner,
                slot: 0,
                offset: 250
            })
        );
    }

    #[test]
    fn search_routes_keys_to_children_and_round_trips() {
        let node = InnerNode {
            seps: vec![vec![], b"kv/b".to_vec(), b"kv/d".to_vec(), b"kv/f".to_vec()],
            children: vec![10, 11, 12, 13],
            counts: vec![5, 6, 7, 8],
        };
        let mut page = vec![0u8; 4096];
        node.encode(3, 1, &mut page);
        InnerView::validate(&page).expect("valid");
        // A recycled buffer's old bytes leave no trace.
        let mut recycled = vec![0xA5u8; 4096];
        node.encode(3, 1, &mut recycled);
        assert_eq!(recycled, page);
        let v = InnerView::new(&page);
        assert_eq!(v.prefix(), b"kv/");
        assert_eq!(v.search(b"a"), 0);
        assert_eq!(v.search(b"kv/a"), 0);
        assert_eq!(v.search(b"kv/b"), 1);
        assert_eq!(v.search(b"kv/c"), 1);
        assert_eq!(v.search(b"kv/d"), 2);
        assert_eq!(v.search(b"kv/zz"), 3);
        assert_eq!(v.search(b"kv"), 0);
        assert_eq!(v.search(b"z"), 3);
        assert_eq!(v.total(), 26);
        assert_eq!(InnerNode::decode(&v), node);
        InnerView::patch_child(&mut page, 2, 99, 1);
        let v = InnerView::new(&page);
        assert_eq!((v.child(2), v.count(2)), (99, 1));
    }
}
