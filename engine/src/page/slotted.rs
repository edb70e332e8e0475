//! The slotted layout that leaf and inner pages share: the common header, then
//!
//! | offset | size | field                                           |
//! |--------|------|-------------------------------------------------|
//! | 32     | 2    | prefix length P (`PREFIX_LEN_AT`)               |
//! | 34     | 2    | kind-specific: leaf restart interval, inner 0   |
//! | 36     | P    | the prefix (`SLOTTED_FIXED`)                    |
//! | 36+P   | 2n   | slot array: page offset of each cell, in order  |
//!
//! with the cells packed towards the end of the page. n is the header's entry count.

use std::mem::size_of;

use super::error::Corruption;
use super::header::{read_u16, COUNT_AT};
use super::{PageKind, HEADER_LEN};

/// Offset of the prefix length.
pub const PREFIX_LEN_AT: usize = HEADER_LEN;
/// Offset of the kind-specific u16 after the prefix length (the leaf restart interval).
pub const SLOTTED_WORD_AT: usize = PREFIX_LEN_AT + size_of::<u16>();
/// Offset of the prefix bytes; everything before it is fixed.
pub const SLOTTED_FIXED: usize = SLOTTED_WORD_AT + size_of::<u16>();
/// Bytes of one slot: the u16 page offset of a cell.
pub const SLOT: usize = size_of::<u16>();

/// The entry count, prefix and slot array of a validated leaf or inner page.
#[derive(Debug, Clone, Copy)]
pub struct Slotted<'a> {
    /// The page.
    pub page: &'a [u8],
    /// Entries (the header's count).
    pub count: usize,
    /// Prefix length.
    pub prefix_len: usize,
}

impl<'a> Slotted<'a> {
    /// Reads the count and prefix length.
    #[inline]
    pub fn new(page: &'a [u8]) -> Self {
        Slotted {
            page,
            count: read_u16(page, COUNT_AT) as usize,
            prefix_len: read_u16(page, PREFIX_LEN_AT) as usize,
        }
    }

    /// The prefix.
    #[inline]
    pub fn prefix(&self) -> &'a [u8] {
        &self.page[SLOTTED_FIXED..SLOTTED_FIXED + self.prefix_len]
    }

    /// Page offset of the slot array.
    #[inline]
    pub fn slots_start(&self) -> usize {
        SLOTTED_FIXED + self.prefix_len
    }

    /// Page offset of cell `i`.
    #[inline]
    pub fn cell(&self, i: usize) -> usize {
        read_u16(self.page, self.slots_start() + SLOT * i) as usize
    }

    /// The slot array, checked to lie inside the page.
    #[inline]
    pub fn slots(&self, kind: PageKind) -> Result<&'a [u8], Corruption> {
        let start = self.slots_start();
        let end = start + SLOT * self.count;
        self.page.get(start..end).ok_or(Corruption::SlotsPastEnd {
            kind,
            entries: self.count,
            prefix_len: self.prefix_len,
        })
    }

    /// Checks that the slot array and every cell lie inside the page. `cell_fixed` is the
    /// size of a cell before its variable part; `cell_end(i, offset, fixed)` gets those
    /// first `cell_fixed` bytes of cell `i` and returns where the cell ends, or what is
    /// wrong with it. Runs on every page read, so the loop walks the slot array directly
    /// and hands out the fixed part as one slice.
    #[inline]
    pub fn validate(
        page: &[u8],
        kind: PageKind,
        cell_fixed: usize,
        cell_end: impl Fn(usize, usize, &[u8]) -> Result<usize, Corruption>,
    ) -> Result<(), Corruption> {
        let slotted = Slotted::new(page);
        let slots = slotted.slots(kind)?;
        let slots_end = slotted.slots_start() + slots.len();
        for (i, slot) in slots.chunks_exact(SLOT).enumerate() {
            let offset = u16::from_le_bytes([slot[0], slot[1]]) as usize;
            let Some(fixed) = page
                .get(offset..offset + cell_fixed)
                .filter(|_| offset >= slots_end)
            else {
                return Err(Corruption::SlotOutsideCells {
                    kind,
                    slot: i,
                    offset,
                });
            };
            if cell_end(i, offset, fixed)? > page.len() {
                return Err(Corruption::CellPastEnd { kind, cell: i });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slotted_offsets_are_the_documented_ones() {
        assert_eq!(
            (PREFIX_LEN_AT, SLOTTED_WORD_AT, SLOTTED_FIXED),
            (32, 34, 36)
        );
        assert_eq!(SLOT, 2);
    }
}
