//! The stored-key filter: a blocked Bloom filter over every key a tree has stored, so that
//! a longest-prefix lookup learns, before any page, the shortest prefix of its query that
//! may be stored, and a miss whose candidates it all rejects reads no leaf.
//!
//! Bits are only ever set, with atomic ORs: a commit adds its keys before its version is
//! published (the publication orders the bits before any reader of that version), and a
//! delete clears nothing. One filter therefore answers for every version that carries it:
//! a key any of them holds was added before that version became visible, so the filter
//! never says "absent" for it; deleted keys only add false positives.
//!
//! Each key sets [`probes`](KeyFilter::probes) bits inside one 512-bit block (a cache
//! line), chosen by a 64-bit hash of the key: one cache line per query, at the price of a
//! slightly higher false-positive rate than an unblocked filter of the same size (about
//! 1 % at 10 bits a key).

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits of a block.
pub const BLOCK_BITS: u64 = 512;
/// 64-bit words of a block.
pub const BLOCK_WORDS: usize = (BLOCK_BITS / u64::BITS as u64) as usize;
/// Most bits a key may be given.
pub const MAX_BITS_PER_KEY: u32 = 32;
/// Most probes a key sets: each takes 9 bits of a 64-bit hash.
const MAX_PROBES: u32 = 7;
/// Keys a filter is sized for at least.
const MIN_KEYS: u64 = 1024;

const K0: u64 = 0x9E37_79B9_7F4A_7C15;
const K1: u64 = 0xC2B2_AE3D_27D4_EB4F;

/// The murmur3 finaliser: every input bit reaches every output bit.
#[inline]
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

/// Where every key's hash starts.
const SEED: u64 = 0x243F_6A88_85A3_08D3;

/// Takes in one 8-byte chunk of a key.
#[inline]
fn absorb(state: u64, chunk: u64) -> u64 {
    (state ^ chunk).wrapping_mul(K0).rotate_left(29)
}

/// The hash of a key of `len` bytes whose whole chunks gave `state` and whose last
/// `len % 8` bytes, zero-padded, are `tail`.
#[inline]
fn finish(state: u64, tail: u64, len: usize) -> u64 {
    fmix64((state ^ tail).wrapping_mul(K0) ^ (len as u64).wrapping_mul(K1))
}

#[inline]
fn word(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(w)
}

/// The filter's hash of a key: its 8-byte chunks folded in order, then the tail and the
/// length, so that the hashes of a key's prefixes come from one pass over it
/// ([`PrefixHasher`]). Part of the filter file's format: a change needs a new file
/// version (a test pins its values).
#[inline]
pub fn hash_key(key: &[u8]) -> u64 {
    let mut chunks = key.chunks_exact(8);
    let state = (&mut chunks).fold(SEED, |s, c| absorb(s, word(c)));
    finish(state, word(chunks.remainder()), key.len())
}

/// The [`hash_key`] of prefixes of one key, asked for in increasing length: each chunk
/// is folded in once, however many prefixes are asked about.
pub struct PrefixHasher<'a> {
    key: &'a [u8],
    state: u64,
    chunks: usize,
}

impl<'a> PrefixHasher<'a> {
    /// Hashes prefixes of `key`.
    pub fn new(key: &'a [u8]) -> Self {
        PrefixHasher {
            key,
            state: SEED,
            chunks: 0,
        }
    }

    /// `hash_key(&key[..len])` (`len` at most the key's length). Cheapest when lengths
    /// come in increasing order; a shorter one than the last starts over.
    #[inline]
    pub fn hash(&mut self, len: usize) -> u64 {
        let len = len.min(self.key.len());
        let whole = len / 8;
        if whole < self.chunks {
            (self.state, self.chunks) = (SEED, 0);
        }
        while self.chunks < whole {
            let at = self.chunks * 8;
            self.state = absorb(self.state, word(&self.key[at..at + 8]));
            self.chunks += 1;
        }
        finish(self.state, word(&self.key[whole * 8..len]), len)
    }
}

