//! Checkpoints beside writers and readers on slow storage. A writer puts small values and
//! 5 to 30 KiB ones (overflow runs), deletes and applies batches; a second thread runs
//! checkpoints back to back; two readers get and scan; every data-file write is delayed
//! (or one chosen write stalls), standing in for a checkpointer descheduled mid-flush.
//! The live tree must equal the writer's model after every checkpoint and readers must
//! only ever see values written for their keys. Then the process dies with the
//! checkpointer most likely in the middle of a flush: the reopened tree, recovered from
//! the last durable checkpoint and the log, must equal the model
//! (`Durability::Wal { sync: false }` loses nothing acknowledged to a process crash), as
//! it must after a clean reopen. 6 seeds by default; AIMETA_RACE_SEEDS sets more.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use aimeta_engine::storage::{FaultPlan, FaultyOpener, SimDisk};
use aimeta_engine::{Durability, Tree, TreeConfig};
use common::{apply_batch, check_prefix_scan, check_stamped, stamped_value, Rng, TestResult};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// How the flush is slowed in one run.
#[derive(Debug, Clone, Copy)]
enum Slowness {
    /// Every data-file write sleeps this long.
    EveryWrite(Duration),
    /// Over and over, one write a random number of writes ahead stalls for a while.
    Stalls,
}

struct Harness {
    disk: SimDisk,
    plan: Arc<FaultPlan>,
    dir: tempfile::TempDir,
}

impl Harness {
    fn new() -> Result<Self, std::io::Error> {
        Ok(Harness {
            disk: SimDisk::new(),
            plan: FaultPlan::new("data"),
            dir: tempfile::tempdir()?,
        })
    }

    fn open(&self) -> aimeta_engine::Result<Tree> {
        Tree::open(
            TreeConfig::new(self.dir.path())
                .cache_bytes(64 * 4096)
                .durability(Durability::Wal { sync: false })
                .background_checkpoints(false)
                .storage(Arc::new(FaultyOpener {
                    inner: self.disk.clone(),
                    plan: self.plan.clone(),
                })),
        )
    }

