//! The stored-key filter: longest-prefix lookups of chains that are not stored read no
//! leaf, its memory comes out of the pool's budget, its file is loaded on reopen, and a
//! damaged, stale or missing file is rebuilt from the keys with every answer unchanged.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use aimeta_engine::{Readable, Tree, TreeConfig};
use common::{model_lpm, seeded, Rng, TestResult};
use rand::{Rng as _, RngExt as _};

const BUDGET: u64 = 64 * 4096;

fn segment(rng: &mut Rng) -> String {
    format!("/{:08x}", rng.next_u64() as u32)
}

/// 4,000 chains of 2 to 8 levels, every level stored (a prefix-closed KV-cache index).
fn chains(rng: &mut Rng) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for c in 0u32..4_000 {
        let mut key = b"kv/llama70b".to_vec();
        for _ in 0..rng.random_range(2..9) {
            key.extend_from_slice(segment(rng).as_bytes());
            model.insert(key.clone(), c.to_le_bytes().to_vec());
        }
    }
    model
}

/// Queries that name a chain no one stored, two levels deep.
fn misses(rng: &mut Rng, model: &BTreeMap<Vec<u8>, Vec<u8>>, n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let q = format!("kv/llama70b{}{}", segment(rng), segment(rng)).into_bytes();
        if model_lpm(model, &q).is_none() {
            out.push(q);
        }
    }
    out
}

fn open(dir: &Path, bits: u32) -> Result<Tree, aimeta_engine::OpenError> {
    Tree::open(
        TreeConfig::new(dir)
            .cache_bytes(BUDGET)
            .key_filter_bits(bits),
    )
}

/// Page accesses (hits and misses) per lookup of `queries`, checking every answer.
fn pages_per_lookup(
    tree: &Tree,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    queries: &[Vec<u8>],
) -> Result<f64, Box<dyn std::error::Error>> {
    let before = tree.metrics();
    for q in queries {
        assert_eq!(
            tree.longest_prefix_record(q)?,
            model_lpm(model, q),
            "query {q:?}"
        );
    }
    let d = tree.metrics().since(&before);
    Ok((d.bm_read_page_hits + d.bm_read_page_misses) as f64 / queries.len() as f64)
}

#[test]
fn misses_read_no_leaf_and_the_filter_is_charged_to_the_budget() -> TestResult {
    let mut rng = seeded(0x6b65_7966);
    let model = chains(&mut rng);
    let queries = misses(&mut rng, &model, 2_000);
    let (with, without) = (tempfile::tempdir()?, tempfile::tempdir()?);
    for (dir, bits) in [(with.path(), 10), (without.path(), 0)] {
        open(dir, bits)?.bulk_load(model.iter())?;
    }
    let filtered = open(with.path(), 10)?;
    let plain = open(without.path(), 0)?;
    let m = filtered.metrics();
    // Loaded from the file the bulk load's checkpoint wrote, not rebuilt.
    assert_eq!(m.key_filter_rebuilds, 0);
    assert!(
        m.key_filter_bytes >= model.len() as u64 * 10 / 8,
        "{} bytes",
        m.key_filter_bytes
    );
    let charged = m.key_filter_bytes.div_ceil(4096);
    assert_eq!(m.capacity_pages, BUDGET / 4096 - charged);
    assert_eq!(plain.metrics().capacity_pages, BUDGET / 4096);

    let with_filter = pages_per_lookup(&filtered, &model, &queries)?;
    let without_filter = pages_per_lookup(&plain, &model, &queries)?;
    // Without the filter a miss descends to the leaf where the query would be; with it,
    // only a false positive (about 1 % a candidate, two candidates a query) reads a page.
    assert!(
        without_filter >= 1.0,
        "{without_filter} pages a miss without the filter"
    );
    assert!(
        with_filter < 0.2,
        "{with_filter} pages a miss with the filter"
    );
    assert!(filtered.metrics().key_filter_rejects >= 2 * queries.len() as u64 * 9 / 10);

    // Hits still find the deepest stored level, below phantom levels of the query.
    let hits: Vec<Vec<u8>> = model
        .keys()
        .step_by(7)
        .map(|k| [k.as_slice(), segment(&mut rng).as_bytes()].concat())
        .collect();
    pages_per_lookup(&filtered, &model, &hits)?;
    Ok(())
}

