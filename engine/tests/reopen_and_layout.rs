//! What is committed and checkpointed survives a reopen; bulk-loaded leaves sit on
//! adjacent pages; repeated updates reuse freed pages instead of growing the file.

mod common;

use aimeta_engine::{Readable, Tree, TreeConfig};
use common::{manifest_key, manifest_value, TestResult};

#[test]
fn data_survives_reopen_with_deletes_and_overflow_values() -> TestResult {
    let dir = tempfile::tempdir()?;
    {
        let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(16 * 4096))?;
        for i in 0..3000u32 {
            tree.put(&manifest_key(i % 7, i), &manifest_value(1, i))?;
        }
        for i in (0..3000u32).step_by(3) {
            assert!(tree.delete(&manifest_key(i % 7, i))?);
        }
        tree.put(b"big", &vec![9u8; 50_000])?;
        tree.checkpoint()?;
        tree.put(b"after-checkpoint", b"kept by the clean close")?;
    }
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(16 * 4096))?;
    assert_eq!(tree.len(), 2000 + 2);
    for i in 0..3000u32 {
        let got = tree.get(&manifest_key(i % 7, i))?;
        assert_eq!(got.is_some(), i % 3 != 0, "key {i}");
    }
    assert_eq!(tree.get(b"big")?, Some(vec![9u8; 50_000]));
    assert_eq!(
        tree.get(b"after-checkpoint")?.as_deref(),
        Some(&b"kept by the clean close"[..])
    );
    tree.check_integrity()?;
    Ok(())
}

#[test]
fn bulk_loaded_leaves_are_adjacent_pages() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = Tree::open(TreeConfig::new(dir.path()))?;
    tree.bulk_load(
        (0..4u32)
            .flat_map(|s| (0..5000u32).map(move |i| (manifest_key(s, i), manifest_value(s, i)))),
    )?;
    let snap = tree.snapshot();
    let mut pages = Vec::new();
    for i in (0..5000u32).step_by(10) {
        let p = snap.leaf_page_of(&manifest_key(2, i))?.ok_or("empty")?;
        if pages.last() != Some(&p) {
            pages.push(p);
        }
    }
    assert!(pages.len() > 20);
    for w in pages.windows(2) {
        assert_eq!(
            w[1],
            w[0] + 1,
            "leaves of one shard are not adjacent: {pages:?}"
        );
    }
    let report = tree.check_integrity()?;
    assert_eq!(report.entries, 20_000);
    Ok(())
}

#[test]
fn repeated_updates_reuse_pages() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(64 * 4096))?;
    tree.bulk_load((0..20_000u32).map(|i| (manifest_key(0, i), manifest_value(0, i))))?;
    let size = tree.size_on_disk()?;
    for round in 0..5u32 {
        for i in (0..20_000u32).step_by(7) {
            assert!(tree
                .compare_and_swap(&manifest_key(0, i), None, None)?
                .is_err());
            tree.put(&manifest_key(0, i), &manifest_value(round, i))?;
        }
        tree.checkpoint()?;
    }
    assert!(
        tree.size_on_disk()? <= size * 2,
        "file grew from {size} to {} bytes",
        tree.size_on_disk()?
    );
    tree.check_integrity()?;
    Ok(())
}
