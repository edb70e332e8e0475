//! Eight reader threads beside one writer: every snapshot sees one commit. The writer
//! moves amounts between accounts in atomic batches, so every consistent view has the
//! same total and the same number of accounts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use aimeta_engine::{Readable, Tree, TreeConfig, WriteBatch};

const ACCOUNTS: u64 = 2_000;
const START: u64 = 1_000;

fn key(i: u64) -> Vec<u8> {
    format!("acct/{:06}", i).into_bytes()
}

fn amount(v: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&v[..8]);
    u64::from_le_bytes(b)
}

#[test]
fn readers_see_one_commit_while_a_writer_runs() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let tree = Tree::open(TreeConfig::new(dir.path()).cache_bytes(64 * 4096))?;
    tree.bulk_load((0..ACCOUNTS).map(|i| (key(i), [START.to_le_bytes(), [7u8; 8]].concat())))?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for r in 0..8u64 {
        let tree = tree.clone();
        let stop = stop.clone();
        readers.push(std::thread::spawn(move || -> Result<u64, String> {
            let mut views = 0u64;
            while !stop.load(Ordering::Relaxed) || views < 20 {
                let snap = tree.snapshot();
                let mut total = 0u64;
                let mut n = 0u64;
                for item in snap.range().prefix(b"acct/").iter() {
                    let (_, v) = item.map_err(|e| e.to_string())?;
                    total += amount(&v);
                    n += 1;
                }
                if total != ACCOUNTS * START || n != ACCOUNTS {
                    return Err(format!(
                        "reader {r}: torn view: {n} accounts, total {total}"
                    ));
                }
                if snap.count_prefix(b"acct/").map_err(|e| e.to_string())? != ACCOUNTS {
                    return Err(format!("reader {r}: count disagrees with the scan"));
                }
                // Two gets in one snapshot agree with its scan.
                let a = snap
                    .get(&key(r * 7))
                    .map_err(|e| e.to_string())?
                    .ok_or("missing")?;
                let b = snap
                    .get(&key(r * 7))
                    .map_err(|e| e.to_string())?
                    .ok_or("missing")?;
                if a != b {
                    return Err("one snapshot returned two values".into());
                }
                views += 1;
            }
            Ok(views)
        }));
    }
    let mut x = 12345u64;
    for _ in 0..600 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let (from, to) = (x % ACCOUNTS, (x / ACCOUNTS) % ACCOUNTS);
        if from == to {
            continue;
        }
        let snap = tree.snapshot();
        let a = amount(&snap.get(&key(from))?.ok_or("missing")?);
        let b = amount(&snap.get(&key(to))?.ok_or("missing")?);
        let moved = a.min(17);
        let mut batch = WriteBatch::new();
        batch.put(key(from), [(a - moved).to_le_bytes(), [1u8; 8]].concat());
        batch.put(key(to), [(b + moved).to_le_bytes(), [2u8; 8]].concat());
        tree.apply_batch(&batch)?;
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        let views = r.join().map_err(|_| "reader panicked")??;
        assert!(views >= 20);
    }
    let total: u64 = tree
        .range()
        .iter()
        .map(|i| i.map(|(_, v)| amount(&v)))
        .sum::<Result<u64, _>>()?;
    assert_eq!(total, ACCOUNTS * START);
    tree.check_integrity()?;
    Ok(())
}
