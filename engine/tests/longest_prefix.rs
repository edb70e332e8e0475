//! Longest-prefix lookups: right on prefix-closed chain sets and on sets that are not
//! prefix-closed (where bisecting over candidate lengths with point gets goes wrong), and
//! cheap on a cold pool: at most twice the tree's height in pages.

mod common;

use std::collections::BTreeMap;

use aimeta_engine::{Readable, Tree, TreeConfig};
use common::{model_lpm, seeded, Rng, TestResult};
use rand::{Rng as _, RngExt as _};

/// A chain's keys, shortest first.
type Chain = Vec<Vec<u8>>;

/// Chain `c`: `kv/llama70b/<h0>/<h1>/...` with `depth` levels of 9 bytes each.
fn chain(rng: &mut Rng, depth: usize) -> Chain {
    let mut key = b"kv/llama70b".to_vec();
    let mut levels = Vec::with_capacity(depth);
    for _ in 0..depth {
        key.extend_from_slice(format!("/{:08x}", rng.next_u64() as u32).as_bytes());
        levels.push(key.clone());
    }
    levels
}

/// `count` chains of 4 to 32 levels, every level stored with a value naming its chain:
/// the prefix-closed model and the chains.
fn chains(rng: &mut Rng, count: u32) -> (BTreeMap<Vec<u8>, Vec<u8>>, Vec<Chain>) {
    let mut model = BTreeMap::new();
    let mut all = Vec::with_capacity(count as usize);
    for c in 0..count {
        let depth = rng.random_range(4..33);
        let levels = chain(rng, depth);
        for l in &levels {
            model.insert(l.clone(), c.to_le_bytes().repeat(10));
        }
        all.push(levels);
    }
    (model, all)
}

/// A two-level key under the model root that no chain stores (a miss, almost surely).
fn stray_query(rng: &mut Rng) -> Vec<u8> {
    format!(
        "kv/llama70b/{:08x}/{:08x}",
        rng.next_u64() as u32,
        rng.next_u64() as u32
    )
    .into_bytes()
}

/// The seed report's bisect over candidate lengths with get: right only on prefix-closed sets.
fn bisect(
    tree: &Tree,
    q: &[u8],
    level_len: usize,
    base: usize,
) -> Result<Option<Vec<u8>>, aimeta_engine::Error> {
    let max_levels = (q.len() - base) / level_len;
    let (mut lo, mut hi) = (0usize, max_levels);
    let mut best = None;
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let cand = &q[..base + mid * level_len];
        if tree.get(cand)?.is_some() {
            best = Some(cand.to_vec());
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(best)
}

#[test]
fn native_lookup_agrees_with_brute_force_and_bisect_on_chains() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(32 * 4096))?;
    let mut rng = seeded(0x9E37_79B9_7F4A_7C15);
    let (model, chains) = chains(&mut rng, 600);
    tree.bulk_load(model.iter())?;
    for (n, levels) in chains.iter().enumerate() {
        let mut q = levels.last().ok_or("empty chain")?.clone();
        if n % 5 == 4 {
            q = stray_query(&mut rng);
        } else {
            q.extend_from_slice(b"/0badf00d/1badf00d");
        }
        let native = tree.longest_prefix_record(&q)?;
        assert_eq!(
            native,
            model_lpm(&model, &q),
            "query {}",
            String::from_utf8_lossy(&q)
        );
        let bis = bisect(&tree, &q, 9, b"kv/llama70b".len())?;
        assert_eq!(
            native.map(|(k, _)| k),
            bis,
            "bisect disagrees on a prefix-closed set"
        );
    }
    Ok(())
}

#[test]
fn native_lookup_is_right_where_bisect_is_wrong() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = Tree::open(TreeConfig::new(dir.path()))?;
    // Not prefix-closed: "a/b" and "a/b/c" are missing.
    for k in [&b"a"[..], b"a/b/c/d", b"a/b/c/e/f", b"b"] {
        tree.put(k, k)?;
    }
    let q = b"a/b/c/d/x/y";
    assert_eq!(
        tree.longest_prefix_record(q)?.map(|(k, _)| k),
        Some(b"a/b/c/d".to_vec())
    );
    // Candidate lengths 1..=11 bisected with get: probes "a/b/c/" (missing), concludes shorter.
    let mut lo = 0usize;
    let mut hi = q.len();
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if tree.get(&q[..mid])?.is_some() {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    assert_eq!(
        &q[..lo],
        b"a",
        "bisect is expected to miss the longer stored prefix"
    );
    assert_eq!(
        tree.longest_prefix_record(b"a/b/c/e")?.map(|(k, _)| k),
        Some(b"a".to_vec())
    );
    assert_eq!(tree.longest_prefix_record(b"c")?, None);
    assert_eq!(tree.longest_prefix_record(b"")?, None);
    // Keys holding 0x00 and 0xFF.
    tree.put(&[0x00], b"z")?;
    tree.put(&[0x00, 0xFF, 0xFF], b"zz")?;
    assert_eq!(
        tree.longest_prefix_record(&[0x00, 0xFF, 0xFF, 0x00])?
            .map(|(k, _)| k),
        Some(vec![0x00, 0xFF, 0xFF])
    );
    assert_eq!(
        tree.longest_prefix_record(&[0x00, 0xFF, 0xFE])?
            .map(|(k, _)| k),
        Some(vec![0x00])
    );
    Ok(())
}

