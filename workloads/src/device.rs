//! The storage device's own floor under the work directory: the latency of one random
//! 4 KiB read at queue depth 1, and random-read IOPS at queue depths 1 and 8, measured in
//! a few seconds before a run's stores are built. The charts draw it as a line, so that a
//! reader sees how close each engine's reads from disk come to the disk itself.
//!
//! The reads bypass the page cache (O_DIRECT, into a 4 KiB-aligned buffer) from a file
//! written for the purpose and removed afterwards; where the file system refuses O_DIRECT
//! (tmpfs), the file is dropped from the page cache instead and the result says so.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aimeta_reports::DeviceFloor;
use rand::RngExt as _;
use rustix::fs::{Mode, OFlags};

use crate::gen::{derive_seed, seeded};
use crate::histogram::{histogram, latency};

/// Bytes of one read.
pub const READ_BYTES: usize = 4096;

/// How long and over how much the floor is measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloorOptions {
    /// Size of the file read (larger than any cache in front of the device makes the
    /// reads honest; 512 MiB by default).
    pub file_bytes: u64,
    /// Seconds of queue-depth-1 reads.
    pub qd1_secs: f64,
    /// Seconds of queue-depth-8 reads.
    pub qd8_secs: f64,
}

impl Default for FloorOptions {
    fn default() -> FloorOptions {
        FloorOptions {
            file_bytes: 512 << 20,
            qd1_secs: 2.0,
            qd8_secs: 2.0,
        }
    }
}

/// Why the floor could not be measured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// Writing, opening or reading the probe file failed.
    #[error("measuring the device under {dir}: {step} {path}: {source}; pass --work-dir with a writable directory that has {need_mib} MiB free")]
    Io {
        /// The work directory.
        dir: PathBuf,
        /// The probe file.
        path: PathBuf,
        /// What was being done.
        step: &'static str,
        /// Free space the measurement needs.
        need_mib: u64,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A reader thread panicked.
    #[error("measuring the device under {dir}: a reader thread panicked")]
    Reader {
        /// The work directory.
        dir: PathBuf,
    },
}

/// The probe file, removed when dropped.
struct ProbeFile {
    path: PathBuf,
}

impl Drop for ProbeFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// The probe file's name before the process id of the run that wrote it.
const PROBE_PREFIX: &str = ".ai-meta-device-floor-";

/// Removes the probe files of runs that were killed before they could remove their own:
/// a run keeps its probe (512 MiB) for its whole length, so a run stopped with SIGKILL
/// would otherwise leave it behind for good. A file is stale when the process named in
/// it is not running; where there is no /proc to tell, nothing is removed.
fn remove_stale_probes(dir: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix(PROBE_PREFIX))
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = pid {
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// A 4 KiB window of `buf` aligned to 4 KiB, as O_DIRECT needs (found by offset, so no
/// unsafe allocation is needed).
fn aligned(buf: &mut [u8]) -> &mut [u8] {
    let skip = buf.as_ptr().align_offset(READ_BYTES).min(buf.len());
    let end = (skip + READ_BYTES).min(buf.len());
    &mut buf[skip..end]
}

/// A file of random bytes under the work directory, open for reads that bypass the page
/// cache, removed when the probe is dropped. A run keeps it for its whole length, so that
/// a timed phase can read the device beside its operations (see [`ProbeReader`]).
pub struct DeviceProbe {
    dir: PathBuf,
    file: File,
    pages: u64,
    direct: bool,
    file_bytes: u64,
    // Declared last: dropped after `file` is closed.
    _removed_on_drop: ProbeFile,
}

impl std::fmt::Debug for DeviceProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceProbe")
            .field("path", &self._removed_on_drop.path)
            .field("file_bytes", &self.file_bytes)
            .field("direct", &self.direct)
            .finish()
    }
}

