//! Pages that changes replace while the durable checkpoint still references them cannot
//! be reused until a newer checkpoint; once they pass `checkpoint_held_pages` while the
//! pool writes changed pages back, a commit asks the background checkpointer for one, so
//! the file stops growing by one page per change to a checkpointed leaf.

use std::time::{Duration, Instant};

use aimeta_engine::{Durability, Readable, Tree, TreeConfig};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const ENTRIES: u32 = 60_000;
const UPDATES: u32 = 6_000;
const HELD_LIMIT: u64 = 64;

fn key(i: u32) -> [u8; 8] {
    (u64::from(i) * 0x9e37_79b9).to_be_bytes()
}

/// A bulk-loaded tree (its leaves all in the durable checkpoint) whose checkpointer runs
/// only when kicked (no interval and no log size in the way), in a pool of a quarter of
/// its pages, so that changed leaves are written back.
fn loaded(dir: &std::path::Path, held_limit: u64) -> Result<Tree, Box<dyn std::error::Error>> {
    loaded_in(dir, held_limit, 1 << 20)
}

fn loaded_in(
    dir: &std::path::Path,
    held_limit: u64,
    pool_bytes: u64,
) -> Result<Tree, Box<dyn std::error::Error>> {
    let tree = Tree::open(
        TreeConfig::new(dir)
            .cache_bytes(pool_bytes)
            .durability(Durability::Wal { sync: false })
            .checkpoint_interval(Duration::from_secs(3600))
            .checkpoint_log_bytes(u64::MAX)
            .checkpoint_held_pages(held_limit),
    )?;
    let mut pairs: Vec<([u8; 8], [u8; 40])> = (0..ENTRIES).map(|i| (key(i), [3u8; 40])).collect();
    pairs.sort_unstable();
    tree.bulk_load(pairs)?;
    Ok(tree)
}

