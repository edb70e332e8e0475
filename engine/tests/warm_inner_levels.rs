//! Warming the inner levels at open: a tree reopened with a cold pool reads its inner
//! pages (written together by the bulk loader) in a few requests, so that the first gets
//! miss only on leaves; with warming off, the same gets also miss on inner pages.

mod common;

use aimeta_engine::{Readable, Tree, TreeConfig};
use common::{manifest_key, manifest_value, TestResult};

const SHARDS: u32 = 40;
const PER_SHARD: u32 = 5_000;
/// A pool far smaller than the tree (its leaves), larger than twice its inner pages.
const POOL_BYTES: u64 = 2 << 20;

fn open(dir: &std::path::Path, warm: bool) -> Result<Tree, aimeta_engine::OpenError> {
    Tree::open(
        TreeConfig::new(dir)
            .cache_bytes(POOL_BYTES)
            .fill_readaround_bytes(0)
            .warm_inner_levels(warm),
    )
}

/// Misses and pages read over gets spread across the key space.
fn cold_gets(tree: &Tree) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let before = tree.metrics();
    let mut gets = 0;
    for s in (0..SHARDS).step_by(3) {
        for i in (0..PER_SHARD).step_by(611) {
            assert_eq!(tree.get(&manifest_key(s, i))?, Some(manifest_value(s, i)));
            gets += 1;
        }
    }
    let used = tree.metrics().since(&before);
    Ok((used.bm_read_page_misses, gets))
}

#[test]
fn a_reopened_tree_misses_only_on_leaves() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(64 << 20))?;
        let items = (0..SHARDS)
            .flat_map(|s| (0..PER_SHARD).map(move |i| (manifest_key(s, i), manifest_value(s, i))));
        tree.bulk_load(items)?;
        tree.checkpoint()?;
        assert!(
            tree.metrics().height >= 3,
            "the test needs inner pages below the root"
        );
    }

    let warm = open(dir.path(), true)?;
    let opened = warm.metrics();
    assert!(opened.inner_pages_warmed > 1, "{opened:?}");
    // The loader wrote the inner pages side by side: far fewer requests than pages.
    assert!(opened.bm_readahead_pages + 1 >= opened.inner_pages_warmed);
    let (misses, gets) = cold_gets(&warm)?;
    assert_eq!(misses, gets, "one miss per get: its leaf");
    drop(warm);

    let cold = open(dir.path(), false)?;
    assert_eq!(cold.metrics().inner_pages_warmed, 0);
    let (misses, gets) = cold_gets(&cold)?;
    assert!(
        misses > gets,
        "without warming the first gets miss on inner pages too"
    );
    Ok(())
}
