//! Read-path profile: builds the benchmark shapes once, then times one read operation.
//!
//! ```text
//! read_profile build <shape> <dir>               bulk-load a shape into <dir>
//! read_profile run <shape> <dir> <op> <n> [warm] time <n> ops after <warm> warm-up ops
//! ```
//!
//! Shapes: `manifest` (200 shards x 10,000 samples, 24-byte values), `manifest-fits`
//! (20 shards), `manifest-large` (5,000 shards, the harness's large `manifest_beyond`),
//! `kvchain` (30,000 chains of 4..=32 levels, 40-byte values, prefix-closed),
//! `kvchain-fits` (2,000 chains), `kvchain-large-fits` (8,000, the harness's large
//! `kvchain_fits`). Ops: `get` (a random stored key), `get_answer` (the answer of each
//! longest-prefix query below, or the query itself for a miss: the harness's
//! `kvchain_get`), `lpm`
//! (`longest_prefix_with`, any prefix), `lpm_at` (prefixes ending at '/'), `bisect`
//! (binary search over the query's '/' depths with point gets). Longest-prefix queries
//! extend a stored chain by two phantom levels (80 %) or fall between chains (20 %).
//! `cas` (manifest shapes) swaps a random stored key's value, one commit each. `scan`
//! (manifest shapes) reads the first 100 entries of a random shard's prefix, `range` the
//! 100 entries from a random stored key, stepping, and `range_visit` the same entries
//! through `Range::for_each_entry`. `list` (manifest shapes) is the harness's
//! manifest_list: the first 20 shard prefixes after a random shard's, rolled up at '/'.
//! The pool budget is 16 MiB (`READ_PROFILE_CACHE_MIB` changes it) with asynchronous log durability, as in the harness; misses
//! read as `READ_PROFILE_READS` says (mapped, the default, direct, buffered or shared),
//! `READ_PROFILE_RESERVE=1` allocates the pool's buffers when the tree opens,
//! `READ_PROFILE_PROBE=FILE` reads a random 4 KiB page of FILE with O_DIRECT after each
//! get (outside its time) and prints the gets against those reads,
//! `READ_PROFILE_FILTER` gives the stored-key filter's bits a key (default 0, none), and
//! `READ_PROFILE_HELD_PAGES` the pages awaiting a checkpoint at which one starts (default
//! the engine's, off; `off` never), and `READ_PROFILE_THREADS` the threads that share the
//! timed operations (default 1; the CPU time is then the main thread's, not theirs).
//! Everything is deterministic (fixed seeds). The timed loop runs under `timed`, so that
//! `valgrind --tool=callgrind --toggle-collect='*timed*'` counts only it.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use aimeta_engine::{DataReads, Durability, Readable, Tree, TreeConfig};
use rand::{Rng as _, RngExt as _};

const CACHE_BYTES: u64 = 16 << 20;
const ROOT: &[u8] = b"kv/llama70b";

/// The workspace's one generator (PCG 128/64, value-stable across rand releases).
type Rng = rand_pcg::Pcg64Mcg;

/// A generator for `seed`.
fn seeded(seed: u64) -> Rng {
    use rand::SeedableRng as _;
    Rng::seed_from_u64(seed)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Manifest { shards: u32 },
    KvChain { chains: u32 },
}

fn shape(name: &str) -> Shape {
    match name {
        "manifest" => Shape::Manifest { shards: 200 },
        "manifest-fits" => Shape::Manifest { shards: 20 },
        // The harness's large manifest_beyond (50 M keys).
        "manifest-large" => Shape::Manifest { shards: 5_000 },
        "kvchain" => Shape::KvChain { chains: 30_000 },
        "kvchain-fits" => Shape::KvChain { chains: 2_000 },
        // The harness's kvchain_fits at the large scale.
        "kvchain-large-fits" => Shape::KvChain { chains: 8_000 },
        other => panic!("unknown shape {other}"),
    }
}

const SAMPLES: u32 = 10_000;

