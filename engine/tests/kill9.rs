//! kill -9 loop, in both logged durability modes. A child process applies batches (puts
//! over a bounded key space, so that pages are replaced and reused all the time, with
//! small and 5 to 30 KiB values, and deletes) while two reader threads scan (holding
//! snapshots, which delay the reuse of freed pages) and the background checkpointer runs
//! every few milliseconds, and reports each acknowledged batch on a pipe; the parent kills it
//! with SIGKILL at a random moment, reopens the tree and checks that it holds exactly the
//! acknowledged batches, plus the one in flight or none of it, and passes its integrity
//! check. A process kill must lose nothing acknowledged with `sync: false` too (the log is
//! with the OS). In every other round the child's data-file writes are slowed (300 us
//! each), standing in for a checkpointer descheduled mid-flush: that holds open the window
//! in which writers and readers run beside the flush. The child also reports when a checkpoint starts and ends, so kills that
//! land mid-checkpoint are counted and reported. 50 rounds per mode by default;
//! AIMETA_KILL9_ROUNDS sets more.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aimeta_engine::storage::{DataReads, FileOpener, Storage, StorageError, StorageOpener};
use aimeta_engine::{Durability, Readable, Tree, TreeConfig};
use common::{apply_to_model, batch_of, env_count, seeded, stamped_value, Ops, TestResult};
use rand::RngExt as _;

const KEYS: u64 = 500;
const PAGE: u64 = 4096;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn durability(sync: bool) -> Durability {
    Durability::Wal { sync }
}

fn config(dir: &str, sync: bool) -> TreeConfig {
    TreeConfig::new(dir)
        .cache_bytes(64 * PAGE)
        .durability(durability(sync))
        .checkpoint_log_bytes(128 * 1024)
        .checkpoint_interval(Duration::from_millis(5))
}

