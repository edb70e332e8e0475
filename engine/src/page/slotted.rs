//! The slotted layout that leaf and inner pages share: the common header, then
//!
//! | offset | size | field                                           |
//! |--------|------|-------------------------------------------------|
//! | 32     | 2    | prefix length P                                 |
//! | 34     | 2    | reserved, 0                                     |
//! | 36     | P    | the prefix                                      |
//! | 36+P   | 2n   | slot array: page offset of each cell, in order  |
//!
//! with the cells packed towards the end of the page.

use std::mem::size_of;

use super::header::{read_u16, COUNT_AT};
use super::HEADER_LEN;

/// Offset of the prefix length.
pub const PREFIX_LEN_AT: usize = HEADER_LEN;
/// Offset of the prefix bytes; everything before it is fixed.
pub const SLOTTED_FIXED: usize = PREFIX_LEN_AT + 2 * size_of::<u16>();
/// Bytes of one slot.
pub const SLOT: usize = size_of::<u16>();

/// The entry count, prefix and slot array of a validated leaf or inner page.
#[derive(Debug, Clone, Copy)]
pub struct Slotted<'a> {
    /// The page.
    pub buf: &'a [u8],
    /// Entries.
    pub n: usize,
    /// Prefix length.
    pub plen: usize,
}

impl<'a> Slotted<'a> {
    /// Reads the count and prefix length.
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Slotted {
            buf,
            n: read_u16(buf, COUNT_AT) as usize,
            plen: read_u16(buf, PREFIX_LEN_AT) as usize,
        }
    }

    /// The prefix.
    #[inline]
    pub fn prefix(&self) -> &'a [u8] {
        &self.buf[SLOTTED_FIXED..SLOTTED_FIXED + self.plen]
    }

    /// Page offset of cell `i`.
    #[inline]
    pub fn cell(&self, i: usize) -> usize {
        read_u16(self.buf, SLOTTED_FIXED + self.plen + SLOT * i) as usize
    }

    /// Checks that the slot array and every cell lie inside the page. `cell_fixed` is the
    /// size of a cell before its variable part; `cell_end(i, offset, fixed)` gets those
    /// first `cell_fixed` bytes of cell `i` and returns where the cell ends, or why it is
    /// invalid. `what` names the page kind in messages. Runs on every page read, so the
    /// loop walks the slot array directly and hands out the fixed part as one slice.
    #[inline]
    pub fn validate(
        buf: &[u8],
        what: &str,
        cell_fixed: usize,
        cell_end: impl Fn(usize, usize, &[u8]) -> Result<usize, String>,
    ) -> Result<(), String> {
        let len = buf.len();
        let s = Slotted::new(buf);
        let slots_start = SLOTTED_FIXED + s.plen;
        let slots_end = slots_start + SLOT * s.n;
        if slots_end > len {
            return Err(format!(
                "{what} header claims {} entries and a {}-byte prefix, more than the page holds",
                s.n, s.plen
            ));
        }
        for (i, slot) in buf[slots_start..slots_end].chunks_exact(SLOT).enumerate() {
            let c = u16::from_le_bytes([slot[0], slot[1]]) as usize;
            let Some(fixed) = buf.get(c..c + cell_fixed).filter(|_| c >= slots_end) else {
                return Err(format!(
                    "{what} slot {i} points outside the cell area ({c})"
                ));
            };
            if cell_end(i, c, fixed)? > len {
                return Err(format!("{what} cell {i} runs past the end of the page"));
            }
        }
        Ok(())
    }
}
