//! Model test with crashes: random writes, checkpoints, clean reopens, process crashes
//! (the OS keeps what was written) and power losses (bytes not synced are lost), on a
//! simulated disk and an 8-page pool, in each durability mode. After a crash the tree
//! must equal the model at a commit the mode promises to keep, and pass its integrity
//! check. The tree keeps a stored-key filter, whose file is written at checkpoints and
//! torn or lost by the same crashes: every stored key must still be found by a
//! longest-prefix lookup, which skips the candidates the filter rules out.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use aimeta_engine::storage::{FaultPlan, FaultyOpener, SimDisk};
use aimeta_engine::{Durability, Readable, Tree, TreeConfig, MAX_KEY_LEN};
use common::{apply_batch, env_count, Ops};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Batch(Ops),
    Checkpoint,
    Reopen,
    ProcessCrash,
    PowerLoss(u64),
    /// The process dies `n` storage operations into a checkpoint, then the power fails.
    CrashInCheckpoint(i64, u64),
}

/// Short keys over a small alphabet; now and then a long one, up to the longest accepted,
/// so that log records carry keys of every length.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        20 => prop::collection::vec(
            prop::sample::select(vec![0x00u8, b'/', b'a', b'b', 0xFF]),
            1..6,
        ),
        1 => (prop::collection::vec(prop::sample::select(vec![b'a', b'/']), 1..4), 1000usize..=MAX_KEY_LEN)
            .prop_map(|(p, n)| { let mut k = p; k.resize(n, b'z'); k }),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        12 => prop::collection::vec(any::<u8>(), 0..200),
        1 => (1500usize..6000, any::<u8>()).prop_map(|(n, b)| vec![b; n]),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (key(), value()).prop_map(|(k, v)| Op::Put(k, v)),
        8 => key().prop_map(Op::Delete),
        5 => prop::collection::vec((key(), prop::option::of(value())), 1..12).prop_map(Op::Batch),
        2 => Just(Op::Checkpoint),
        1 => Just(Op::Reopen),
        2 => Just(Op::ProcessCrash),
        2 => any::<u64>().prop_map(Op::PowerLoss),
        2 => (0i64..24, any::<u64>()).prop_map(|(n, s)| Op::CrashInCheckpoint(n, s)),
    ]
}

struct Harness {
    disk: SimDisk,
    plan: Arc<FaultPlan>,
    dir: tempfile::TempDir,
    mode: Durability,
}

impl Harness {
    fn open(&self) -> Tree {
        let opener = FaultyOpener {
            inner: self.disk.clone(),
            plan: self.plan.clone(),
        };
        Tree::open(
            TreeConfig::new(self.dir.path())
                .cache_bytes(8 * 4096)
                .frame_size(32 * 1024)
                .durability(self.mode)
                .background_checkpoints(false)
                .key_filter_bits(6)
                .storage(Arc::new(opener)),
        )
        .expect("open")
    }

    /// The process dies: nothing it does from now on reaches the disk.
    fn kill(&self, tree: Tree) {
        self.plan
            .fail_after_ops
            .store(0, std::sync::atomic::Ordering::SeqCst);
        drop(tree);
        self.plan
            .fail_after_ops
            .store(-1, std::sync::atomic::Ordering::SeqCst);
    }
}

fn contents(tree: &Tree) -> BTreeMap<Vec<u8>, Vec<u8>> {
    tree.range().iter().collect::<Result<_, _>>().expect("scan")
}

/// Every key of `model` is its own longest stored prefix: the filter never rules out a
/// stored key, whatever crashed while its file was written.
fn filter_keeps_every_key(
    tree: &Tree,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    when: &str,
) -> Result<(), TestCaseError> {
    prop_assert!(tree.metrics().key_filter_bytes > 0, "no filter {}", when);
    for k in model.keys() {
        let got = tree.longest_prefix_record(k).expect("lookup");
        prop_assert_eq!(got.map(|(key, _)| key), Some(k.clone()), "{}", when);
    }
    Ok(())
}