/// The operations of batch `batch` of round `round`: the child applies them, the parent
/// recomputes them to know what an acknowledged batch wrote.
fn batch_ops(round: u32, batch: u32) -> Ops {
    let mut rng =
        seeded((u64::from(round) << 32 | u64::from(batch)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let stamp = u64::from(round) << 32 | u64::from(batch);
    (0..1 + rng.random_range(0..4))
        .map(|_| {
            let k = format!("k/{:04}", rng.random_range(0..KEYS)).into_bytes();
            match rng.random_range(0..10) {
                0 => (k, None),
                1 => {
                    let len = 5 * 1024 + rng.random_range(0..25 * 1024) as usize;
                    let v = stamped_value(&k, stamp, len);
                    (k, Some(v))
                }
                _ => {
                    let len = 16 + rng.random_range(0..300) as usize;
                    let v = stamped_value(&k, stamp, len);
                    (k, Some(v))
                }
            }
        })
        .collect()
}

/// Set once the child's tree is open: from then on a log header write is a checkpoint
/// switching log files.
static ARMED: AtomicBool = AtomicBool::new(false);

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Real files, with a line on stdout when a checkpoint starts (a log file gets a new
/// header) and when it ends (the data file is synced after a superblock write), and
/// data-file writes slowed by `delay`.
#[derive(Debug)]
struct Observed {
    delay: Duration,
}

impl StorageOpener for Observed {
    fn open(&self, path: &Path, create: bool) -> Result<Arc<dyn Storage>, StorageError> {
        Ok(Arc::new(ObservedFile {
            inner: FileOpener.open(path, create)?,
            log: true,
            delay: Duration::ZERO,
            superblock_written: AtomicBool::new(false),
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        FileOpener.exists(path)
    }

    fn open_data(
        &self,
        path: &Path,
        create: bool,
        reads: DataReads,
    ) -> Result<Arc<dyn Storage>, StorageError> {
        Ok(Arc::new(ObservedFile {
            inner: FileOpener.open_data(path, create, reads)?,
            log: false,
            delay: self.delay,
            superblock_written: AtomicBool::new(false),
        }))
    }
}

#[derive(Debug)]
struct ObservedFile {
    inner: Arc<dyn Storage>,
    log: bool,
    delay: Duration,
    superblock_written: AtomicBool,
}

impl Storage for ObservedFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<(), StorageError> {
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> Result<(), StorageError> {
        if self.log && offset == 0 && ARMED.load(Ordering::SeqCst) {
            say("checkpoint begins");
        }
        // Pages 0 and 1 are the superblock copies.
        if !self.log && offset < 2 * PAGE {
            self.superblock_written.store(true, Ordering::SeqCst);
        }
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        self.inner.write_at(buf, offset)
    }

    fn sync(&self) -> Result<(), StorageError> {
        self.inner.sync()?;
        if self.superblock_written.swap(false, Ordering::SeqCst) && ARMED.load(Ordering::SeqCst) {
            say("checkpoint ends");
        }
        Ok(())
    }

    fn len(&self) -> Result<u64, StorageError> {
        self.inner.len()
    }

    fn set_len(&self, len: u64) -> Result<(), StorageError> {
        self.inner.set_len(len)
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }
}

/// The child: runs only when the parent sets AIMETA_KILL9_DIR.
#[test]
fn kill9_child_writer() -> TestResult {
    let Ok(dir) = std::env::var("AIMETA_KILL9_DIR") else {
        return Ok(());
    };
    let round: u32 = std::env::var("AIMETA_KILL9_ROUND")?.parse()?;
    let sync = std::env::var("AIMETA_KILL9_SYNC")? == "1";
    let delay = Duration::from_micros(std::env::var("AIMETA_KILL9_DELAY_US")?.parse()?);
    let tree = Tree::open(config(&dir, sync).storage(Arc::new(Observed { delay })))?;
    ARMED.store(true, Ordering::SeqCst);
    for r in 0..2u64 {
        let tree = tree.clone();
        std::thread::spawn(move || {
            let mut rng = seeded(0x51ED_2701 + r);
            loop {
                let from = format!("k/{:04}", rng.random_range(0..KEYS)).into_bytes();
                // Errors end the reader; the parent checks the tree after the kill.
                let Ok(n) = tree
                    .range()
                    .from(&from)
                    .limit(50)
                    .iter()
                    .try_fold(0, |n, r| r.map(|_| n + 1))
                else {
                    return;
                };
                std::hint::black_box(n);
            }
        });
    }
    for batch in 0..u32::MAX {
        tree.apply_batch(&batch_of(&batch_ops(round, batch)))?;
        say(&format!("ack {batch}"));
    }
    Ok(())
}

/// What the parent heard from a child before it died.
#[derive(Debug, Default)]
struct Heard {
    last_ack: Option<u32>,
    in_checkpoint: bool,
    checkpoints: u32,
}

fn listen(stdout: std::process::ChildStdout) -> Heard {
    let mut heard = Heard::default();
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        // The test harness prints "test kill9_child_writer ... " without a newline before
        // the child's first line, so a message need not start its line.
        if let Some(n) = line
            .rfind("ack ")
            .and_then(|at| line[at + 4..].parse::<u32>().ok())
        {
            heard.last_ack = Some(n);
        } else if line.ends_with("checkpoint begins") {
            heard.in_checkpoint = true;
        } else if line.ends_with("checkpoint ends") {
            heard.in_checkpoint = false;
            heard.checkpoints += 1;
        }
    }
    heard
}

fn contents(tree: &Tree) -> aimeta_engine::Result<Model> {
    tree.range().iter().collect()
}

fn kill_loop(sync: bool) -> TestResult {
    let rounds: u32 = env_count("AIMETA_KILL9_ROUNDS", 50);
    let dir = tempfile::tempdir()?;
    let dir_s = dir
        .path()
        .to_str()
        .ok_or("temp dir is not UTF-8")?
        .to_string();
    let exe = std::env::current_exe()?;
    let mut model = Model::new();
    let mut rng = seeded(0x2545_F491_4F6C_DD1D ^ u64::from(sync));
    let (mut wrote, mut mid_checkpoint, mut in_flight_kept, mut checkpoints) = (0, 0, 0, 0);
    for round in 0..rounds {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "kill9_child_writer",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("AIMETA_KILL9_DIR", &dir_s)
            .env("AIMETA_KILL9_ROUND", round.to_string())
            .env("AIMETA_KILL9_SYNC", if sync { "1" } else { "0" })
            .env(
                "AIMETA_KILL9_DELAY_US",
                if round % 2 == 1 { "300" } else { "0" },
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no child stdout")?;
        let listener = std::thread::spawn(move || listen(stdout));
        std::thread::sleep(Duration::from_millis(15 + rng.random_range(0..90)));
        child.kill()?;
        child.wait()?;
        let heard = listener.join().map_err(|_| "listener thread panicked")?;
        wrote += u32::from(heard.last_ack.is_some());
        mid_checkpoint += u32::from(heard.in_checkpoint);
        checkpoints += heard.checkpoints;

        let through = heard.last_ack.map_or(0, |l| l + 1);
        for batch in 0..through {
            apply_to_model(&mut model, batch_ops(round, batch));
        }
        let tree = Tree::open(config(&dir_s, sync).background_checkpoints(false))
            .map_err(|e| format!("round {round}: reopening after the kill: {e}"))?;
        tree.check_integrity()
            .map_err(|e| format!("round {round}: integrity after the kill: {e}"))?;
        let got =
            contents(&tree).map_err(|e| format!("round {round}: scan after the kill: {e}"))?;
        if got != model {
            // The batch in flight when the child died: all of it or none of it.
            let mut with_next = model.clone();
            apply_to_model(&mut with_next, batch_ops(round, through));
            if got != with_next {
                let lost = model
                    .iter()
                    .filter(|(k, v)| got.get(*k) != Some(*v))
                    .count();
                return Err(format!(
                    "round {round} (sync: {sync}, {} writes, killed {} a checkpoint): the tree is \
                     neither the {through} acknowledged batches nor those and the next; {lost} \
                     acknowledged entries differ",
                    if round % 2 == 1 { "slowed" } else { "ordinary" },
                    if heard.in_checkpoint {
                        "during"
                    } else {
                        "outside"
                    }
                )
                .into());
            }
            in_flight_kept += 1;
            model = with_next;
        }
    }
    eprintln!(
        "kill -9, sync: {sync}: {rounds} rounds, {wrote} with acknowledged batches, \
         {mid_checkpoint} killed during a checkpoint, {in_flight_kept} kept the batch in \
         flight, {checkpoints} checkpoints completed in the children"
    );
    if wrote < rounds / 2 {
        return Err(format!("the child rarely got to write: {wrote} of {rounds} rounds").into());
    }
    if checkpoints == 0 {
        return Err("no checkpoint completed in any child: the loop tested no checkpoint".into());
    }
    Ok(())
}

#[test]
fn acknowledged_batches_survive_kill_9_with_a_synced_log() -> TestResult {
    kill_loop(true)
}

#[test]
fn acknowledged_batches_survive_kill_9_with_an_async_log() -> TestResult {
    kill_loop(false)
}
