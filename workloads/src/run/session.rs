//! A session: one engine loaded with one data set, ready to run that data set's workloads
//! operation by operation. The runner times a fixed number of operations per workload;
//! the criterion bench times as many as criterion asks for; both record every latency
//! into the same per-(workload, variant) histograms that become results records.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aimeta_adapters::{
    aimeta::AimetaEngine, open, CacheBudget, EngineKind, KvEngine, LpmMethod, OpenOptions,
};
use aimeta_reports::{AllocPerOp, Dataset, Latency, Record, Status};

use hdrhistogram::Histogram;

use super::measure::{histogram, io_per_op, latency};
use super::ops::{self, ManifestOps};
use super::working_set::{self, TouchedPages};
use super::{
    sys, BudgetMode, Data, NotLoaded, Planned, Progress, RunError, RunOptions, ThreadCount,
    Variant, Workload,
};
use crate::alloc_count::{self, AllocCount};
use crate::device::DeviceProbe;
use crate::gen::{derive_seed, seeded, KvQuery, Rng};

/// Whether the timed phases of `w` read the device beside their operations when the
/// session has a probe: single-threaded point gets, each of which misses about one page
/// past the budget, so that a get compares with one device read of the same moment.
fn reads_device_beside(w: Workload) -> bool {
    matches!(w, Workload::ManifestGet)
}

/// A workload in one of its variants (None: its one form): what a session keeps state,
/// histograms and a seed for.
pub type Measured = (Workload, Option<Variant>);

/// Operation state of one (workload, variant).
enum OpState {
    Manifest(ManifestOps),
    Lpm {
        queries: Vec<KvQuery>,
        method: LpmMethod,
        buf: Vec<u8>,
        next: usize,
        touched: Option<TouchedPages>,
    },
    KvGet {
        queries: Vec<KvQuery>,
        buf: Vec<u8>,
        next: usize,
        touched: Option<TouchedPages>,
    },
    Walk {
        rng: Rng,
        buf: Vec<u8>,
        touched: Option<TouchedPages>,
    },
}

impl OpState {
    /// Where the operations mark the pages they read.
    fn touched(&mut self) -> &mut Option<TouchedPages> {
        match self {
            OpState::Manifest(mo) => &mut mo.touched,
            OpState::Lpm { touched, .. }
            | OpState::KvGet { touched, .. }
            | OpState::Walk { touched, .. } => touched,
        }
    }

    /// Reads the inputs the next `count` operations will take (the chain queries' keys),
    /// outside their timing. The queries were generated long before, and on the virtual
    /// machines this runs on a page untouched for a tenth of a second or more can cost
    /// 100-500 us to touch again (the host has reclaimed its backing; docs/gate.md): the
    /// first read of a query's key would otherwise charge that to whichever engine's
    /// operation happened to read it first.
    fn prefetch_inputs(&self, count: u64) {
        let (OpState::Lpm { queries, next, .. } | OpState::KvGet { queries, next, .. }) = self
        else {
            return;
        };
        if queries.is_empty() {
            return;
        }
        let mut sum = 0u64;
        for k in 0..count.min(queries.len() as u64) as usize {
            let q = &queries[(next + k) % queries.len()];
            sum = q.key.iter().fold(sum, |s, &b| s.wrapping_add(u64::from(b)));
        }
        std::hint::black_box(sum);
    }
}

/// Where each chain query's answer lies in the key layout of the kv-cache index: the
/// byte offset and length of the answer's entry (for a miss, the offset where the query
/// would be stored and one byte), per query, in the order `KvChain::queries` makes them.
#[derive(Debug, Clone, Default)]
struct QueryLayout {
    spans: Vec<(u64, u64)>,
    /// Distinct pages of all the spans: the queries' working set, worked out once.
    support_pages: u64,
}

