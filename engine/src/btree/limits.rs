//! The limits on keys and values every write checks before it touches a page.

use crate::error::{Error, Result};

/// Longest key accepted.
pub const MAX_KEY_LEN: usize = 1024;
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
        assert!(matches!(check_key(b""), Err(Error::EmptyKey { max: 1024 })));
        assert!(check_key(b"k").is_ok());
        assert!(check_key(&[b'k'; MAX_KEY_LEN]).is_ok());
        assert!(matches!(
            check_key(&[b'k'; MAX_KEY_LEN + 1]),
            Err(Error::KeyTooLarge {
                len: 1025,
                max: 1024
            })
        ));
        assert!(check_value(b"").is_ok());
        assert!(matches!(
            check_value(&vec![0; MAX_VALUE_LEN + 1]),
            Err(Error::ValueTooLarge { .. })
        ));
    }
}
