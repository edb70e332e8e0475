//! Checkpoints beside writers and readers on slow storage. A writer puts small values and
//! 5 to 30 KiB ones (overflow runs), deletes and applies batches; a second thread runs
//! checkpoints back to back; two readers get and scan; every data-file write is delayed
//! (or one chosen write stalls), standing in for a checkpointer descheduled mid-flush.
//! The live tree must equal the writer's model after every checkpoint and readers must
//! only ever see values written for their keys. Then the process dies with the
//! checkpointer most likely in the middle of a flush: the reopened tree, recovered from
//! the last durable checkpoint (and the log), must equal the model at the commit it
//! recovered, and that commit must be the last one in both logged modes (a process crash
//! loses nothing acknowledged) and no older than the last completed checkpoint without a
//! log; likewise after a clean reopen and a later crash. Every durability mode, 4 seeds
//! each by default; AIMETA_RACE_SEEDS sets more.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use aimeta_engine::storage::{FaultPlan, FaultyOpener, SimDisk};
use aimeta_engine::{Durability, Readable, Tree, TreeConfig};
use common::{
    apply_to_model, check_prefix_scan, check_stamped, env_count, mixed_value, seeded, Ops, Rng,
    TestResult,
};
use rand::RngExt as _;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const MODES: [Durability; 3] = [
    Durability::None,
    Durability::Wal { sync: false },
    Durability::Wal { sync: true },
];

/// The writer's model and every mutation it applied, by the commit that holds it, so
/// that the model at any commit a recovery lands on can be rebuilt.
#[derive(Default)]
struct History {
    model: Model,
    log: Vec<(u64, Ops)>,
}

impl History {
    /// Records `ops`, which commit `seq` applied (or, for a delete of an absent key,
    /// left as they were).
    fn record(&mut self, seq: u64, ops: Ops) {
        apply_to_model(&mut self.model, ops.clone());
        self.log.push((seq, ops));
    }

    fn last_seq(&self) -> u64 {
        self.log.last().map_or(0, |(s, _)| *s)
    }

