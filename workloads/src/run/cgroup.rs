//! The memory cgroup a timed phase of `--budget-mode cgroup` runs in, and the watchdog
//! that keeps one engine's overrun from ending the whole run.
//!
//! Why a watchdog: the whole harness process enters the group, so when an engine needs
//! more memory than the group allows and the kernel cannot reclaim enough page cache,
//! the kernel's OOM killer kills the harness, and every engine's results of the run are
//! lost with it (a large run lost 18 minutes of results that way). On cgroup v1 the group
//! is created with its OOM killer disabled instead: a task that then runs out sleeps
//! until the group has room. A watchdog thread, kept outside the group and touching no
//! new memory while it waits, sees the group under OOM, records what it had charged,
//! lifts the limit so the engine goes on, and the phase's records say that the engine
//! went past the budget and are not comparable. cgroup v2 has no such switch: there the
//! kernel still kills the run.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rustix::fs::FileExt as _;

use aimeta_reports::{Record, Status};

use super::RunError;

/// How often the watchdog looks at the group's OOM state.
const WATCH_INTERVAL: Duration = Duration::from_millis(20);

/// Large enough for a v1 group's memory.stat (about 1.5 KiB) and memory.oom_control.
const READ_BUFFER_BYTES: usize = 8192;

/// What the group had charged when it ran out of memory it could not reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    /// The group's limit: the budget plus the runner's overhead.
    pub limit_bytes: u64,
    /// Anonymous memory (heap, caches of the engine's own) charged at that moment.
    pub anon_bytes: u64,
    /// Page cache charged at that moment.
    pub cache_bytes: u64,
}

impl OverBudget {
    /// The note a record measured past the budget carries.
    pub fn note(&self) -> String {
        const MIB: f64 = 1024.0 * 1024.0;
        format!(
            "went past the memory budget: the {:.0} MiB cgroup ran out with {:.0} MiB of \
             the engine's own memory and {:.0} MiB of page cache charged, so the limit was \
             lifted to let the run go on; not comparable with the other engines",
            self.limit_bytes as f64 / MIB,
            self.anon_bytes as f64 / MIB,
            self.cache_bytes as f64 / MIB,
        )
    }
}

/// A memory cgroup the process runs in while the guard lives (the timed phase of
/// `--budget-mode cgroup`); dropping it moves the process back and removes the group.
#[derive(Debug)]
pub struct CgroupGuard {
    group: PathBuf,
    limit: u64,
    back: PathBuf,
    procs: &'static str,
    watchdog: Option<Watchdog>,
}

#[derive(Debug)]
struct Watchdog {
    stop: Arc<AtomicBool>,
    over: Arc<Mutex<Option<OverBudget>>>,
    thread: Option<JoinHandle<()>>,
}

