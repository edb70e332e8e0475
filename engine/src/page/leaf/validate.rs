//! Checking a leaf page before anything reads it: every slot and cell inside the page and
//! every key decodable, so that the accessors of [`LeafView`] cannot read out of bounds.

use super::layout::{payload_len, LEAF_CELL_FIXED, PLAIN_CELL_FIXED, RESTART_AT};
use super::view::LeafView;
use crate::page::error::Corruption;
use crate::page::header::read_u16;
use crate::page::slotted::{Slotted, SLOT};
use crate::page::PageKind;

impl LeafView<'_> {
    /// Checks that every slot and cell lies inside the page and that every key decodes
    /// (restarts share nothing, no entry shares more than its predecessor's length), so
    /// that the accessors cannot read out of bounds. Called once when a page enters
    /// memory.
    pub fn validate(page: &[u8]) -> Result<(), Corruption> {
        let slotted = Slotted::new(page);
        let interval = read_u16(page, RESTART_AT) as usize;
        if !interval.is_power_of_two() {
            return Err(Corruption::RestartInterval { interval });
        }
        let slots = slotted.slots(PageKind::Leaf)?;
        let slots_end = slotted.slots_start() + slots.len();
        let cells = Cells {
            page,
            slots,
            slots_end,
            prefix_len: slotted.prefix_len,
        };
        // Runs on every page read: one tight loop per layout.
        if interval == 1 {
            cells.validate_plain()
        } else {
            cells.validate_front_coded(interval)
        }
    }
}

/// The cells of a leaf page whose slot array lies inside it.
struct Cells<'a> {
    page: &'a [u8],
    slots: &'a [u8],
    slots_end: usize,
    prefix_len: usize,
}