    /// Goes back to the state after commit `seq` (what a recovery kept).
    fn rewind(&mut self, seq: u64) {
        self.log.retain(|(s, _)| *s <= seq);
        let mut model = Model::new();
        for (_, ops) in &self.log {
            apply_to_model(&mut model, ops.clone());
        }
        self.model = model;
    }
}

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

    fn open(&self, mode: Durability) -> Result<Tree, aimeta_engine::OpenError> {
        Tree::open(
            TreeConfig::new(self.dir.path())
                .cache_bytes(64 * 4096)
                .durability(mode)
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
    mixed_value(rng, k, stamp, 6)
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

/// One mutation of the writer, applied to the tree and recorded in the history.
fn write_one(tree: &Tree, hist: &mut History, rng: &mut Rng, stamp: &mut u64) -> TestResult {
    const KEYS: u64 = 600;
    *stamp += 1;
    let ops: Ops = match rng.random_range(0..10) {
        0..=5 => {
            let k = key(rng.random_range(0..KEYS));
            let v = value(rng, &k, *stamp);
            tree.put(&k, &v)?;
            vec![(k, Some(v))]
        }
        6 | 7 => {
            let k = key(rng.random_range(0..KEYS));
            let was = tree.delete(&k)?;
            if was != hist.model.contains_key(&k) {
                return Err(format!("delete of a key the model says was {was}").into());
            }
            vec![(k, None)]
        }
        _ => {
            let ops: Ops = (0..1 + rng.random_range(0..8))
                .map(|_| {
                    let k = key(rng.random_range(0..KEYS));
                    let v = (rng.random_range(0..4) != 0).then(|| value(rng, &k, *stamp));
                    (k, v)
                })
                .collect();
            tree.apply_batch(&common::batch_of(&ops))?;
            ops
        }
    };
    hist.record(tree.metrics().commit_seq, ops);
    Ok(())
}

/// Reopens after a crash: the tree recovered some commit, which the mode allows (the
/// last one with a log; one no older than `durable_before`, the last checkpoint known
/// complete, without), and equals the model at that commit. The history goes back to it.
fn reopen_recovered(
    h: &Harness,
    hist: &mut History,
    mode: Durability,
    durable_before: u64,
    when: &str,
) -> Result<Tree, Box<dyn std::error::Error>> {
    let tree = h.open(mode)?;
    let seq = tree.metrics().commit_seq;
    let last = hist.last_seq();
    let allowed = match mode {
        Durability::None => (durable_before..=last).contains(&seq),
        _ => seq == last,
    };
    if !allowed {
        return Err(format!(
            "{when}: recovered commit {seq}; the last acknowledged is {last}, the last \
             checkpoint known complete {durable_before}"
        )
        .into());
    }
    hist.rewind(seq);
    same(&tree, &hist.model, when)?;
    Ok(tree)
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
    let mut rng = seeded(seed | 1);
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
        let k = key(rng.random_range(0..600));
        if let Some(v) = tree.get(&k).map_err(|e| format!("get: {e}"))? {
            check_stamped(&k, &v)?;
        }
        let prefix = format!("k/{:02}/", rng.random_range(0..7)).into_bytes();
        check_prefix_scan(tree, &prefix, 40)?;
    }
    Ok(())
}

/// Releases the stalled write a little after it stalls, then arms the next stall.
fn staller(plan: Arc<FaultPlan>, stop: Arc<AtomicBool>, seed: u64) {
    let mut rng = seeded(seed | 1);
    while !stop.load(Ordering::Relaxed) {
        plan.stall_write(1 + rng.random_range(0..40) as i64);
        while !stop.load(Ordering::Relaxed) && !plan.wait_for_stall(Duration::from_millis(20)) {}
        thread::sleep(Duration::from_millis(5 + rng.random_range(0..40)));
        plan.release_stall();
    }
    plan.stall_write(-1);
    plan.release_stall();
}

fn run(mode: Durability, seed: u64, slowness: Slowness, ops: u64) -> TestResult {
    let h = Harness::new()?;
    let tree = h.open(mode)?;
    let mut rng = seeded(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut hist = History::default();
    let mut stamp = 0u64;
    // A tree of several levels before the slow part starts.
    for _ in 0..300 {
        write_one(&tree, &mut hist, &mut rng, &mut stamp)?;
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
        if let Err(e) = write_one(&tree, &mut hist, &mut rng, &mut stamp) {
            outcome = Err(format!("op {op}: {e}").into());
            break;
        }
        let done = checkpoints.load(Ordering::SeqCst);
        if done != checked {
            checked = done;
            if let Err(e) = same(
                &tree,
                &hist.model,
                &format!("after checkpoint {done}, op {op}"),
            ) {
                outcome = Err(e);
                break;
            }
        }
    }
    // The process dies here, beside a checkpoint that is most likely mid-flush: from now
    // on no storage operation reaches the files.
    let durable_before = tree.metrics().checkpoint_seq;
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
    let tree = reopen_recovered(
        &h,
        &mut hist,
        mode,
        durable_before,
        "after a process crash beside a checkpoint",
    )?;

    for _ in 0..200 {
        write_one(&tree, &mut hist, &mut rng, &mut stamp)?;
    }
    drop(tree);
    let tree = h.open(mode)?;
    same(&tree, &hist.model, "after a clean reopen")?;
    let durable_before = tree.metrics().checkpoint_seq;
    for _ in 0..200 {
        write_one(&tree, &mut hist, &mut rng, &mut stamp)?;
    }
    h.crash(tree);
    reopen_recovered(&h, &mut hist, mode, durable_before, "after a process crash")?;
    Ok(())
}

fn seeds() -> u64 {
    env_count("AIMETA_RACE_SEEDS", 4)
}

#[test]
fn checkpoints_beside_writers_on_delayed_writes_keep_every_commit() -> TestResult {
    for mode in MODES {
        for seed in 0..seeds() {
            run(
                mode,
                seed,
                Slowness::EveryWrite(Duration::from_millis(1)),
                1200,
            )
            .map_err(|e| format!("{mode:?}, seed {seed}, every write delayed by 1 ms: {e}"))?;
        }
    }
    Ok(())
}

#[test]
fn checkpoints_beside_writers_with_stalled_writes_keep_every_commit() -> TestResult {
    for mode in MODES {
        for seed in 0..seeds() {
            run(mode, 1000 + seed, Slowness::Stalls, 1500)
                .map_err(|e| format!("{mode:?}, seed {}, stalled writes: {e}", 1000 + seed))?;
        }
    }
    Ok(())
}
