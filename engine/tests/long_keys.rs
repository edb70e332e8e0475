//! Long keys as the KV-cache trace replay writes them: path keys `kv/llama70b/<b0>/...`
//! of chains up to 247 blocks (1,740 bytes), every prefix of a chain at a '/' stored as
//! its own key with a 40-byte value, inserted one request (one write batch) at a time and
//! evicted longest first; among them short keys and keys of exactly `MAX_KEY_LEN` random
//! bytes, which front coding cannot shorten. After every phase the tree equals a model,
//! passes its integrity check, answers every chain's longest-prefix lookup with the
//! longest stored prefix, and keeps the 40-byte values of path keys inline.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use aimeta_engine::storage::{FaultPlan, FaultyOpener, SimDisk};
use aimeta_engine::{Durability, Error, Readable, Tree, TreeConfig, WriteBatch, MAX_KEY_LEN};
use common::{check_stamped, model_lpm, seeded, stamped_value, Rng, TestResult};
use rand::{Rng as _, RngExt as _};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The model root every path key starts with.
const ROOT: &[u8] = b"kv/llama70b";
/// Bytes of one block's segment: '/' and 6 hex digits.
const SEGMENT: usize = 7;
/// Blocks of the trace's longest chain.
const LONGEST_CHAIN: usize = 247;
/// Bytes of every value of a path key.
const VALUE_LEN: usize = 40;

/// One block's segment.
fn segment(rng: &mut Rng) -> Vec<u8> {
    format!("/{:06x}", rng.random_range(0..1u32 << 24)).into_bytes()
}

/// The path key of a chain's first `blocks` blocks.
fn path_key(chain: &[Vec<u8>], blocks: usize) -> Vec<u8> {
    let mut key = ROOT.to_vec();
    for s in &chain[..blocks] {
        key.extend_from_slice(s);
    }
    key
}

/// Chain 0 has `LONGEST_CHAIN` blocks; each of the `count - 1` others has 1 to 247 blocks,
/// its first ones taken from a random earlier chain (a shared prompt), the rest new.
fn chains(rng: &mut Rng, count: usize) -> Vec<Vec<Vec<u8>>> {
    let mut all: Vec<Vec<Vec<u8>>> = vec![(0..LONGEST_CHAIN).map(|_| segment(rng)).collect()];
    while all.len() < count {
        let blocks = rng.random_range(1..=LONGEST_CHAIN);
        let base = &all[rng.random_range(0..all.len())];
        let shared = rng.random_range(0..=blocks.min(base.len()));
        let mut chain = base[..shared].to_vec();
        while chain.len() < blocks {
            chain.push(segment(rng));
        }
        all.push(chain);
    }
    all
}

/// A key of exactly `len` random bytes.
fn random_key(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut key = vec![0u8; len];
    rng.fill_bytes(&mut key);
    key
}

/// The longest stored prefix of `query` ending at a '/' of it or at its end.
fn model_lpm_at(model: &Model, query: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    (1..=query.len())
        .rev()
        .filter(|&l| l == query.len() || query[l] == b'/')
        .find_map(|l| {
            model
                .get(&query[..l])
                .map(|v| (query[..l].to_vec(), v.clone()))
        })
}