fn manifest_key(s: u32, i: u32) -> Vec<u8> {
    format!("ds/laion/shard-{s:05}/sample-{i:08}").into_bytes()
}

/// Full-depth key of every chain.
fn chains(n: u32) -> Vec<Vec<u8>> {
    let mut rng = seeded(7);
    (0..n)
        .map(|_| {
            let depth = 4 + rng.random_range(0..29);
            let mut k = ROOT.to_vec();
            for _ in 0..depth {
                k.extend_from_slice(format!("/{:08x}", rng.next_u64() as u32).as_bytes());
            }
            k
        })
        .collect()
}

/// How misses read: `READ_PROFILE_READS` = mapped (the default), direct, buffered or
/// shared.
fn data_reads() -> DataReads {
    match std::env::var("READ_PROFILE_READS").as_deref() {
        Ok("direct") => DataReads::Direct,
        Ok("buffered") => DataReads::Buffered,
        Ok("shared") => DataReads::Shared,
        Ok("mapped") | Err(_) => DataReads::Mapped,
        Ok(other) => panic!("READ_PROFILE_READS={other}: mapped, direct, buffered or shared"),
    }
}

/// Bits a key of the stored-key filter: `READ_PROFILE_FILTER` (default 0, none; the
/// harness gives chain indexes 10).
fn filter_bits() -> u32 {
    std::env::var("READ_PROFILE_FILTER")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// `TreeConfig::checkpoint_held_pages` from `READ_PROFILE_HELD_PAGES`: a page count,
/// `off` (never) or unset (the engine's default).
fn held_pages(config: TreeConfig) -> TreeConfig {
    match std::env::var("READ_PROFILE_HELD_PAGES").as_deref() {
        Err(_) => config,
        Ok("off") => config.checkpoint_held_pages(u64::MAX),
        Ok(n) => config.checkpoint_held_pages(n.parse().expect("READ_PROFILE_HELD_PAGES")),
    }
}

/// The pool's budget: `READ_PROFILE_CACHE_MIB` (default 16 MiB).
fn cache_bytes() -> u64 {
    std::env::var("READ_PROFILE_CACHE_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(CACHE_BYTES, |m| m << 20)
}

fn open(dir: &Path) -> Tree {
    Tree::open(held_pages(
        TreeConfig::new(dir)
            .cache_bytes(cache_bytes())
            .durability(Durability::Wal { sync: false })
            .data_reads(data_reads())
            .reserve_cache(std::env::var("READ_PROFILE_RESERVE").is_ok_and(|v| v == "1"))
            .key_filter_bits(filter_bits()),
    ))
    .expect("open")
}

fn build(sh: Shape, dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("mkdir");
    let tree = open(dir);
    let t = Instant::now();
    let n = match sh {
        Shape::Manifest { shards } => {
            let items = (0..shards).flat_map(|s| {
                (0..SAMPLES).map(move |i| {
                    let mut v = [0u8; 24];
                    v[..4].copy_from_slice(&s.to_le_bytes());
                    v[4..8].copy_from_slice(&i.to_le_bytes());
                    (manifest_key(s, i), v)
                })
            });
            tree.bulk_load(items).expect("load")
        }
        Shape::KvChain { chains: c } => {
            let mut pairs: Vec<(Vec<u8>, [u8; 40])> = Vec::new();
            for (ci, k) in chains(c).iter().enumerate() {
                let depth = (k.len() - ROOT.len()) / 9;
                for l in 1..=depth {
                    let mut v = [0u8; 40];
                    v[..8].copy_from_slice(&(ci as u64).to_le_bytes());
                    v[8..16].copy_from_slice(&(l as u64).to_le_bytes());
                    pairs.push((k[..ROOT.len() + 9 * l].to_vec(), v));
                }
            }
            pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            pairs.dedup_by(|a, b| a.0 == b.0);
            tree.bulk_load(pairs).expect("load")
        }
    };
    let m = tree.metrics();
    let c = tree.check_integrity().expect("check");
    println!(
        "built {n} entries, height {}, {} pages ({} inner, {} leaves), {:.1} MiB on disk, {:.2?}",
        m.height,
        m.file_pages,
        c.inner_pages,
        c.leaf_pages,
        tree.size_on_disk().expect("size") as f64 / (1 << 20) as f64,
        t.elapsed()
    );
}

/// The keys the op is applied to.
fn workload(sh: Shape, op: &str, n: usize) -> Vec<Vec<u8>> {
    let mut rng = seeded(0x5155_4552);
    match sh {
        Shape::Manifest { shards } => (0..n)
            .map(|_| {
                let s = rng.random_range(0..u64::from(shards)) as u32;
                let i = rng.random_range(0..u64::from(SAMPLES)) as u32;
                manifest_key(s, i)
            })
            .collect(),
        Shape::KvChain { chains: c } => {
            let all = chains(c);
            let firsts: std::collections::HashSet<&[u8]> =
                all.iter().map(|k| &k[..ROOT.len() + 9]).collect();
            // READ_PROFILE_HITS=100 (or 0) changes the share of queries that extend a chain.
            let hits: u64 = std::env::var("READ_PROFILE_HITS")
                .ok()
                .and_then(|h| h.parse().ok())
                .unwrap_or(80);
            (0..n)
                .map(|_| {
                    let k = &all[rng.random_range(0..all.len())];
                    if op == "get" {
                        let depth = (k.len() - ROOT.len()) / 9;
                        let l = 1 + rng.random_range(0..depth as u64) as usize;
                        return k[..ROOT.len() + 9 * l].to_vec();
                    }
                    if rng.random_range(0..100) < hits {
                        let mut q = k.clone();
                        for _ in 0..2 {
                            q.extend_from_slice(
                                format!("/{:08x}", rng.next_u64() as u32).as_bytes(),
                            );
                        }
                        if op == "get_answer" {
                            // The harness's kvchain_get: the hit's answer, the chain's key.
                            q.truncate(k.len());
                        }
                        q
                    } else {
                        let mut q = ROOT.to_vec();
                        loop {
                            q.truncate(ROOT.len());
                            q.extend_from_slice(
                                format!("/{:08x}", rng.next_u64() as u32).as_bytes(),
                            );
                            if !firsts.contains(q.as_slice()) {
                                break;
                            }
                        }
                        q.extend_from_slice(format!("/{:08x}", rng.next_u64() as u32).as_bytes());
                        q
                    }
                })
                .collect()
        }
    }
}

/// Binary search over the '/' depths of `q` with point gets (valid on prefix-closed sets).
fn bisect(tree: &Tree, q: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let mut cands = [0usize; 64];
    let mut nc = 0;
    for (i, &b) in q.iter().enumerate() {
        if b == b'/' && i > 0 && nc < cands.len() - 1 {
            cands[nc] = i;
            nc += 1;
        }
    }
    cands[nc] = q.len();
    nc += 1;
    let (mut lo, mut hi) = (0usize, nc);
    out.clear();
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let found = tree
            .get_with(&q[..cands[mid - 1]], |v| {
                out.clear();
                out.extend_from_slice(v)
            })
            .expect("get")
            .is_some();
        if found {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    (lo > 0).then(|| cands[lo - 1])
}

/// Page faults of this process so far, minor and major (/proc/self/stat fields 10, 12).
fn faults() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    (
        f.get(7).copied().unwrap_or(0),
        f.get(9).copied().unwrap_or(0),
    )
}

/// Nanoseconds this thread has run on a CPU (Linux schedstat), or 0: on a shared machine
/// it excludes time spent waiting for a core, unlike the wall clock.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Reader threads of the timed run: `READ_PROFILE_THREADS` (default 1). With more than
/// one, the keys are split evenly between them and the run's rate is all of them together.
fn threads() -> usize {
    std::env::var("READ_PROFILE_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// The timed run: `valgrind --tool=callgrind --toggle-collect='*timed*'` counts only it.
#[inline(never)]
fn timed(tree: &Tree, op: &str, keys: &[Vec<u8>], threads: usize) -> u64 {
    // One thread runs here, not in a spawned one, so that callgrind's toggle on this
    // function's frame covers it.
    if threads <= 1 {
        return measure(tree, op, keys);
    }
    let per = keys.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = keys
            .chunks(per)
            .map(|part| s.spawn(move || measure(tree, op, part)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("reader thread"))
            .fold(0, u64::wrapping_add)
    })
}

/// Runs `op` over `keys`; returns a checksum so nothing is optimised away.
#[inline(never)]
fn measure(tree: &Tree, op: &str, keys: &[Vec<u8>]) -> u64 {
    let mut sum = 0u64;
    let mut out = Vec::with_capacity(64);
    match op {
        "get" | "get_answer" => {
            if let Some(probe) = std::env::var_os("READ_PROFILE_PROBE") {
                return black_box(gets_beside_probe(tree, keys, Path::new(&probe)));
            }
            for k in keys {
                out.clear();
                let hit = tree
                    .get_with(k, |v| out.extend_from_slice(v))
                    .expect("get")
                    .is_some();
                sum += u64::from(hit) + out.len() as u64;
            }
        }
        "lpm" | "lpm_at" => {
            let boundary = (op == "lpm_at").then_some(b'/');
            for q in keys {
                out.clear();
                let r = tree
                    .longest_prefix_with(q, boundary, |k, v| {
                        out.extend_from_slice(v);
                        k.len()
                    })
                    .expect("lpm");
                sum += r.map_or(0, |l| l as u64 + 1);
            }
        }
        "bisect" => {
            for q in keys {
                sum += bisect(tree, q, &mut out).map_or(0, |l| l as u64 + 1);
            }
        }
        // The harness's manifest_cas: swap a stored key's value for a new one of the same
        // size, expecting the value just read (a write commit per key).
        "cas" => {
            let mut new = Vec::with_capacity(64);
            for (n, k) in keys.iter().enumerate() {
                out.clear();
                tree.get_with(k, |v| out.extend_from_slice(v)).expect("get");
                new.clear();
                new.extend_from_slice(&out);
                if let Some(b) = new.first_mut() {
                    *b = b.wrapping_add(1 + (n % 7) as u8);
                }
                let swapped = tree
                    .compare_and_swap(k, Some(&out), Some(&new))
                    .expect("cas");
                sum += u64::from(swapped.is_ok());
            }
        }
        // The harness's manifest_scan and manifest_range100: 100 entries, each key and value
        // looked at.
        "scan" | "range" => {
            for k in keys {
                let b = tree.range().limit(100);
                let b = if op == "scan" {
                    b.prefix(&k[..b"ds/laion/shard-00000/".len()])
                } else {
                    b.from(k.as_slice())
                };
                let mut it = b.iter();
                while let Some((k, v)) = it.next_entry().expect("scan") {
                    sum += (k.len() + v.len()) as u64;
                }
            }
        }
        "list" => {
            for k in keys {
                let shard = &k[..b"ds/laion/shard-00000".len()];
                for item in tree
                    .scan_keys()
                    .prefix(&b"ds/laion/"[..])
                    .delimiter(b'/')
                    .start_after(shard)
                    .limit(20)
                {
                    sum += item.expect("list").as_bytes().len() as u64;
                }
            }
        }
        "range_visit" => {
            for k in keys {
                let mut it = tree.range().limit(100).from(k.as_slice()).iter();
                it.for_each_entry(&mut |k, v| {
                    sum += (k.len() + v.len()) as u64;
                    true
                })
                .expect("scan");
            }
        }
        other => panic!("unknown op {other}"),
    }
    black_box(sum)
}

/// Gets of `keys`, each followed (outside its time) by one random 4 KiB O_DIRECT read of
/// the file `probe`, as the harness reads its device probe beside gets past the budget:
/// prints the mean get, the mean probe read, and their ratio. The file should be larger
/// than any cache in front of the device and not in the page cache.
fn gets_beside_probe(tree: &Tree, keys: &[Vec<u8>], probe: &Path) -> u64 {
    use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(probe)
        .expect("open the probe file with O_DIRECT");
    let pages = file.metadata().expect("probe size").len() / 4096;
    assert!(pages > 0, "the probe file holds no 4 KiB page");
    // A 4 KiB-aligned window of a larger buffer, as O_DIRECT needs.
    let mut raw = vec![0u8; 8192];
    let at = raw.as_ptr().align_offset(4096);
    let page = &mut raw[at..at + 4096];
    let mut rng = seeded(99);
    let (mut get_ns, mut probe_ns, mut sum) = (0u128, 0u128, 0u64);
    let mut out = Vec::with_capacity(64);
    for k in keys {
        out.clear();
        let t = Instant::now();
        let hit = tree
            .get_with(k, |v| out.extend_from_slice(v))
            .expect("get")
            .is_some();
        get_ns += t.elapsed().as_nanos();
        sum += u64::from(hit) + out.len() as u64;
        let offset = rng.random_range(0..pages) * 4096;
        let t = Instant::now();
        file.read_exact_at(page, offset).expect("probe read");
        probe_ns += t.elapsed().as_nanos();
    }
    let n = keys.len().max(1) as f64;
    println!(
        "beside the probe: get {:.1} us, probe read {:.1} us, get / probe {:.3}",
        get_ns as f64 / n / 1e3,
        probe_ns as f64 / n / 1e3,
        get_ns as f64 / probe_ns.max(1) as f64
    );
    sum
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "read_profile build <shape> <dir> | run <shape> <dir> <op> <n> [warm]";
    let cmd = args.get(1).expect(usage);
    let sh = shape(args.get(2).expect(usage));
    let dir = PathBuf::from(args.get(3).expect(usage));
    match cmd.as_str() {
        "build" => build(sh, &dir),
        "run" => {
            let op = args.get(4).expect(usage).as_str();
            let n: usize = args.get(5).expect(usage).parse().expect("n");
            let warm: usize = args.get(6).map_or(n, |w| w.parse().expect("warm"));
            let tree = open(&dir);
            let keys = workload(sh, op, warm + n);
            let (warm_keys, keys) = keys.split_at(warm);
            let check = measure(&tree, op, warm_keys);
            let before = tree.metrics();
            let threads = threads();
            let faults_before = faults();
            let cpu = cpu_ns();
            let t = Instant::now();
            let sum = timed(&tree, op, keys, threads);
            let el = t.elapsed();
            let cpu = cpu_ns() - cpu;
            let faults_after = faults();
            let m = tree.metrics().since(&before);
            let per = |x: u64| x as f64 / keys.len().max(1) as f64;
            println!(
                "{op} on {}, {threads} thread(s): {:.0} ops/s, {:.0} ns/op, {:.0} cpu ns/op, {:.3} page hits/op, {:.3} pages read/op, {:.3} evictions/op, {:.3} dirty write-backs/op, {:.0} bytes written/op, {} checkpoints, file grew {} pages, {:.3} minor / {:.3} major faults/op, resident {}/{} (check {})",
                args[2],
                keys.len() as f64 / el.as_secs_f64().max(1e-9),
                el.as_nanos() as f64 / keys.len().max(1) as f64,
                per(cpu),
                per(m.bm_read_page_hits),
                per(m.bm_pages_read),
                per(m.bm_evictions),
                per(m.bm_dirty_writebacks),
                per(m.bm_bytes_written),
                m.checkpoints,
                m.file_pages - before.file_pages,
                per(faults_after.0 - faults_before.0),
                per(faults_after.1 - faults_before.1),
                m.resident_pages,
                m.capacity_pages,
                sum ^ check
            );
        }
        _ => panic!("{usage}"),
    }
}
