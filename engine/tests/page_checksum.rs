//! A flipped bit in a data page gives an error that names the file, the page and both
//! checksums; reads elsewhere keep working and nothing panics.

mod common;

use aimeta_engine::{Error, PageErrorKind, Readable, Tree, TreeConfig};
use common::{manifest_key, manifest_value, TestResult};

#[test]
fn a_flipped_bit_in_a_leaf_is_reported_with_its_page() -> TestResult {
    let dir = tempfile::tempdir()?;
    let target = manifest_key(3, 500);
    let (page, other) =
        {
            let tree = Tree::open(TreeConfig::new(dir.path()))?;
            tree.bulk_load((0..10u32).flat_map(|s| {
                (0..1000u32).map(move |i| (manifest_key(s, i), manifest_value(s, i)))
            }))?;
            let snap = tree.snapshot();
            (
                snap.leaf_page_of(&target)?.ok_or("empty")?,
                snap.leaf_page_of(&manifest_key(8, 10))?.ok_or("empty")?,
            )
        };
    assert_ne!(page, other);
    let path = dir.path().join("data.aimkv");
    let mut bytes = std::fs::read(&path)?;
    bytes[(page * 4096 + 2000) as usize] ^= 0x04;
    std::fs::write(&path, &bytes)?;
    let tree = Tree::open(TreeConfig::new(dir.path()))?;
    let e = tree.get(&target).expect_err("corrupt page must not read");
    assert!(e.is_corruption());
    assert_eq!(e.page_error_kind(), Some(PageErrorKind::Checksum));
    let msg = e.to_string();
    assert!(msg.contains(&format!("page {page}")), "{msg}");
    assert!(
        msg.contains("data.aimkv") && msg.contains("stored checksum") && msg.contains("hash to"),
        "{msg}"
    );
    // The scan that reaches the page fails the same way; other pages still read.
    let scan: Result<Vec<_>, Error> = tree
        .range()
        .prefix(b"ds/laion/shard-00003/")
        .iter()
        .collect();
    assert!(scan.is_err());
    assert_eq!(tree.get(&manifest_key(8, 10))?, Some(manifest_value(8, 10)));
    assert!(tree.check_integrity().is_err());
    Ok(())
}