impl DeviceProbe {
    /// Writes a probe file of `file_bytes` under `dir` (synced, then dropped from the
    /// page cache) and opens it with O_DIRECT, or without where the file system refuses
    /// it (tmpfs).
    pub fn create(dir: &Path, file_bytes: u64) -> Result<DeviceProbe, DeviceError> {
        remove_stale_probes(dir);
        let path = dir.join(format!("{PROBE_PREFIX}{}", std::process::id()));
        let file_bytes = file_bytes.max(READ_BYTES as u64);
        let need_mib = file_bytes >> 20;
        let err = |step: &'static str| {
            let (dir, path) = (dir.to_path_buf(), path.clone());
            move |source: std::io::Error| DeviceError::Io {
                dir,
                path,
                step,
                need_mib,
                source,
            }
        };
        fs::create_dir_all(dir).map_err(err("creating"))?;
        let removed = ProbeFile { path: path.clone() };
        {
            // Data that no layer below can compress or treat as a hole.
            let mut chunk = vec![0u8; 1 << 20];
            let mut rng = seeded(derive_seed(0, &[b"device floor"]));
            for b in chunk.iter_mut() {
                *b = rng.random::<u8>();
            }
            let mut f = File::create(&path).map_err(err("creating"))?;
            let mut left = file_bytes;
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                f.write_all(&chunk[..n]).map_err(err("writing"))?;
                left -= n as u64;
            }
            f.sync_all().map_err(err("syncing"))?;
            // Clean now: the written pages leave the page cache instead of holding host
            // memory for the length of the run.
            rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
                .map_err(|e| err("dropping from the page cache")(e.into()))?;
        }
        let (file, direct) = match rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::DIRECT | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => (File::from(fd), true),
            Err(_) => (File::open(&path).map_err(err("opening"))?, false),
        };
        Ok(DeviceProbe {
            dir: dir.to_path_buf(),
            file,
            pages: file_bytes / READ_BYTES as u64,
            direct,
            file_bytes,
            _removed_on_drop: removed,
        })
    }

    /// A reader of random pages of the probe, its offsets drawn from `seed`; its buffer is
    /// allocated here, so that its reads allocate nothing.
    pub fn reader(&self, seed: u64) -> ProbeReader<'_> {
        ProbeReader {
            probe: self,
            rng: seeded(seed),
            storage: vec![0u8; 2 * READ_BYTES],
        }
    }

    fn io_error(&self, step: &'static str, source: std::io::Error) -> DeviceError {
        DeviceError::Io {
            dir: self.dir.clone(),
            path: self._removed_on_drop.path.clone(),
            step,
            need_mib: self.file_bytes >> 20,
            source,
        }
    }

    /// Writes a probe of `o.file_bytes` under `dir` and measures the device's floor with
    /// it; returns the probe too, for reads beside later operations (its file is removed
    /// when it is dropped). The floor's `secs` include writing the file.
    pub fn measure(dir: &Path, o: FloorOptions) -> Result<(DeviceProbe, DeviceFloor), DeviceError> {
        let started = Instant::now();
        let probe = DeviceProbe::create(dir, o.file_bytes)?;
        let floor = probe.floor(o, started)?;
        Ok((probe, floor))
    }

    /// The floor: `o.qd1_secs` of random reads at queue depth 1, then `o.qd8_secs` of
    /// them from 8 threads at once; `secs` counts from `started`.
    fn floor(&self, o: FloorOptions, started: Instant) -> Result<DeviceFloor, DeviceError> {
        if !self.direct {
            // Reads of a file in the page cache would measure memory: drop it first.
            rustix::fs::fadvise(&self.file, 0, None, rustix::fs::Advice::DontNeed)
                .map_err(|e| self.io_error("dropping from the page cache", e.into()))?;
        }
        let qd1_start = Instant::now();
        let qd1 = self
            .reader(1)
            .read_for(o.qd1_secs)
            .map_err(|e| self.io_error("reading", e))?;
        let qd1_secs = qd1_start.elapsed().as_secs_f64();
        let qd8_start = Instant::now();
        let counts: Vec<std::io::Result<u64>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u64)
                .map(|t| {
                    s.spawn(move || self.reader(100 + t).read_for(o.qd8_secs).map(|h| h.len()))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("a reader thread panicked")))
                })
                .collect()
        });
        let qd8_wall = qd8_start.elapsed().as_secs_f64();
        let mut qd8_reads = 0;
        for c in counts {
            qd8_reads += c.map_err(|e| self.io_error("reading at queue depth 8", e))?;
        }
        Ok(DeviceFloor {
            path: self.dir.display().to_string(),
            file_bytes: self.file_bytes,
            direct: self.direct,
            read_4k_qd1: latency(&qd1),
            iops_qd1: qd1.len() as f64 / qd1_secs.max(1e-9),
            iops_qd8: qd8_reads as f64 / qd8_wall.max(1e-9),
            secs: started.elapsed().as_secs_f64(),
        })
    }
}

