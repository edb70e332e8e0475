//! One bound on the C allocator's arenas for every engine the runner measures.
//!
//! Why: the engines run in this process, and every allocation there, C, C++ and Rust alike
//! (the counting allocator forwards to the system's), goes through glibc's malloc. glibc
//! gives each new thread its own arena, up to eight per CPU, and memory freed into an arena
//! stays there for that arena's later allocations. Under eight reader threads RocksDB's
//! blocks move between threads and its freed memory piles up in arenas outside its block
//! cache: at the large scale, in the cgroup budget mode, its anonymous memory grew from 26
//! to 106 MiB of its 112 MiB group in the ingest readers' phase and its next SST read
//! failed with "Cannot allocate memory" (docs/performance.md, twenty-second session). With
//! one arena per CPU its phases run inside the group. The bound is the same for every
//! engine and changes nothing for those whose read paths do not allocate (this engine,
//! LMDB); `MALLOC_ARENA_MAX` in the environment, which glibc reads at start, takes
//! precedence.

#![allow(unsafe_code)]

use std::sync::OnceLock;

/// What [`bound_malloc_arenas`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArenaBound {
    /// glibc's malloc now creates at most this many arenas (one per CPU).
    PerCpu(usize),
    /// `MALLOC_ARENA_MAX` was set in the environment; glibc applied it at start.
    FromEnvironment,
    /// The C allocator is not glibc's (or glibc refused the setting): nothing changed.
    Unchanged,
}

/// Bounds glibc's malloc to one arena per CPU, once per process; later calls return what
/// the first did. glibc fixes its arena limit when a ninth arena would be created, so the
/// runner calls this before it loads its first engine.
pub fn bound_malloc_arenas() -> ArenaBound {
    static DONE: OnceLock<ArenaBound> = OnceLock::new();
    *DONE.get_or_init(|| {
        if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
            return ArenaBound::FromEnvironment;
        }
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        set_arena_max(cpus)
    })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_arena_max(arenas: usize) -> ArenaBound {
    let Ok(value) = libc::c_int::try_from(arenas) else {
        return ArenaBound::Unchanged;
    };
    // SAFETY: mallopt takes two integers and only stores the tunable (glibc's
    // `do_set_arena_max`); it touches no memory of ours and is safe to call while other
    // threads allocate (glibc takes its own lock).
    let accepted = unsafe { libc::mallopt(libc::M_ARENA_MAX, value) };
    if accepted == 1 {
        ArenaBound::PerCpu(arenas)
    } else {
        ArenaBound::Unchanged
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_max(_arenas: usize) -> ArenaBound {
    ArenaBound::Unchanged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_set_once_and_reported_the_same_after() {
        let first = bound_malloc_arenas();
        if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
            assert_eq!(first, ArenaBound::FromEnvironment);
        } else if cfg!(all(target_os = "linux", target_env = "gnu")) {
            let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
            assert_eq!(first, ArenaBound::PerCpu(cpus));
        }
        assert_eq!(bound_malloc_arenas(), first);
        // Allocating from several threads after the bound still works.
        let sums: Vec<usize> = (0..4)
            .map(|t| std::thread::spawn(move || vec![t; 1 << 16].iter().sum::<usize>()))
            .map(|h| h.join().expect("a thread that only allocates"))
            .collect();
        assert_eq!(sums, vec![0, 1 << 16, 2 << 16, 3 << 16]);
    }
}
