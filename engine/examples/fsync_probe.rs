//! What one small log append and fdatasync costs on this machine's file system, when each
//! write extends the file and when it overwrites bytes the file already has: the measure
//! behind the log's zeroed growth chunks (docs/durability.md, docs/performance.md).
//!
//! ```text
//! fsync_probe [dir] [steps]     defaults: /var/tmp, 300 steps of 200 bytes
//! ```
//!
//! Prints microseconds per step for each case, twice, alternating.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt as _;
use std::path::PathBuf;
use std::time::Instant;

const RECORD: usize = 200;

fn steps_us(path: &PathBuf, steps: usize, overwrite: bool) -> std::io::Result<f64> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    if overwrite {
        file.write_all_at(&vec![0u8; steps * RECORD + 4096], 0)?;
        file.sync_all()?;
    }
    let record = [0x5au8; RECORD];
    let start = Instant::now();
    for i in 0..steps {
        file.write_all_at(&record, (i * RECORD) as u64)?;
        file.sync_data()?;
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / steps as f64)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(args.first().map_or("/var/tmp", String::as_str));
    let steps: usize = args.get(1).map_or(Ok(300), |s| s.parse())?;
    let path = dir.join(format!("fsync_probe.{}", std::process::id()));
    let mut result = Ok(());
    for _ in 0..2 {
        for overwrite in [false, true] {
            match steps_us(&path, steps, overwrite) {
                Ok(us) => println!(
                    "{}: {us:.0} us per {RECORD}-byte write + fdatasync",
                    if overwrite {
                        "overwriting"
                    } else {
                        "extending"
                    }
                ),
                Err(e) => result = Err(e),
            }
        }
    }
    let _ = std::fs::remove_file(&path);
    Ok(result?)
}
