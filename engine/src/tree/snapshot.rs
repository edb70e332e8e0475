//! Snapshots: several reads that see the tree as of one commit.

use std::sync::Arc;

use super::readable::{ReadView, Readable};
use super::shared::Shared;
use crate::btree::{self, Version};
use crate::error::Result;

/// A read view of one commit; its reads are those of [`Readable`]. Holding it keeps the
/// pages of that commit from being reused, so drop it when done.
#[derive(Clone)]
pub struct Snapshot {
    shared: Arc<Shared>,
    version: Arc<Version>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("seq", &self.version.seq)
            .finish_non_exhaustive()
    }
}

impl Readable for Snapshot {
    #[inline]
    fn read_view(&self) -> ReadView<'_> {
        ReadView::held(&self.shared, &self.version)
    }
}

impl Snapshot {
    /// The current version of `shared`.
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        let version = shared.current_version();
        Snapshot { shared, version }
    }

    /// The commit this snapshot sees.
    pub fn seq(&self) -> u64 {
        self.version.seq
    }

    /// Tree height in this snapshot (0 when empty, 1 for a lone leaf).
    pub fn height(&self) -> u32 {
        self.version.height
    }

    /// The leaf page whose key range holds `key`: a diagnostic for I/O accounting.
    pub fn leaf_page_of(&self, key: &[u8]) -> Result<Option<u64>> {
        btree::leaf_page_of(self.shared.pool(), &self.version, key)
    }
}
