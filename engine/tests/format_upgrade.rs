//! A version-2 file (its superblock without the key-length set) opens with its key
//! lengths unknown, answers longest-prefix lookups right, and its next checkpoint writes
//! version 3 with the lengths of the keys written since.

mod common;

use aimeta_engine::testing::{Superblock, FORMAT_VERSION, META_LEN};
use aimeta_engine::{Readable, Tree, TreeConfig};
use common::TestResult;

fn superblocks(path: &std::path::Path) -> Result<Vec<Superblock>, Box<dyn std::error::Error>> {
    let bytes = std::fs::read(path)?;
    (0..2usize)
        .map(|slot| {
            Superblock::decode(&bytes[slot * 4096..slot * 4096 + META_LEN])
                .map_err(|e| e.to_string().into())
        })
        .collect()
}

#[test]
fn a_version_2_file_opens_and_is_upgraded_at_its_next_checkpoint() -> TestResult {
    let dir = tempfile::tempdir()?;
    let keys: Vec<Vec<u8>> = (0..2000u32)
        .map(|i| format!("kv/m/{:04x}/{:08x}", i / 16, i).into_bytes())
        .collect();
    {
        let tree = Tree::open(TreeConfig::new(dir.path()))?;
        tree.bulk_load(keys.iter().map(|k| (k, b"v")))?;
    }
    let path = dir.path().join("data.aimkv");
    let mut bytes = std::fs::read(&path)?;
    for (slot, sb) in superblocks(&path)?.into_iter().enumerate() {
        let old = Superblock { version: 2, ..sb };
        old.encode(&mut bytes[slot * 4096..slot * 4096 + META_LEN]);
    }
    std::fs::write(&path, &bytes)?;
    assert!(superblocks(&path)?.iter().all(|sb| sb.version == 2));

    let tree = Tree::open(TreeConfig::new(dir.path()))?;
    let q = b"kv/m/0003/00000031/extra";
    let (k, _) = tree.longest_prefix_record(q)?.ok_or("no answer")?;
    assert_eq!(k, b"kv/m/0003/00000031");
    tree.put(b"kv/m/0003", b"dir")?;
    assert_eq!(
        tree.longest_prefix_record(b"kv/m/0003/zz")?.map(|(k, _)| k),
        Some(b"kv/m/0003".to_vec())
    );
    tree.checkpoint()?;
    drop(tree);
    let newest = superblocks(&path)?
        .into_iter()
        .max_by_key(|sb| sb.generation)
        .ok_or("no superblock")?;
    assert_eq!(newest.version, FORMAT_VERSION);
    // Unknown lengths stay unknown (every bit), and the put's length is among them.
    assert!(newest.key_lengths.contains(b"kv/m/0003".len()));
    assert!(newest.key_lengths.contains(7));
    let tree = Tree::open(TreeConfig::new(dir.path()))?;
    assert_eq!(
        tree.longest_prefix_record(b"kv/m/0003/zz")?.map(|(k, _)| k),
        Some(b"kv/m/0003".to_vec())
    );
    Ok(())
}