impl QueryLayout {
    /// The layout of `queries` in the sorted pairs of the index.
    fn new(sorted: &[(Vec<u8>, Vec<u8>)], queries: &[KvQuery]) -> QueryLayout {
        let mut offsets = Vec::with_capacity(sorted.len() + 1);
        let mut at = 0u64;
        for (k, v) in sorted {
            offsets.push(at);
            at += (k.len() + v.len()) as u64;
        }
        offsets.push(at);
        let spans = queries
            .iter()
            .map(|q| {
                let key = &q.key[..q.expect_len.unwrap_or(q.key.len())];
                match sorted.binary_search_by(|(k, _)| k.as_slice().cmp(key)) {
                    Ok(i) => (offsets[i], offsets[i + 1] - offsets[i]),
                    Err(i) => (offsets[i], 1),
                }
            })
            .collect::<Vec<_>>();
        let mut support = TouchedPages::new();
        for &(offset, len) in &spans {
            support.touch_bytes(offset, len);
        }
        QueryLayout {
            support_pages: support.pages(),
            spans,
        }
    }

    fn touch(&self, query: usize, touched: &mut Option<TouchedPages>) {
        if let (Some(t), Some(&(offset, len))) = (touched.as_mut(), self.spans.get(query)) {
            t.touch_bytes(offset, len);
        }
    }
}

/// The operation of a parallel workload's threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ParallelOp {
    /// A point get of a random key.
    Get,
    /// 100 entries from a random sample of a uniformly chosen shard.
    Scan,
}

/// Queries a chain-index session draws from, cycling.
const CHAIN_QUERIES: usize = 50_000;

/// Latencies and counters gathered for one (workload, variant).
struct Tally {
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

/// One engine, loaded.
pub struct Session {
    /// The engine (None only after a failed `reopen`, whose error was returned).
    engine: Option<Box<dyn KvEngine>>,
    kind: EngineKind,
    full_frame: bool,
    /// The data set.
    pub dataset: Dataset,
    data: Data,
    /// Its directory (removed on drop).
    pub dir: PathBuf,
    /// Size on disk after the load.
    pub size: u64,
    /// Seconds the load took (with its checkpoint).
    pub load_secs: f64,
    seed: u64,
    budget_bytes: u64,
    /// Whether the counting allocator is installed (else no counts are recorded).
    alloc_counted: bool,
    query_layout: QueryLayout,
    states: HashMap<Measured, OpState>,
    tallies: Vec<(Measured, Tally)>,
    /// Nanoseconds of each operation of the last `time_iters` call, in order.
    last_op_nanos: Vec<u64>,
    /// The device probe that timed point gets read beside them (see
    /// [`Session::read_device_beside`]).
    device_beside: Option<Arc<DeviceProbe>>,
}

fn options(o: &RunOptions, store: &Store) -> OpenOptions {
    OpenOptions {
        cache: CacheBudget(o.scale.budget_bytes),
        durability: o.durability,
        expected_data_bytes: store.data_bytes,
        pg_url: o.pg_url.clone(),
        direct_reads: o.budget_mode == BudgetMode::Cgroup,
        absent_key_lookups: store.absent_key_lookups,
        etcd_endpoints: o.etcd_endpoints.clone(),
        read_consistency: o.read_consistency,
    }
}

/// What an engine is told about the store it opens.
#[derive(Debug, Clone, Copy)]
pub struct Store {
    /// Bytes of keys and values it will hold.
    pub data_bytes: u64,
    /// Most of its lookups miss (a chain index's longest-prefix lookups).
    pub absent_key_lookups: bool,
}

impl Store {
    /// A store of `data_bytes` whose lookups mostly find their keys.
    pub fn of(data_bytes: u64) -> Self {
        Store {
            data_bytes,
            absent_key_lookups: false,
        }
    }