/// Updates keys spread over the whole tree, so that almost every put replaces a leaf the
/// bulk load wrote. Returns the file's growth in pages. With `wait`, each time the held
/// pages pass twice the limit it pauses (up to 10 s) for the kicked checkpoint to free them.
fn update_spread(tree: &Tree, wait: bool) -> Result<u64, Box<dyn std::error::Error>> {
    let before = tree.metrics().file_pages;
    // One pause per checkpoint count: a pause that freed nothing is not repeated until
    // another checkpoint has run.
    let mut paused_at = None;
    for u in 0..UPDATES {
        let i = u.wrapping_mul(7919) % ENTRIES;
        tree.put(&key(i), &[9u8; 40])?;
        let m = tree.metrics();
        if wait && m.held_pages >= 2 * HELD_LIMIT && paused_at != Some(m.checkpoints) {
            paused_at = Some(m.checkpoints);
            // Give a kicked checkpoint time to finish, so that a descheduled checkpointer
            // does not decide the growth below. Not an error when the pages stay: the
            // limit asks only while the pool writes pages back, and a pause writes none.
            // 10 s: with 2 s, a full test run beside another build once saw the file grow
            // by over a quarter of the control's growth: a checkpoint slower than the
            // pause lets the writer outrun it.
            let deadline = Instant::now() + Duration::from_secs(10);
            while tree.metrics().held_pages >= 2 * HELD_LIMIT && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
    Ok(tree.metrics().file_pages - before)
}

#[test]
fn replaced_pages_past_the_limit_come_back_through_a_checkpoint() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = loaded(dir.path(), HELD_LIMIT)?;
    let checkpoints = tree.metrics().checkpoints;
    let grown = update_spread(&tree, true)?;
    let m = tree.metrics();
    assert!(
        m.checkpoints > checkpoints,
        "no checkpoint ran while {UPDATES} updates replaced checkpointed leaves"
    );

    // The same updates with the limit out of reach: every replaced leaf stays held.
    let control_dir = tempfile::tempdir()?;
    let control = loaded(control_dir.path(), u64::MAX)?;
    let control_checkpoints = control.metrics().checkpoints;
    let control_grown = update_spread(&control, false)?;
    assert_eq!(control.metrics().checkpoints, control_checkpoints);
    assert!(control.metrics().held_pages > 10 * HELD_LIMIT);
    // The file grows in whole frames of 128 pages. Without checkpoints it grows by about
    // one page per leaf changed (6 frames here); with them by one frame, or by two when a
    // checkpoint that started before the limit was passed is still running as the writer
    // goes on (the pages it did not see wait for the next one): seen once in a CI run.
    // Half the control's growth still fails when no checkpoint gives pages back.
    assert!(
        grown * 2 < control_grown,
        "the file grew by {grown} pages with checkpoints at {HELD_LIMIT} held pages, \
         {control_grown} without"
    );

    for (t, value) in [(&tree, [9u8; 40]), (&control, [9u8; 40])] {
        t.check_integrity()?;
        assert_eq!(t.get(&key(0))?.as_deref(), Some(&value[..]));
        assert_eq!(t.len(), u64::from(ENTRIES));
    }
    Ok(())
}

#[test]
fn changes_that_stay_in_the_pool_ask_for_no_checkpoint() -> TestResult {
    // The whole tree fits the pool: nothing is written back, so a checkpoint would only
    // add writes, and the held pages stay until the log or the interval calls for one.
    let dir = tempfile::tempdir()?;
    let tree = loaded_in(dir.path(), HELD_LIMIT, 64 << 20)?;
    let checkpoints = tree.metrics().checkpoints;
    update_spread(&tree, false)?;
    let m = tree.metrics();
    assert_eq!(m.bm_dirty_writebacks, 0);
    assert!(m.held_pages > 10 * HELD_LIMIT);
    assert_eq!(m.checkpoints, checkpoints);
    Ok(())
}

#[test]
fn held_page_checkpoints_on_slow_storage_lose_nothing_acknowledged_in_any_mode() -> TestResult {
    use aimeta_engine::storage::{FaultPlan, FaultyOpener, SimDisk};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    for mode in [
        Durability::None,
        Durability::Wal { sync: false },
        Durability::Wal { sync: true },
    ] {
        let disk = SimDisk::new();
        let plan = FaultPlan::new("");
        let dir = tempfile::tempdir()?;
        let open = || {
            Tree::open(
                TreeConfig::new(dir.path())
                    .cache_bytes(1 << 20)
                    .durability(mode)
                    .checkpoint_interval(Duration::from_secs(3600))
                    .checkpoint_log_bytes(u64::MAX)
                    .checkpoint_held_pages(HELD_LIMIT)
                    .storage(Arc::new(FaultyOpener {
                        inner: disk.clone(),
                        plan: plan.clone(),
                    })),
            )
        };
        let tree = open()?;
        let mut pairs: Vec<([u8; 8], [u8; 40])> =
            (0..ENTRIES).map(|i| (key(i), [3u8; 40])).collect();
        pairs.sort_unstable();
        tree.bulk_load(pairs)?;
        // Every data-file write sleeps, so the kicked checkpoints' flushes run beside the
        // writer and one is most likely in flight when the process dies.
        plan.delay_writes(Duration::from_micros(200));
        let updates = 1_500u32;
        for u in 0..updates {
            tree.put(&key(u.wrapping_mul(7919) % ENTRIES), &[9u8; 40])?;
        }
        assert!(
            tree.metrics().checkpoints > 1,
            "{mode:?}: no held-page checkpoint ran"
        );
        // The process dies without the closing checkpoint: what it wrote stays (the OS
        // has it). With synced commits the power fails too: only synced bytes stay.
        plan.fail_after_ops.store(0, Ordering::SeqCst);
        drop(tree);
        plan.fail_after_ops.store(-1, Ordering::SeqCst);
        plan.delay_writes(Duration::ZERO);
        if mode == (Durability::Wal { sync: true }) {
            disk.crash();
        }

        let tree = open()?;
        tree.check_integrity()?;
        assert_eq!(tree.len(), u64::from(ENTRIES), "{mode:?}");
        for u in 0..updates {
            let got = tree.get(&key(u.wrapping_mul(7919) % ENTRIES))?;
            let got = got.as_deref().ok_or(format!("{mode:?}: key {u} lost"))?;
            match mode {
                // Without a log a crash keeps the last durable checkpoint: each value is
                // the old or the new one, never anything else.
                Durability::None => assert!(got == [3u8; 40] || got == [9u8; 40], "{mode:?}"),
                _ => assert_eq!(got, [9u8; 40], "{mode:?}: an acknowledged put was lost"),
            }
        }
    }
    Ok(())
}
