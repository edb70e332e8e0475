//! The key-length set: a bit for each key length from 0 to [`KEY_LENGTH_BITS`] - 1 that a
//! stored key may have, kept with each version and in the superblock.
//!
//! Bits are only ever set: a put sets its key's length, a delete clears nothing. So the
//! set is a superset of the lengths of the keys a version holds, and a longest-prefix
//! lookup needs to check only the candidate lengths in it: a prefix of the query whose
//! length no stored key has cannot be stored. Path keys built of fixed-width segments (a
//! KV-cache chain's `/` and 8 hex digits a level) have few distinct lengths, so the
//! lookup jumps from the predecessor's common prefix straight to the last level boundary
//! below it instead of checking the predecessor of every shorter prefix, each possibly
//! in another leaf.
//!
//! On disk: [`KEY_LENGTHS_BYTES`] bytes, `KEY_LENGTH_BITS / 64` little-endian u64 words;
//! bit `l % 64` of word `l / 64` is length `l`.

use std::mem::size_of;

/// Lengths the set can hold: 0 to 2047 (keys are at most `MAX_KEY_LEN` bytes, checked
/// against this in `btree::limits`).
pub const KEY_LENGTH_BITS: usize = 2048;
const WORDS: usize = KEY_LENGTH_BITS / u64::BITS as usize;
/// Bytes of the set on disk.
pub const KEY_LENGTHS_BYTES: usize = WORDS * size_of::<u64>();

/// A set of key lengths (see the module documentation).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KeyLengths {
    words: [u64; WORDS],
}

impl std::fmt::Debug for KeyLengths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n: u32 = self.words.iter().map(|w| w.count_ones()).sum();
        write!(f, "KeyLengths({n} lengths)")
    }
}

impl KeyLengths {
    /// No length: the set of an empty tree.
    pub const fn empty() -> Self {
        KeyLengths { words: [0; WORDS] }
    }

    /// Every length: what a tree whose lengths are unknown (a file written before the
    /// set was recorded) must assume.
    pub const fn all() -> Self {
        KeyLengths {
            words: [u64::MAX; WORDS],
        }
    }

    /// Adds `len` (lengths past the set's range are not representable and not needed:
    /// no key is that long).
    #[inline]
    pub fn insert(&mut self, len: usize) {
        if let Some(w) = self.words.get_mut(len / 64) {
            *w |= 1 << (len % 64);
        }
    }

    /// Adds every length of `other`.
    pub fn union(&mut self, other: &KeyLengths) {
        for (w, o) in self.words.iter_mut().zip(other.words) {
            *w |= o;
        }
    }

    /// True when `len` is in the set.
    #[inline]
    pub fn contains(&self, len: usize) -> bool {
        self.words
            .get(len / 64)
            .is_some_and(|w| w & (1 << (len % 64)) != 0)
    }

    /// The largest length in the set that is at most `n`.
    #[inline]
    pub fn floor(&self, n: usize) -> Option<usize> {
        let n = n.min(KEY_LENGTH_BITS - 1);
        let (mut i, bit) = (n / 64, n % 64);
        // Bits 0..=bit of word i.
        let mut w = self.words[i] & (u64::MAX >> (63 - bit));
        loop {
            if w != 0 {
                return Some(i * 64 + 63 - w.leading_zeros() as usize);
            }
            if i == 0 {
                return None;
            }
            i -= 1;
            w = self.words[i];
        }
    }

    /// The smallest length in the set that is at least `n`.
    #[inline]
    pub fn ceiling(&self, n: usize) -> Option<usize> {
        if n >= KEY_LENGTH_BITS {
            return None;
        }
        let (mut i, bit) = (n / 64, n % 64);
        // Bits bit..64 of word i.
        let mut w = self.words[i] & (u64::MAX << bit);
        loop {
            if w != 0 {
                return Some(i * 64 + w.trailing_zeros() as usize);
            }
            i += 1;
            w = *self.words.get(i)?;
        }
    }

    /// Writes the set into the first [`KEY_LENGTHS_BYTES`] bytes of `out`.
    pub fn encode(&self, out: &mut [u8]) {
        for (chunk, w) in out[..KEY_LENGTHS_BYTES].chunks_exact_mut(8).zip(self.words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
    }

    /// Reads a set written by [`KeyLengths::encode`] from the first
    /// [`KEY_LENGTHS_BYTES`] bytes of `buf`.
    pub fn decode(buf: &[u8]) -> Self {
        let mut words = [0u64; WORDS];
        for (w, chunk) in words
            .iter_mut()
            .zip(buf[..KEY_LENGTHS_BYTES].chunks_exact(8))
        {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *w = u64::from_le_bytes(b);
        }
        KeyLengths { words }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceiling_finds_the_next_length_up() {
        let mut set = KeyLengths::empty();
        for l in [3, 64, 65, 700, 2047] {
            set.insert(l);
        }
        assert_eq!(set.ceiling(0), Some(3));
        assert_eq!(set.ceiling(3), Some(3));
        assert_eq!(set.ceiling(4), Some(64));
        assert_eq!(set.ceiling(65), Some(65));
        assert_eq!(set.ceiling(66), Some(700));
        assert_eq!(set.ceiling(701), Some(2047));
        assert_eq!(set.ceiling(2048), None);
        assert_eq!(KeyLengths::empty().ceiling(0), None);
        assert_eq!(KeyLengths::all().ceiling(1000), Some(1000));
    }

    #[test]
    fn floor_finds_the_largest_length_at_most_n() {
        let mut s = KeyLengths::empty();
        assert_eq!(s.floor(2047), None);
        for l in [20, 29, 63, 64, 65, 1900] {
            s.insert(l);
        }
        assert_eq!(s.floor(19), None);
        assert_eq!(s.floor(20), Some(20));
        assert_eq!(s.floor(28), Some(20));
        assert_eq!(s.floor(63), Some(63));
        assert_eq!(s.floor(64), Some(64));
        assert_eq!(s.floor(66), Some(65));
        assert_eq!(s.floor(1899), Some(65));
        assert_eq!(s.floor(5000), Some(1900));
        assert!(s.contains(29) && !s.contains(30));
        assert_eq!(KeyLengths::all().floor(17), Some(17));
        assert_eq!(KeyLengths::all().floor(0), Some(0));
    }

    #[test]
    fn the_set_round_trips_at_the_documented_bits() {
        assert_eq!(KEY_LENGTHS_BYTES, 256);
        let mut s = KeyLengths::empty();
        s.insert(0);
        s.insert(65);
        s.insert(2047);
        s.insert(2048); // past the range: ignored
        let mut buf = [0u8; KEY_LENGTHS_BYTES];
        s.encode(&mut buf);
        assert_eq!(buf[0], 1);
        assert_eq!(buf[8], 2, "length 65 is bit 1 of word 1");
        assert_eq!(buf[255], 0x80);
        assert_eq!(KeyLengths::decode(&buf), s);
        let mut t = KeyLengths::empty();
        t.insert(7);
        t.union(&s);
        assert!(t.contains(7) && t.contains(65));
    }
}
