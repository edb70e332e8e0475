//! A committed version of the tree: what a snapshot sees.

use std::sync::{Arc, OnceLock};

use crate::error::Result;
use crate::filter::KeyFilter;
use crate::page::KeyLengths;
use crate::pool::Page;

/// The tree as of one commit. Readers hold it for the life of a snapshot; its root page
/// stays pinned in memory while it is the current version.
#[derive(Debug)]
pub struct Version {
    /// Commit sequence.
    pub seq: u64,
    /// Root page, `None` for an empty tree.
    pub root: Option<Arc<Page>>,
    /// Levels: 0 for an empty tree, 1 for a lone leaf.
    pub height: u32,
    /// Entries in the tree.
    pub entries: u64,
    /// A superset of the lengths of its keys (every length unless told otherwise).
    pub key_lengths: KeyLengths,
    /// A filter holding at least its keys (`None`: no filter; see `crate::filter`).
    pub key_filter: Option<Arc<KeyFilter>>,
    /// The smallest key, found on first use (None: the tree holds no key).
    first_key: OnceLock<Option<Box<[u8]>>>,
}

impl Version {
    /// The tree as of commit `seq`.
    pub fn new(seq: u64, root: Option<Arc<Page>>, height: u32, entries: u64) -> Self {
        Version {
            seq,
            root,
            height,
            entries,
            key_lengths: KeyLengths::all(),
            key_filter: None,
            first_key: OnceLock::new(),
        }
    }

    /// The version with `key_lengths` as its key-length set.
    pub fn with_key_lengths(mut self, key_lengths: KeyLengths) -> Self {
        self.key_lengths = key_lengths;
        self
    }

    /// The version with `filter` as its stored-key filter.
    pub fn with_key_filter(mut self, filter: Option<Arc<KeyFilter>>) -> Self {
        self.key_filter = filter;
        self
    }

    /// The empty tree as of commit `seq`.
    pub fn empty(seq: u64) -> Self {
        Version::new(seq, None, 0, 0).with_key_lengths(KeyLengths::empty())
    }

    /// The smallest key, computed by `compute` the first time it is asked for and then
    /// kept (the descent that finds it lives with the other descents, in `read`).
    pub(crate) fn first_key_or_init(
        &self,
        compute: impl FnOnce() -> Result<Option<Box<[u8]>>>,
    ) -> Result<Option<&[u8]>> {
        if let Some(k) = self.first_key.get() {
            return Ok(k.as_deref());
        }
        let key = compute()?;
        Ok(self.first_key.get_or_init(|| key).as_deref())
    }
}