    /// The process dies: nothing it would still write reaches the files, but what it
    /// wrote stays (the OS has it).
    fn crash(&self, tree: Tree) {
        self.plan.fail_after_ops.store(0, Ordering::SeqCst);
        drop(tree);
        self.plan.fail_after_ops.store(-1, Ordering::SeqCst);
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("k/{:02}/{:05}", i % 7, i).into_bytes()
}

fn value(rng: &mut Rng, k: &[u8], stamp: u64) -> Vec<u8> {
    let len = if rng.below(6) == 0 {
        5 * 1024 + rng.below(25 * 1024) as usize
    } else {
        16 + rng.below(180) as usize
    };
    stamped_value(k, stamp, len)
}

fn contents(tree: &Tree) -> aimeta_engine::Result<Model> {
    tree.range().iter().collect()
}

fn same(tree: &Tree, model: &Model, when: &str) -> TestResult {
    let got = contents(tree)?;
    if &got != model {
        let missing = model.keys().filter(|k| !got.contains_key(*k)).count();
        let extra = got.keys().filter(|k| !model.contains_key(*k)).count();
        let changed = got
            .iter()
            .filter(|(k, v)| model.get(*k).is_some_and(|m| m != *v))
            .count();
        return Err(format!(
            "{when}: the tree differs from the model ({} entries, {} expected): {missing} \
             missing, {extra} not written, {changed} with another value",
            got.len(),
            model.len()
        )
        .into());
    }
    tree.check_integrity()
        .map_err(|e| format!("{when}: integrity: {e}"))?;
    Ok(())
}

/// One mutation of the writer, applied to the tree and the model.
fn write_one(tree: &Tree, model: &mut Model, rng: &mut Rng, stamp: &mut u64) -> TestResult {
    const KEYS: u64 = 600;
    *stamp += 1;
    match rng.below(10) {
        0..=5 => {
            let k = key(rng.below(KEYS));
            let v = value(rng, &k, *stamp);
            tree.put(&k, &v)?;
            model.insert(k, v);
        }
        6 | 7 => {
            let k = key(rng.below(KEYS));
            let was = tree.delete(&k)?;
            if was != model.remove(&k).is_some() {
                return Err(format!("delete of a key the model says was {was}").into());
            }
        }
        _ => {
            let ops = (0..1 + rng.below(8))
                .map(|_| {
                    let k = key(rng.below(KEYS));
                    let v = (rng.below(4) != 0).then(|| value(rng, &k, *stamp));
                    (k, v)
                })
                .collect();
            apply_batch(tree, model, ops)?;
        }
    }
    Ok(())
}

/// A reader: point gets and limited prefix scans; every value must be one written for
/// its key, every scan sorted and inside its prefix. Returns the first problem seen.
/// After `crashed` is set, the storage fails every operation and errors are expected.
fn reader(
    tree: Tree,
    stop: Arc<AtomicBool>,
    crashed: Arc<AtomicBool>,
    seed: u64,
) -> Result<u64, String> {
    let mut rng = Rng(seed | 1);
    let mut reads = 0u64;
    while !stop.load(Ordering::Relaxed) {
        match read_once(&tree, &mut rng) {
            Ok(()) => reads += 1,
            Err(_) if crashed.load(Ordering::SeqCst) => break,
            Err(e) => return Err(e),
        }
    }
    Ok(reads)
}

fn read_once(tree: &Tree, rng: &mut Rng) -> Result<(), String> {
    {
        let k = key(rng.below(600));
        if let Some(v) = tree.get(&k).map_err(|e| format!("get: {e}"))? {
            check_stamped(&k, &v)?;
        }
        let prefix = format!("k/{:02}/", rng.below(7)).into_bytes();
        check_prefix_scan(tree, &prefix, 40)?;
    }
    Ok(())
}

/// Releases the stalled write a little after it stalls, then arms the next stall.
fn staller(plan: Arc<FaultPlan>, stop: Arc<AtomicBool>, seed: u64) {
    let mut rng = Rng(seed | 1);
    while !stop.load(Ordering::Relaxed) {
        plan.stall_write(1 + rng.below(40) as i64);
        while !stop.load(Ordering::Relaxed) && !plan.wait_for_stall(Duration::from_millis(20)) {}
        thread::sleep(Duration::from_millis(5 + rng.below(40)));
        plan.release_stall();
    }
    plan.stall_write(-1);
    plan.release_stall();
}

fn run(seed: u64, slowness: Slowness, ops: u64) -> TestResult {
    let h = Harness::new()?;
    let tree = h.open()?;
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut model = Model::new();
    let mut stamp = 0u64;
    // A tree of several levels before the slow part starts.
    for _ in 0..300 {
        write_one(&tree, &mut model, &mut rng, &mut stamp)?;
    }
    tree.checkpoint()?;

    let stop = Arc::new(AtomicBool::new(false));
    let crashed = Arc::new(AtomicBool::new(false));
    let checkpoints = Arc::new(AtomicU64::new(0));
    match slowness {
        Slowness::EveryWrite(d) => h.plan.delay_writes(d),
        Slowness::Stalls => {}
    }
    let staller = matches!(slowness, Slowness::Stalls).then(|| {
        let (plan, stop) = (h.plan.clone(), stop.clone());
        thread::spawn(move || staller(plan, stop, seed))
    });
    let checkpointer = {
        let (tree, stop, n) = (tree.clone(), stop.clone(), checkpoints.clone());
        let crashed = crashed.clone();
        thread::spawn(move || -> Result<(), String> {
            while !stop.load(Ordering::Relaxed) {
                match tree.checkpoint() {
                    Ok(()) => n.fetch_add(1, Ordering::SeqCst),
                    Err(_) if crashed.load(Ordering::SeqCst) => break,
                    Err(e) => return Err(format!("checkpoint: {e}")),
                };
            }
            Ok(())
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (tree, stop, crashed) = (tree.clone(), stop.clone(), crashed.clone());
            thread::spawn(move || reader(tree, stop, crashed, seed ^ ((r + 1) * 7919)))
        })
        .collect();

    let mut checked = 0;
    let mut outcome: TestResult = Ok(());
    for op in 0..ops {
        if let Err(e) = write_one(&tree, &mut model, &mut rng, &mut stamp) {
            outcome = Err(format!("op {op}: {e}").into());
            break;
        }
        let done = checkpoints.load(Ordering::SeqCst);
        if done != checked {
            checked = done;
            if let Err(e) = same(&tree, &model, &format!("after checkpoint {done}, op {op}")) {
                outcome = Err(e);
                break;
            }
        }
    }
    // The process dies here, beside a checkpoint that is most likely mid-flush: from now
    // on no storage operation reaches the files.
    crashed.store(true, Ordering::SeqCst);
    h.plan.fail_after_ops.store(0, Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    h.plan.release_stall();
    if let Some(s) = staller {
        s.join().map_err(|_| "the staller panicked")?;
    }
    let ckpt = checkpointer
        .join()
        .map_err(|_| "the checkpointer panicked")?;
    let mut reads = 0;
    for r in readers {
        reads += r.join().map_err(|_| "a reader panicked")??;
    }
    outcome?;
    ckpt?;
    let ran = checkpoints.load(Ordering::SeqCst);
    if ran < 2 || reads == 0 {
        return Err(
            format!("only {ran} checkpoints and {reads} reads ran beside the writer").into(),
        );
    }
    drop(tree);
    h.plan.fail_after_ops.store(-1, Ordering::SeqCst);
    h.plan.delay_writes(Duration::ZERO);
    let tree = h.open()?;
    same(&tree, &model, "after a process crash beside a checkpoint")?;

    for _ in 0..200 {
        write_one(&tree, &mut model, &mut rng, &mut stamp)?;
    }
    drop(tree);
    let tree = h.open()?;
    same(&tree, &model, "after a clean reopen")?;
    for _ in 0..200 {
        write_one(&tree, &mut model, &mut rng, &mut stamp)?;
    }
    h.crash(tree);
    let tree = h.open()?;
    same(&tree, &model, "after a process crash")?;
    Ok(())
}

fn seeds() -> u64 {
    std::env::var("AIMETA_RACE_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6)
}

#[test]
fn checkpoints_beside_writers_on_delayed_writes_keep_every_commit() -> TestResult {
    for seed in 0..seeds() {
        run(seed, Slowness::EveryWrite(Duration::from_millis(1)), 1200)
            .map_err(|e| format!("seed {seed}, every write delayed by 1 ms: {e}"))?;
    }
    Ok(())
}

#[test]
fn checkpoints_beside_writers_with_stalled_writes_keep_every_commit() -> TestResult {
    for seed in 0..seeds() {
        run(1000 + seed, Slowness::Stalls, 1500)
            .map_err(|e| format!("seed {}, stalled writes: {e}", 1000 + seed))?;
    }
    Ok(())
}
