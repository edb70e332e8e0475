//! Hash maps and sets keyed by page number, hashed with one multiplication (Fibonacci
//! hashing) instead of SipHash. Page numbers are not chosen by an adversary, and these
//! maps sit on hot paths: the pool's ghost set is updated on every eviction from its small
//! queue, and a write transaction records every page it copies, allocates and frees,
//! where SipHash cost more than the rest of the bookkeeping.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::PageId;

/// The hasher of [`PageMap`] and [`PageSet`].
#[derive(Default)]
pub struct PageIdHasher(u64);

impl Hasher for PageIdHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        // High bits feed the table index (hashbrown uses the top 7 for its tags and the
        // low bits for the bucket), so fold the product's high half down.
        let h = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

/// A map keyed by page number, hashed with [`PageIdHasher`].
pub type PageMap<V> = HashMap<PageId, V, BuildHasherDefault<PageIdHasher>>;

/// A set of page numbers hashed with [`PageIdHasher`].
pub type PageSet = HashSet<PageId, BuildHasherDefault<PageIdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_page_numbers_spread_over_the_low_and_high_bits() {
        let hashes: Vec<u64> = (0..64u64)
            .map(|id| {
                let mut h = PageIdHasher::default();
                h.write_u64(id);
                h.finish()
            })
            .collect();
        // hashbrown takes the bucket from the low bits and the tag from the top 7.
        let buckets: PageSet = hashes.iter().map(|h| h & 63).collect();
        let tags: PageSet = hashes.iter().map(|h| h >> 57).collect();
        assert!(buckets.len() > 32, "{} buckets of 64", buckets.len());
        assert!(tags.len() > 32, "{} tags of 64", tags.len());
        let mut m: PageMap<u64> = PageMap::default();
        for id in 0..1000 {
            m.insert(id, id * 2);
        }
        assert!((0..1000).all(|id| m.get(&id) == Some(&(id * 2))));
    }
}
