//! The header every page starts with, and its checksum. The one place its layout is
//! written down; the tests below assert it, and docs/format.md explains how a page is
//! checked.
//!
//! Layout (little-endian), `HEADER_LEN` = 32 bytes:
//!
//! | offset | size | field                                                         | constant      |
//! |--------|------|---------------------------------------------------------------|---------------|
//! | 0      | 4    | crc32c of bytes 4..page_size                                  | `CHECKSUM_AT` |
//! | 4      | 1    | kind (`PageKind`, kind.rs: 1 leaf, 2 inner, 3 overflow, 4 free list) | `KIND_AT` |
//! | 5      | 1    | flags (0)                                                     | `FLAGS_AT`    |
//! | 6      | 2    | entry count (leaf: keys, inner: children, free list: extents) | `COUNT_AT`    |
//! | 8      | 8    | this page's own number (catches misdirected writes)           | `PAGE_ID_AT`  |
//! | 16     | 8    | commit sequence that wrote the page                           | `TXN_AT`      |
//! | 24     | 8    | kind-specific: overflow value length, next free-list page     | `AUX_AT`      |

use std::mem::size_of;
use std::path::Path;

use super::error::Corruption;
use super::kind::{PageId, PageKind};
use super::PageError;

/// Offset of the checksum.
pub const CHECKSUM_AT: usize = 0;
/// Offset of the kind byte.
pub const KIND_AT: usize = CHECKSUM_AT + size_of::<u32>();
/// Offset of the flags byte.
pub const FLAGS_AT: usize = KIND_AT + size_of::<u8>();
/// Offset of the entry count.
pub const COUNT_AT: usize = FLAGS_AT + size_of::<u8>();
/// Offset of the page's own number.
pub const PAGE_ID_AT: usize = COUNT_AT + size_of::<u16>();
/// Offset of the commit sequence that wrote the page.
pub const TXN_AT: usize = PAGE_ID_AT + size_of::<u64>();
/// Offset of the kind-specific word.
pub const AUX_AT: usize = TXN_AT + size_of::<u64>();
/// Length of the common header.
pub const HEADER_LEN: usize = AUX_AT + size_of::<u64>();

/// The decoded common header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    /// What the page holds.
    pub kind: PageKind,
    /// Entry count.
    pub count: u16,
    /// The page's own number.
    pub id: PageId,
    /// Commit sequence that wrote it.
    pub txn: u64,
    /// Kind-specific word.
    pub aux: u64,
}

impl PageHeader {
    /// Writes the header fields (not the checksum) into `buf`.
    pub fn write(&self, buf: &mut [u8]) {
        buf[KIND_AT] = self.kind as u8;
        buf[FLAGS_AT] = 0;
        write_u16(buf, COUNT_AT, self.count);
        write_u64(buf, PAGE_ID_AT, self.id);
        write_u64(buf, TXN_AT, self.txn);
        write_u64(buf, AUX_AT, self.aux);
    }

    /// Reads the header of a page that has passed [`verify`].
    pub fn read(buf: &[u8]) -> Option<Self> {
        Some(PageHeader {
            kind: PageKind::from_byte(buf[KIND_AT])?,
            count: read_u16(buf, COUNT_AT),
            id: read_u64(buf, PAGE_ID_AT),
            txn: read_u64(buf, TXN_AT),
            aux: read_u64(buf, AUX_AT),
        })
    }
}

/// Computes and stores the checksum of a fully written page.
pub fn seal(buf: &mut [u8]) {
    let sum = crc32c::crc32c(&buf[KIND_AT..]);
    write_u32(buf, CHECKSUM_AT, sum);
}

