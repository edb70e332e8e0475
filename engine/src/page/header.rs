//! The header every page starts with, and its checksum.
//!
//! Layout (little-endian), `HEADER_LEN` = 32 bytes:
//!
//! | offset | size | field                                                        |
//! |--------|------|--------------------------------------------------------------|
//! | 0      | 4    | crc32c of bytes 4..page_size                                 |
//! | 4      | 1    | kind (`PageKind`)                                            |
//! | 5      | 1    | flags (0)                                                    |
//! | 6      | 2    | entry count (leaf: keys, inner: children, free list: extents) |
//! | 8      | 8    | this page's own number (catches misdirected writes)          |
//! | 16     | 8    | commit sequence that wrote the page                          |
//! | 24     | 8    | kind-specific: overflow value length, next free-list page    |

use std::mem::size_of;
use std::path::Path;

use super::PageError;

/// A page number: byte offset divided by the page size.
pub type PageId = u64;

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

/// What a page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PageKind {
    /// Sorted keys with their values (or overflow references).
    Leaf = 1,
    /// Separator keys, child page numbers and per-child entry counts.
    Inner = 2,
    /// A slice of a value too large to keep in its leaf.
    Overflow = 3,
    /// A list of free page extents, written at checkpoints.
    FreeList = 4,
}

impl PageKind {
    /// Parses a kind byte.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(PageKind::Leaf),
            2 => Some(PageKind::Inner),
            3 => Some(PageKind::Overflow),
            4 => Some(PageKind::FreeList),
            _ => None,
        }
    }

    /// Name used in error messages.
    pub fn name(self) -> &'static str {
        match self {
            PageKind::Leaf => "leaf",
            PageKind::Inner => "inner",
            PageKind::Overflow => "overflow",
            PageKind::FreeList => "free-list",
        }
    }
}

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
    PageHeader::read(buf).ok_or_else(|| PageError::Malformed {
        file: file.to_path_buf(),
        page: id,
        reason: format!("unknown page kind byte {}", buf[KIND_AT]),
    })
}

/// Compares `prefix ++ suffix` with `q` without building the key.
#[inline]
pub fn cmp_prefixed(prefix: &[u8], suffix: &[u8], q: &[u8]) -> std::cmp::Ordering {
    match query_rest(prefix, q) {
        Ok(rest) => suffix.cmp(rest),
        Err(o) => o.reverse(),
    }
}

/// Where `q` stands against every key that starts with `prefix`: `Ok(rest)` when `q`
/// starts with `prefix` too (compare `rest` with the keys' suffixes), else `Err(Less)`
/// when `q` is below all of them and `Err(Greater)` when above.
#[inline]
pub fn query_rest<'q>(prefix: &[u8], q: &'q [u8]) -> Result<&'q [u8], std::cmp::Ordering> {
    let m = prefix.len().min(q.len());
    match q[..m].cmp(&prefix[..m]) {
        std::cmp::Ordering::Equal if q.len() < prefix.len() => Err(std::cmp::Ordering::Less),
        std::cmp::Ordering::Equal => Ok(&q[prefix.len()..]),
        other => Err(other),
    }
}

/// Length of the longest common prefix of two byte strings.
#[inline]
pub fn lcp(a: &[u8], b: &[u8]) -> usize {
    // A word at a time: longest-prefix lookups and leaf searches take the common prefix
    // of long chain keys. In little-endian words the first differing byte is the lowest
    // differing one.
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut i = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let d = le_word(x) ^ le_word(y);
        if d != 0 {
            return i + (d.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// An 8-byte chunk as a little-endian word.
#[inline(always)]
fn le_word(s: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(s);
    u64::from_le_bytes(w)
}

/// Reads a little-endian u16 at `at`.
#[inline]
pub fn read_u16(buf: &[u8], at: usize) -> u16 {
    // One bounds check and one load (indexing the two bytes apart costs two of each).
    let mut b = [0u8; 2];
    b.copy_from_slice(&buf[at..at + 2]);
    u16::from_le_bytes(b)
}

/// Reads a little-endian u32 at `at`.
#[inline]
pub fn read_u32(buf: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[at..at + 4]);
    u32::from_le_bytes(b)
}

/// Reads a little-endian u64 at `at`.
#[inline]
pub fn read_u64(buf: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_le_bytes(b)
}

/// Writes a little-endian u16 at `at`.
#[inline]
pub fn write_u16(buf: &mut [u8], at: usize, v: u16) {
    buf[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// Writes a little-endian u32 at `at`.
#[inline]
pub fn write_u32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes a little-endian u64 at `at`.
#[inline]
pub fn write_u64(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
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
