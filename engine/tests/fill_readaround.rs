//! Fill read-around: on a store that fits the pool, a cold pool warms a 128 KiB window per
//! miss (every page read stays, so the neighbours are worth one sequential request); on a
//! store larger than the pool, a miss reads only its page, whatever the pool holds yet.

mod common;

use aimeta_engine::{Readable, Tree, TreeConfig};
use common::{manifest_key, manifest_value, TestResult};

const SHARDS: u32 = 20;
const PER_SHARD: u32 = 1_000;

fn load(dir: &std::path::Path) -> Result<u64, Box<dyn std::error::Error>> {
    let tree = Tree::open(TreeConfig::new(dir).cache_bytes(64 << 20))?;
    let items = (0..SHARDS)
        .flat_map(|s| (0..PER_SHARD).map(move |i| (manifest_key(s, i), manifest_value(s, i))));
    tree.bulk_load(items)?;
    tree.checkpoint()?;
    Ok(tree.size_on_disk()? / 4096)
}

/// Gets every key once, checking its value; returns the pool's counters over the gets.
fn get_all(tree: &Tree) -> Result<aimeta_engine::Metrics, Box<dyn std::error::Error>> {
    let before = tree.metrics();
    for s in 0..SHARDS {
        for i in (0..PER_SHARD).step_by(7) {
            let v = tree.get(&manifest_key(s, i))?;
            assert_eq!(v, Some(manifest_value(s, i)), "{s}/{i}");
        }
    }
    Ok(tree.metrics().since(&before))
}

#[test]
fn a_store_that_fits_the_pool_warms_a_window_per_miss() -> TestResult {
    let dir = tempfile::tempdir()?;
    let file_pages = load(dir.path())?;
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(64 << 20))?;
    let used = get_all(&tree)?;
    // 32-page windows: the whole file in about file_pages / 32 requests.
    assert!(
        used.bm_read_page_misses <= file_pages / 32 + 2,
        "{} misses over a {file_pages}-page file",
        used.bm_read_page_misses
    );
    assert!(used.bm_readaround_pages > 0);
    assert!(used.bm_pages_read <= file_pages);
    assert_eq!(used.bm_evictions, 0);
    // The same gets again touch no storage.
    let again = get_all(&tree)?;
    assert_eq!(again.bm_pages_read, 0);
    Ok(())
}

#[test]
fn a_store_larger_than_the_pool_reads_only_the_pages_missed() -> TestResult {
    let dir = tempfile::tempdir()?;
    let file_pages = load(dir.path())?;
    let pool_pages = file_pages / 4;
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(pool_pages * 4096))?;
    let used = get_all(&tree)?;
    assert_eq!(used.bm_readaround_pages, 0);
    assert_eq!(used.bm_pages_read, used.bm_read_page_misses);
    Ok(())
}

#[test]
fn read_around_can_be_turned_off() -> TestResult {
    let dir = tempfile::tempdir()?;
    load(dir.path())?;
    let tree = Tree::open(
        TreeConfig::new(dir.path())
            .cache_bytes(64 << 20)
            .fill_readaround_bytes(0),
    )?;
    let used = get_all(&tree)?;
    assert_eq!(used.bm_readaround_pages, 0);
    assert_eq!(used.bm_pages_read, used.bm_read_page_misses);
    Ok(())
}
