//! `Tree::apply` takes operations that borrow their keys and values. It must do exactly
//! what `apply_batch` does with the same operations copied into a `WriteBatch`: the same
//! contents (the last operation on a key wins), the same typed errors for bad input (and
//! nothing applied), and the same recovery from the log after a reopen.

mod common;

use std::collections::BTreeMap;

use aimeta_engine::{Durability, Error, Mutation, Readable, Tree, TreeConfig, WriteBatch};
use common::{seeded, TestResult};
use rand::RngExt as _;

fn open(dir: &std::path::Path) -> Result<Tree, Error> {
    Ok(Tree::open(
        TreeConfig::new(dir)
            .cache_bytes(32 * 4096)
            .durability(Durability::Wal { sync: true }),
    )?)
}

fn contents(tree: &Tree) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, Error> {
    tree.range().iter().collect()
}

#[test]
fn borrowed_operations_match_a_copied_batch() -> TestResult {
    let borrowed_dir = tempfile::tempdir()?;
    let copied_dir = tempfile::tempdir()?;
    let borrowed = open(borrowed_dir.path())?;
    let copied = open(copied_dir.path())?;
    let mut rng = seeded(0x5EED_0016);
    for round in 0..60 {
        // Keys drawn from a small space, so that batches repeat keys and delete stored
        // ones; long shared heads like the trace's path keys.
        let ops: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..rng.random_range(1..40))
            .map(|_| {
                let depth = rng.random_range(1..60);
                let key = format!("kv/llama70b{}", "/0a1b2c".repeat(depth))
                    .into_bytes()
                    .into_iter()
                    .chain(format!("/{}", rng.random_range(0..50u32)).into_bytes())
                    .collect::<Vec<u8>>();
                let value = rng
                    .random_bool(0.8)
                    .then(|| format!("v{round}-{}", rng.random_range(0..1000u32)).into_bytes());
                (key, value)
            })
            .collect();
        let mutations: Vec<Mutation<'_>> = ops
            .iter()
            .map(|(k, v)| match v {
                Some(v) => Mutation::Put(k, v),
                None => Mutation::Delete(k),
            })
            .collect();
        borrowed.apply(&mutations)?;
        let mut batch = WriteBatch::new();
        for (k, v) in &ops {
            match v {
                Some(v) => batch.put(k.as_slice(), v.as_slice()),
                None => batch.delete(k.as_slice()),
            };
        }
        copied.apply_batch(&batch)?;
    }
    let want = contents(&copied)?;
    assert!(want.len() > 100, "{} keys", want.len());
    assert_eq!(contents(&borrowed)?, want);

    // Acknowledged with a synchronous log: a reopen replays them to the same contents.
    drop(borrowed);
    let reopened = open(borrowed_dir.path())?;
    assert_eq!(contents(&reopened)?, want);
    Ok(())
}

#[test]
fn bad_input_applies_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = open(dir.path())?;
    let too_long = vec![b'k'; aimeta_engine::MAX_KEY_LEN + 1];
    let result = tree.apply(&[Mutation::Put(b"good", b"1"), Mutation::Put(&too_long, b"2")]);
    assert!(
        matches!(result, Err(Error::KeyTooLarge { .. })),
        "{result:?}"
    );
    assert_eq!(tree.get(b"good")?, None, "a rejected batch applies nothing");
    let empty = tree.apply(&[Mutation::Put(b"", b"1")]);
    assert!(matches!(empty, Err(Error::EmptyKey { .. })), "{empty:?}");
    Ok(())
}
