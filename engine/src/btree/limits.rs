//! The limits on keys and values every write checks before it touches a page.

use crate::error::{Error, Result};
use crate::frame::MIN_PAGE_SIZE;
use crate::page::{inner_max_separator_len, leaf_max_key_len};

/// Longest key accepted: 2,000 bytes, the most the smallest page (4 KiB) allows on both
/// levels of the tree (docs/format.md, "Key lengths").
/// - A leaf holds two entries of such keys with overflowed values (up to 2,012 bytes,
///   `leaf_max_key_len`), so two entries of any size share a page. A value shorter than
///   its key stays inline while two such entries fit (`value_fits_inline`): a 40-byte
///   value under a 1,740-byte path key costs no overflow page.
/// - An inner page holds three children, two of them with separators this long and no
///   page prefix (up to 2,000 bytes, `inner_max_separator_len`). A separator is a prefix
///   of the first key to its right, so it is never longer than a key; for path keys,
///   where a key is a prefix of the next, it is the shorter key and one byte more. Then
///   every piece of an overfull inner page's split but the last holds two children or
///   more, so splits end and a new root over any number of pieces is built in levels
///   that shrink.
pub const MAX_KEY_LEN: usize = {
    let page = MIN_PAGE_SIZE as usize;
    let (leaf, inner) = (leaf_max_key_len(page), inner_max_separator_len(page));
    if leaf < inner {
        leaf
    } else {
        inner
    }
};
// The KV-cache trace's longest path key is 1,740 bytes ("kv/llama70b" and 247 segments of
// 7 bytes), and the layout's fields hold lengths in u16.
const _: () = assert!(MAX_KEY_LEN >= 1800 && MAX_KEY_LEN <= u16::MAX as usize);
// Every key length has its bit in the key-length set.
const _: () = assert!(MAX_KEY_LEN < crate::page::KEY_LENGTH_BITS);
/// Largest value accepted (stored through overflow pages beyond the inline limit).
pub const MAX_VALUE_LEN: usize = 64 * 1024 * 1024;

/// Refuses an empty key or one longer than [`MAX_KEY_LEN`].
pub fn check_key(key: &[u8]) -> Result<()> {
    if key.is_empty() {
        return Err(Error::EmptyKey { max: MAX_KEY_LEN });
    }
    if key.len() > MAX_KEY_LEN {
        return Err(Error::KeyTooLarge {
            len: key.len(),
            max: MAX_KEY_LEN,
        });
    }
    Ok(())
}

/// Checks the key of a delete: an empty key is refused as for a write; a key longer than
/// [`MAX_KEY_LEN`] cannot be stored, so deleting it is a no-op (false), as deleting any
/// absent key is.
pub fn check_delete_key(key: &[u8]) -> Result<bool> {
    if key.len() > MAX_KEY_LEN {
        return Ok(false);
    }
    check_key(key).map(|()| true)
}

/// Refuses a value longer than [`MAX_VALUE_LEN`].
pub fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_LEN {
        return Err(Error::ValueTooLarge {
            len: value.len(),
            max: MAX_VALUE_LEN,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_one_to_the_maximum_bytes_and_values_up_to_the_maximum_pass() {
        assert_eq!(MAX_KEY_LEN, 2000);
        assert!(matches!(check_key(b""), Err(Error::EmptyKey { max: 2000 })));
        assert!(check_key(b"k").is_ok());
        assert!(
            check_key(&[b'k'; 1740]).is_ok(),
            "the trace's longest path key"
        );
        assert!(check_key(&[b'k'; MAX_KEY_LEN]).is_ok());
        assert!(matches!(
            check_key(&[b'k'; MAX_KEY_LEN + 1]),
            Err(Error::KeyTooLarge {
                len: 2001,
                max: 2000
            })
        ));
        assert!(matches!(check_delete_key(b""), Err(Error::EmptyKey { .. })));
        assert!(matches!(check_delete_key(&[b'k'; MAX_KEY_LEN]), Ok(true)));
        assert!(matches!(
            check_delete_key(&[b'k'; MAX_KEY_LEN + 1]),
            Ok(false)
        ));
        assert!(check_value(b"").is_ok());
        assert!(matches!(
            check_value(&vec![0; MAX_VALUE_LEN + 1]),
            Err(Error::ValueTooLarge { .. })
        ));
    }
}
