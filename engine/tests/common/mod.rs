//! Helpers shared by the scenario tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ops::Bound;

use aimeta_engine::KeyItem;

/// Boxed error for tests that return Result.
pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The manifest key of sample `i` in shard `s`.
pub fn manifest_key(s: u32, i: u32) -> Vec<u8> {
    format!("ds/laion/shard-{s:05}/sample-{i:08}").into_bytes()
}

/// A 24-byte value derived from (s, i).
pub fn manifest_value(s: u32, i: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(24);
    v.extend_from_slice(&u64::from(s).to_le_bytes());
    v.extend_from_slice(&u64::from(i).to_le_bytes());
    v.extend_from_slice(&(u64::from(s) * 1_000_003 + u64::from(i)).to_le_bytes());
    v
}

/// The smallest string above every string starting with `p`.
pub fn successor(p: &[u8]) -> Option<Vec<u8>> {
    let end = p.iter().rposition(|&b| b != 0xFF)?;
    let mut s = p[..=end].to_vec();
    s[end] += 1;
    Some(s)
}

/// Reference range scan over the model.
pub fn model_range(
    m: &BTreeMap<Vec<u8>, Vec<u8>>,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    prefix: Option<&[u8]>,
    rev: bool,
    limit: Option<usize>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let in_bounds = |k: &[u8]| {
        let a = match lo {
            Bound::Included(l) => k >= l.as_slice(),
            Bound::Excluded(l) => k > l.as_slice(),
            Bound::Unbounded => true,
        };
        let b = match hi {
            Bound::Included(h) => k <= h.as_slice(),
            Bound::Excluded(h) => k < h.as_slice(),
            Bound::Unbounded => true,
        };
        a && b && prefix.is_none_or(|p| k.starts_with(p))
    };
    let mut out: Vec<_> = m
        .iter()
        .filter(|(k, _)| in_bounds(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if rev {
        out.reverse();
    }
    out.truncate(limit.unwrap_or(usize::MAX));
    out
}

/// Reference delimiter listing over the model.
pub fn model_list(
    m: &BTreeMap<Vec<u8>, Vec<u8>>,
    prefix: &[u8],
    delimiter: Option<u8>,
    start_after: Option<&[u8]>,
    limit: Option<usize>,
) -> Vec<KeyItem> {
    let mut out: Vec<KeyItem> = Vec::new();
    for k in m.keys() {
        if !k.starts_with(prefix) || start_after.is_some_and(|sa| k.as_slice() <= sa) {
            continue;
        }
        let rest = &k[prefix.len()..];
        match delimiter.and_then(|d| rest.iter().position(|&b| b == d)) {
            Some(pos) => {
                let cp = k[..prefix.len() + pos + 1].to_vec();
                if start_after.is_some_and(|sa| cp.as_slice() <= sa) {
                    continue;
                }
                if out.last() != Some(&KeyItem::CommonPrefix(cp.clone())) {
                    out.push(KeyItem::CommonPrefix(cp));
                }
            }
            None => out.push(KeyItem::Key(k.clone())),
        }
    }
    out.truncate(limit.unwrap_or(usize::MAX));
    out
}

/// Reference longest-prefix lookup over the model.
pub fn model_lpm(m: &BTreeMap<Vec<u8>, Vec<u8>>, q: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    (1..=q.len())
        .rev()
        .find_map(|l| m.get(&q[..l]).map(|v| (q[..l].to_vec(), v.clone())))
}

/// A deterministic xorshift generator, so that tests need no seed file.
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
