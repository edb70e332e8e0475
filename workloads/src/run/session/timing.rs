//! Timing a session's operations: one at a time into per-(workload, variant) histograms,
//! or split over threads for the parallel workloads, with the engine's I/O counters, the
//! pages touched, the allocations and, past the budget, the device read beside each get;
//! and the records all of it becomes.

use std::time::{Duration, Instant};

use aimeta_reports::{AllocPerOp, Record};
use hdrhistogram::Histogram;

use super::super::measure::{histogram, io_per_op, latency};
use super::super::ops::{self, ManifestOps};
use super::super::working_set::{self, TouchedPages};
use super::super::{sys, Data, Progress, RunError, Variant, Workload};
use super::op_state::ParallelOp;
use super::{base_record, thread_seed, workload_seed, Measured, Session};
use crate::alloc_count::{self, AllocCount};

/// Whether the timed phases of `w` read the device beside their operations when the
/// session has a probe: single-threaded point gets, each of which misses about one page
/// past the budget, so that a get compares with one device read of the same moment.
fn reads_device_beside(w: Workload) -> bool {
    matches!(w, Workload::ManifestGet)
}

/// Latencies and counters gathered for one (workload, variant).
pub(super) struct Tally {
    hist: Histogram<u64>,
    wall: Duration,
    ops: u64,
    threads: u32,
    io: aimeta_reports::IoPerOp,
    io_seen: bool,
    touched: TouchedPages,
    alloc: AllocCount,
    /// Latencies of the device probe's reads, one after each timed operation, where the
    /// phase reads the device beside its operations.
    beside: Option<Histogram<u64>>,
}