    /// The store of `data`: chain indexes serve longest-prefix lookups that mostly miss.
    pub fn for_data(data: &Data, data_bytes: u64) -> Self {
        Store {
            data_bytes,
            absent_key_lookups: matches!(data, Data::KvChain(_)),
        }
    }
}

/// Opens `kind` on `dir`; aimeta in full-frame mode when asked.
pub fn open_engine(
    o: &RunOptions,
    kind: EngineKind,
    dir: &std::path::Path,
    store: Store,
    full_frame: bool,
) -> Result<Box<dyn KvEngine>, aimeta_adapters::Error> {
    if kind == EngineKind::Aimeta {
        let mode = if full_frame {
            aimeta_engine::ScanIo::FullFrame
        } else {
            aimeta_engine::ScanIo::Paged
        };
        return Ok(Box::new(AimetaEngine::open_with(
            dir,
            &options(o, &store),
            mode,
        )?));
    }
    open(kind, dir, &options(o, &store))
}

/// The variants of `w` an engine runs (None: the workload has one form).
pub fn variants(w: Workload, engine: EngineKind, full_frame: bool) -> Vec<Option<Variant>> {
    let aimeta = engine == EngineKind::Aimeta;
    match w {
        Workload::KvchainLpm if aimeta => vec![
            Some(Variant::Native),
            Some(Variant::NativeBoundary),
            Some(Variant::PredecessorSeek),
            Some(Variant::Bisect),
        ],
        Workload::KvchainLpm => vec![
            Some(Variant::Native),
            Some(Variant::PredecessorSeek),
            Some(Variant::Bisect),
        ],
        // The seed's start-of-shard scan (named `paged` beside aimeta's full-frame run),
        // then scans that start inside a shard chosen uniformly or by popularity.
        Workload::ManifestScan => vec![
            if aimeta && full_frame {
                Some(Variant::Paged)
            } else {
                None
            },
            Some(Variant::OffsetUniform),
            Some(Variant::OffsetZipf),
        ],
        // Measured phase by phase after every other workload (`ingest::measure_writes`),
        // never operation by operation.
        w if super::ingest::WRITING.contains(&w) => Vec::new(),
        Workload::ManifestGetThreads | Workload::ManifestScanThreads => ThreadCount::ALL
            .into_iter()
            .map(|t| Some(Variant::Threads(t)))
            .collect(),
        _ => vec![None],
    }
}

/// The variants of `w` measured on aimeta in its full-frame reproduction mode: the read
/// paths the seed report found slow (scans and longest-prefix lookups) and the point get
/// it found fast on the same store; empty for the other workloads.
pub fn full_frame_variants(w: Workload) -> &'static [Variant] {
    match w {
        Workload::ManifestScan | Workload::ManifestGet => &[Variant::FullFrame],
        Workload::KvchainLpm => &[Variant::NativeFullFrame, Variant::BisectFullFrame],
        _ => &[],
    }
}

/// The seed of (workload, variant)'s draws on `dataset` in a run seeded with `run_seed`:
/// distinct for every pair the runner measures (see `derive_seed`).
pub fn workload_seed(run_seed: u64, (w, v): Measured, dataset: &str) -> u64 {
    derive_seed(
        run_seed,
        &[
            w.name().as_bytes(),
            dataset.as_bytes(),
            v.map_or("", Variant::name).as_bytes(),
        ],
    )
}

