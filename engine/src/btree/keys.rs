//! Key-only listing with delimiter roll-up, the way S3 ListObjectsV2 lists a bucket: under
//! a prefix, a key whose remainder holds the delimiter is reported once as the common
//! prefix up to and including the delimiter, and the cursor then seeks past every key
//! under that common prefix instead of walking them. Items (keys and common prefixes)
//! come in ascending order and are all greater than `start_after`, so passing the last
//! item returned as `start_after` continues a listing.

use super::Cursor;
use crate::error::Result;

/// One listing item.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyItem {
    /// A stored key.
    Key(Vec<u8>),
    /// A rolled-up common prefix, ending with the delimiter.
    CommonPrefix(Vec<u8>),
}

impl KeyItem {
    /// The key or common prefix bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            KeyItem::Key(k) | KeyItem::CommonPrefix(k) => k,
        }
    }
}

/// The smallest byte string greater than every string starting with `p`, if any.
#[cfg(test)]
pub fn prefix_successor(p: &[u8]) -> Option<Vec<u8>> {
    let mut s = Vec::new();
    prefix_successor_into(p, &mut s).then_some(s)
}

/// [`prefix_successor`] written into `out` (replacing what it held), so that a caller can
/// bring its own buffer; false, with `out` emptied, when there is none.
pub fn prefix_successor_into(p: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(end) = p.iter().rposition(|&b| b != 0xFF) else {
        return false;
    };
    out.extend_from_slice(&p[..=end]);
    out[end] += 1;
    true
}

/// The state of a listing between items.
#[derive(Debug, Clone)]
pub struct ListState {
    /// Only keys starting with this are listed.
    pub prefix: Vec<u8>,
    /// Roll keys up at this byte after the prefix.
    pub delimiter: Option<u8>,
    /// List only items greater than this.
    pub start_after: Option<Vec<u8>>,
    started: bool,
    done: bool,
    /// Where the cursor seeks past a rolled-up prefix: kept between items, so that a
    /// listing of many common prefixes allocates only the items it returns.
    seek_to: Vec<u8>,
}

impl ListState {
    /// A listing of keys under `prefix`.
    pub fn new(prefix: Vec<u8>, delimiter: Option<u8>, start_after: Option<Vec<u8>>) -> Self {
        ListState {
            prefix,
            delimiter,
            start_after,
            started: false,
            done: false,
            seek_to: Vec::new(),
        }
    }

    /// The next item, or None at the end.
    pub fn next(&mut self, cursor: &mut Cursor) -> Result<Option<KeyItem>> {
        if self.done {
            return Ok(None);
        }
        if !self.started {
            self.started = true;
            match &self.start_after {
                Some(sa) if sa.as_slice() >= self.prefix.as_slice() => cursor.seek_gt(sa)?,
                _ => cursor.seek_ge(&self.prefix)?,
            }
        }
        loop {
            if !cursor.valid() || !cursor.key().starts_with(&self.prefix) {
                self.done = true;
                return Ok(None);
            }
            let plen = self.prefix.len();
            let rolled = self
                .delimiter
                .and_then(|d| cursor.key()[plen..].iter().position(|&b| b == d))
                .map(|pos| cursor.key()[..plen + pos + 1].to_vec());
            match rolled {
                Some(cp) => {
                    if prefix_successor_into(&cp, &mut self.seek_to) {
                        cursor.seek_ge(&self.seek_to)?;
                    } else {
                        self.done = true;
                    }
                    if self
                        .start_after
                        .as_deref()
                        .is_some_and(|sa| cp.as_slice() <= sa)
                    {
                        if self.done {
                            return Ok(None);
                        }
                        continue;
                    }
                    return Ok(Some(KeyItem::CommonPrefix(cp)));
                }
                None => {
                    let key = cursor.key().to_vec();
                    cursor.advance()?;
                    return Ok(Some(KeyItem::Key(key)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_successor;

    #[test]
    fn successor_skips_trailing_ff() {
        assert_eq!(prefix_successor(b"ab/"), Some(b"ab0".to_vec()));
        assert_eq!(prefix_successor(&[1, 0xFF, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_successor(&[0xFF]), None);
        assert_eq!(prefix_successor(b""), None);
    }
}