#[test]
fn a_cold_lookup_reads_at_most_twice_the_height() -> TestResult {
    let dir = tempfile::tempdir()?;
    let mut rng = seeded(42);
    let (model, chains) = chains(&mut rng, 4000);
    let mut queries = Vec::new();
    for levels in chains.iter().step_by(400) {
        let mut q = levels.last().ok_or("empty chain")?.clone();
        q.extend_from_slice(b"/00000000/11111111");
        queries.push(q);
        queries.push(stray_query(&mut rng));
    }
    {
        let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(16 * 4096))?;
        tree.bulk_load(model.iter())?;
        assert!(tree.size_on_disk()? > 40 * 16 * 4096);
    }
    for (n, q) in queries.iter().enumerate() {
        let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(16 * 4096))?;
        let height = u64::from(tree.snapshot().height());
        let before = tree.metrics();
        // Hits (even n) use the general lookup; misses the '/'-boundary form, which skips
        // partial-segment candidates that the general form must check leaf by leaf.
        let got = if n % 2 == 0 {
            tree.longest_prefix_record(q)?
        } else {
            tree.longest_prefix_record_at(q, b'/')?
        };
        let used = tree.metrics().since(&before);
        assert_eq!(got, model_lpm(&model, q));
        assert!(
            used.bm_pages_read <= 2 * height,
            "lookup of {} read {} pages, height {height}",
            String::from_utf8_lossy(q),
            used.bm_pages_read
        );
        assert_eq!(used.bm_scan_full_blob_reads, 0);
    }
    Ok(())
}

#[test]
fn a_cold_general_lookup_of_a_miss_reads_one_path() -> TestResult {
    // The key-length set (kept in the superblock, so it survives the reopen) holds only
    // the chains' level lengths: a miss's common prefix with its predecessor, a partial
    // segment under the root, is shorter than every key, so the lookup ends in the leaf
    // it first reads instead of checking the predecessor of each shorter prefix.
    let dir = tempfile::tempdir()?;
    let mut rng = seeded(43);
    let (model, _) = chains(&mut rng, 4000);
    {
        let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(16 * 4096))?;
        tree.bulk_load(model.iter())?;
    }
    for _ in 0..20 {
        let q = stray_query(&mut rng);
        let tree = Tree::open(
            TreeConfig::new(dir.path())
                .cache_bytes(16 * 4096)
                .fill_readaround_bytes(0),
        )?;
        let height = u64::from(tree.snapshot().height());
        let before = tree.metrics();
        let got = tree.longest_prefix_record(&q)?;
        let used = tree.metrics().since(&before);
        assert_eq!(got, model_lpm(&model, &q));
        assert!(
            used.bm_pages_read < height,
            "miss {} read {} pages, height {height} (root resident)",
            String::from_utf8_lossy(&q),
            used.bm_pages_read
        );
    }
    Ok(())
}

#[test]
fn keys_of_new_lengths_written_after_a_load_are_found() -> TestResult {
    // Puts after the bulk load add their lengths; a delete keeps its length's bit.
    let dir = tempfile::tempdir()?;
    let mut rng = seeded(44);
    let (mut model, chains) = chains(&mut rng, 300);
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(16 * 4096))?;
    tree.bulk_load(model.iter())?;
    let odd = |levels: &Chain, cut: usize| levels[levels.len() / 2][..cut].to_vec();
    for (c, levels) in chains.iter().enumerate().step_by(7) {
        let k = odd(levels, 14 + c % 9);
        tree.put(&k, b"odd")?;
        model.insert(k, b"odd".to_vec());
        let gone = levels[1].clone();
        tree.delete(&gone)?;
        model.remove(&gone);
    }
    drop(tree);
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(16 * 4096))?;
    for (c, levels) in chains.iter().enumerate() {
        let mut q = levels.last().ok_or("empty chain")?.clone();
        q.extend_from_slice(b"/0000");
        for q in [q, odd(levels, 14 + c % 9), levels[1].clone()] {
            assert_eq!(tree.longest_prefix_record(&q)?, model_lpm(&model, &q));
        }
    }
    Ok(())
}
