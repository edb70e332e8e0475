//! Buffers a write transaction fills and the next one reuses. A KV-cache trace commits
//! tens of thousands of small batches of long keys; allocating these afresh for each one
//! grew them by doubling every time (callgrind: a fifth of the trace's allocator work), so
//! the tree's writer keeps them between commits, under its lock.

use crate::page::KeySpans;

/// A buffer grown past this by one large batch is dropped after it instead of being kept.
const KEEP_BYTES: usize = 1 << 20;

/// The reusable buffers of one writer.
#[derive(Debug, Default)]
pub struct WriteScratch {
    /// The log record being built: room for its header, then the encoded mutations.
    pub(crate) log: Vec<u8>,
    /// A copy of the changed leaf's image (its values are borrowed from there).
    pub(crate) leaf_image: Vec<u8>,
    /// The changed leaf's whole keys, one after another.
    pub(crate) leaf_keys: Vec<u8>,
    /// Where each of those keys lies.
    pub(crate) leaf_spans: KeySpans,
    /// Each of those keys' common prefix with the key before it.
    pub(crate) leaf_lcps: Vec<u32>,
    /// The same for the entries of the leaf being written.
    pub(crate) merged_lcps: Vec<u32>,
}

impl WriteScratch {
    /// Empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Drops any buffer that one unusually large batch left oversized.
    pub(crate) fn trimmed(mut self) -> Self {
        fn trim<T>(v: &mut Vec<T>) {
            if v.capacity() * size_of::<T>() > KEEP_BYTES {
                *v = Vec::new();
            }
        }
        trim(&mut self.log);
        trim(&mut self.leaf_image);
        trim(&mut self.leaf_keys);
        trim(&mut self.leaf_spans);
        trim(&mut self.leaf_lcps);
        trim(&mut self.merged_lcps);
        self
    }
}
