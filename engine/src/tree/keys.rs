//! Key-only listings with optional delimiter roll-up (S3 ListObjectsV2 style).

use std::sync::Arc;

use crate::btree::{Cursor, KeyItem, ListState, ScanBounds, Version};
use crate::error::Result;
use crate::pool::{Access, BufferPool};

/// Builds a key listing.
#[derive(Debug)]
pub struct KeysBuilder {
    pool: Arc<BufferPool>,
    version: Arc<Version>,
    readahead_pages: usize,
    prefix: Vec<u8>,
    delimiter: Option<u8>,
    start_after: Option<Vec<u8>>,
    limit: Option<usize>,
}

impl KeysBuilder {
    pub(crate) fn new(
        pool: Arc<BufferPool>,
        version: Arc<Version>,
        readahead_pages: usize,
    ) -> Self {
        KeysBuilder {
            pool,
            version,
            readahead_pages,
            prefix: Vec::new(),
            delimiter: None,
            start_after: None,
            limit: None,
        }
    }

    /// Only keys starting with `p`.
    pub fn prefix(mut self, p: impl AsRef<[u8]>) -> Self {
        self.prefix = p.as_ref().to_vec();
        self
    }

    /// Roll keys up at the first `d` after the prefix.
    pub fn delimiter(mut self, d: u8) -> Self {
        self.delimiter = Some(d);
        self
    }

    /// Only items greater than `k` (pass the last item of a page to continue).
    pub fn start_after(mut self, k: impl AsRef<[u8]>) -> Self {
        self.start_after = Some(k.as_ref().to_vec());
        self
    }

    /// At most `n` items.
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = Some(n);
        self
    }

    /// Starts the listing.
    pub fn iter(self) -> Keys {
        let mut cursor = Cursor::new(self.pool, self.version, Access::Walk, self.readahead_pages);
        let hi = match crate::btree::prefix_successor(&self.prefix) {
            Some(s) => std::ops::Bound::Excluded(s),
            None => std::ops::Bound::Unbounded,
        };
        cursor.bounds = Some(ScanBounds {
            lo: std::ops::Bound::Included(self.prefix.clone()),
            hi,
        });
        Keys {
            cursor,
            state: ListState::new(self.prefix, self.delimiter, self.start_after),
            left: self.limit,
            failed: false,
        }
    }
}

impl IntoIterator for KeysBuilder {
    type Item = Result<KeyItem>;
    type IntoIter = Keys;
    fn into_iter(self) -> Keys {
        self.iter()
    }
}

/// A running key listing over one snapshot.
#[derive(Debug)]
pub struct Keys {
    cursor: Cursor,
    state: ListState,
    left: Option<usize>,
    failed: bool,
}

impl Iterator for Keys {
    type Item = Result<KeyItem>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.left == Some(0) {
            return None;
        }
        self.cursor.remaining = if self.state.delimiter.is_none() {
            self.left.map(|n| n as u64)
        } else {
            None
        };
        match self.state.next(&mut self.cursor) {
            Ok(Some(item)) => {
                if let Some(n) = &mut self.left {
                    *n -= 1;
                }
                Some(Ok(item))
            }
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
