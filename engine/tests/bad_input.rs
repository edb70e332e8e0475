//! Bad input gets a typed error whose message says what to do, never a panic.

use aimeta_engine::testing::{Superblock, FORMAT_VERSION, META_LEN};
use aimeta_engine::{Error, OpenError, Readable, Tree, TreeConfig, MAX_KEY_LEN, MAX_VALUE_LEN};

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn empty_and_oversized_keys_and_values_are_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = Tree::open(TreeConfig::new(dir.path()))?;
    let e = tree.put(b"", b"v").expect_err("empty key");
    assert!(
        matches!(e, Error::EmptyKey { .. })
            && e.to_string().contains(&format!("1 to {MAX_KEY_LEN} bytes")),
        "{e}"
    );
    let long = vec![b'k'; MAX_KEY_LEN + 1];
    let e = tree.put(&long, b"v").expect_err("long key");
    assert!(
        matches!(
            e,
            Error::KeyTooLarge { len, max: MAX_KEY_LEN } if len == MAX_KEY_LEN + 1
        ),
        "{e}"
    );
    let big = vec![0u8; MAX_VALUE_LEN + 1];
    let e = tree.put(b"k", &big).expect_err("big value");
    assert!(e.to_string().contains(&MAX_VALUE_LEN.to_string()), "{e}");
    assert!(tree.delete(b"").is_err());
    // A key too long to store is absent: deleting it changes nothing, alone or in a batch.
    assert!(!tree.delete(&long)?);
    let mut batch = aimeta_engine::WriteBatch::new();
    batch.delete(long.clone());
    tree.apply_batch(&batch)?;
    // Keys and values at the limits are accepted, large values through overflow pages.
    let max_key = vec![b'm'; MAX_KEY_LEN];
    let value = vec![7u8; 200_000];
    tree.put(&max_key, &value)?;
    assert_eq!(tree.get(&max_key)?, Some(value));
    tree.put(b"empty", b"")?;
    assert_eq!(tree.get(b"empty")?, Some(Vec::new()));
    Ok(())
}

#[test]
fn cas_with_a_bad_key_is_an_error_not_a_conflict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = Tree::open(TreeConfig::new(dir.path())).expect("open");
    assert!(matches!(
        tree.compare_and_swap(b"", None, Some(b"v")),
        Err(Error::EmptyKey { .. })
    ));
}

#[test]
fn a_directory_holding_other_files_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("notes.txt"), b"hello")?;
    let e = Tree::open(TreeConfig::new(dir.path())).expect_err("foreign dir");
    assert!(matches!(e, OpenError::ForeignDirectory { .. }), "{e}");
    assert!(
        e.to_string().contains("notes.txt") && e.to_string().contains("empty"),
        "{e}"
    );
    Ok(())
}

#[test]
fn a_budget_below_the_minimum_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let e = Tree::open(TreeConfig::new(dir.path()).cache_bytes(4096)).expect_err("tiny pool");
    assert!(matches!(e, OpenError::CacheTooSmall { .. }), "{e}");
    assert!(e.to_string().contains("cache_bytes"), "{e}");
    let e =
        Tree::open(TreeConfig::new(dir.path().join("x")).page_size(3000)).expect_err("page size");
    assert!(matches!(e, OpenError::InvalidConfig { .. }), "{e}");
    Ok(())
}

/// A closed store whose superblock copies both say format `version`.
fn store_of_format(version: u32) -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    drop(Tree::open(TreeConfig::new(dir.path()))?);
    let path = dir.path().join("data.aimkv");
    let mut bytes = std::fs::read(&path)?;
    let sb = Superblock::decode(&bytes[..META_LEN]).map_err(|e| e.to_string())?;
    for slot in 0..2usize {
        let copy = Superblock { version, ..sb };
        copy.encode(&mut bytes[slot * 4096..slot * 4096 + META_LEN]);
    }
    std::fs::write(&path, &bytes)?;
    Ok(dir)
}

#[test]
fn a_file_of_a_newer_format_is_refused() -> TestResult {
    let dir = store_of_format(FORMAT_VERSION + 1)?;
    let e = Tree::open(TreeConfig::new(dir.path())).expect_err("newer format");
    assert!(matches!(e, OpenError::FormatTooNew { .. }), "{e}");
    assert!(e.to_string().contains("newer aimeta-engine"), "{e}");
    Ok(())
}

#[test]
fn a_file_of_the_older_unfronted_format_is_refused_with_advice() -> TestResult {
    let dir = store_of_format(1)?;
    let e = Tree::open(TreeConfig::new(dir.path())).expect_err("older format");
    assert!(
        matches!(
            e,
            OpenError::FormatTooOld {
                found: 1,
                supported: 2,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("bulk-load"), "{e}");
    Ok(())
}

#[test]
fn a_foreign_data_file_is_refused() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("data.aimkv"), vec![0x5Au8; 16384])?;
    let e = Tree::open(TreeConfig::new(dir.path())).expect_err("foreign file");
    assert!(matches!(e, OpenError::BadMagic { .. }), "{e}");
    Ok(())
}

#[test]
fn bulk_load_refuses_unsorted_input_and_a_non_empty_tree() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = Tree::open(TreeConfig::new(dir.path()))?;
    let e = tree
        .bulk_load([
            (b"b".to_vec(), b"1".to_vec()),
            (b"a".to_vec(), b"2".to_vec()),
        ])
        .expect_err("unsorted");
    assert!(matches!(e, Error::BulkLoadUnsorted { index: 1 }), "{e}");
    assert!(tree.is_empty());
    tree.put(b"x", b"y")?;
    let e = tree
        .bulk_load([(b"z".to_vec(), b"1".to_vec())])
        .expect_err("not empty");
    assert!(matches!(e, Error::BulkLoadNotEmpty { entries: 1 }), "{e}");
    Ok(())
}
