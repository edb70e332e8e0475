//! Free-list pages, written at each checkpoint: the extents of pages that the checkpointed
//! tree does not use. Chained through the header's aux word (next page, 0 ends the list);
//! the header count is the number of extents in the page. Each extent is
//! `first page u64 | length u32`, little-endian, packed from offset 32.

use std::mem::size_of;

use super::header::{read_u32, read_u64, write_u32, write_u64};
use super::{PageHeader, PageId, PageKind, HEADER_LEN};

/// Bytes of one extent record.
pub const FREELIST_EXTENT_LEN: usize = size_of::<u64>() + size_of::<u32>();

/// Extents one free-list page holds.
fn per_page(page_size: usize) -> usize {
    ((page_size - HEADER_LEN) / FREELIST_EXTENT_LEN).min(u16::MAX as usize)
}

/// Encodes `extents` into pages numbered `ids` (as many as needed, see [`pages_needed`]),
/// written by commit `txn`. Returns the page images, not yet sealed.
pub fn encode_freelist_pages(
    extents: &[(PageId, u32)],
    ids: &[PageId],
    txn: u64,
    page_size: usize,
) -> Vec<Vec<u8>> {
    let per = per_page(page_size);
    let mut pages = Vec::with_capacity(ids.len());
    for (n, id) in ids.iter().enumerate() {
        let chunk = extents
            .get(n * per..((n + 1) * per).min(extents.len()))
            .unwrap_or(&[]);
        let mut buf = vec![0u8; page_size];
        PageHeader {
            kind: PageKind::FreeList,
            count: chunk.len() as u16,
            id: *id,
            txn,
            aux: ids.get(n + 1).copied().unwrap_or(0),
        }
        .write(&mut buf);
        for (j, (first, len)) in chunk.iter().enumerate() {
            let at = HEADER_LEN + j * FREELIST_EXTENT_LEN;
            write_u64(&mut buf, at, *first);
            write_u32(&mut buf, at + size_of::<u64>(), *len);
        }
        pages.push(buf);
    }
    pages
}

/// Pages needed to record `extents` extents.
pub fn pages_needed(extents: usize, page_size: usize) -> usize {
    extents.div_ceil(per_page(page_size))
}

/// Decodes a verified free-list page: its extents and the next page (0 at the end).
pub fn decode_freelist_page(
    buf: &[u8],
    count: u16,
    next: PageId,
) -> Result<(Vec<(PageId, u32)>, PageId), String> {
    let count = count as usize;
    if HEADER_LEN + count * FREELIST_EXTENT_LEN > buf.len() {
        return Err(format!(
            "free-list page claims {count} extents, more than it holds"
        ));
    }
    let extents = (0..count)
        .map(|j| {
            let at = HEADER_LEN + j * FREELIST_EXTENT_LEN;
            (read_u64(buf, at), read_u32(buf, at + size_of::<u64>()))
        })
        .collect();
    Ok((extents, next))
}

pub use pages_needed as freelist_pages_needed;

#[cfg(test)]
mod tests {
    use super::*;

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