/// Checks a page read from `file` at page number `id`: checksum, own number and kind byte.
pub fn verify(buf: &[u8], id: PageId, file: &Path) -> Result<PageHeader, PageError> {
    let stored = read_u32(buf, CHECKSUM_AT);
    let computed = crc32c::crc32c(&buf[KIND_AT..]);
    if stored != computed {
        return Err(PageError::ChecksumMismatch {
            file: file.to_path_buf(),
            page: id,
            stored,
            computed,
        });
    }
    let found = read_u64(buf, PAGE_ID_AT);
    if found != id {
        return Err(PageError::WrongPageId {
            file: file.to_path_buf(),
            page: id,
            found,
        });
    }
    PageHeader::read(buf).ok_or_else(|| Corruption::UnknownKind { byte: buf[KIND_AT] }.at(file, id))
}

/// Compares `prefix ++ suffix` with `query` without building the key.
#[inline]
pub fn cmp_prefixed(prefix: &[u8], suffix: &[u8], query: &[u8]) -> std::cmp::Ordering {
    match query_rest(prefix, query) {
        Ok(rest) => suffix.cmp(rest),
        Err(order) => order.reverse(),
    }
}

/// Where `query` stands against every key that starts with `prefix`: `Ok(rest)` when
/// `query` starts with `prefix` too (compare `rest` with the keys' suffixes), else
/// `Err(Less)` when `query` is below all of them and `Err(Greater)` when above.
#[inline]
pub fn query_rest<'q>(prefix: &[u8], query: &'q [u8]) -> Result<&'q [u8], std::cmp::Ordering> {
    let common = prefix.len().min(query.len());
    match query[..common].cmp(&prefix[..common]) {
        std::cmp::Ordering::Equal if query.len() < prefix.len() => Err(std::cmp::Ordering::Less),
        std::cmp::Ordering::Equal => Ok(&query[prefix.len()..]),
        other => Err(other),
    }
}

/// Length of the longest common prefix of two byte strings.
#[inline]
pub fn lcp(a: &[u8], b: &[u8]) -> usize {
    // A word at a time: longest-prefix lookups and leaf searches take the common prefix
    // of long chain keys. In little-endian words the first differing byte is the lowest
    // differing one.
    let len = a.len().min(b.len());
    let (a, b) = (&a[..len], &b[..len]);
    let mut matched = 0;
    for (word_a, word_b) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let differing = le_word(word_a) ^ le_word(word_b);
        if differing != 0 {
            return matched + (differing.trailing_zeros() / 8) as usize;
        }
        matched += 8;
    }
    while matched < len && a[matched] == b[matched] {
        matched += 1;
    }
    matched
}

/// An 8-byte chunk as a little-endian word.
#[inline(always)]
fn le_word(chunk: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(chunk);
    u64::from_le_bytes(word)
}

/// Defines a reader and a writer of one little-endian integer type at a byte offset.
/// Each reader copies its bytes out with one bounds check and one load (indexing the bytes
/// apart costs one of each per byte).
macro_rules! little_endian {
    ($($int:ty: $read:ident, $write:ident;)*) => {$(
        #[doc = concat!("Reads a little-endian ", stringify!($int), " at `at`.")]
        #[inline]
        pub fn $read(buf: &[u8], at: usize) -> $int {
            let mut bytes = [0u8; size_of::<$int>()];
            bytes.copy_from_slice(&buf[at..at + size_of::<$int>()]);
            <$int>::from_le_bytes(bytes)
        }

        #[doc = concat!("Writes a little-endian ", stringify!($int), " at `at`.")]
        #[inline]
        pub fn $write(buf: &mut [u8], at: usize, value: $int) {
            buf[at..at + size_of::<$int>()].copy_from_slice(&value.to_le_bytes());
        }
    )*};
}

