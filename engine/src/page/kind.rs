//! What a page is: its number in the file and the kind byte of its header.

/// A page number: byte offset divided by the page size.
pub type PageId = u64;

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
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_bytes_are_the_documented_ones() {
        let kinds = [
            PageKind::Leaf,
            PageKind::Inner,
            PageKind::Overflow,
            PageKind::FreeList,
        ];
        assert_eq!(kinds.map(|kind| kind as u8), [1, 2, 3, 4]);
        assert!(kinds
            .iter()
            .all(|&kind| PageKind::from_byte(kind as u8) == Some(kind)));
        assert_eq!(PageKind::from_byte(0), None);
        assert_eq!(PageKind::from_byte(5), None);
        assert_eq!(
            kinds.map(PageKind::name),
            ["leaf", "inner", "overflow", "free-list"]
        );
    }
}
