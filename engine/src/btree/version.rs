//! A committed version of the tree: what a snapshot sees.

use std::sync::{Arc, OnceLock};

use super::read::child;
use crate::error::Result;
use crate::pool::{Access, BufferPool, Page};

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
            first_key: OnceLock::new(),
        }
    }

    /// The empty tree as of commit `seq`.
    pub fn empty(seq: u64) -> Self {
        Version::new(seq, None, 0, 0)
    }

    /// The smallest key of this version (None when it holds none): one descent along
    /// the first children the first time, then kept. Longest-prefix lookups use it to
    /// stop as soon as a candidate is below every key, instead of descending to the
    /// first leaf to find nothing there.
    pub fn first_key(&self, pool: &BufferPool) -> Result<Option<&[u8]>> {
        if let Some(k) = self.first_key.get() {
            return Ok(k.as_deref());
        }
        let key = match &self.root {
            None => None,
            Some(root) => {
                let mut page = root.clone();
                for level in (0..self.height - 1).rev() {
                    page = child(pool, &page, 0, level, Access::Walk)?;
                }
                let leaf = page.leaf();
                (!leaf.is_empty()).then(|| {
                    let mut k = Vec::new();
                    leaf.key_into(0, &mut k);
                    k.into_boxed_slice()
                })
            }
        };
        let _ = self.first_key.set(key);
        Ok(self.first_key.get().and_then(|k| k.as_deref()))
    }
}