impl CgroupGuard {
    /// Creates a group limited to `limit` bytes (page cache included) and moves the
    /// process into it, after handing the heap's free pages back to the kernel (see
    /// [`release_free_heap`]): an engine opened next then has its cache charged there.
    /// On cgroup v1 the group's OOM killer is off and a watchdog lifts the limit when
    /// the group runs out (see [`CgroupGuard::over_budget`]).
    pub fn enter(limit: u64) -> Result<CgroupGuard, RunError> {
        let err = |detail: String| RunError::Cgroup { detail };
        let pid = std::process::id().to_string();
        let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
        let (root, limit_file) = if v2 {
            (PathBuf::from("/sys/fs/cgroup"), "memory.max")
        } else {
            (
                PathBuf::from("/sys/fs/cgroup/memory"),
                "memory.limit_in_bytes",
            )
        };
        let procs = "cgroup.procs";
        let current = fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| err(format!("reading /proc/self/cgroup: {e}")))?;
        let rel = own_group(&current, v2).unwrap_or_default();
        let back = root.join(&rel);
        let group = root.join(format!("aimeta-bench-{pid}"));
        fs::create_dir_all(&group)
            .map_err(|e| err(format!("creating {}: {e}", group.display())))?;
        let write = |file: &str, v: &str| {
            fs::write(group.join(file), v)
                .map_err(|e| err(format!("writing {}/{file}: {e}", group.display())))
        };
        write(limit_file, &limit.to_string())?;
        if !v2 {
            // Count swap too where the kernel allows it; ignore where it does not.
            let _ = fs::write(group.join("memory.memsw.limit_in_bytes"), limit.to_string());
        }
        let watched = if v2 {
            None
        } else {
            write("memory.oom_control", "1")?;
            Some(WatchedFiles::open(&group, &back).map_err(|e| {
                err(format!(
                    "opening {}'s files for its watchdog: {e}",
                    group.display()
                ))
            })?)
        };
        release_free_heap();
        write(procs, &pid)?;
        *LAST_GROUP.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let mut guard = CgroupGuard {
            group,
            limit,
            back,
            procs,
            watchdog: None,
        };
        if let Some(files) = watched {
            guard.watchdog =
                Some(Watchdog::start(files, limit).map_err(|e| {
                    err(format!("starting the memory cgroup's watchdog thread: {e}"))
                })?);
        }
        Ok(guard)
    }

    /// Anonymous memory (heap, not page cache) charged to the group so far, from its
    /// memory.stat (`rss` on cgroup v1, `anon` on v2); None if the kernel does not say.
    pub fn charged_anon_bytes(&self) -> Option<u64> {
        let stat = fs::read_to_string(self.group.join("memory.stat")).ok()?;
        stat_value(stat.as_bytes(), &[b"rss", b"anon"])
    }

    /// Whether the group ran out of memory since it was entered, and what it had
    /// charged then; the records of the phase are then not comparable.
    pub fn over_budget(&self) -> Option<OverBudget> {
        let w = self.watchdog.as_ref()?;
        *w.over.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The limit and the peak usage of the last group entered, noted when it was left: a
/// failure of the phase that ran in it (a write refused with "Cannot allocate memory"
/// when the kernel could not charge it, which the watchdog does not see: only page
/// faults wait for room) is then reported with the group's state.
static LAST_GROUP: Mutex<Option<(u64, u64)>> = Mutex::new(None);

/// Why the last phase's failure may have been its memory: "in a memory cgroup of N MiB
/// that had reached its limit", when the last group left had; None otherwise.
pub(crate) fn last_group_full() -> Option<String> {
    let (limit, peak) = (*LAST_GROUP.lock().unwrap_or_else(|p| p.into_inner()))?;
    // Within a page or two of the limit: the kernel refuses charges past it.
    (peak + (64 << 10) >= limit).then(|| {
        format!(
            "its last phase ran in a memory cgroup of {} MiB (the budget plus the \
             harness's overhead) that had reached its limit",
            limit >> 20
        )
    })
}

impl Drop for CgroupGuard {
    fn drop(&mut self) {
        let peak = ["memory.max_usage_in_bytes", "memory.peak"]
            .iter()
            .find_map(|f| fs::read_to_string(self.group.join(f)).ok())
            .and_then(|t| t.trim().parse::<u64>().ok());
        *LAST_GROUP.lock().unwrap_or_else(|p| p.into_inner()) = peak.map(|peak| (self.limit, peak));
        if let Some(mut w) = self.watchdog.take() {
            w.stop.store(true, Ordering::Relaxed);
            if let Some(t) = w.thread.take() {
                let _ = t.join();
            }
        }
        let _ = fs::write(self.back.join(self.procs), std::process::id().to_string());
        let _ = fs::remove_dir(&self.group);
    }
}

/// Marks `records`, measured while `guard`'s group lived, as past the budget when the
/// group ran out of memory: see [`mark_past_budget`].
pub(crate) fn mark_over_budget(guard: Option<&CgroupGuard>, records: &mut [Record]) {
    if let Some(over) = guard.and_then(CgroupGuard::over_budget) {
        mark_past_budget(over, records);
    }
}

/// Marks `records` as measured past the budget (status error, with what the group had
/// charged): their numbers had more memory than the other engines'.
pub(crate) fn mark_past_budget(over: OverBudget, records: &mut [Record]) {
    for r in records {
        r.status = Status::Error;
        r.note = Some(match r.note.take() {
            Some(own) => format!("{}; {own}", over.note()),
            None => over.note(),
        });
    }
}

/// The files the watchdog reads and writes, opened before the process enters the group:
/// once the group is out of memory, opening a file could fail or wait.
struct WatchedFiles {
    oom_control: File,
    stat: File,
    limit: File,
    memsw_limit: Option<File>,
    /// The `tasks` file of the group the process came from: the watchdog thread moves
    /// itself there, so that the kernel objects its reads allocate are not charged to
    /// the full group.
    back_tasks: File,
}

impl WatchedFiles {
    fn open(group: &Path, back: &Path) -> std::io::Result<WatchedFiles> {
        let writable = |p: PathBuf| OpenOptions::new().write(true).open(p);
        Ok(WatchedFiles {
            oom_control: File::open(group.join("memory.oom_control"))?,
            stat: File::open(group.join("memory.stat"))?,
            limit: writable(group.join("memory.limit_in_bytes"))?,
            memsw_limit: writable(group.join("memory.memsw.limit_in_bytes")).ok(),
            back_tasks: writable(back.join("tasks"))?,
        })
    }
}

impl Watchdog {
    fn start(files: WatchedFiles, limit: u64) -> std::io::Result<Watchdog> {
        let stop = Arc::new(AtomicBool::new(false));
        let over = Arc::new(Mutex::new(None));
        let thread = std::thread::Builder::new()
            .name("aimeta-cgroup-watchdog".into())
            .spawn({
                let (stop, over) = (Arc::clone(&stop), Arc::clone(&over));
                move || watch(files, limit, &stop, &over)
            })?;
        Ok(Watchdog {
            stop,
            over,
            thread: Some(thread),
        })
    }
}

/// The watchdog's loop. It allocates nothing once it watches: a page it faulted in while
/// the group is out of memory would put it to sleep with the engine (the kernel charges
/// a process's pages to the group of the whole process, wherever the thread is).
fn watch(mut files: WatchedFiles, limit: u64, stop: &AtomicBool, over: &Mutex<Option<OverBudget>>) {
    // Outside the group for the kernel's own allocations (a failure leaves it inside,
    // where the loop still works while the group has room). The group was just entered
    // and has room: this one allocation is not yet the loop's.
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    let _ = files.back_tasks.write_all(tid.to_string().as_bytes());
    let mut buf = [0u8; READ_BUFFER_BYTES];
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(WATCH_INTERVAL);
        let Ok(n) = files.oom_control.read_at(&mut buf, 0) else {
            continue;
        };
        if stat_value(&buf[..n], &[b"under_oom"]) != Some(1) {
            continue;
        }
        let n = files.stat.read_at(&mut buf, 0).unwrap_or(0);
        let charged = OverBudget {
            limit_bytes: limit,
            anon_bytes: stat_value(&buf[..n], &[b"rss"]).unwrap_or(0),
            cache_bytes: stat_value(&buf[..n], &[b"cache"]).unwrap_or(0),
        };
        // memsw first: the kernel refuses a memory limit above the memory+swap limit.
        if let Some(f) = files.memsw_limit.as_mut() {
            let _ = f.write_all(b"-1");
        }
        let _ = files.limit.write_all(b"-1");
        let mut slot = over.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(charged);
        return;
    }
}

