//! Overflow pages: a value too large for its leaf is stored in a run of contiguous pages.
//! The leaf keeps the run's first page and the length.
//!
//! | offset | size          | field                                                  |
//! |--------|---------------|--------------------------------------------------------|
//! | 0      | 32            | common header (kind 3, aux = the whole value's length) |
//! | 32     | page_size - 32 | page `j`'s slice of the value (`SLICE_AT`), zero-padded |
//!
//! Page `j` of the run carries value bytes `j * (page_size - 32)` onwards.

use super::HEADER_LEN;

/// Offset of the page's slice of the value: right after the common header.
const SLICE_AT: usize = HEADER_LEN;

/// Value bytes one overflow page carries.
#[inline]
pub fn overflow_payload_per_page(page_size: usize) -> usize {
    page_size - SLICE_AT
}

/// Pages needed for a value of `len` bytes.
#[inline]
pub fn overflow_pages_for(len: usize, page_size: usize) -> usize {
    len.div_ceil(overflow_payload_per_page(page_size)).max(1)
}

/// Encodes `value` as a sealed run of overflow pages starting at page `first`, written by
/// commit `txn`.
pub fn encode_overflow_run(
    value: &[u8],
    first: super::PageId,
    txn: u64,
    page_size: usize,
) -> Vec<u8> {
    let per_page = overflow_payload_per_page(page_size);
    let pages = overflow_pages_for(value.len(), page_size);
    let mut run = vec![0u8; pages * page_size];
    for (j, page) in run.chunks_exact_mut(page_size).enumerate() {
        super::PageHeader {
            kind: super::PageKind::Overflow,
            count: 0,
            id: first + j as u64,
            txn,
            aux: value.len() as u64,
        }
        .write(page);
        let slice = &value[(j * per_page).min(value.len())..((j + 1) * per_page).min(value.len())];
        page[SLICE_AT..SLICE_AT + slice.len()].copy_from_slice(slice);
        super::seal(page);
    }
    run
}

/// Appends the value held in an overflow run to `out`. Returns the number of the first page
/// that does not belong to a value of `len` bytes, if any.
pub fn decode_overflow_run(
    run: &[u8],
    len: u32,
    page_size: usize,
    out: &mut Vec<u8>,
) -> Result<(), super::PageId> {
    let per_page = overflow_payload_per_page(page_size);
    let mut left = len as usize;
    for chunk in run.chunks_exact(page_size) {
        let header = super::PageHeader::read(chunk);
        if header.map(|header| header.aux) != Some(u64::from(len)) {
            return Err(header.map_or(0, |header| header.id));
        }
        let take = left.min(per_page);
        out.extend_from_slice(&chunk[SLICE_AT..SLICE_AT + take]);
        left -= take;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_offsets_are_the_documented_ones() {
        assert_eq!(SLICE_AT, 32);
        assert_eq!(overflow_payload_per_page(4096), 4064);
        let value: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let run = encode_overflow_run(&value, 10, 2, 4096);
        let second = &run[4096..];
        let header = super::super::PageHeader::read(second).expect("header");
        assert_eq!(
            (header.kind, header.id, header.aux),
            (super::super::PageKind::Overflow, 11, 5000)
        );
        assert_eq!(&second[32..32 + 5000 - 4064], &value[4064..]);
        assert!(second[32 + 5000 - 4064..].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_value_round_trips_through_a_run() {
        let v: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let run = encode_overflow_run(&v, 40, 3, 4096);
        assert_eq!(run.len(), 3 * 4096);
        let mut out = Vec::new();
        assert_eq!(decode_overflow_run(&run, 10_000, 4096, &mut out), Ok(()));
        assert_eq!(out, v);
        assert_eq!(
            decode_overflow_run(&run, 9_999, 4096, &mut Vec::new()),
            Err(40)
        );
    }
}
