//! `Range::for_each_entry`, the visitor form of a range scan, hands out exactly what
//! stepping with `next_entry` does: on front-coded and plain leaves, with overflow values,
//! through a pool far smaller than the store, when the visitor stops early, and when the
//! two forms take turns on one scan.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use aimeta_engine::{Readable, Tree, TreeConfig};
use common::{mixed_value, model_range, seeded, TestResult};
use rand::RngExt as _;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Keys of two kinds, so that both leaf layouts occur: long chain paths that differ in
/// their last bytes (front-coded leaves) and short manifest-like keys (plain leaves);
/// one value in 40 goes to an overflow run.
fn load(dir: &std::path::Path) -> Result<(Tree, Model), Box<dyn std::error::Error>> {
    let mut rng = seeded(11);
    let mut model = Model::new();
    for c in 0..300u32 {
        let mut path = format!("kv/chain-{c:04}");
        for b in 0..(1 + c % 12) {
            path.push_str(&format!("/{:016x}", u64::from(c) * 1_000 + u64::from(b)));
            let value = mixed_value(&mut rng, path.as_bytes(), 1, 40);
            model.insert(path.clone().into_bytes(), value);
        }
    }
    for s in 0..20u32 {
        for i in 0..300u32 {
            let key = format!("ds/s{s:02}/{i:05}").into_bytes();
            let value = mixed_value(&mut rng, &key, 1, 40);
            model.insert(key, value);
        }
    }
    {
        let tree = Tree::open(TreeConfig::new(dir).cache_bytes(64 << 20))?;
        tree.bulk_load(model.iter().map(|(k, v)| (k.clone(), v.clone())))?;
    }
    // A pool of 32 pages, far smaller than the store: scans miss and evict as they go.
    let tree = Tree::open(TreeConfig::new(dir).cache_bytes(32 * 4096))?;
    Ok((tree, model))
}

fn visit_all(it: &mut aimeta_engine::Range) -> Result<Entries, aimeta_engine::Error> {
    let mut out = Vec::new();
    let n = it.for_each_entry(&mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        true
    })?;
    assert_eq!(n, out.len(), "the count is the entries visited");
    Ok(out)
}

#[test]
fn the_visitor_sees_what_stepping_sees_on_random_ranges() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (tree, model) = load(dir.path())?;
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    let mut rng = seeded(12);
    let bound = |rng: &mut common::Rng| -> Bound<Vec<u8>> {
        let k = keys[rng.random_range(0..keys.len())].clone();
        match rng.random_range(0..3) {
            0 => Bound::Included(k),
            1 => Bound::Excluded(k),
            _ => Bound::Unbounded,
        }
    };
    for round in 0..300 {
        let (lo, hi) = (bound(&mut rng), bound(&mut rng));
        let limit = match rng.random_range(0..3) {
            0 => None,
            1 => Some(rng.random_range(0..5)),
            _ => Some(rng.random_range(0..2_000)),
        };
        let rev = rng.random_range(0..4) == 0;
        let mut b = tree.range().bounds((lo.clone(), hi.clone()));
        if rev {
            b = b.rev();
        }
        if let Some(l) = limit {
            b = b.limit(l);
        }
        let got = visit_all(&mut b.iter())?;
        let want = model_range(&model, &lo, &hi, None, rev, limit);
        assert_eq!(
            got.len(),
            want.len(),
            "round {round}: {lo:?}..{hi:?} limit {limit:?}"
        );
        assert!(got == want, "round {round}: {lo:?}..{hi:?} limit {limit:?}");
    }
    for prefix in [
        &b"kv/chain-01"[..],
        b"kv/chain-0042/",
        b"ds/s07/",
        b"ds/s07/0029",
        b"zz",
    ] {
        let got = visit_all(&mut tree.range().prefix(prefix).iter())?;
        let want = model_range(
            &model,
            &Bound::Unbounded,
            &Bound::Unbounded,
            Some(prefix),
            false,
            None,
        );
        assert!(got == want, "prefix {:?}", String::from_utf8_lossy(prefix));
    }
    Ok(())
}

#[test]
fn a_visitor_that_stops_can_be_resumed_by_either_form() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (tree, model) = load(dir.path())?;
    let want: Entries = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut rng = seeded(13);
    let mut it = tree.range().iter();
    let mut got = Vec::new();
    while got.len() < want.len() {
        if rng.random_range(0..2) == 0 {
            // Take a few entries one at a time.
            for _ in 0..rng.random_range(1..5) {
                match it.next_entry()? {
                    Some((k, v)) => got.push((k.to_vec(), v.to_vec())),
                    None => break,
                }
            }
        } else {
            // Visit a run, stopping after `stop` entries (more than a leaf holds, at times).
            let stop = rng.random_range(1..400);
            let mut taken = 0;
            let n = it.for_each_entry(&mut |k, v| {
                got.push((k.to_vec(), v.to_vec()));
                taken += 1;
                taken < stop
            })?;
            assert_eq!(n, taken);
            assert!(n <= stop);
        }
    }
    assert_eq!(got.len(), want.len());
    assert!(
        got == want,
        "the scan in turns handed out every entry once, in order"
    );
    assert!(it.next_entry()?.is_none(), "and nothing after the last");
    assert_eq!(it.for_each_entry(&mut |_, _| true)?, 0);
    Ok(())
}

#[test]
fn a_bounded_visit_stops_at_the_bound_mid_leaf() -> TestResult {
    let dir = tempfile::tempdir()?;
    let (tree, model) = load(dir.path())?;
    let from = b"ds/s03/00100".to_vec();
    let until = b"ds/s03/00117".to_vec();
    let got = visit_all(&mut tree.range().from(&from).until(&until).iter())?;
    let want = model_range(
        &model,
        &Bound::Included(from),
        &Bound::Excluded(until),
        None,
        false,
        None,
    );
    assert_eq!(got.len(), 17);
    assert!(got == want);
    Ok(())
}