/// The tree holds exactly the model, passes its integrity check, and keeps every value
/// inline except those of the `overflowed` keys of `MAX_KEY_LEN` bytes (one page each);
/// every chain's longest-prefix lookups (its whole path and one block more) agree with
/// the model.
fn verify(tree: &Tree, model: &Model, chains: &[Vec<Vec<u8>>], phase: &str) -> TestResult {
    let all: Model = tree.range().iter().collect::<Result<_, _>>()?;
    assert!(all == *model, "{phase}: the tree differs from the model");
    for (k, v) in model {
        check_stamped(k, v)?;
    }
    let report = tree.check_integrity()?;
    assert_eq!(report.entries, model.len() as u64, "{phase}");
    let overflowed = model
        .iter()
        .filter(|(k, v)| k.len() == MAX_KEY_LEN && v.len() == VALUE_LEN)
        .count();
    assert_eq!(
        report.overflow_pages, overflowed as u64,
        "{phase}: only values under keys of {MAX_KEY_LEN} bytes overflow"
    );
    for chain in chains.iter().take(8) {
        // A chain's subtree, forward and backward, and its count.
        let prefix = path_key(chain, chain.len().div_ceil(2));
        let want: Vec<_> = model
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .collect();
        let forward: Vec<_> = tree
            .range()
            .prefix(&prefix)
            .iter()
            .collect::<Result<_, _>>()?;
        let backward: Vec<_> = tree
            .range()
            .prefix(&prefix)
            .rev()
            .iter()
            .collect::<Result<_, _>>()?;
        assert!(
            forward.len() == want.len()
                && forward.iter().zip(&want).all(|(a, b)| (&a.0, &a.1) == *b),
            "{phase}: prefix scan"
        );
        assert!(
            backward.iter().rev().eq(forward.iter()),
            "{phase}: reverse scan"
        );
        assert_eq!(tree.count_prefix(&prefix)?, want.len() as u64, "{phase}");
    }
    for chain in chains {
        let mut query = path_key(chain, chain.len());
        for q in [query.clone(), {
            query.extend_from_slice(b"/ffffff");
            query
        }] {
            assert_eq!(
                tree.longest_prefix_record(&q)?,
                model_lpm(model, &q),
                "{phase}"
            );
            assert_eq!(
                tree.longest_prefix_record_at(&q, b'/')?,
                model_lpm_at(model, &q),
                "{phase}"
            );
        }
    }
    Ok(())
}

/// A tree on a simulated disk whose process can be killed, logging every commit synced.
struct Harness {
    disk: SimDisk,
    plan: Arc<FaultPlan>,
    dir: tempfile::TempDir,
}

impl Harness {
    fn open(&self) -> Result<Tree, aimeta_engine::OpenError> {
        let opener = FaultyOpener {
            inner: self.disk.clone(),
            plan: self.plan.clone(),
        };
        Tree::open(
            TreeConfig::new(self.dir.path())
                .cache_bytes(64 * 4096)
                .durability(Durability::Wal { sync: true })
                .background_checkpoints(false)
                .storage(Arc::new(opener)),
        )
    }

    /// The process dies: nothing it would do from now on (its closing checkpoint)
    /// reaches the disk.
    fn kill(&self, tree: Tree) {
        use std::sync::atomic::Ordering::SeqCst;
        self.plan.fail_after_ops.store(0, SeqCst);
        drop(tree);
        self.plan.fail_after_ops.store(-1, SeqCst);
    }
}

/// Applies `puts` and `deletes` to the tree as one batch, then to the model.
fn apply(tree: &Tree, model: &mut Model, puts: Model, deletes: &[Vec<u8>]) -> TestResult {
    let mut batch = WriteBatch::new();
    for (k, v) in &puts {
        batch.put(k.clone(), v.clone());
    }
    for k in deletes {
        batch.delete(k.clone());
    }
    tree.apply_batch(&batch)?;
    model.extend(puts);
    for k in deletes {
        model.remove(k);
    }
    Ok(())
}