/// The value of the first of `names` in a cgroup stat file ("name value" lines).
fn stat_value(text: &[u8], names: &[&[u8]]) -> Option<u64> {
    text.split(|&b| b == b'\n').find_map(|line| {
        let space = line.iter().position(|&b| b == b' ')?;
        let (name, value) = (&line[..space], &line[space + 1..]);
        if !names.contains(&name) || value.is_empty() {
            return None;
        }
        value.iter().try_fold(0u64, |n, &b| {
            b.is_ascii_digit()
                .then(|| n.checked_mul(10)?.checked_add(u64::from(b - b'0')))
                .flatten()
        })
    })
}

/// The process's own group for the memory controller, relative to the hierarchy's root,
/// from /proc/self/cgroup.
fn own_group(proc_cgroup: &str, v2: bool) -> Option<String> {
    proc_cgroup.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = if v2 {
            ctrl.is_empty()
        } else {
            ctrl.split(',').any(|c| c == "memory")
        };
        hit.then(|| path.trim_start_matches('/').to_string())
    })
}

/// Hands the allocator's free pages back to the kernel (glibc's `malloc_trim`, which
/// also releases free pages inside the heap, not only at its top).
///
/// Why: a memory cgroup charges a page to the group of the process that first touched
/// it, and keeps it there. The cache of an engine closed before a phase goes back to the
/// allocator, not to the kernel; the engine reopened inside the phase's group would get
/// those same pages back, still charged to the group they were touched in, and its cache
/// would sit outside the limit (measured at the seed scale: 0 bytes of anonymous memory
/// charged to a phase's group while this engine's 16 MiB pool filled, so engines with a
/// cache of their own had budget + overhead for the page cache alone, LMDB budget +
/// overhead for everything). After the trim, the reopened cache faults fresh pages and
/// they are charged where they are used.
pub fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: malloc_trim only returns free memory to the kernel; it takes the
    // allocator's own locks and touches no memory that a live allocation owns.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_values_are_read_by_name() {
        let stat = b"cache 40800256\nrss 39137280\nrss_huge 0\nmapped_file 0\n";
        assert_eq!(stat_value(stat, &[b"rss"]), Some(39_137_280));
        assert_eq!(stat_value(stat, &[b"cache"]), Some(40_800_256));
        assert_eq!(stat_value(stat, &[b"anon", b"rss"]), Some(39_137_280));
        assert_eq!(
            stat_value(b"oom_kill_disable 1\nunder_oom 1\n", &[b"under_oom"]),
            Some(1)
        );
        assert_eq!(stat_value(b"under_oom x\n", &[b"under_oom"]), None);
        assert_eq!(stat_value(b"", &[b"rss"]), None);
    }

    #[test]
    fn the_memory_controller_line_names_the_group() {
        let v1 = "12:pids:/a\n4:cpu,memory:/user.slice/x\n0::/other\n";
        assert_eq!(own_group(v1, false).as_deref(), Some("user.slice/x"));
        assert_eq!(own_group(v1, true).as_deref(), Some("other"));
        assert_eq!(own_group("", false), None);
    }

    #[test]
    fn the_note_says_what_was_charged() {
        let o = OverBudget {
            limit_bytes: 112 << 20,
            anon_bytes: 100 << 20,
            cache_bytes: 11 << 20,
        };
        let note = o.note();
        assert!(note.contains("112 MiB cgroup"), "{note}");
        assert!(
            note.contains("100 MiB of the engine's own memory"),
            "{note}"
        );
    }
}
