//! The leaf page layout: sorted keys, front-coded under a page-wide prefix, with inline
//! values or overflow references. The one place the layout is written down; the tests
//! below assert it, and docs/format.md explains it.
//!
//! | offset | size | field                                                    | constant        |
//! |--------|------|----------------------------------------------------------|-----------------|
//! | 0      | 32   | common header (count = number of keys n)                 | `HEADER_LEN`    |
//! | 32     | 2    | prefix length P: bytes every key in the page starts with | `PREFIX_LEN_AT` |
//! | 34     | 2    | restart interval R: 1 (plain) or 16 (front-coded)        | `RESTART_AT`    |
//! | 36     | P    | the prefix                                               | `LEAF_FIXED`    |
//! | 36+P   | 2n   | slot array: page offset of each cell, in key order       | `SLOT`          |
//! | ...    |      | free space                                               |                 |
//! | ...    |      | cells, packed towards the end of the page                |                 |
//!
//! A cell, front-coded page (R > 1), `LEAF_CELL_FIXED` = 8 bytes before the fragment:
//!
//! | cell offset | size     | field                                               |
//! |-------------|----------|-----------------------------------------------------|
//! | 0           | 2        | shared: bytes taken from the previous key (`SHARED_LEN`) |
//! | 2           | 2        | fragment length F                                   |
//! | 4           | 4        | value word                                          |
//! | 8           | F        | fragment: the key's bytes after the shared ones     |
//! | 8+F         | V or 8   | payload                                             |
//!
//! A cell, plain page (R = 1): the same without `shared`, `PLAIN_CELL_FIXED` = 6 bytes
//! before the fragment (fragment length at 0, value word at 2, fragment at 6).
//!
//! Key `i` without the page prefix is the first `shared` bytes of key `i - 1` (without the
//! prefix) followed by its fragment. Entries `0, R, 2R, ...` are restarts: their `shared`
//! is 0, so their fragment is the whole key after the prefix, and a search binary-searches
//! them without decoding anything, then decodes forward at most `R - 1` entries. In a
//! plain page every entry is a restart. The encoder front-codes a page only when that
//! saves at least an eighth of its bytes (long keys that differ in their last bytes, as in
//! KV-cache chains); keys that are already short after the page prefix (dataset
//! manifests) stay plain and are searched as fast as before.
//!
//! The value word's bit 31 (`OVERFLOW_BIT`) marks an overflow value; its low 31 bits are
//! the value's length V. The payload is the value itself, or the u64 number of the first
//! page of its overflow run.

use std::mem::size_of;

use crate::page::slotted::{SLOT, SLOTTED_FIXED, SLOTTED_WORD_AT};

/// Offset of the prefix bytes; everything before it is fixed.
pub const LEAF_FIXED: usize = SLOTTED_FIXED;
/// Offset of the restart interval: the slotted layout's kind-specific word.
pub const RESTART_AT: usize = SLOTTED_WORD_AT;
/// Bytes of the `shared` field that starts a front-coded cell.
pub const SHARED_LEN: usize = size_of::<u16>();
/// Offset of the value word after the fragment length (in a front-coded cell, both follow
/// `shared`).
pub const VALUE_WORD_AT: usize = size_of::<u16>();
/// Bytes of a plain cell before its key fragment: `fragment length u16 | value word u32`.
pub const PLAIN_CELL_FIXED: usize = VALUE_WORD_AT + size_of::<u32>();
/// Bytes of a front-coded cell before its key fragment (the larger cell header, which
/// the inline-value limit assumes).
pub const LEAF_CELL_FIXED: usize = SHARED_LEN + PLAIN_CELL_FIXED;
/// Restart interval of a front-coded page: every 16th key is stored whole.
pub const LEAF_RESTART: usize = 16;
/// Bit of the value word that marks an overflow value.
pub const OVERFLOW_BIT: u32 = 1 << 31;
/// Payload bytes of an overflow value: the first page of its run.
pub const OVERFLOW_PAYLOAD: usize = size_of::<u64>();
/// An inline value's slot and front-coded cell, whole key included, take at most this
/// share (1/4) of a page's bytes after the fixed part, so that a leaf of such entries holds
/// at least four.
const INLINE_SHARE: usize = 4;
/// An entry made long by its key rather than its value (the value shorter than the key: a
/// 40-byte value under a path key of hundreds of blocks) keeps its value inline while a
/// leaf holds this many such entries: overflowing the value would at most double the
/// leaf's entries for a page per entry. Every leaf holds at least this many entries of
/// any key up to the longest accepted ([`leaf_max_key_len`]), inline or overflowed.
pub const MIN_LEAF_ENTRIES: usize = 2;

/// Offset, within a cell, of its fragment length: after `shared` when the page is
/// front-coded (`restart_interval` > 1), at the start when it is plain.
#[inline]
pub fn fragment_len_at(restart_interval: usize) -> usize {
    if restart_interval > 1 {
        SHARED_LEN
    } else {
        0
    }
}

/// Payload bytes in a cell whose value word is `word`.
#[inline]
pub fn payload_len(word: u32) -> usize {
    if word & OVERFLOW_BIT != 0 {
        OVERFLOW_PAYLOAD
    } else {
        word as usize
    }
}

/// Bytes an entry of a `key_len`-byte key whose value takes `stored` bytes in its cell
/// takes at most in a leaf: its slot and a front-coded cell holding the whole key. The
/// page prefix and front coding only make it smaller, so a leaf holds `n` entries whose
/// `entry_bytes` add up to at most `page_size - LEAF_FIXED`.
#[inline]
pub const fn entry_bytes(key_len: usize, stored: usize) -> usize {
    SLOT + LEAF_CELL_FIXED + key_len + stored
}

