//! The unit tests' random inputs: the workspace's one generator (PCG 128/64 from rand_pcg,
//! value-stable across rand releases), so that tests need no seed file.

use rand::{RngExt as _, SeedableRng as _};

/// The generator every unit test draws from.
pub(crate) type Rng = rand_pcg::Pcg64Mcg;

/// A generator for `seed` (any value, 0 included).
pub(crate) fn seeded(seed: u64) -> Rng {
    Rng::seed_from_u64(seed)
}

/// A key of 1..=`max` bytes over a 3-letter alphabet with '/' separators, so that many keys
/// are prefixes of each other and many are not.
pub(crate) fn key(rng: &mut Rng, max: u64) -> Vec<u8> {
    let len = rng.random_range(1..=max);
    (0..len).map(|_| b"ab/c"[rng.random_range(0..4)]).collect()
}