#[test]
fn keys_put_after_the_load_are_found_across_reopens() -> TestResult {
    let mut rng = seeded(0x7075_7473);
    let mut model = chains(&mut rng);
    let dir = tempfile::tempdir()?;
    open(dir.path(), 10)?.bulk_load(model.iter())?;
    {
        let tree = open(dir.path(), 10)?;
        for _ in 0..500 {
            let k = format!("kv/llama70b{}", segment(&mut rng)).into_bytes();
            tree.put(&k, b"new")?;
            model.insert(k, b"new".to_vec());
        }
        // Dropped without a checkpoint of its own: the close checkpoints, and the file
        // is written for that checkpoint.
    }
    let tree = open(dir.path(), 10)?;
    assert_eq!(tree.metrics().key_filter_rebuilds, 0);
    for k in model.keys() {
        assert_eq!(
            tree.longest_prefix_record(k)?.map(|(key, _)| key),
            Some(k.clone())
        );
    }
    Ok(())
}

#[test]
fn a_damaged_stale_or_missing_filter_file_is_rebuilt() -> TestResult {
    let mut rng = seeded(0x6461_6d61);
    let model = chains(&mut rng);
    let queries = misses(&mut rng, &model, 500);
    let dir = tempfile::tempdir()?;
    open(dir.path(), 10)?.bulk_load(model.iter())?;
    let file = dir.path().join("keys.filter");
    let good = std::fs::read(&file)?;

    let mut damaged = good.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0x10;
    std::fs::write(&file, &damaged)?;
    let tree = open(dir.path(), 10)?;
    assert_eq!(tree.metrics().key_filter_rebuilds, 1);
    assert!(pages_per_lookup(&tree, &model, &queries)? < 0.2);
    drop(tree);
    // The rebuild wrote a good file for the same checkpoint.
    assert_eq!(open(dir.path(), 10)?.metrics().key_filter_rebuilds, 0);

    std::fs::remove_file(&file)?;
    assert_eq!(open(dir.path(), 10)?.metrics().key_filter_rebuilds, 1);

    // A file of another checkpoint (the tree moved on while it was left behind).
    let stale = std::fs::read(&file)?;
    {
        let tree = open(dir.path(), 10)?;
        tree.put(b"kv/llama70b/ffffffff", b"x")?;
        tree.checkpoint()?;
    }
    std::fs::write(&file, &stale)?;
    let tree = open(dir.path(), 10)?;
    assert_eq!(tree.metrics().key_filter_rebuilds, 1);
    assert!(tree
        .longest_prefix_record(b"kv/llama70b/ffffffff/00000000")?
        .is_some());
    for k in model.keys().step_by(13) {
        assert_eq!(
            tree.longest_prefix_record(k)?.map(|(key, _)| key),
            Some(k.clone())
        );
    }
    drop(tree);

    // A filter of another size than asked for is rebuilt at the size asked for.
    let tree = open(dir.path(), 16)?;
    assert_eq!(tree.metrics().key_filter_rebuilds, 1);
    assert!(tree.metrics().key_filter_bytes >= model.len() as u64 * 2);
    Ok(())
}

#[test]
fn too_many_bits_a_key_is_refused_with_the_range() -> TestResult {
    let dir = tempfile::tempdir()?;
    let err = open(dir.path(), 33).err().ok_or("33 bits a key accepted")?;
    assert!(err.to_string().contains("0 (no filter) to 32"), "{err}");
    Ok(())
}
