//! I/O accounting on a tree many times larger than the pool: a cold 100-entry prefix scan
//! reads only the pages that hold its entries plus one root-to-leaf path, never a whole
//! frame; the full-frame reproduction mode brings the peer engine's whole-frame reads back.

mod common;

use std::collections::BTreeSet;

use aimeta_engine::{Readable, ScanIo, Tree, TreeConfig};
use common::{manifest_key, manifest_value, TestResult};

const SHARDS: u32 = 40;
const PER_SHARD: u32 = 2_500;
const POOL_PAGES: u64 = 64;

fn load(dir: &std::path::Path) -> TestResult {
    let tree = Tree::open(TreeConfig::new(dir).cache_bytes(POOL_PAGES * 4096))?;
    let items = (0..SHARDS)
        .flat_map(|s| (0..PER_SHARD).map(move |i| (manifest_key(s, i), manifest_value(s, i))));
    tree.bulk_load(items)?;
    let file_pages = tree.size_on_disk()? / 4096;
    assert!(
        file_pages >= 10 * POOL_PAGES,
        "store of {file_pages} pages is not many times the pool"
    );
    Ok(())
}

fn cold(dir: &std::path::Path, mode: ScanIo) -> Result<Tree, aimeta_engine::OpenError> {
    Tree::open(
        TreeConfig::new(dir)
            .cache_bytes(POOL_PAGES * 4096)
            .scan_io(mode),
    )
}

#[test]
fn a_cold_prefix_scan_reads_only_the_pages_holding_its_entries() -> TestResult {
    let dir = tempfile::tempdir()?;
    load(dir.path())?;
    for shard in [0u32, 7, 19, 33, 39] {
        let tree = cold(dir.path(), ScanIo::Paged)?;
        let prefix = format!("ds/laion/shard-{shard:05}/");
        let before = tree.metrics();
        let mut keys = Vec::new();
        let mut scan = tree.range().prefix(prefix.as_bytes()).limit(100).iter();
        while let Some((k, v)) = scan.next_entry()? {
            assert_eq!(v.len(), 24);
            keys.push(k.to_vec());
        }
        drop(scan);
        let used = tree.metrics().since(&before);
        assert_eq!(keys.len(), 100);
        assert_eq!(keys[0], manifest_key(shard, 0));
        let snap = tree.snapshot();
        let mut leaves = BTreeSet::new();
        for k in &keys {
            leaves.insert(snap.leaf_page_of(k)?.ok_or("empty tree")?);
        }
        let bound = leaves.len() as u64 + u64::from(snap.height());
        assert_eq!(
            used.bm_scan_full_blob_reads, 0,
            "paged mode read a whole frame"
        );
        assert!(
            used.bm_pages_read <= bound,
            "shard {shard}: read {} pages, but the entries sit on {} leaves under a tree of height {}",
            used.bm_pages_read,
            leaves.len(),
            snap.height()
        );
        assert_eq!(used.bm_bytes_read, used.bm_pages_read * 4096);
        if leaves.len() >= 3 {
            assert!(
                used.bm_readahead_pages > 0,
                "no readahead over {} adjacent leaves",
                leaves.len()
            );
        }
    }
    Ok(())
}

#[test]
fn full_frame_mode_reproduces_whole_frame_reads() -> TestResult {
    let dir = tempfile::tempdir()?;
    load(dir.path())?;
    // The first 100 entries of one shard on a cold pool: the tree and what the read cost.
    let cold_scan = |mode: ScanIo| -> Result<_, Box<dyn std::error::Error>> {
        let tree = cold(dir.path(), mode)?;
        let before = tree.metrics();
        let n = tree
            .range()
            .prefix(b"ds/laion/shard-00021/")
            .limit(100)
            .iter()
            .count();
        assert_eq!(n, 100);
        let cost = tree.metrics().since(&before);
        Ok((tree, cost))
    };
    // The paged tree is closed before the full-frame one opens the same directory.
    let paged = cold_scan(ScanIo::Paged)?.1;
    let (tree, full) = cold_scan(ScanIo::FullFrame)?;
    assert!(
        full.bm_scan_full_blob_reads > 0,
        "full-frame mode made no whole-frame read"
    );
    assert!(full.bm_bytes_read >= 512 * 1024);
    assert!(
        full.bm_bytes_read >= 10 * paged.bm_bytes_read,
        "full frame read {} bytes, paged {}",
        full.bm_bytes_read,
        paged.bm_bytes_read
    );
    // Point gets never take the whole-frame path, in either mode.
    let before = tree.metrics();
    assert!(tree.get(&manifest_key(3, 1234))?.is_some());
    assert_eq!(tree.metrics().since(&before).bm_scan_full_blob_reads, 0);
    Ok(())
}

#[test]
fn a_cold_count_of_8000_keys_is_two_descents() -> TestResult {
    let dir = tempfile::tempdir()?;
    load(dir.path())?;
    let tree = cold(dir.path(), ScanIo::Paged)?;
    let height = u64::from(tree.snapshot().height());
    let before = tree.metrics();
    let lo = manifest_key(5, 1000);
    let hi = manifest_key(8, 1500);
    let n = tree.count(lo.as_slice()..hi.as_slice())?;
    assert_eq!(n, u64::from(3 * PER_SHARD + 500));
    let used = tree.metrics().since(&before);
    assert!(
        used.bm_pages_read <= 2 * height,
        "count read {} pages",
        used.bm_pages_read
    );
    Ok(())
}