little_endian! {
    u16: read_u16, write_u16;
    u32: read_u32, write_u32;
    u64: read_u64, write_u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcp_agrees_with_the_bytewise_definition() {
        let slow = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
        for len in 0..40usize {
            let base: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(lcp(&base, &base), len);
            for pos in 0..len {
                for delta in [1u8, 0x80, 0xFF] {
                    let mut c = base.clone();
                    c[pos] = c[pos].wrapping_add(delta);
                    assert_eq!(lcp(&base, &c), pos);
                    assert_eq!(lcp(&c, &base), slow(&c, &base));
                    assert_eq!(lcp(&base[..pos], &c), pos);
                    assert_eq!(lcp(&c[..len / 2], &base), slow(&c[..len / 2], &base));
                }
            }
        }
    }

    #[test]
    fn header_offsets_and_sizes_are_the_documented_ones() {
        assert_eq!(
            (
                CHECKSUM_AT,
                KIND_AT,
                FLAGS_AT,
                COUNT_AT,
                PAGE_ID_AT,
                TXN_AT,
                AUX_AT
            ),
            (0, 4, 5, 6, 8, 16, 24)
        );
        assert_eq!(HEADER_LEN, 32);
        let sizes = [
            KIND_AT - CHECKSUM_AT,
            FLAGS_AT - KIND_AT,
            COUNT_AT - FLAGS_AT,
            PAGE_ID_AT - COUNT_AT,
            TXN_AT - PAGE_ID_AT,
            AUX_AT - TXN_AT,
            HEADER_LEN - AUX_AT,
        ];
        assert_eq!(sizes, [4, 1, 1, 2, 8, 8, 8]);
        let mut page = vec![0xEEu8; 64];
        PageHeader {
            kind: PageKind::Inner,
            count: 0x0102,
            id: 0x1112_1314_1516_1718,
            txn: 0x2122_2324_2526_2728,
            aux: 0x3132_3334_3536_3738,
        }
        .write(&mut page);
        assert_eq!(&page[4..8], &[2, 0, 0x02, 0x01]);
        assert_eq!(&page[8..16], &0x1112_1314_1516_1718u64.to_le_bytes());
        assert_eq!(&page[16..24], &0x2122_2324_2526_2728u64.to_le_bytes());
        assert_eq!(&page[24..32], &0x3132_3334_3536_3738u64.to_le_bytes());
        assert_eq!(page[32], 0xEE, "the header ends at byte 32");
        seal(&mut page);
        assert_eq!(read_u32(&page, 0), crc32c::crc32c(&page[4..]));
    }

    #[test]
    fn an_unknown_kind_byte_is_reported_as_such() {
        let mut page = vec![0u8; 4096];
        page[KIND_AT] = 9;
        write_u64(&mut page, PAGE_ID_AT, 3);
        seal(&mut page);
        let err = verify(&page, 3, Path::new("f")).expect_err("kind 9");
        assert!(matches!(
            err,
            PageError::Corrupt {
                page: 3,
                source: Corruption::UnknownKind { byte: 9 },
                ..
            }
        ));
        assert_eq!(
            err.to_string(),
            "f: page 3 is corrupt: unknown page kind byte 9"
        );
    }

    #[test]
    fn header_is_32_bytes_and_checksum_catches_a_flipped_bit() {
        assert_eq!(HEADER_LEN, 32);
        let mut page = vec![0u8; 4096];
        PageHeader {
            kind: PageKind::Leaf,
            count: 3,
            id: 7,
            txn: 9,
            aux: 0,
        }
        .write(&mut page);
        page[100] = 42;
        seal(&mut page);
        let h = verify(&page, 7, Path::new("f")).expect("valid page");
        assert_eq!((h.kind, h.count, h.id, h.txn), (PageKind::Leaf, 3, 7, 9));
        page[200] ^= 0x10;
        let err = verify(&page, 7, Path::new("f")).expect_err("flipped bit");
        let msg = err.to_string();
        assert!(msg.contains("page 7") && msg.contains("checksum"), "{msg}");
        page[200] ^= 0x10;
        assert!(matches!(
            verify(&page, 8, Path::new("f")),
            Err(PageError::WrongPageId { found: 7, .. })
        ));
    }
}