impl Session {
    fn tally(&mut self, key: Measured, threads: u32) -> &mut Tally {
        let at = match self.tallies.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                self.tallies.push((
                    key,
                    Tally {
                        hist: histogram(),
                        wall: Duration::ZERO,
                        ops: 0,
                        threads,
                        io: Default::default(),
                        io_seen: false,
                        touched: TouchedPages::new(),
                        alloc: AllocCount::default(),
                        beside: None,
                    },
                ));
                self.tallies.len() - 1
            }
        };
        &mut self.tallies[at].1
    }

    /// Adds counter totals of a timed phase to the tally.
    fn add_io(&mut self, key: Measured, before: Option<aimeta_adapters::IoCounters>, os0: u64) {
        let after = self.engine.as_deref().and_then(|e| e.io_counters());
        let os = sys::os_read_bytes().saturating_sub(os0);
        if let Some(d) = io_per_op(before, after, os, 1) {
            let t = self.tally(key, 1);
            t.io.pages_read += d.pages_read;
            t.io.page_hits += d.page_hits;
            t.io.page_misses += d.page_misses;
            t.io.full_frame_reads += d.full_frame_reads;
            t.io.bytes_read += d.bytes_read;
            t.io.readahead_pages += d.readahead_pages;
            t.io.os_read_bytes += d.os_read_bytes;
            t.io_seen |= before.is_some();
        }
    }

    /// Runs `warmup` untimed operations of (w, variant), then `ops` timed ones.
    pub fn measure(
        &mut self,
        w: Workload,
        variant: Option<Variant>,
        warmup: u64,
        ops: u64,
        progress: &dyn Progress,
    ) -> Result<(), RunError> {
        self.measure_from(w, variant, 0, warmup, ops, progress)
    }

    /// [`Session::measure`] after the first `warmed` of its `warmup` operations already ran.
    pub(crate) fn measure_from(
        &mut self,
        w: Workload,
        variant: Option<Variant>,
        warmed: u64,
        warmup: u64,
        ops: u64,
        progress: &dyn Progress,
    ) -> Result<(), RunError> {
        for i in warmed..warmup {
            self.op(w, variant, i)?;
        }
        // A parallel workload runs in one call: each call starts its threads, and a
        // hundred starts of 16 threads would weigh on the throughput it measures.
        let chunk = if Session::parallel((w, variant)).is_some() {
            ops.max(1)
        } else {
            (ops / 100).max(1)
        };
        let mut done = 0;
        while done < ops {
            let n = chunk.min(ops - done);
            self.time_iters(w, variant, n)?;
            progress.advance(n);
            done += n;
        }
        Ok(())
    }

    /// Runs `iters` timed operations of (w, variant), each recorded in its histogram;
    /// returns their total time (what criterion's iter_custom wants).
    pub fn time_iters(
        &mut self,
        w: Workload,
        variant: Option<Variant>,
        iters: u64,
    ) -> Result<Duration, RunError> {
        if let Some((threads, op)) = Session::parallel((w, variant)) {
            return self.time_parallel((w, variant), threads, op, iters);
        }
        let key = (w, variant);
        self.ensure_state(key)?;
        let before = self.engine()?.io_counters();
        let os0 = sys::os_read_bytes();
        let base = self.tally(key, 1).ops;
        // The tallies step aside while the operations run (they need `self`); moving the
        // Vec allocates nothing, where swapping in a fresh histogram would zero ~2 MB per
        // call and evict the caches the next operations use.
        let mut tallies = std::mem::take(&mut self.tallies);
        let mut total = Duration::ZERO;
        let mut result = Ok(());
        // Bytes the device probe read beside the operations: the process's read counter
        // holds them too, and they are not the engine's.
        let mut probe_bytes = 0;
        // Only the timed operations count toward the working set.
        if let Some(st) = self.states.get_mut(&key) {
            st.touched().get_or_insert_with(TouchedPages::new);
            st.prepare_inputs(w, iters);
        }
        self.last_op_nanos.clear();
        if let Some((_, t)) = tallies.iter_mut().find(|(k, _)| *k == key) {
            let probe = self
                .device_beside
                .clone()
                .filter(|_| reads_device_beside(w));
            let mut beside = probe
                .as_deref()
                .map(|p| p.reader(workload_seed(self.seed, key, &self.dataset.name) ^ base));
            if beside.is_some() && t.beside.is_none() {
                t.beside = Some(histogram());
            }
            let alloc_before = alloc_count::engine_total();
            for i in 0..iters {
                let start = Instant::now();
                let r = self.op(w, variant, base + i);
                let d = start.elapsed();
                if let Err(e) = r {
                    result = Err(e);
                    break;
                }
                total += d;
                let nanos = (d.as_nanos() as u64).max(1);
                self.last_op_nanos.push(nanos);
                t.hist.saturating_record(nanos);
                // Outside the operation's time: one read of the device right after it,
                // so that both see the device in the same state.
                if let (Some(reader), Some(h)) = (beside.as_mut(), t.beside.as_mut()) {
                    probe_bytes += crate::device::READ_BYTES as u64;
                    match reader.read_one() {
                        Ok(nanos) => h.saturating_record(nanos),
                        Err(e) => {
                            result = Err(e.into());
                            break;
                        }
                    }
                }
            }
            t.wall += total;
            t.ops += iters;
            t.alloc.add(alloc_count::engine_since(alloc_before));
            if let Some(touched) = self.states.get_mut(&key).and_then(|st| st.touched().take()) {
                t.touched.merge(&touched);
            }
        }
        self.tallies = tallies;
        result?;
        self.add_io(key, before, os0 + probe_bytes);
        Ok(total)
    }

    /// A parallel workload's thread count and operation: manifest_get_par8 is 8 threads of
    /// point gets; manifest_get_threads and manifest_scan_threads take theirs from the
    /// variant. None for the workloads that run on one thread.
    fn parallel(key: Measured) -> Option<(u64, ParallelOp)> {
        let threads = |v: Option<Variant>| match v {
            Some(Variant::Threads(t)) => Some(u64::from(t.count())),
            _ => None,
        };
        match key {
            (Workload::ManifestGetPar8, None) => Some((8, ParallelOp::Get)),
            (Workload::ManifestGetThreads, v) => threads(v).map(|n| (n, ParallelOp::Get)),
            (Workload::ManifestScanThreads, v) => threads(v).map(|n| (n, ParallelOp::Scan)),
            _ => None,
        }
    }

    /// Nanoseconds of each operation of the last single-threaded [`Session::time_iters`]
    /// call, in order (empty after a parallel one).
    pub fn last_op_nanos(&self) -> &[u64] {
        &self.last_op_nanos
    }

    /// A parallel workload: `iters` operations split over its threads, each thread with
    /// its own generator, histogram, page set and allocation count; returns the wall time.
    fn time_parallel(
        &mut self,
        key: Measured,
        threads: u64,
        op: ParallelOp,
        iters: u64,
    ) -> Result<Duration, RunError> {
        let Data::Manifest(m) = self.data.clone() else {
            return Ok(Duration::ZERO);
        };
        let per = iters.div_ceil(threads);
        let round = self.tally(key, threads as u32).ops;
        let eng = self.engine()?;
        let before = eng.io_counters();
        let os0 = sys::os_read_bytes();
        let dataset = self.dataset.name.clone();
        let seed = workload_seed(self.seed, key, &dataset);
        let workload = key.0.name();
        let start = Instant::now();
        type ThreadResult = Result<(Histogram<u64>, TouchedPages, AllocCount), RunError>;
        let hists: Vec<ThreadResult> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let dataset = &dataset;
                    s.spawn(move || {
                        let mut mo = ManifestOps::new(m, dataset, thread_seed(seed, t, round));
                        mo.touched = Some(TouchedPages::new());
                        let mut h = histogram();
                        let alloc_before = alloc_count::engine_total();
                        for _ in 0..per {
                            let t0 = Instant::now();
                            match op {
                                ParallelOp::Get => mo.on(eng).get()?,
                                ParallelOp::Scan => {
                                    mo.on(eng).scan_from_offset(ops::ShardChoice::Uniform)?
                                }
                            }
                            h.saturating_record((t0.elapsed().as_nanos() as u64).max(1));
                        }
                        let alloc = alloc_count::engine_since(alloc_before);
                        Ok((h, mo.touched.unwrap_or_default(), alloc))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(RunError::WrongAnswer {
                            engine: eng.name().into(),
                            workload: workload.into(),
                            detail: "a reader thread panicked".into(),
                        })
                    })
                })
                .collect()
        });
        let wall = start.elapsed();
        let hists: Vec<(Histogram<u64>, TouchedPages, AllocCount)> =
            hists.into_iter().collect::<Result<_, _>>()?;
        let t = self.tally(key, threads as u32);
        for (h, touched, alloc) in hists {
            let _ = t.hist.add(h);
            t.touched.merge(&touched);
            t.alloc.add(alloc);
        }
        t.wall += wall;
        t.ops += per * threads;
        self.add_io(key, before, os0);
        Ok(wall.mul_f64(iters as f64 / (per * threads) as f64))
    }

    /// The pages of the key layout the access pattern of (w, v) reaches on this data set:
    /// the first 100 entries of each shard for the seed's start-of-shard scans, the first
    /// entry of each for listings, every page for keys chosen over the whole manifest and
    /// for chain walks, the answers of the cycled queries for the chain index.
    fn support_pages(&self, w: Workload, v: Option<Variant>) -> u64 {
        match &self.data {
            Data::Manifest(m) => {
                let entry = ops::MANIFEST_ENTRY_BYTES;
                let firsts = match (w, v.and_then(Variant::shard_choice)) {
                    (Workload::ManifestScan, None) => Some(100),
                    (Workload::ManifestList, _) => Some(1),
                    _ => None,
                };
                working_set::manifest_support(m.shards, m.per_shard, entry, firsts)
            }
            Data::KvChain(_) => self.query_layout.support_pages,
            Data::Graph(g) => working_set::layout_pages(g.data_bytes()),
        }
    }

    /// Records of everything measured so far.
    pub fn records(&self) -> Vec<Record> {
        self.tallies
            .iter()
            .filter(|(_, t)| t.ops > 0)
            .map(|((w, v), t)| {
                let n = t.ops as f64;
                let mut io = t.io;
                for x in [
                    &mut io.pages_read,
                    &mut io.page_hits,
                    &mut io.page_misses,
                    &mut io.full_frame_reads,
                    &mut io.bytes_read,
                    &mut io.readahead_pages,
                    &mut io.os_read_bytes,
                ] {
                    *x /= n;
                }
                Record {
                    ops: t.ops,
                    threads: t.threads,
                    ns_per_op: latency(&t.hist),
                    ops_per_sec: n / t.wall.as_secs_f64().max(1e-9),
                    size_on_disk_bytes: Some(self.size),
                    io_per_op: Some(io),
                    load_secs: Some(self.load_secs),
                    trace: None,
                    working_set: working_set::working_set(
                        self.support_pages(*w, *v),
                        Some(t.touched.pages()),
                        self.budget_bytes,
                    ),
                    alloc_per_op: self.alloc_counted.then(|| AllocPerOp {
                        bytes: t.alloc.bytes as f64 / n,
                        allocations: t.alloc.calls as f64 / n,
                    }),
                    device_beside: t.beside.as_ref().filter(|h| !h.is_empty()).map(latency),
                    ..base_record(*w, &self.dataset.name, self.kind, *v)
                }
            })
            .collect()
    }
}
