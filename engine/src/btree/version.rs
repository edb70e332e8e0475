//! A committed version of the tree: what a snapshot sees.

use std::sync::Arc;

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
}

impl Version {
    /// The empty tree as of commit `seq`.
    pub fn empty(seq: u64) -> Self {
        Version {
            seq,
            root: None,
            height: 0,
            entries: 0,
        }
    }
}