/// A blocked Bloom filter of stored keys (see the module documentation).
#[derive(Debug)]
pub struct KeyFilter {
    words: Box<[AtomicU64]>,
    blocks: u64,
    bits_per_key: u32,
    probes: u32,
    /// Keys it was sized for: past them the false-positive rate climbs.
    capacity_keys: u64,
    /// Keys added so far (a key put twice counts twice): tells a checkpoint whether the
    /// filter changed since it was last written.
    added: AtomicU64,
}

impl KeyFilter {
    /// An empty filter sized for `keys` keys at `bits_per_key` bits each (1 to
    /// [`MAX_BITS_PER_KEY`]; out-of-range values are clamped).
    pub fn new(keys: u64, bits_per_key: u32) -> Self {
        let bits_per_key = bits_per_key.clamp(1, MAX_BITS_PER_KEY);
        let capacity_keys = keys.max(MIN_KEYS);
        let blocks = (capacity_keys * u64::from(bits_per_key)).div_ceil(BLOCK_BITS);
        Self::with_blocks(blocks, bits_per_key, capacity_keys)
    }

    /// An empty filter of `blocks` blocks (at least one).
    pub(crate) fn with_blocks(blocks: u64, bits_per_key: u32, capacity_keys: u64) -> Self {
        let blocks = blocks.max(1);
        let words = (0..blocks as usize * BLOCK_WORDS)
            .map(|_| AtomicU64::new(0))
            .collect();
        KeyFilter {
            words,
            blocks,
            bits_per_key,
            probes: probes_for(bits_per_key),
            capacity_keys,
            added: AtomicU64::new(0),
        }
    }

    /// Bits each key was given when the filter was sized.
    pub fn bits_per_key(&self) -> u32 {
        self.bits_per_key
    }

    /// Bits set per key.
    pub fn probes(&self) -> u32 {
        self.probes
    }

    /// Keys the filter was sized for.
    pub fn capacity_keys(&self) -> u64 {
        self.capacity_keys
    }

    /// Keys added so far (repeats included).
    pub fn added(&self) -> u64 {
        self.added.load(Ordering::Relaxed)
    }

    /// Blocks of [`BLOCK_BITS`] bits.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Bytes of memory the bits take.
    pub fn bytes(&self) -> u64 {
        self.words.len() as u64 * std::mem::size_of::<u64>() as u64
    }

    /// The first word of the block `h` selects, and the probe bits' source.
    #[inline]
    fn locate(&self, h: u64) -> (usize, u64) {
        // The high half of a 64 x 64 product maps the hash onto the blocks evenly.
        let block = ((u128::from(h) * u128::from(self.blocks)) >> 64) as usize;
        (block * BLOCK_WORDS, fmix64(h ^ K1))
    }

    /// Adds a key.
    #[inline]
    pub fn insert(&self, key: &[u8]) {
        self.insert_hash(hash_key(key));
    }

    /// Adds a key by its [`hash_key`].
    pub fn insert_hash(&self, h: u64) {
        let (base, mut g) = self.locate(h);
        for _ in 0..self.probes {
            let bit = (g & (BLOCK_BITS - 1)) as usize;
            self.words[base + bit / 64].fetch_or(1 << (bit % 64), Ordering::Relaxed);
            g >>= 9;
        }
        self.added.fetch_add(1, Ordering::Relaxed);
    }

    /// False when `key` was certainly never added; true when it may have been.
    #[cfg(test)]
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.may_contain_hash(hash_key(key))
    }

    /// [`KeyFilter::may_contain`] of the key whose [`hash_key`] is `h`.
    #[inline]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        let (base, mut g) = self.locate(h);
        for _ in 0..self.probes {
            let bit = (g & (BLOCK_BITS - 1)) as usize;
            if self.words[base + bit / 64].load(Ordering::Relaxed) & (1 << (bit % 64)) == 0 {
                return false;
            }
            g >>= 9;
        }
        true
    }

    /// The words, for the filter file.
    pub(crate) fn words(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().map(|w| w.load(Ordering::Relaxed))
    }

    /// Sets word `i` (the filter file's reader; `i` is in range by construction).
    pub(crate) fn set_word(&self, i: usize, value: u64) {
        if let Some(w) = self.words.get(i) {
            w.store(value, Ordering::Relaxed);
        }
    }

    /// Sets the count of keys added (the filter file's reader).
    pub(crate) fn set_added(&self, n: u64) {
        self.added.store(n, Ordering::Relaxed);
    }
}

