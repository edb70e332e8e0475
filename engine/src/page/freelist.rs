//! Free-list pages, written at each checkpoint: the extents of pages that the checkpointed
//! tree does not use. Chained through the header's aux word (next page, 0 ends the list);
//! the header count is the number of extents in the page.
//!
//! | offset        | size | field                                      |
//! |---------------|------|--------------------------------------------|
//! | 0             | 32   | common header (count = extents, aux = next) |
//! | 32 + 12j      | 8    | extent j: first page                       |
//! | 32 + 12j + 8  | 4    | extent j: length in pages                  |
//!
//! `FREELIST_EXTENT_LEN` = 12 bytes per extent, packed, little-endian.

use std::mem::size_of;

use super::error::Corruption;
use super::header::{read_u32, read_u64, write_u32, write_u64};
use super::{PageHeader, PageId, PageKind, HEADER_LEN};

/// Offset of the first extent.
const EXTENTS_AT: usize = HEADER_LEN;
/// Offset of an extent's length within the extent, after its first page.
const EXTENT_LEN_AT: usize = size_of::<u64>();
/// Bytes of one extent record.
pub const FREELIST_EXTENT_LEN: usize = EXTENT_LEN_AT + size_of::<u32>();

/// Extents one free-list page holds.
fn per_page(page_size: usize) -> usize {
    ((page_size - EXTENTS_AT) / FREELIST_EXTENT_LEN).min(u16::MAX as usize)
}

/// Page offset of extent `j`.
fn extent_at(j: usize) -> usize {
    EXTENTS_AT + j * FREELIST_EXTENT_LEN
}

/// Encodes `extents` into pages numbered `ids` (as many as needed, see [`pages_needed`]),
/// written by commit `txn`. Returns the page images, not yet sealed.
pub fn encode_freelist_pages(
    extents: &[(PageId, u32)],
    ids: &[PageId],
    txn: u64,
    page_size: usize,
) -> Vec<Vec<u8>> {
    let per_page = per_page(page_size);
    let mut pages = Vec::with_capacity(ids.len());
    for (index, id) in ids.iter().enumerate() {
        let chunk = extents
            .get(index * per_page..((index + 1) * per_page).min(extents.len()))
            .unwrap_or(&[]);
        let mut page = vec![0u8; page_size];
        PageHeader {
            kind: PageKind::FreeList,
            count: chunk.len() as u16,
            id: *id,
            txn,
            aux: ids.get(index + 1).copied().unwrap_or(0),
        }
        .write(&mut page);
        for (j, (first, len)) in chunk.iter().enumerate() {
            write_u64(&mut page, extent_at(j), *first);
            write_u32(&mut page, extent_at(j) + EXTENT_LEN_AT, *len);
        }
        pages.push(page);
    }
    pages
}

/// Pages needed to record `extents` extents.
pub fn pages_needed(extents: usize, page_size: usize) -> usize {
    extents.div_ceil(per_page(page_size))
}

/// Decodes a verified free-list page: its extents and the next page (0 at the end).
pub fn decode_freelist_page(
    page: &[u8],
    count: u16,
    next: PageId,
) -> Result<(Vec<(PageId, u32)>, PageId), Corruption> {
    let count = count as usize;
    if extent_at(count) > page.len() {
        return Err(Corruption::FreeListOverfull { extents: count });
    }
    let extents = (0..count)
        .map(|j| {
            let at = extent_at(j);
            (read_u64(page, at), read_u32(page, at + EXTENT_LEN_AT))
        })
        .collect();
    Ok((extents, next))
}

pub use pages_needed as freelist_pages_needed;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freelist_offsets_are_the_documented_ones() {
        assert_eq!(
            (EXTENTS_AT, EXTENT_LEN_AT, FREELIST_EXTENT_LEN),
            (32, 8, 12)
        );
        assert_eq!(per_page(4096), (4096 - 32) / 12);
        let pages =
            encode_freelist_pages(&[(5, 6), (0x0102_0304_0506_0708, 9)], &[40, 41], 3, 4096);
        let page = &pages[0];
        let header = PageHeader::read(page).expect("header");
        assert_eq!(
            (header.kind, header.count, header.aux),
            (PageKind::FreeList, 2, 41)
        );
        assert_eq!(read_u64(page, 32), 5);
        assert_eq!(read_u32(page, 40), 6);
        assert_eq!(read_u64(page, 44), 0x0102_0304_0506_0708);
        assert_eq!(read_u32(page, 52), 9);
        assert_eq!(PageHeader::read(&pages[1]).map(|h| h.aux), Some(0));
        assert_eq!(
            decode_freelist_page(page, 400, 0),
            Err(Corruption::FreeListOverfull { extents: 400 })
        );
    }

    #[test]
    fn extents_round_trip_across_pages() {
        let extents: Vec<(PageId, u32)> =
            (0..700).map(|i| (i * 10 + 2, (i % 7 + 1) as u32)).collect();
        let n = pages_needed(extents.len(), 4096);
        assert_eq!(n, 3);
        let ids = [40, 41, 42];
        let pages = encode_freelist_pages(&extents, &ids, 5, 4096);
        let mut back = Vec::new();
        for (i, p) in pages.iter().enumerate() {
            let h = PageHeader::read(p).expect("header");
            let (ex, next) = decode_freelist_page(p, h.count, h.aux).expect("decode");
            assert_eq!(next, ids.get(i + 1).copied().unwrap_or(0));
            back.extend(ex);
        }
        assert_eq!(back, extents);
    }
}
