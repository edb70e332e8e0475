//! Overflow pages: a value too large for its leaf is stored in a run of contiguous pages,
//! each with the common header (kind Overflow, aux = the whole value's length) followed
//! by its slice of the value. The leaf keeps the run's first page and the length.

use super::HEADER_LEN;

/// Value bytes one overflow page carries.
#[inline]
pub fn overflow_payload_per_page(page_size: usize) -> usize {
    page_size - HEADER_LEN
}

/// Pages needed for a value of `len` bytes.
#[inline]
pub fn overflow_pages_for(len: usize, page_size: usize) -> usize {
    len.div_ceil(overflow_payload_per_page(page_size)).max(1)
}
