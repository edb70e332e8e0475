//! Key-only listings with optional delimiter roll-up (S3 ListObjectsV2 style).

use std::ops::Bound;

use super::builder::{into_iter_by_iter, setters};
use super::scan::{prefix_end, recycle, ScanSource};
use super::spare;
use crate::btree::{Cursor, KeyItem, ListState};
use crate::error::Result;

/// Builds a key listing.
#[derive(Debug)]
pub struct KeysBuilder {
    source: ScanSource,
    prefix: Vec<u8>,
    delimiter: Option<u8>,
    start_after: Option<Vec<u8>>,
    limit: Option<usize>,
}

impl KeysBuilder {
    pub(crate) fn new(source: ScanSource) -> Self {
        KeysBuilder {
            source,
            prefix: Vec::new(),
            delimiter: None,
            start_after: None,
            limit: None,
        }
    }

    setters! {
        /// Only keys starting with `p`.
        prefix(p: impl AsRef<[u8]>) => prefix = spare::copy(p.as_ref());
        /// Roll keys up at the first `d` after the prefix.
        delimiter(d: u8) => delimiter = Some(d);
        /// Only items greater than `k` (pass the last item of a page to continue).
        start_after(k: impl AsRef<[u8]>) => start_after = Some(spare::copy(k.as_ref()));
        /// At most `n` items.
        limit(n: usize) => limit = Some(n);
    }

    /// Starts the listing.
    pub fn iter(self) -> Keys {
        let hi = prefix_end(&self.prefix);
        let cursor = self
            .source
            .cursor(Bound::Included(spare::copy(&self.prefix)), hi);
        Keys {
            cursor,
            state: ListState::new(self.prefix, self.delimiter, self.start_after),
            left: self.limit,
            failed: false,
        }
    }
}

into_iter_by_iter!(KeysBuilder => Keys, Result<KeyItem>);

/// A running key listing over one snapshot.
#[derive(Debug)]
pub struct Keys {
    cursor: Cursor,
    state: ListState,
    left: Option<usize>,
    failed: bool,
}

/// A listing's buffers go to the next scan on this thread, as a range scan's do.
impl Drop for Keys {
    fn drop(&mut self) {
        recycle(&mut self.cursor);
        spare::give(std::mem::take(&mut self.state.prefix));
        if let Some(sa) = self.state.start_after.take() {
            spare::give(sa);
        }
    }
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
