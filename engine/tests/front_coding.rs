//! Front-coded leaves (format version 2): KV-cache chain keys, where neighbours share all
//! but their last bytes, written through the copy-on-write path (splits, merges,
//! in-place value overwrites, overflow values) and bulk-loaded, agree with a model on
//! every read path: gets, forward and backward scans from arbitrary positions (which
//! decode keys from a restart), counts and longest-prefix lookups; and the bulk-loaded
//! store is front-coded (more than twice as many chain entries per leaf as plain pages
//! hold).

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use aimeta_engine::{Readable, Tree, TreeConfig};
use common::{model_lpm, model_range, seeded, Rng, TestResult};
use rand::{Rng as _, RngExt as _};

/// Every prefix of a chain `kv/m/<h0>/<h1>/...`; segments come from a small alphabet
/// now and then, so that chains share heads and fork.
fn chain(rng: &mut Rng) -> Vec<Vec<u8>> {
    let depth = 1 + rng.random_range(0..20) as usize;
    let mut key = b"kv/m".to_vec();
    let mut out = Vec::with_capacity(depth);
    for _ in 0..depth {
        let seg = if rng.random_range(0..3) == 0 {
            format!("/{:08x}", rng.random_range(0..4))
        } else {
            format!("/{:08x}", rng.next_u64() as u32)
        };
        key.extend_from_slice(seg.as_bytes());
        out.push(key.clone());
    }
    out
}

fn value(rng: &mut Rng, key: &[u8]) -> Vec<u8> {
    let len = match rng.random_range(0..40) {
        0 => 1500 + rng.random_range(0..3000) as usize,
        1 => 0,
        _ => 40,
    };
    let mut v = key.iter().rev().take(8).copied().collect::<Vec<u8>>();
    v.resize(len, (len % 251) as u8);
    v
}

/// A query: a stored key, a stored key extended by phantom levels, or a truncation.
fn query(rng: &mut Rng, keys: &[Vec<u8>]) -> Vec<u8> {
    let mut q = keys[rng.random_range(0..keys.len() as u64) as usize].clone();
    match rng.random_range(0..4) {
        0 => {}
        1 => {
            for _ in 0..1 + rng.random_range(0..3) {
                q.extend_from_slice(format!("/{:08x}", rng.next_u64() as u32).as_bytes());
            }
        }
        2 => {
            let cut = 1 + rng.random_range(0..q.len() as u64) as usize;
            q.truncate(cut);
        }
        _ => {
            let at = rng.random_range(0..q.len() as u64) as usize;
            q[at] = q[at].wrapping_add(1);
        }
    }
    q
}