#[test]
fn path_chains_and_keys_of_the_longest_length_survive_batches_eviction_and_recovery() -> TestResult
{
    let mut rng = seeded(0x1740_0247);
    let h = Harness {
        disk: SimDisk::new(),
        plan: FaultPlan::new(""),
        dir: tempfile::tempdir()?,
    };
    let mut tree = h.open()?;
    let chains = chains(&mut rng, 130);
    let longest = path_key(&chains[0], LONGEST_CHAIN);
    assert_eq!(longest.len(), ROOT.len() + SEGMENT * LONGEST_CHAIN);
    assert_eq!(longest.len(), 1740);
    let mut model = Model::new();
    let mut stamp = 0u64;
    let mut value = |key: &[u8], len: usize| {
        stamp += 1;
        stamped_value(key, stamp, len)
    };
    // The model root is itself stored, so that a chain with nothing left still finds it.
    let root_value = value(ROOT, VALUE_LEN);
    tree.put(ROOT, &root_value)?;
    model.insert(ROOT.to_vec(), root_value);

    // Insert: one batch a request, holding the prefixes of its chain not stored yet (the
    // blocks it adds to the cache), a short key, and now and then a key of the longest
    // length (its 40-byte value overflows: two such entries do not fit a leaf inline) or
    // one of 0 to 20 bytes (inline).
    for (n, chain) in chains.iter().enumerate() {
        let mut puts = Model::new();
        for blocks in 1..=chain.len() {
            let key = path_key(chain, blocks);
            if !model.contains_key(&key) {
                let v = value(&key, VALUE_LEN);
                puts.insert(key, v);
            }
        }
        let short = format!("req/{n:05}").into_bytes();
        puts.insert(short.clone(), value(&short, VALUE_LEN));
        if n % 3 == 0 {
            let key = random_key(&mut rng, MAX_KEY_LEN);
            let len = if n % 2 == 0 { VALUE_LEN } else { 16 + n % 5 };
            puts.insert(key.clone(), value(&key, len));
        }
        apply(&tree, &mut model, puts, &[])?;
        if n % 10 == 0 {
            // A key one byte too long: the whole batch is refused, nothing of it stored.
            let mut batch = WriteBatch::new();
            batch.put(b"req/refused".to_vec(), vec![1u8; VALUE_LEN]);
            batch.put(random_key(&mut rng, MAX_KEY_LEN + 1), vec![2u8; VALUE_LEN]);
            let e = tree.apply_batch(&batch).expect_err("an oversized key");
            assert!(
                matches!(e, Error::KeyTooLarge { len, max: MAX_KEY_LEN } if len == MAX_KEY_LEN + 1),
                "{e}"
            );
            assert_eq!(tree.get(b"req/refused")?, None);
            assert_eq!(tree.len(), model.len() as u64);
        }
    }
    let chain_keys = model.keys().filter(|k| k.starts_with(b"kv/")).count();
    assert!(chain_keys > 9_000, "{chain_keys} path keys");
    verify(&tree, &model, &chains, "after the inserts")?;
    let e = tree
        .put(&random_key(&mut rng, MAX_KEY_LEN + 1), b"v")
        .expect_err("an oversized key");
    assert!(matches!(e, Error::KeyTooLarge { .. }), "{e}");

    drop(tree);
    tree = h.open()?;
    verify(&tree, &model, &chains, "after a clean reopen")?;

    // Evict half the path keys, longest first, 64 a batch; a short key goes with each.
    let mut by_length: Vec<Vec<u8>> = model
        .keys()
        .filter(|k| k.starts_with(b"kv/") && k.len() > ROOT.len())
        .cloned()
        .collect();
    by_length.sort_by_key(|k| std::cmp::Reverse(k.len()));
    let (first_half, second_half) = by_length.split_at(by_length.len() / 2);
    for (n, doomed) in first_half.chunks(64).enumerate() {
        let mut doomed = doomed.to_vec();
        doomed.push(format!("req/{n:05}").into_bytes());
        apply(&tree, &mut model, Model::new(), &doomed)?;
    }
    verify(&tree, &model, &chains, "after evicting the longer half")?;

    // The process dies without its closing checkpoint: the log brings every commit back.
    h.kill(tree);
    tree = h.open()?;
    assert!(tree.metrics().wal_replayed_records > 0, "nothing replayed");
    verify(&tree, &model, &chains, "after a crash")?;

    // Evict the rest, then the keys of the longest length.
    for doomed in second_half.chunks(64) {
        apply(&tree, &mut model, Model::new(), doomed)?;
    }
    verify(&tree, &model, &chains, "after evicting every block")?;
    let longest: Vec<Vec<u8>> = model
        .keys()
        .filter(|k| k.len() == MAX_KEY_LEN)
        .cloned()
        .collect();
    apply(&tree, &mut model, Model::new(), &longest)?;
    verify(&tree, &model, &chains, "after deleting the longest keys")?;
    let report = tree.check_integrity()?;
    assert!(
        report.leaf_pages <= 2 && report.inner_pages <= 1,
        "merges left {report:?} for {} short keys",
        model.len()
    );
    h.kill(tree);
    let tree = h.open()?;
    verify(&tree, &model, &chains, "after a second crash")?;
    Ok(())
}

