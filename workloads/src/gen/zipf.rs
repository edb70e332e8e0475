//! Zipfian draws over `0..n`, as YCSB makes them (Gray et al., "Quickly generating
//! billion-record synthetic databases", SIGMOD 1994; YCSB's `ZipfianGenerator` with its
//! default constant 0.99), then scrambled so that the popular items are spread over the
//! key space instead of being the first ones (YCSB's `ScrambledZipfianGenerator` does the
//! same with a hash; a multiplicative permutation here, so that no two ranks collide).
//!
//! Each draw takes one uniform f64 from the workspace's generator: the same seed gives
//! the same sequence on every machine (rand_distr's Zipf makes no such promise).

use rand::RngExt as _;

use super::Rng;

/// YCSB's default Zipfian constant.
pub const YCSB_THETA: f64 = 0.99;

/// Draws ranks in `0..n` with P(rank k) proportional to 1 / (k + 1)^theta, mapped to items
/// by a fixed permutation (k -> (k x stride + offset) mod n).
#[derive(Debug, Clone)]
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zeta_n: f64,
    eta: f64,
    /// Multiplier of the scrambling permutation: odd and coprime to `n`.
    stride: u64,
    /// Offset of the scrambling permutation (so that rank 0 is not item 0).
    offset: u64,
}

/// Why a Zipf distribution cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ZipfError {
    /// There are no items to draw from.
    #[error("a Zipf distribution needs at least one item")]
    Empty,
    /// The constant is outside (0, 1), where this method is exact.
    #[error("Zipf constant {0} is outside (0, 1); YCSB's default is 0.99")]
    Theta(f64),
}

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Zipf {
    /// A distribution over `0..n` with constant `theta` (0 < theta < 1). Computing it
    /// sums n terms once: about 50 ms for 10^7 items, so make one per workload, not per draw.
    pub fn new(n: u64, theta: f64) -> Result<Zipf, ZipfError> {
        if n == 0 {
            return Err(ZipfError::Empty);
        }
        if !(theta > 0.0 && theta < 1.0) {
            return Err(ZipfError::Theta(theta));
        }
        let zeta_n = zeta(n, theta);
        let zeta_2 = zeta(2.min(n), theta);
        let alpha = 1.0 / (1.0 - theta);
        let eta = if n > 1 {
            (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta_2 / zeta_n)
        } else {
            0.0
        };
        // A large odd multiplier coprime to n permutes 0..n (k -> k * stride mod n).
        let mut stride = (0x9E37_79B9_7F4A_7C15_u64 % n.max(2)) | 1;
        while n > 1 && gcd(stride, n) != 1 {
            stride += 2;
        }
        Ok(Zipf {
            n,
            theta,
            alpha,
            zeta_n,
            eta,
            stride: stride % n.max(1),
            offset: 0x2545_F491_4F6C_DD1D % n,
        })
    }

    /// The rank (0 = most popular) of one draw.
    pub fn rank(&self, rng: &mut Rng) -> u64 {
        let u: f64 = rng.random::<f64>();
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.n - 1);
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }

    /// The item of rank `rank`: a fixed permutation of `0..n`.
    pub fn item_of_rank(&self, rank: u64) -> u64 {
        if self.n == 1 {
            return 0;
        }
        ((u128::from(rank) * u128::from(self.stride) + u128::from(self.offset))
            % u128::from(self.n)) as u64
    }

    /// One draw: an item in `0..n`.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        self.item_of_rank(self.rank(rng))
    }

    /// Items.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Always false: a distribution has at least one item.
    pub fn is_empty(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::seeded;

    #[test]
    fn ranks_follow_the_zipf_law_and_the_permutation_is_one() -> Result<(), ZipfError> {
        let n = 5_000;
        let z = Zipf::new(n, YCSB_THETA)?;
        let mut rng = seeded(7);
        let mut counts = vec![0u64; n as usize];
        let draws = 400_000;
        for _ in 0..draws {
            counts[z.rank(&mut rng) as usize] += 1;
        }
        // Expected share of rank k: 1 / ((k+1)^theta * zeta(n)).
        for k in [0usize, 1, 9, 99] {
            let want = draws as f64 / ((k as f64 + 1.0).powf(YCSB_THETA) * z.zeta_n);
            let got = counts[k] as f64;
            assert!(
                (got - want).abs() < 0.15 * want + 30.0,
                "rank {k}: {got} draws, expected about {want:.0}"
            );
        }
        // The most popular 1 % of the shards get far more than 1 % of the draws.
        let top: u64 = counts[..(n as usize / 100)].iter().sum();
        assert!(top * 3 > draws, "top 1 % drew {top} of {draws}");
        let mut seen = vec![false; n as usize];
        for r in 0..n {
            let item = z.item_of_rank(r) as usize;
            assert!(!seen[item], "item {item} has two ranks");
            seen[item] = true;
        }
        assert_ne!(z.item_of_rank(0), 0, "the most popular item is scrambled");
        Ok(())
    }

    #[test]
    fn one_seed_one_sequence_and_bad_parameters_are_refused() -> Result<(), ZipfError> {
        let z = Zipf::new(1_000, YCSB_THETA)?;
        let a: Vec<u64> = {
            let mut r = seeded(3);
            (0..50).map(|_| z.sample(&mut r)).collect()
        };
        let mut r = seeded(3);
        let b: Vec<u64> = (0..50).map(|_| z.sample(&mut r)).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|&x| x < 1_000));
        assert_eq!(Zipf::new(0, 0.5).err(), Some(ZipfError::Empty));
        assert_eq!(Zipf::new(10, 1.0).err(), Some(ZipfError::Theta(1.0)));
        let one = Zipf::new(1, 0.5)?;
        assert_eq!(one.sample(&mut r), 0);
        Ok(())
    }
}
