//! Training-dataset shard manifests: `ds/laion/shard-{s:05}/sample-{i:08}` -> a 24-byte
//! packed value derived from (s, i): offset u64, length u64, checksum u64.

/// A manifest of `shards` x `per_shard` samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Manifest {
    /// Number of shards.
    pub shards: u32,
    /// Samples per shard.
    pub per_shard: u32,
}

/// Bytes of a manifest key.
pub const KEY_LEN: usize = "ds/laion/shard-00000/sample-00000000".len();
/// Bytes of a manifest value.
pub const VALUE_LEN: usize = 24;

impl Manifest {
    /// Total keys.
    pub fn keys(&self) -> u64 {
        u64::from(self.shards) * u64::from(self.per_shard)
    }

    /// Bytes of keys and values.
    pub fn data_bytes(&self) -> u64 {
        self.keys() * (KEY_LEN + VALUE_LEN) as u64
    }

    /// The key of sample `i` of shard `s`.
    pub fn key(s: u32, i: u32) -> Vec<u8> {
        let mut key = Vec::with_capacity(KEY_LEN);
        Self::key_into(s, i, &mut key);
        key
    }

    /// [`Manifest::key`] written into `out` (cleared first), reusing its allocation.
    fn key_into(s: u32, i: u32, out: &mut Vec<u8>) {
        use std::io::Write as _;
        out.clear();
        // Writing into a Vec cannot fail.
        let _ = write!(out, "ds/laion/shard-{s:05}/sample-{i:08}");
    }

    /// The prefix of shard `s` (with its trailing '/').
    pub fn shard_prefix(s: u32) -> Vec<u8> {
        format!("ds/laion/shard-{s:05}/").into_bytes()
    }

    /// The listing prefix above the shards.
    pub const LIST_PREFIX: &'static [u8] = b"ds/laion/";

    /// The value of sample `i` of shard `s`: offset, length and a checksum.
    pub fn value(s: u32, i: u32) -> [u8; VALUE_LEN] {
        let offset = u64::from(i) * 4096;
        let len = 1024 + u64::from((s.wrapping_mul(31) ^ i) % 3072);
        let sum = (u64::from(s) << 32 | u64::from(i)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut v = [0u8; VALUE_LEN];
        v[..8].copy_from_slice(&offset.to_le_bytes());
        v[8..16].copy_from_slice(&len.to_le_bytes());
        v[16..].copy_from_slice(&sum.to_le_bytes());
        v
    }

    /// Every pair in ascending key order.
    pub fn pairs(&self) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> + '_ {
        (0..self.shards).flat_map(move |s| {
            (0..self.per_shard).map(move |i| (Self::key(s, i), Self::value(s, i).to_vec()))
        })
    }

    /// The n-th key in ascending order.
    pub fn nth_key(&self, n: u64) -> Vec<u8> {
        let per = u64::from(self.per_shard);
        Self::key((n / per) as u32, (n % per) as u32)
    }

    /// [`Manifest::nth_key`] written into `out` (cleared first), reusing its allocation.
    pub fn nth_key_into(&self, n: u64, out: &mut Vec<u8>) {
        let per = u64::from(self.per_shard);
        Self::key_into((n / per) as u32, (n % per) as u32, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_written_into_a_buffer_is_the_key() {
        let m = Manifest {
            shards: 3,
            per_shard: 50,
        };
        let mut buf = b"left over".to_vec();
        for n in [0, 49, 50, 149] {
            m.nth_key_into(n, &mut buf);
            assert_eq!(buf, Manifest::key((n / 50) as u32, (n % 50) as u32));
        }
    }

    #[test]
    fn keys_have_the_seed_shape_and_come_sorted() {
        let m = Manifest {
            shards: 3,
            per_shard: 50,
        };
        assert_eq!(
            Manifest::key(12, 42),
            b"ds/laion/shard-00012/sample-00000042".to_vec()
        );
        assert_eq!(Manifest::key(0, 0).len(), KEY_LEN);
        let pairs: Vec<_> = m.pairs().collect();
        assert_eq!(pairs.len() as u64, m.keys());
        assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(pairs
            .iter()
            .all(|(k, v)| k.len() == KEY_LEN && v.len() == VALUE_LEN));
        assert_eq!(m.nth_key(57), Manifest::key(1, 7));
        assert_eq!(Manifest::value(3, 9), Manifest::value(3, 9));
        assert_ne!(Manifest::value(3, 9), Manifest::value(3, 10));
    }
}
