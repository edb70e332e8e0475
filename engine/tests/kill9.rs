//! kill -9 loop: a child process commits batches with `Durability::Wal { sync: true }`
//! (background checkpoints running) and reports each acknowledged batch on a pipe; the
//! parent kills it at a random moment, reopens the tree and checks that every
//! acknowledged batch is there with its values, that the batch in flight is all there or
//! not at all, and that the tree's invariants hold. 50 rounds by default;
//! AIMETA_KILL9_ROUNDS sets more.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use aimeta_engine::{Durability, Tree, TreeConfig, WriteBatch};

const KEYS_PER_BATCH: u32 = 4;

fn config(dir: &str) -> TreeConfig {
    TreeConfig::new(dir)
        .cache_bytes(64 * 4096)
        .durability(Durability::Wal { sync: true })
        .checkpoint_log_bytes(128 * 1024)
        .checkpoint_interval(Duration::from_millis(20))
}

fn key(round: u32, batch: u32, j: u32) -> Vec<u8> {
    format!("r{round:03}/b{batch:06}/k{j}").into_bytes()
}

fn value(round: u32, batch: u32, j: u32) -> Vec<u8> {
    let mut v = format!("{round}:{batch}:{j}:").into_bytes();
    v.resize(100 + (batch % 7) as usize * 300, b'x');
    v
}

/// The child: runs only when the parent sets AIMETA_KILL9_DIR.
#[test]
fn kill9_child_writer() -> Result<(), Box<dyn std::error::Error>> {
    let Ok(dir) = std::env::var("AIMETA_KILL9_DIR") else {
        return Ok(());
    };
    let round: u32 = std::env::var("AIMETA_KILL9_ROUND")?.parse()?;
    let tree = Tree::open(config(&dir))?;
    let mut out = std::io::stdout().lock();
    for batch in 0..200_000u32 {
        let mut b = WriteBatch::new();
        for j in 0..KEYS_PER_BATCH {
            b.put(key(round, batch, j), value(round, batch, j));
        }
        tree.apply_batch(&b)?;
        writeln!(out, "ack {batch}")?;
        out.flush()?;
    }
    Ok(())
}

#[test]
fn acknowledged_batches_survive_kill_9() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: u32 = std::env::var("AIMETA_KILL9_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let dir = tempfile::tempdir()?;
    let dir_s = dir
        .path()
        .to_str()
        .ok_or("temp dir is not UTF-8")?
        .to_string();
    let exe = std::env::current_exe()?;
    let mut acked: Vec<Option<u32>> = Vec::new();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
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
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no child stdout")?;
        let reader = std::thread::spawn(move || {
            let mut last = None;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // The test harness prints "test kill9_child_writer ... " without a newline
                // before the child's first line, so an ack need not start its line.
                if let Some(n) = line
                    .rfind("ack ")
                    .and_then(|at| line[at + 4..].parse::<u32>().ok())
                {
                    last = Some(n);
                }
            }
            last
        });
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_millis(15 + rng % 90));
        child.kill()?;
        child.wait()?;
        let last = reader.join().map_err(|_| "reader thread panicked")?;
        acked.push(last);

        let tree = Tree::open(config(&dir_s).background_checkpoints(false))?;
        tree.check_integrity()?;
        for (r, last) in acked.iter().enumerate() {
            let r = r as u32;
            let through = last.map_or(0, |l| l + 1);
            for batch in 0..through {
                for j in 0..KEYS_PER_BATCH {
                    let got = tree.get(&key(r, batch, j))?;
                    assert_eq!(
                        got,
                        Some(value(r, batch, j)),
                        "round {r}: acknowledged batch {batch} key {j}"
                    );
                }
            }
            // The batch in flight when the child died: all of it or none of it.
            let present: Vec<bool> = (0..KEYS_PER_BATCH)
                .map(|j| tree.get(&key(r, through, j)).map(|v| v.is_some()))
                .collect::<Result<_, _>>()?;
            assert!(
                present.iter().all(|&p| p) || present.iter().all(|&p| !p),
                "round {r}: batch {through} is half-present: {present:?}"
            );
            assert_eq!(
                tree.get(&key(r, through + 1, 0))?,
                None,
                "round {r}: a batch two past the last acknowledged one exists"
            );
        }
    }
    assert!(
        acked.iter().filter(|a| a.is_some()).count() as u32 >= rounds / 2,
        "the child rarely got to write: {acked:?}"
    );
    Ok(())
}