fn verify(tree: &Tree, model: &BTreeMap<Vec<u8>, Vec<u8>>, rng: &mut Rng) -> TestResult {
    tree.check_integrity()?;
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    for (k, v) in model {
        assert_eq!(
            tree.get(k)?.as_ref(),
            Some(v),
            "get {:?}",
            String::from_utf8_lossy(k)
        );
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = tree.range().iter().collect::<Result<_, _>>()?;
    assert_eq!(all.len(), model.len());
    assert!(all
        .iter()
        .zip(model)
        .all(|(a, b)| a.0 == *b.0 && a.1 == *b.1));
    let back: Vec<(Vec<u8>, Vec<u8>)> = tree.range().rev().iter().collect::<Result<_, _>>()?;
    assert!(back.iter().rev().map(|e| &e.0).eq(model.keys()));
    for _ in 0..300 {
        let q = query(rng, &keys);
        let r = query(rng, &keys);
        let limit = Some(1 + rng.random_range(0..40) as usize);
        let (lo, hi) = if rng.random_range(0..2) == 0 {
            (Bound::Included(q.clone()), Bound::Unbounded)
        } else {
            (Bound::Excluded(q.clone()), Bound::Included(r.clone()))
        };
        for rev in [false, true] {
            let mut b = tree.range().bounds::<Vec<u8>, _>((lo.clone(), hi.clone()));
            if rev {
                b = b.rev();
            }
            if let Some(n) = limit {
                b = b.limit(n);
            }
            let got: Vec<(Vec<u8>, Vec<u8>)> = b.iter().collect::<Result<_, _>>()?;
            let want = model_range(model, &lo, &hi, None, rev, limit);
            assert_eq!(got, want, "range {lo:?} {hi:?} rev {rev}");
        }
        let want_count = model_range(model, &lo, &hi, None, false, None).len() as u64;
        assert_eq!(
            tree.count::<Vec<u8>, _>((lo.clone(), hi.clone()))?,
            want_count
        );
        assert_eq!(
            tree.longest_prefix_record(&q)?,
            model_lpm(model, &q),
            "lpm {:?}",
            String::from_utf8_lossy(&q)
        );
        let at = tree.longest_prefix_record_at(&q, b'/')?;
        let want_at = (1..=q.len())
            .rev()
            .filter(|&l| l == q.len() || q[l] == b'/')
            .find_map(|l| model.get(&q[..l]).map(|v| (q[..l].to_vec(), v.clone())));
        assert_eq!(at, want_at, "lpm_at {:?}", String::from_utf8_lossy(&q));
        if model.get(&q).is_none() {
            assert_eq!(tree.get(&q)?, None);
        }
    }
    Ok(())
}

/// The tree under test: a 64-page pool, so that the data sets here do not fit it.
fn open(dir: &std::path::Path) -> Result<Tree, aimeta_engine::OpenError> {
    Tree::open(TreeConfig::new(dir).cache_bytes(64 * 4096))
}

#[test]
fn chain_keys_through_the_write_path_agree_with_a_model() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = open(dir.path())?;
    let mut rng = seeded(0x9E37_79B9_7F4A_7C15);
    let mut model = BTreeMap::new();
    let mut live: Vec<Vec<u8>> = Vec::new();
    for round in 0..6 {
        for _ in 0..250 {
            for k in chain(&mut rng) {
                let v = value(&mut rng, &k);
                tree.put(&k, &v)?;
                model.insert(k.clone(), v);
                live.push(k);
            }
        }
        // Deletes (whole runs of a chain and single keys) make leaves merge.
        for _ in 0..600 {
            let i = rng.random_range(0..live.len());
            let k = live.swap_remove(i);
            assert_eq!(tree.delete(&k)?, model.remove(&k).is_some());
        }
        // Same-length overwrites patch values in place.
        for _ in 0..100 {
            let k = live[rng.random_range(0..live.len())].clone();
            if let Some(v) = model.get_mut(&k) {
                v.iter_mut().for_each(|b| *b = b.wrapping_add(1));
                tree.put(&k, v)?;
            }
        }
        if round % 2 == 1 {
            tree.checkpoint()?;
        }
        verify(&tree, &model, &mut rng)?;
    }
    drop(tree);
    let tree = open(dir.path())?;
    verify(&tree, &model, &mut rng)?;
    Ok(())
}

#[test]
fn bulk_loaded_chains_are_front_coded_and_agree_with_a_model() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = open(dir.path())?;
    let mut rng = seeded(0x2545_F491_4F6C_DD1D);
    let model: BTreeMap<_, _> = (0..1500)
        .flat_map(|_| chain(&mut rng))
        .map(|k| (k, vec![7u8; 40]))
        .collect();
    tree.bulk_load(model.iter())?;
    let report = tree.check_integrity()?;
    // Plain pages hold about 30 of these keys (~100 bytes, 40-byte values) per leaf.
    let per_leaf = model.len() as f64 / report.leaf_pages as f64;
    assert!(per_leaf > 60.0, "{per_leaf:.1} entries per leaf");
    verify(&tree, &model, &mut rng)?;
    Ok(())
}
