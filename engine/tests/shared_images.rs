//! Shared images (`DataReads::Shared`): the pool keeps clean pages in place in the data
//! file's map, so a page a reader holds is the file's bytes themselves. What keeps them
//! right is that a place is rewritten only once no snapshot can reach it. Here snapshots
//! are held across hundreds of commits and several checkpoints, which free and reuse
//! places all the time under a pool of a few dozen pages, while reader threads scan: every
//! snapshot must read exactly the commit it was taken at.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use aimeta_engine::{DataReads, Durability, Readable, Tree, TreeConfig};
use common::{seeded, stamped_value, TestResult};
use rand::RngExt as _;

/// What the tree held at a commit.
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u64) -> Vec<u8> {
    format!("ds/shard-{:03}/sample-{:06}", i % 40, i).into_bytes()
}

#[test]
fn held_snapshots_read_their_commit_while_places_are_reused() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = Tree::open(
        TreeConfig::new(dir.path())
            .cache_bytes(32 * 4096)
            .durability(Durability::Wal { sync: false })
            .data_reads(DataReads::Shared),
    )?;
    let mut model: Model = (0..6_000u64)
        .map(|i| (key(i), stamped_value(&key(i), 0, 60)))
        .collect();
    tree.bulk_load(model.iter().map(|(k, v)| (k.clone(), v.clone())))?;
    tree.checkpoint()?;

    // Readers scan fresh snapshots and check each against itself: a count and a second
    // scan of the same snapshot agree with the first scan.
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let tree = tree.clone();
            let stop = stop.clone();
            std::thread::spawn(move || -> Result<u64, String> {
                let mut views = 0u64;
                while !stop.load(Ordering::Relaxed) || views < 5 {
                    let snap = tree.snapshot();
                    let first: Vec<(Vec<u8>, Vec<u8>)> = snap
                        .range()
                        .prefix(b"ds/")
                        .iter()
                        .collect::<Result<_, _>>()
                        .map_err(|e| e.to_string())?;
                    let n = snap.count_prefix(b"ds/").map_err(|e| e.to_string())?;
                    let again = snap
                        .range()
                        .prefix(b"ds/")
                        .iter()
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| e.to_string())?;
                    if n != first.len() as u64 || again != first {
                        return Err(format!("reader {r}: a snapshot changed under its reader"));
                    }
                    views += 1;
                }
                Ok(views)
            })
        })
        .collect();

    // Held snapshots, each with the model as of its commit.
    let mut held: Vec<(aimeta_engine::Snapshot, Model)> = Vec::new();
    let mut rng = seeded(61);
    for round in 1..=400u64 {
        for _ in 0..8 {
            let k = key(rng.random_range(0..9_000));
            if rng.random_range(0..5) == 0 {
                tree.delete(&k)?;
                model.remove(&k);
            } else {
                let v = stamped_value(&k, round, 20 + rng.random_range(0..120));
                tree.put(&k, &v)?;
                model.insert(k, v);
            }
        }
        if round % 40 == 0 {
            tree.checkpoint()?;
        }
        if round % 50 == 25 {
            held.push((tree.snapshot(), model.clone()));
        }
        if round % 100 == 0 {
            // The oldest snapshot is checked and let go: its places may be reused now.
            let (snap, want) = held.remove(0);
            let got: Model = snap.range().iter().collect::<Result<_, _>>()?;
            assert!(
                got == want,
                "a held snapshot reads its own commit (round {round})"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        let views = r.join().map_err(|_| "reader panicked")??;
        assert!(views >= 5);
    }
    for (snap, want) in held {
        let got: Model = snap.range().iter().collect::<Result<_, _>>()?;
        assert!(got == want, "a held snapshot reads its own commit");
    }
    let got: Model = tree.range().iter().collect::<Result<_, _>>()?;
    assert!(got == model, "the latest commit reads the model");
    let m = tree.metrics();
    assert!(m.bm_evictions > 0 && m.checkpoints >= 10);
    assert!(m.bm_shared_pages > 0, "pages were read in place");
    tree.check_integrity()?;
    Ok(())
}
