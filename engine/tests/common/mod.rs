//! Helpers shared by the scenario tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ops::Bound;

use aimeta_engine::{KeyItem, Readable};
use rand::RngExt as _;

/// Boxed error for tests that return Result.
pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A count from the environment variable `name` (a test's size knob), or `default` when it
/// is unset or not a number.
pub fn env_count<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

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

/// The workspace's one generator (PCG 128/64, value-stable across rand releases), so that
/// tests need no seed file and a seed means the same sequence everywhere.
pub type Rng = rand_pcg::Pcg64Mcg;

/// A generator for `seed` (any value, 0 included).
pub fn seeded(seed: u64) -> Rng {
    use rand::SeedableRng as _;
    Rng::seed_from_u64(seed)
}

/// A value that names its key and its writer's counter, `len` bytes long (at least 16):
/// a reader can tell a value written for another key, or a page image from elsewhere,
/// without knowing the model. Layout: key hash u64, stamp u64, then bytes derived from
/// both.
pub fn stamped_value(key: &[u8], stamp: u64, len: usize) -> Vec<u8> {
    let h = key_hash(key);
    let mut v = Vec::with_capacity(len.max(16));
    v.extend_from_slice(&h.to_le_bytes());
    v.extend_from_slice(&stamp.to_le_bytes());
    let mut filler = seeded(h ^ stamp.rotate_left(17));
    v.resize(len.max(16), 0);
    rand::Rng::fill_bytes(&mut filler, &mut v[16..]);
    v
}

/// The stamp of a value made by [`stamped_value`] for `key`, or what is wrong with it.
pub fn check_stamped(key: &[u8], value: &[u8]) -> Result<u64, String> {
    if value.len() < 16 {
        return Err(format!("value of {} bytes is too short", value.len()));
    }
    let stamp = u64::from_le_bytes(value[8..16].try_into().map_err(|_| "short stamp")?);
    if value != stamped_value(key, stamp, value.len()).as_slice() {
        return Err(format!(
            "value of {} bytes (stamp {stamp}) was not written for key {:?}",
            value.len(),
            String::from_utf8_lossy(key)
        ));
    }
    Ok(stamp)
}

fn key_hash(key: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Puts (a value) and deletes (None), in order.
pub type Ops = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// Applies `ops` to a model map.
pub fn apply_to_model(model: &mut BTreeMap<Vec<u8>, Vec<u8>>, ops: Ops) {
    for (k, v) in ops {
        match v {
            Some(v) => model.insert(k, v),
            None => model.remove(&k),
        };
    }
}

/// Applies `ops` to the tree as one atomic batch, then to the model.
pub fn apply_batch(
    tree: &aimeta_engine::Tree,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    ops: Ops,
) -> aimeta_engine::Result<()> {
    tree.apply_batch(&batch_of(&ops))?;
    apply_to_model(model, ops);
    Ok(())
}

/// The write batch of `ops`.
pub fn batch_of(ops: &Ops) -> aimeta_engine::WriteBatch {
    let mut b = aimeta_engine::WriteBatch::new();
    for (k, v) in ops {
        match v {
            Some(v) => b.put(k.clone(), v.clone()),
            None => b.delete(k.clone()),
        };
    }
    b
}

/// Scans at most `limit` entries under `prefix` and checks that they come in order,
/// inside the prefix, each with a value written for its key by [`stamped_value`].
pub fn check_prefix_scan(
    tree: &aimeta_engine::Tree,
    prefix: &[u8],
    limit: usize,
) -> Result<(), String> {
    let mut prev: Option<Vec<u8>> = None;
    for item in tree.range().prefix(prefix).limit(limit).iter() {
        let (k, v) = item.map_err(|e| format!("scan: {e}"))?;
        if !k.starts_with(prefix) || prev.as_ref().is_some_and(|p| p >= &k) {
            return Err(format!(
                "a scan of {:?} returned {:?} out of order or outside the prefix",
                String::from_utf8_lossy(prefix),
                String::from_utf8_lossy(&k)
            ));
        }
        check_stamped(&k, &v)?;
        prev = Some(k);
    }
    Ok(())
}

/// A stamped value for `key`: one in `large_one_in` is 5 to 30 KiB (an overflow run), the
/// others 16 to 215 bytes.
pub fn mixed_value(rng: &mut Rng, key: &[u8], stamp: u64, large_one_in: u64) -> Vec<u8> {
    let len = if rng.random_range(0..large_one_in) == 0 {
        5 * 1024 + rng.random_range(0..25 * 1024) as usize
    } else {
        16 + rng.random_range(0..200) as usize
    };
    stamped_value(key, stamp, len)
}
