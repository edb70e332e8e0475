//! Buffers a finished range scan leaves to the next scan on the same thread, so that a
//! scan in steady state allocates nothing: its bounds, the cursor's path and key, and
//! the buffers for large values and leaf edges all come from here and go back here.
//!
//! Before, each scan made eight or nine small allocations (a prefix copy, its successor,
//! two bound copies for the cursor, the path, the key, and their growth) and freed them
//! at the end: about 6 % of the instructions of a 100-entry scan on a pool that holds
//! every page (callgrind, docs/performance.md). A thread keeps at most
//! [`MAX_SPARE_BUFFERS`] byte buffers and [`MAX_SPARE_PATHS`] paths, none larger than
//! [`MAX_SPARE_CAPACITY`] bytes, so what it holds stays a few KiB; a thread that ends
//! frees them with it.

use std::cell::RefCell;
use std::ops::Bound;
use std::sync::Arc;

use crate::pool::Page;

/// Byte buffers a thread keeps: a scan in flight uses at most six (two bounds, two
/// cursor bounds, the key, the value, the edge), so this holds two scans' worth.
pub(crate) const MAX_SPARE_BUFFERS: usize = 16;
/// Cursor paths a thread keeps.
pub(crate) const MAX_SPARE_PATHS: usize = 4;
/// Largest buffer kept, in bytes: a scan over a huge value does not pin its buffer.
pub(crate) const MAX_SPARE_CAPACITY: usize = 64 << 10;

/// A cursor's path: the inner pages it descended through and the child it took in each.
pub(crate) type Path = Vec<(Arc<Page>, usize)>;

#[derive(Default)]
struct Spare {
    bytes: Vec<Vec<u8>>,
    paths: Vec<Path>,
}

thread_local! {
    static SPARE: RefCell<Spare> = RefCell::new(Spare::default());
}

/// An empty byte buffer, one a finished scan left when there is one.
pub(crate) fn bytes() -> Vec<u8> {
    SPARE
        .try_with(|s| s.borrow_mut().bytes.pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// A copy of `src` in a spare buffer.
pub(crate) fn copy(src: &[u8]) -> Vec<u8> {
    let mut v = bytes();
    v.extend_from_slice(src);
    v
}

/// A copy of the bound `b`, its key in a spare buffer.
pub(crate) fn copy_bound(b: &Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(copy(k)),
        Bound::Excluded(k) => Bound::Excluded(copy(k)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Keeps `v` for a later scan on this thread (emptied), unless enough are kept already
/// or it is too large.
pub(crate) fn give(mut v: Vec<u8>) {
    if v.capacity() == 0 || v.capacity() > MAX_SPARE_CAPACITY {
        return;
    }
    v.clear();
    let _ = SPARE.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.bytes.len() < MAX_SPARE_BUFFERS {
            s.bytes.push(v);
        }
    });
}

/// Keeps the key of the bound `b`, if it has one.
pub(crate) fn give_bound(b: Bound<Vec<u8>>) {
    match b {
        Bound::Included(k) | Bound::Excluded(k) => give(k),
        Bound::Unbounded => {}
    }
}

/// An empty path, one a finished scan left when there is one.
pub(crate) fn path() -> Path {
    SPARE
        .try_with(|s| s.borrow_mut().paths.pop())
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Keeps `p` for a later scan on this thread, emptied first: the pages it held are
/// released here, not when another scan takes it.
pub(crate) fn give_path(mut p: Path) {
    p.clear();
    if p.capacity() == 0 {
        return;
    }
    let _ = SPARE.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.paths.len() < MAX_SPARE_PATHS {
            s.paths.push(p);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_taken_again_empty_with_its_capacity() {
        let mut v = copy(b"ds/laion/shard-00001/");
        v.reserve(100);
        let (ptr, cap) = (v.as_ptr(), v.capacity());
        give(v);
        let again = bytes();
        assert!(again.is_empty());
        assert_eq!((again.as_ptr(), again.capacity()), (ptr, cap));
    }

    #[test]
    fn large_buffers_are_not_kept_and_the_count_is_bounded() {
        give(Vec::with_capacity(MAX_SPARE_CAPACITY + 1));
        assert_eq!(bytes().capacity(), 0);
        for _ in 0..MAX_SPARE_BUFFERS + 5 {
            give(Vec::with_capacity(8));
        }
        let kept = std::iter::from_fn(|| Some(bytes()))
            .take_while(|v| v.capacity() > 0)
            .count();
        assert_eq!(kept, MAX_SPARE_BUFFERS);
    }

    #[test]
    fn bounds_are_copied_and_given_back_with_their_keys() {
        let b = Bound::Excluded(b"ds0".to_vec());
        let c = copy_bound(&b);
        assert_eq!(c, b);
        give_bound(c);
        assert!(bytes().capacity() >= 3);
        assert_eq!(copy_bound(&Bound::Unbounded), Bound::Unbounded);
    }
}