/// The longest-prefix method `variant` of `w` runs; a typed error for a variant that
/// names none (the plain form, or a scan mode), where a catch-all would silently bisect.
fn lpm_method(w: Workload, variant: Option<Variant>) -> Result<LpmMethod, RunError> {
    variant
        .and_then(Variant::lpm_method)
        .ok_or_else(|| RunError::NoSuchVariant {
            workload: w.name(),
            variant: variant.map_or("none", Variant::name),
            valid: Variant::ALL
                .into_iter()
                .filter(|v| v.lpm_method().is_some())
                .map(Variant::name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The seed of reader `thread` of a parallel workload in its `round`-th call, drawn from
/// the workload's own seed.
fn thread_seed(workload_seed: u64, thread: u64, round: u64) -> u64 {
    derive_seed(
        workload_seed,
        &[&thread.to_le_bytes(), &round.to_le_bytes()],
    )
}

impl Session {
    /// Opens a fresh store for `kind` and loads `p` into it; `Ok(Err(_))` when the engine is
    /// not available on this machine (PostgreSQL or etcd without their binaries) or cannot
    /// hold the data set (etcd's quota).
    pub fn load(
        o: &RunOptions,
        kind: EngineKind,
        p: &Planned,
        full_frame: bool,
        progress: &dyn Progress,
    ) -> Result<Result<Session, NotLoaded>, RunError> {
        let ds = &p.meta;
        let suffix = if full_frame { "-full-frame" } else { "" };
        let dir = o
            .work_dir
            .join(&ds.name)
            .join(format!("{}{suffix}", kind.name()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|source| RunError::WorkDir {
            path: dir.clone(),
            source,
        })?;
        let err = |step: &str| {
            let (engine, dataset, step) =
                (kind.name().to_string(), ds.name.clone(), step.to_string());
            move |source| RunError::Engine {
                engine,
                dataset,
                step,
                source: Box::new(source),
            }
        };
        let engine = match open_engine(
            o,
            kind,
            &dir,
            Store::for_data(&p.data, ds.data_bytes),
            full_frame,
        ) {
            Ok(e) => e,
            Err(e) => match NotLoaded::from_error(&e) {
                Some(not) => return Ok(Err(not)),
                None => return Err(err("open")(e)),
            },
        };
        // The chain index is generated and sorted before the clock starts: the load times
        // the engine, not the generator (the other shapes stream in key order for free).
        let chain_pairs = match &p.data {
            Data::KvChain(kv) => kv.sorted_pairs(),
            _ => Vec::new(),
        };
        // Worked out here, outside any memory cgroup: it needs the whole sorted index.
        let query_layout = match &p.data {
            Data::KvChain(kv) => QueryLayout::new(&chain_pairs, &kv.queries(CHAIN_QUERIES)),
            _ => QueryLayout::default(),
        };
        progress.begin(&format!("load {} into {}", ds.name, kind.name()), ds.keys);
        let start = Instant::now();
        match &p.data {
            Data::Manifest(m) => engine.bulk_load(&mut m.pairs().inspect(|_| progress.advance(1))),
            Data::KvChain(_) => {
                engine.bulk_load(&mut chain_pairs.into_iter().inspect(|_| progress.advance(1)))
            }
            Data::Graph(g) => engine.bulk_load(&mut g.pairs().inspect(|_| progress.advance(1))),
        }
        .map_err(err("bulk load"))?;
        engine.checkpoint().map_err(err("checkpoint after load"))?;
        let load_secs = start.elapsed().as_secs_f64();
        progress.end();
        let size = engine.size_on_disk().map_err(err("size on disk"))?;
        Ok(Ok(Session {
            engine: Some(engine),
            kind,
            full_frame,
            dataset: ds.clone(),
            data: p.data.clone(),
            dir,
            size,
            load_secs,
            seed: o.seed,
            budget_bytes: o.scale.budget_bytes,
            alloc_counted: alloc_count::installed(),
            query_layout,
            states: HashMap::new(),
            tallies: Vec::new(),
            last_op_nanos: Vec::new(),
            device_beside: None,
        }))
    }

    /// Reads `probe` beside the timed operations of the workloads that
    /// [`reads_device_beside`] names, one random 4 KiB read right after each, outside its
    /// time: the records then carry the device's latency at the moment the operations ran
    /// (`device_beside`). None stops it.
    pub fn read_device_beside(&mut self, probe: Option<Arc<DeviceProbe>>) {
        self.device_beside = probe;
    }

    /// Which engine this is.
    pub fn kind(&self) -> EngineKind {
        self.kind
    }

    /// The engine's name.
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// The loaded engine.
    pub fn engine(&self) -> Result<&dyn KvEngine, RunError> {
        self.engine.as_deref().ok_or_else(|| self.closed())
    }

    fn closed(&self) -> RunError {
        RunError::Closed {
            engine: self.name().to_string(),
            dataset: self.dataset.name.clone(),
        }
    }

    /// Closes the engine: its cache is freed and its memory maps are gone, so that the
    /// OS can drop its files' pages (a mapped page survives posix_fadvise DONTNEED). The
    /// next operation fails with [`RunError::Closed`] until [`Session::reopen`].
    pub fn close(&mut self) {
        self.engine = None;
    }

    /// Closes the engine and opens it again on the same files, so that its own cache
    /// starts empty: what the gate's cold-pool counters need.
    pub fn reopen(&mut self, o: &RunOptions) -> Result<(), RunError> {
        // Engines lock their directory: the old handle must be gone before the new opens.
        self.close();
        let engine = open_engine(
            o,
            self.kind,
            &self.dir,
            Store::for_data(&self.data, self.dataset.data_bytes),
            self.full_frame,
        )
        .map_err(|source| RunError::Engine {
            engine: self.name().to_string(),
            dataset: self.dataset.name.clone(),
            step: "reopen".to_string(),
            source: Box::new(source),
        })?;
        self.engine = Some(engine);
        Ok(())
    }

    /// The record of the load itself.
    pub fn load_record(&self) -> Record {
        let ds = &self.dataset;
        let per_key = self.load_secs * 1e9 / ds.keys.max(1) as f64;
        Record {
            ops: ds.keys,
            ns_per_op: Latency {
                mean: per_key,
                p50: per_key,
                p99: per_key,
                p999: per_key,
                min: per_key,
                max: per_key,
            },
            ops_per_sec: ds.keys as f64 / self.load_secs.max(1e-9),
            size_on_disk_bytes: Some(self.size),
            load_secs: Some(self.load_secs),
            trace: None,
            working_set: None,
            alloc_per_op: None,
            device_beside: None,
            note: Some(
                "one timed load of the whole data set, checkpoint included; ns_per_op is per key"
                    .into(),
            ),
            ..base_record(Workload::BulkLoad, &ds.name, self.kind, None)
        }
    }

    fn ensure_state(&mut self, key: Measured) -> Result<(), RunError> {
        if self.states.contains_key(&key) {
            return Ok(());
        }
        let (w, variant) = key;
        let seed = workload_seed(self.seed, key, &self.dataset.name);
        let st = match &self.data {
            Data::Manifest(m) => OpState::Manifest(ManifestOps::new(*m, &self.dataset.name, seed)),
            Data::KvChain(kv) if w == Workload::KvchainGet => OpState::KvGet {
                queries: kv.queries(CHAIN_QUERIES),
                buf: Vec::new(),
                next: 0,
                touched: None,
            },
            Data::KvChain(kv) => OpState::Lpm {
                method: lpm_method(w, variant)?,
                queries: kv.queries(CHAIN_QUERIES),
                buf: Vec::new(),
                next: 0,
                touched: None,
            },
            Data::Graph(_) => OpState::Walk {
                rng: seeded(seed),
                buf: Vec::new(),
                touched: None,
            },
        };
        self.states.insert(key, st);
        Ok(())
    }

    /// Runs operation `i` of (w, variant).
    pub fn op(&mut self, w: Workload, variant: Option<Variant>, i: u64) -> Result<(), RunError> {
        self.ensure_state((w, variant))?;
        let Session {
            engine,
            states,
            data,
            dataset,
            query_layout,
            ..
        } = self;
        let Some(eng) = engine.as_deref() else {
            return Err(self.closed());
        };
        let Some(st) = states.get_mut(&(w, variant)) else {
            return Ok(());
        };
        match st {
            OpState::Manifest(mo) => {
                let mut r = mo.on(eng);
                match w {
                    Workload::ManifestScan => match variant.and_then(Variant::shard_choice) {
                        Some(choice) => r.scan_from_offset(choice),
                        None => r.scan(),
                    },
                    Workload::ManifestList => r.list(),
                    Workload::ManifestRange100 => r.range100(),
                    Workload::ManifestCount8000 => r.count8000(),
                    Workload::ManifestCas => r.cas(i),
                    _ => r.get(),
                }
            }
            OpState::Lpm {
                queries,
                method,
                buf,
                next,
                touched,
            } => {
                let at = *next % queries.len();
                *next += 1;
                query_layout.touch(at, touched);
                ops::lpm(eng, &dataset.name, &queries[at], *method, buf)
            }
            OpState::KvGet {
                queries,
                buf,
                next,
                touched,
            } => {
                let at = *next % queries.len();
                *next += 1;
                query_layout.touch(at, touched);
                ops::kv_get(eng, &dataset.name, &queries[at], buf)
            }
            OpState::Walk { rng, buf, touched } => match data {
                Data::Graph(g) => ops::walk500(eng, &dataset.name, g, rng, buf, touched),
                _ => Ok(()),
            },
        }
    }

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
            st.prefetch_inputs(iters);
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

    /// A parallel workload: `iters` operations split over its threads, each thread with
    /// its own generator, histogram, page set and allocation count; returns the wall time.
    /// Nanoseconds of each operation of the last single-threaded [`Session::time_iters`]
    /// call, in order (empty after a parallel one).
    pub fn last_op_nanos(&self) -> &[u64] {
        &self.last_op_nanos
    }

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

impl Drop for Session {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A record with no measurement yet.
pub fn base_record(
    workload: Workload,
    dataset: &str,
    engine: EngineKind,
    variant: Option<Variant>,
) -> Record {
    Record {
        workload: workload.name().into(),
        dataset: dataset.into(),
        engine: engine.name().into(),
        variant: variant.map(|v| v.name().to_string()),
        status: Status::Ok,
        note: None,
        ops: 0,
        threads: 1,
        ns_per_op: Default::default(),
        ops_per_sec: 0.0,
        size_on_disk_bytes: None,
        io_per_op: None,
        load_secs: None,
        trace: None,
        working_set: None,
        alloc_per_op: None,
        device_beside: None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::run::plan_datasets;
    use crate::scale::CI;

    #[test]
    fn a_lookup_without_a_method_is_refused() {
        let lpm = Workload::KvchainLpm;
        assert_eq!(
            lpm_method(lpm, Some(Variant::NativeBoundary)).ok(),
            Some(LpmMethod::NativeAtBoundary { delimiter: b'/' })
        );
        for wrong in [None, Some(Variant::Paged), Some(Variant::FullFrame)] {
            let e = lpm_method(lpm, wrong);
            assert!(
                matches!(&e, Err(RunError::NoSuchVariant { valid, .. }) if valid.starts_with("native, native_boundary")),
                "{wrong:?}: {e:?}"
            );
        }
        let message = lpm_method(lpm, None).map_err(|e| e.to_string()).err();
        assert_eq!(
            message.as_deref(),
            Some("kvchain_lpm has no variant none; its variants: native, native_boundary, predecessor_seek, bisect, native_full_frame, bisect_full_frame")
        );
    }

    #[test]
    fn no_two_measured_pairs_share_a_seed() {
        let o = RunOptions::new(
            CI,
            EngineKind::ALL.to_vec(),
            Workload::ALL.to_vec(),
            PathBuf::from("unused"),
        );
        // Every (data set, workload, variant) the runner, the bench or the gate can
        // measure: each engine's variants in both modes, and the full-frame ones.
        let mut seen: HashMap<u64, String> = HashMap::new();
        let mut insert = |seed: u64, what: String| {
            if let Some(first) = seen.insert(seed, what.clone()) {
                panic!("{what} draws the same sequence as {first}");
            }
        };
        let mut pairs = 0;
        for planned in plan_datasets(&o) {
            let ds = planned.meta.name.as_str();
            let mut measured: Vec<Measured> = Vec::new();
            for w in Workload::ALL
                .into_iter()
                .filter(|w| w.runs_on(&planned.data))
            {
                for kind in EngineKind::ALL {
                    for full_frame in [false, true] {
                        measured.extend(variants(w, kind, full_frame).into_iter().map(|v| (w, v)));
                    }
                }
                measured.extend(full_frame_variants(w).iter().map(|&v| (w, Some(v))));
            }
            measured.sort_by_key(|&(w, v)| (w.name(), v.map(Variant::name)));
            measured.dedup();
            for key in measured {
                let seed = workload_seed(o.seed, key, ds);
                insert(seed, format!("{key:?} on {ds}"));
                pairs += 1;
                if key.0 == Workload::ManifestGetPar8 {
                    for thread in 0..8 {
                        for round in [0, 1, 1000] {
                            insert(
                                thread_seed(seed, thread, round),
                                format!("reader {thread} of {key:?} on {ds}, round {round}"),
                            );
                        }
                    }
                }
            }
        }
        // Six data sets; manifest_scan alone has its plain form and paged and full_frame.
        assert!(pairs >= 20, "only {pairs} pairs seen");
        let fits = "manifest_fits";
        assert_ne!(
            workload_seed(42, (Workload::ManifestScan, None), fits),
            workload_seed(42, (Workload::ManifestList, None), fits),
            "the two 13-character names drew the same sequence before"
        );
    }
}