impl Cells<'_> {
    /// Each slot's cell offset with the first `fixed` bytes of its cell, or the slot
    /// that points where no such cell fits.
    #[inline]
    fn cell(&self, slot: usize, bytes: &[u8], fixed: usize) -> Result<(usize, &[u8]), Corruption> {
        let offset = u16::from_le_bytes([bytes[0], bytes[1]]) as usize;
        match self
            .page
            .get(offset..offset + fixed)
            .filter(|_| offset >= self.slots_end)
        {
            Some(header) => Ok((offset, header)),
            None => Err(Corruption::SlotOutsideCells {
                kind: PageKind::Leaf,
                slot,
                offset,
            }),
        }
    }

    /// Checks the end of cell `i`, which starts at `offset`, has `fixed` header bytes,
    /// a `fragment_len`-byte fragment and the value word `word`.
    #[inline]
    fn check_end(
        &self,
        i: usize,
        offset: usize,
        fixed: usize,
        fragment_len: usize,
        word: u32,
    ) -> Result<(), Corruption> {
        if offset + fixed + fragment_len + payload_len(word) > self.page.len() {
            return Err(Corruption::CellPastEnd {
                kind: PageKind::Leaf,
                cell: i,
            });
        }
        Ok(())
    }

    fn validate_plain(&self) -> Result<(), Corruption> {
        for (i, slot) in self.slots.chunks_exact(SLOT).enumerate() {
            let (offset, header) = self.cell(i, slot, PLAIN_CELL_FIXED)?;
            let fragment_len = u16::from_le_bytes([header[0], header[1]]) as usize;
            let word = u32::from_le_bytes([header[2], header[3], header[4], header[5]]);
            if self.prefix_len + fragment_len == 0 {
                return Err(Corruption::EmptyKey { cell: i });
            }
            self.check_end(i, offset, PLAIN_CELL_FIXED, fragment_len, word)?;
        }
        Ok(())
    }

    fn validate_front_coded(&self, interval: usize) -> Result<(), Corruption> {
        let mut previous_len = 0usize;
        // Entries until the next restart (0: this one is).
        let mut to_restart = 0usize;
        for (i, slot) in self.slots.chunks_exact(SLOT).enumerate() {
            let (offset, header) = self.cell(i, slot, LEAF_CELL_FIXED)?;
            let shared = u16::from_le_bytes([header[0], header[1]]) as usize;
            let fragment_len = u16::from_le_bytes([header[2], header[3]]) as usize;
            let word = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
            let restart = to_restart == 0;
            to_restart = if restart {
                interval - 1
            } else {
                to_restart - 1
            };
            if shared != 0 && restart {
                return Err(Corruption::RestartShares {
                    cell: i,
                    shared,
                    previous_len,
                });
            }
            if shared > previous_len {
                return Err(Corruption::SharesTooMuch {
                    cell: i,
                    shared,
                    previous_len,
                });
            }
            if self.prefix_len + shared + fragment_len == 0 {
                return Err(Corruption::EmptyKey { cell: i });
            }
            self.check_end(i, offset, LEAF_CELL_FIXED, fragment_len, word)?;
            previous_len = shared + fragment_len;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::{LEAF_FIXED, LEAF_RESTART};
    use super::super::{LeafEntry, LeafNode};
    use super::*;
    use crate::page::header::write_u16;

    /// Pairs of long keys (52 bytes) that differ in their last byte: front-coded.
    fn front_coded_page() -> Vec<u8> {
        let entries: Vec<_> = (0..20u8)
            .map(|i| {
                let mut k = vec![b'a' + i / 2];
                k.extend([b'x'; 50]);
                k.push(b'0' + i % 2);
                LeafEntry::inline(&k, b"v")
            })
            .collect();
        let mut page = vec![0u8; 4096];
        LeafNode::encode(&entries, 1, 1, &mut page);
        page
    }

    #[test]
    fn validate_rejects_a_restart_that_shares_and_an_overlong_share() {
        let page = front_coded_page();
        LeafView::validate(&page).expect("valid");
        let v = LeafView::new(&page);
        assert_eq!(v.restart_interval(), LEAF_RESTART);
        let (c16, c3) = (v.cell(16), v.cell(3));
        let mut bad = page.clone();
        write_u16(&mut bad, c16, 1);
        assert!(LeafView::validate(&bad).is_err());
        let mut bad = page.clone();
        write_u16(&mut bad, c3, 100);
        assert!(LeafView::validate(&bad).is_err());
    }

    #[test]
    fn validate_rejects_a_slot_past_the_page() {
        let mut page = vec![0u8; 4096];
        LeafNode::encode(&[LeafEntry::inline(b"a", b"1")], 1, 1, &mut page);
        write_u16(&mut page, LEAF_FIXED + 1, 4095);
        assert!(LeafView::validate(&page).is_err());
    }

    #[test]
    fn each_rule_is_reported_with_what_broke_it() {
        let page = front_coded_page();
        let view = LeafView::new(&page);
        let (cell16, cell3, cell0) = (view.cell(16), view.cell(3), view.cell(0));
        let damaged = |at: usize, value: u16| {
            let mut bad = page.clone();
            write_u16(&mut bad, at, value);
            LeafView::validate(&bad).expect_err("damaged")
        };
        // Entries 15 and 16 are 52 bytes long; entry 2 is too.
        assert_eq!(
            damaged(cell16, 1),
            Corruption::RestartShares {
                cell: 16,
                shared: 1,
                previous_len: 52
            }
        );
        assert_eq!(
            damaged(cell3, 100),
            Corruption::SharesTooMuch {
                cell: 3,
                shared: 100,
                previous_len: 52
            }
        );
        assert_eq!(
            damaged(RESTART_AT, 3),
            Corruption::RestartInterval { interval: 3 }
        );
        assert_eq!(
            damaged(cell0 + 2, 4000),
            Corruption::CellPastEnd {
                kind: PageKind::Leaf,
                cell: 0
            }
        );
        assert_eq!(
            damaged(crate::page::header::COUNT_AT, 2100),
            Corruption::SlotsPastEnd {
                kind: PageKind::Leaf,
                entries: 2100,
                prefix_len: 0
            }
        );
        let message = damaged(cell3, 100).to_string();
        assert_eq!(message, "leaf cell 3 shares 100 bytes with a 52-byte key");
        // Two one-byte keys share no prefix; a fragment length of 0 leaves key 0 empty.
        let mut plain = vec![0u8; 4096];
        let two = [LeafEntry::inline(b"a", b"1"), LeafEntry::inline(b"b", b"2")];
        LeafNode::encode(&two, 1, 1, &mut plain);
        let cell = LeafView::new(&plain).cell(0);
        write_u16(&mut plain, cell, 0);
        assert_eq!(
            LeafView::validate(&plain),
            Err(Corruption::EmptyKey { cell: 0 })
        );
    }
}
