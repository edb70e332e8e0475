//! A deterministic xorshift generator for the unit tests, so that they need no seed file.

/// xorshift64.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A key of 1..=`max` bytes over a 3-letter alphabet with '/' separators, so that many
    /// keys are prefixes of each other and many are not.
    pub(crate) fn key(&mut self, max: u64) -> Vec<u8> {
        let len = 1 + self.next() % max;
        (0..len)
            .map(|_| b"ab/c"[(self.next() % 4) as usize])
            .collect()
    }
}