/// Random 4 KiB reads of a [`DeviceProbe`], one at a time.
pub struct ProbeReader<'a> {
    probe: &'a DeviceProbe,
    rng: crate::gen::Rng,
    storage: Vec<u8>,
}

impl ProbeReader<'_> {
    /// One random 4 KiB read; the nanoseconds it took.
    pub fn read_one(&mut self) -> Result<u64, DeviceError> {
        self.read().map_err(|e| self.probe.io_error("reading", e))
    }

    fn read(&mut self) -> std::io::Result<u64> {
        let offset = self.rng.random_range(0..self.probe.pages) * READ_BYTES as u64;
        let buf = aligned(&mut self.storage);
        let start = Instant::now();
        let n = rustix::io::pread(&self.probe.file, buf, offset).map_err(std::io::Error::from)?;
        let nanos = (start.elapsed().as_nanos() as u64).max(1);
        if n != READ_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("read {n} bytes at offset {offset}, expected {READ_BYTES}"),
            ));
        }
        Ok(nanos)
    }

    /// Reads until `secs` pass; their latencies.
    fn read_for(&mut self, secs: f64) -> std::io::Result<hdrhistogram::Histogram<u64>> {
        let mut hist = histogram();
        let until = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < until {
            hist.saturating_record(self.read()?);
        }
        Ok(hist)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_in(dir: &Path) -> std::io::Result<usize> {
        Ok(fs::read_dir(dir)?.count())
    }

    #[test]
    fn a_small_floor_is_measured_and_its_file_removed() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let (probe, floor) = DeviceProbe::measure(
            dir.path(),
            FloorOptions {
                file_bytes: 4 << 20,
                qd1_secs: 0.05,
                qd8_secs: 0.05,
            },
        )?;
        assert!(floor.read_4k_qd1.p50 > 0.0 && floor.read_4k_qd1.min <= floor.read_4k_qd1.max);
        assert!(floor.iops_qd1 > 0.0 && floor.iops_qd8 > 0.0);
        assert_eq!(floor.file_bytes, 4 << 20);
        drop(probe);
        assert_eq!(files_in(dir.path())?, 0, "the probe file is gone");
        Ok(())
    }

    #[test]
    fn a_probe_reads_beside_other_work_and_is_removed_when_dropped(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let probe = DeviceProbe::create(dir.path(), 1 << 20)?;
        assert_eq!(files_in(dir.path())?, 1, "the probe file is there");
        let mut reader = probe.reader(7);
        for _ in 0..64 {
            assert!(reader.read_one()? > 0);
        }
        drop(reader);
        drop(probe);
        assert_eq!(files_in(dir.path())?, 0, "the probe file is gone");
        Ok(())
    }

    #[test]
    fn a_killed_runs_probe_is_removed_by_the_next_and_a_live_ones_is_not(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        // No process has this id (above the kernel's largest, 2^22).
        let stale = dir
            .path()
            .join(format!("{PROBE_PREFIX}{}", (1u32 << 22) + 1));
        // The parent of this test process is running.
        let live = dir.path().join(format!(
            "{PROBE_PREFIX}{}",
            std::os::unix::process::parent_id()
        ));
        let other = dir.path().join("data.aimkv");
        for f in [&stale, &live, &other] {
            fs::write(f, b"x")?;
        }
        let probe = DeviceProbe::create(dir.path(), 1 << 20)?;
        assert!(!stale.exists(), "a dead run's probe is removed");
        assert!(live.exists() && other.exists(), "nothing else is touched");
        drop(probe);
        Ok(())
    }

    #[test]
    fn an_unwritable_directory_is_a_typed_error() {
        let e = DeviceProbe::measure(
            Path::new("/proc/ai-meta-no-such-dir"),
            FloorOptions::default(),
        );
        assert!(
            matches!(
                e,
                Err(DeviceError::Io {
                    step: "creating",
                    ..
                })
            ),
            "{e:?}"
        );
    }

    #[test]
    fn the_aligned_window_is_aligned() {
        let mut storage = vec![0u8; 2 * READ_BYTES];
        let w = aligned(&mut storage);
        assert_eq!(w.len(), READ_BYTES);
        assert_eq!(w.as_ptr() as usize % READ_BYTES, 0);
    }
}