/// Probes for `bits_per_key` bits a key: ln 2 times the bits, the false-positive optimum,
/// at most [`MAX_PROBES`].
pub(crate) fn probes_for(bits_per_key: u32) -> u32 {
    ((bits_per_key * 69 + 50) / 100).clamp(1, MAX_PROBES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_keeps_its_values() {
        // The filter file stores bits placed by this hash: these values are its format.
        assert_eq!(hash_key(b""), finish(SEED, 0, 0));
        let a = hash_key(b"kv/llama70b/0a1b2c3d");
        let b = hash_key(b"kv/llama70b/0a1b2c3e");
        assert_ne!(a, b);
        assert_eq!(a, hash_key(b"kv/llama70b/0a1b2c3d"));
        assert_eq!(
            hash_key(b"abc"),
            0x18f0_d356_5c30_c4e8,
            "{:#x}",
            hash_key(b"abc")
        );
    }

    #[test]
    fn prefix_hashes_are_the_prefixes_hashes() {
        let key: Vec<u8> = (0..300u32).map(|i| (i * 37 % 251) as u8).collect();
        let mut h = PrefixHasher::new(&key);
        for len in 0..=key.len() {
            assert_eq!(h.hash(len), hash_key(&key[..len]), "length {len}");
        }
        // Out of order: starts over, still right.
        assert_eq!(h.hash(17), hash_key(&key[..17]));
        assert_eq!(h.hash(400), hash_key(&key));
        // A zero byte at the end is not the same key as none.
        assert_ne!(hash_key(b"ab"), hash_key(b"ab\0"));
    }

    #[test]
    fn added_keys_are_never_rejected() {
        let f = KeyFilter::new(10_000, 10);
        let keys: Vec<Vec<u8>> = (0..10_000u32)
            .map(|i| {
                format!("kv/llama70b/{i:08x}/{:08x}", i.wrapping_mul(2_654_435_761)).into_bytes()
            })
            .collect();
        for k in &keys {
            f.insert(k);
        }
        assert!(keys.iter().all(|k| f.may_contain(k)));
        assert_eq!(f.added(), 10_000);
    }

    #[test]
    fn ten_bits_a_key_rejects_about_99_percent_of_absent_keys() {
        let f = KeyFilter::new(100_000, 10);
        for i in 0..100_000u32 {
            f.insert(format!("kv/llama70b/{i:08x}").as_bytes());
        }
        let absent = 100_000u32;
        let false_positives = (0..absent)
            .filter(|i| f.may_contain(format!("kv/llama70b/x{i:07x}").as_bytes()))
            .count();
        // About 1.1 % expected for 512-bit blocks and 7 probes; 2 % would mean a bad hash.
        assert!(
            false_positives < 2_000,
            "{false_positives} false positives of {absent}"
        );
        assert!(
            false_positives > 100,
            "{false_positives}: too good to be a Bloom filter"
        );
    }

    #[test]
    fn sizes_follow_the_bits_a_key() {
        let f = KeyFilter::new(540_000, 10);
        assert_eq!(f.blocks(), (540_000u64 * 10).div_ceil(512));
        assert_eq!(f.bytes(), f.blocks() * 64);
        assert_eq!(f.probes(), 7);
        assert_eq!(probes_for(4), 3);
        assert_eq!(KeyFilter::new(0, 10).capacity_keys(), MIN_KEYS);
        assert_eq!(KeyFilter::new(10, 99).bits_per_key(), MAX_BITS_PER_KEY);
    }
}
