//! What every scan starts from: the pool and the version it reads, and the bounds of a
//! key prefix.

use std::ops::Bound;
use std::sync::Arc;

use super::spare;
use crate::btree::{prefix_successor_into, Cursor, ScanBounds, Version};
use crate::pool::{Access, BufferPool};

/// The pool, the version and the readahead cap a range scan or a listing reads with.
#[derive(Debug)]
pub(crate) struct ScanSource {
    pool: Arc<BufferPool>,
    version: Arc<Version>,
    readahead_pages: usize,
}

impl ScanSource {
    pub(crate) fn new(
        pool: Arc<BufferPool>,
        version: Arc<Version>,
        readahead_pages: usize,
    ) -> Self {
        ScanSource {
            pool,
            version,
            readahead_pages,
        }
    }

    /// A cursor over the keys within `lo..hi`, reading pages as a walk (with readahead),
    /// on buffers a finished scan of this thread left (see [`recycle`]).
    pub(crate) fn cursor(self, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Cursor {
        let mut cursor = Cursor::with_buffers(
            self.pool,
            self.version,
            Access::Walk,
            self.readahead_pages,
            spare::path(),
            spare::bytes(),
        );
        cursor.bounds = Some(ScanBounds { lo, hi });
        cursor
    }
}

/// Hands a finished scan's cursor buffers (path, key, bounds) to the next scan on this
/// thread; the cursor is left without an entry.
pub(crate) fn recycle(cursor: &mut Cursor) {
    let (path, key, bounds) = cursor.take_buffers();
    spare::give_path(path);
    spare::give(key);
    if let Some(b) = bounds {
        spare::give_bound(b.lo);
        spare::give_bound(b.hi);
    }
}

/// The exclusive upper bound of the keys that start with `prefix` (unbounded when no key
/// is above them all, as for an empty prefix or one of 0xFF bytes only), in a spare
/// buffer.
pub(crate) fn prefix_end(prefix: &[u8]) -> Bound<Vec<u8>> {
    let mut s = spare::bytes();
    if prefix_successor_into(prefix, &mut s) {
        Bound::Excluded(s)
    } else {
        spare::give(s);
        Bound::Unbounded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_ends_at_its_successor_and_one_of_ff_bytes_never_ends() {
        assert_eq!(prefix_end(b"ds/"), Bound::Excluded(b"ds0".to_vec()));
        assert_eq!(prefix_end(b"a\xff\xff"), Bound::Excluded(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), Bound::Unbounded);
        assert_eq!(prefix_end(b""), Bound::Unbounded);
        assert_eq!(
            prefix_end(b"k\x00\xfe"),
            Bound::Excluded(b"k\x00\xff".to_vec())
        );
        assert_eq!(prefix_end(b"\xff"), Bound::Unbounded);
    }
}