/// The most one of `entries` equal entries may take for all of them to fit in a leaf.
#[inline]
const fn leaf_share(page_size: usize, entries: usize) -> usize {
    (page_size - LEAF_FIXED) / entries
}

/// The longest key of which a `page_size`-byte leaf holds [`MIN_LEAF_ENTRIES`] entries
/// with overflowed values (4 KiB: 2,012 bytes).
pub const fn leaf_max_key_len(page_size: usize) -> usize {
    leaf_share(page_size, MIN_LEAF_ENTRIES) - entry_bytes(0, OVERFLOW_PAYLOAD)
}

/// True when a value of `value_len` bytes under a key of `key_len` bytes is stored in its
/// leaf, false when it goes to an overflow run: the rule of every writer (transactions and
/// the bulk loader) for `page_size`-byte pages. Inline when the entry takes at most a
/// quarter of the leaf (`INLINE_SHARE`), or when its value is shorter than its key and it
/// takes at most half ([`MIN_LEAF_ENTRIES`]). The second rule needs a key of more than
/// 503 bytes in a 4 KiB page (an entry of two such halves exceeds the quarter): shorter
/// keys meet only the first, the rule before keys could be longer than 1,024 bytes.
#[inline]
pub fn value_fits_inline(page_size: usize, key_len: usize, value_len: usize) -> bool {
    let inline = entry_bytes(key_len, value_len);
    inline <= leaf_share(page_size, INLINE_SHARE)
        || (value_len < key_len && inline <= leaf_share(page_size, MIN_LEAF_ENTRIES))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::slotted::PREFIX_LEN_AT;
    use crate::page::HEADER_LEN;

    #[test]
    fn leaf_offsets_and_sizes_are_the_documented_ones() {
        assert_eq!(
            (HEADER_LEN, PREFIX_LEN_AT, RESTART_AT, LEAF_FIXED),
            (32, 32, 34, 36)
        );
        assert_eq!((SLOT, SHARED_LEN, VALUE_WORD_AT), (2, 2, 2));
        assert_eq!((PLAIN_CELL_FIXED, LEAF_CELL_FIXED), (6, 8));
        assert_eq!((fragment_len_at(LEAF_RESTART), fragment_len_at(1)), (2, 0));
        assert_eq!(LEAF_RESTART, 16);
        assert_eq!(OVERFLOW_BIT, 0x8000_0000);
        assert_eq!((payload_len(40), payload_len(OVERFLOW_BIT | 40)), (40, 8));
    }

    #[test]
    fn the_inline_limit_is_a_quarter_of_the_usable_page() {
        // (4096 - 36) / 4 = 1015 bytes for slot, cell header, key and value.
        assert_eq!(entry_bytes(5, 1000), 2 + 8 + 5 + 1000);
        assert!(value_fits_inline(4096, 5, 1015 - 2 - 8 - 5));
        assert!(!value_fits_inline(4096, 5, 1015 - 2 - 8 - 5 + 1));
        assert!(value_fits_inline(16384, 1024, 3000));
        assert!(!value_fits_inline(4096, 500, 1500));
        assert!(
            !value_fits_inline(4096, 900, 1100),
            "the value makes it long"
        );
    }

    #[test]
    fn keys_of_up_to_503_bytes_keep_the_quarter_rule() {
        let quarter = |key_len: usize, value_len: usize| 2 + 8 + key_len + value_len <= 1015;
        for key_len in 1..=503 {
            for value_len in 0..=2100 {
                assert_eq!(
                    value_fits_inline(4096, key_len, value_len),
                    quarter(key_len, value_len),
                    "{key_len}-byte key, {value_len}-byte value"
                );
            }
        }
        assert!(value_fits_inline(4096, 504, 503) && !quarter(504, 503));
    }

    #[test]
    fn a_value_shorter_than_its_key_stays_inline_while_two_entries_fit() {
        // (4096 - 36) / 2 = 2030 bytes for slot, cell header, key and value.
        assert!(value_fits_inline(4096, 966, 40), "a path key of 136 blocks");
        assert!(value_fits_inline(4096, 998, 100));
        assert!(
            !value_fits_inline(4096, 998, 998),
            "not shorter than its key"
        );
        assert!(value_fits_inline(4096, 1024, 0));
        assert!(
            value_fits_inline(4096, 1740, 40),
            "a path key of 247 blocks"
        );
        assert!(value_fits_inline(4096, 1740, 2030 - 2 - 8 - 1740));
        assert!(!value_fits_inline(4096, 1740, 2030 - 2 - 8 - 1740 + 1));
        assert!(value_fits_inline(4096, 2000, 20));
        assert!(!value_fits_inline(4096, 2000, 40));
        // 8 KiB: (8192 - 36) / 2 = 4078 bytes.
        assert!(value_fits_inline(8192, 2000, 100));
        assert!(!value_fits_inline(8192, 1000, 1100));
    }

    #[test]
    fn a_leaf_holds_two_entries_of_the_longest_key_with_overflowed_values() {
        assert_eq!(leaf_max_key_len(4096), 2012);
        let entry = entry_bytes(leaf_max_key_len(4096), OVERFLOW_PAYLOAD);
        assert!(LEAF_FIXED + MIN_LEAF_ENTRIES * entry <= 4096);
        assert!(LEAF_FIXED + MIN_LEAF_ENTRIES * (entry + 1) > 4096);
        assert!(leaf_max_key_len(8192) > leaf_max_key_len(4096));
    }
}