fn run(mode: Durability, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let h = Harness {
        disk: SimDisk::new(),
        plan: FaultPlan::new(""),
        dir: tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?,
        mode,
    };
    let _ = Path::new("");
    let mut tree = h.open();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    // Model states since the last point known to be durable; [0] is that point.
    let mut history = vec![model.clone()];
    for (n, op) in ops.into_iter().enumerate() {
        match op {
            Op::Put(k, v) => {
                tree.put(&k, &v).expect("put");
                model.insert(k, v);
                history.push(model.clone());
            }
            Op::Delete(k) => {
                tree.delete(&k).expect("delete");
                model.remove(&k);
                history.push(model.clone());
            }
            Op::Batch(ops) => {
                apply_batch(&tree, &mut model, ops).expect("batch");
                history.push(model.clone());
            }
            Op::Checkpoint => {
                tree.checkpoint().expect("checkpoint");
                history = vec![model.clone()];
            }
            Op::Reopen => {
                drop(tree);
                tree = h.open();
                tree.check_integrity()
                    .expect("integrity after a clean reopen");
                prop_assert_eq!(&contents(&tree), &model, "after a clean reopen, op {}", n);
                prop_assert_eq!(
                    tree.metrics().wal_replayed_records,
                    0,
                    "a clean close left log to replay, op {}",
                    n
                );
                filter_keeps_every_key(&tree, &model, &format!("after a clean reopen, op {n}"))?;
                history = vec![model.clone()];
            }
            Op::ProcessCrash | Op::PowerLoss(_) | Op::CrashInCheckpoint(..) => {
                let power = !matches!(op, Op::ProcessCrash);
                if let Op::CrashInCheckpoint(n, _) = op {
                    h.plan
                        .fail_after_ops
                        .store(n, std::sync::atomic::Ordering::SeqCst);
                    if tree.checkpoint().is_ok() {
                        history = vec![model.clone()];
                    }
                }
                h.kill(tree);
                if let Op::PowerLoss(seed) | Op::CrashInCheckpoint(_, seed) = op {
                    h.disk.crash_reordered(seed);
                }
                tree = h.open();
                tree.check_integrity().expect("integrity after crash");
                let got = contents(&tree);
                let in_ckpt = matches!(op, Op::CrashInCheckpoint(..));
                let ends = [history[0].clone(), model.clone()];
                let allowed: &[BTreeMap<Vec<u8>, Vec<u8>>] = match (mode, power) {
                    (Durability::None, _) if in_ckpt => &ends,
                    (Durability::None, _) => &history[..1],
                    (Durability::Wal { sync: true }, _)
                    | (Durability::Wal { sync: false }, false) => &history[history.len() - 1..],
                    (Durability::Wal { sync: false }, true) => &history[..],
                };
                prop_assert!(
                    allowed.contains(&got),
                    "op {}: {:?} crash in {:?} recovered {} entries; allowed states have {:?}",
                    n,
                    op,
                    mode,
                    got.len(),
                    allowed.iter().map(|m| m.len()).collect::<Vec<_>>()
                );
                model = got;
                filter_keeps_every_key(&tree, &model, &format!("after {op:?}, op {n}"))?;
                history = vec![model.clone()];
            }
        }
    }
    tree.check_integrity().expect("integrity at the end");
    filter_keeps_every_key(&tree, &model, "at the end")?;
    prop_assert_eq!(contents(&tree), model);
    Ok(())
}

fn cases() -> u32 {
    env_count("CRASH_CASES", 24)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 500, .. ProptestConfig::default() })]

    #[test]
    fn crashes_without_a_log_lose_only_what_was_not_checkpointed(ops in prop::collection::vec(op(), 1..120)) {
        run(Durability::None, ops)?;
    }

    #[test]
    fn an_async_log_survives_process_crashes_and_keeps_a_prefix_on_power_loss(ops in prop::collection::vec(op(), 1..120)) {
        run(Durability::Wal { sync: false }, ops)?;
    }

    #[test]
    fn a_synced_log_loses_nothing_acknowledged(ops in prop::collection::vec(op(), 1..120)) {
        run(Durability::Wal { sync: true }, ops)?;
    }
}