#[test]
fn a_bulk_load_of_long_path_keys_keeps_their_small_values_inline() -> TestResult {
    let mut rng = seeded(0x0B01_1740);
    let dir = tempfile::tempdir()?;
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(64 * 4096))?;
    // 10,000 whole 247-block chains (1,740 bytes each) over 40 chains' prefixes, and 200
    // keys of the longest length.
    let bases = chains(&mut rng, 40);
    let mut model = Model::new();
    let mut stamp = 0u64;
    while model.len() < 10_000 {
        let base = &bases[rng.random_range(0..bases.len())];
        let shared = rng.random_range(0..=base.len());
        let mut chain = base[..shared].to_vec();
        while chain.len() < LONGEST_CHAIN {
            chain.push(segment(&mut rng));
        }
        let key = path_key(&chain, LONGEST_CHAIN);
        stamp += 1;
        let v = stamped_value(&key, stamp, VALUE_LEN);
        model.insert(key, v);
    }
    for _ in 0..200 {
        let key = random_key(&mut rng, MAX_KEY_LEN);
        stamp += 1;
        let v = stamped_value(&key, stamp, VALUE_LEN);
        model.insert(key, v);
    }
    assert_eq!(tree.bulk_load(&model)?, model.len() as u64);
    verify(&tree, &model, &bases, "after the bulk load")?;
    let report = tree.check_integrity()?;
    // Two entries of 1,790 bytes fit a leaf: no overflow page for any path key.
    assert!(report.leaf_pages <= 5_100, "{report:?}");
    assert!(tree.size_on_disk()? < 6_000 * 4096, "{report:?}");

    // Writes on top of the loaded tree: the longest keys go, a chain's prefixes come.
    let longest: Vec<Vec<u8>> = model
        .keys()
        .filter(|k| k.len() == MAX_KEY_LEN)
        .cloned()
        .collect();
    let mut puts = Model::new();
    for blocks in 1..=LONGEST_CHAIN {
        let key = path_key(&bases[0], blocks);
        stamp += 1;
        let v = stamped_value(&key, stamp, VALUE_LEN);
        puts.insert(key, v);
    }
    apply(&tree, &mut model, puts, &longest)?;
    verify(&tree, &model, &bases, "after writes on the loaded tree")?;
    drop(tree);
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(64 * 4096))?;
    verify(&tree, &model, &bases, "after a reopen")?;
    Ok(())
}

#[test]
fn every_prefix_of_random_keys_of_the_longest_length_splits_and_merges_inner_pages() -> TestResult {
    // Every prefix of six random 2,000-byte keys: neighbours in a leaf share all but a
    // byte, and the separators between leaves are as long as the keys, so inner pages
    // that span two of the six hold a few children each.
    let mut rng = seeded(0x2000_0006);
    let dir = tempfile::tempdir()?;
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(64 * 4096))?;
    let bases: Vec<Vec<u8>> = (0..6).map(|_| random_key(&mut rng, MAX_KEY_LEN)).collect();
    let mut keys: Vec<Vec<u8>> = bases
        .iter()
        .flat_map(|b| (1..=b.len()).map(|l| b[..l].to_vec()))
        .collect();
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.random_range(0..=i));
    }
    let mut model = Model::new();
    let mut stamp = 0u64;
    for batch in keys.chunks(100) {
        let mut puts = Model::new();
        for k in batch {
            stamp += 1;
            // 16 bytes: inline under a key of any length.
            puts.insert(k.clone(), stamped_value(k, stamp, 16));
        }
        apply(&tree, &mut model, puts, &[])?;
    }
    let lookups = |tree: &Tree, model: &Model| -> TestResult {
        for base in &bases {
            let mut query = base.clone();
            query.extend_from_slice(b"/more");
            assert_eq!(
                tree.longest_prefix_record(&query)?,
                model_lpm(model, &query)
            );
        }
        Ok(())
    };
    verify(&tree, &model, &[], "after the inserts")?;
    lookups(&tree, &model)?;
    let report = tree.check_integrity()?;
    assert!(report.inner_pages > 6, "{report:?}");

    // Longest first, 200 a batch, down to the shortest tenth.
    let mut by_length: Vec<Vec<u8>> = model.keys().cloned().collect();
    by_length.sort_by_key(|k| std::cmp::Reverse(k.len()));
    let keep = by_length.len() / 10;
    for doomed in by_length[..by_length.len() - keep].chunks(200) {
        apply(&tree, &mut model, Model::new(), doomed)?;
    }
    verify(&tree, &model, &[], "after evicting nine tenths")?;
    lookups(&tree, &model)?;
    let after = tree.check_integrity()?;
    assert!(
        after.leaf_pages * 4 < report.leaf_pages,
        "{report:?} before, {after:?} after"
    );
    drop(tree);
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(64 * 4096))?;
    verify(&tree, &model, &[], "after a reopen")?;
    lookups(&tree, &model)?;
    Ok(())
}
