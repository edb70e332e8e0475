//! The runner: for each data set and engine, a fresh directory, a timed load, a
//! checkpoint, then each workload (warm-up, then timed operations into an HDR histogram),
//! producing the results JSON records.

mod cgroup;
mod error;
mod ingest;
mod ingest_phase;
mod measure;
mod not_measured;
mod ops;
mod preflight;
mod session;
mod sweep;
mod sync_put;
mod sys;
mod trace_run;
mod variant;
mod working_set;

use std::path::PathBuf;
use std::sync::Arc;

use aimeta_adapters::{Durability, EngineKind, ReadConsistency};
use aimeta_reports::{Dataset, Provenance, Record, Results, RunConfig, Status, SCHEMA_VERSION};

use crate::device::DeviceProbe;
pub use cgroup::{CgroupGuard, OverBudget};
pub use error::RunError;
pub use ingest::{IngestDurability, IngestReaders};
pub use not_measured::{
    durability_not_offered, measurement_budget, with_causes, NotLoaded, ETCD_MEASUREMENT_BUDGET,
};
use not_measured::{engine_fault, failed_records, project, Projection};
pub use preflight::{available_memory_bytes, check_room, free_disk_bytes, store_bytes_estimate};
pub use session::{base_record, full_frame_variants, variants, workload_seed, Measured, Session};
pub use sweep::{
    manifest_of, plan_sweep, size_name, sweep, SweepOptions, SWEEP_PER_SHARD, SWEEP_SCALE,
    SWEEP_SIZES, SWEEP_THREAD_WORKLOADS, SWEEP_WORKLOADS,
};
pub use sys::{drop_from_page_cache, settle_file_system};
pub(crate) use trace_run::{dataset_name, Replay};
pub use trace_run::{
    featured_trace_method, run_trace, trace_capacities, trace_methods, TRACE_THREADS,
};
pub use variant::{ThreadCount, Variant};
pub use working_set::{TouchedPages, LAYOUT_PAGE_BYTES};

use crate::gen::{derive_seed, ChainGraph, KvChain, Layout, Manifest};
use crate::scale::Scale;

/// A timed operation of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// Loading the data set (ns per key).
    BulkLoad,
    /// Prefix scan of a random shard, 100 entries with values.
    ManifestScan,
    /// Point get of a random existing key.
    ManifestGet,
    /// Delimiter listing under ds/laion/, 20 items from a random shard.
    ManifestList,
    /// 100-row range scan from a random key.
    ManifestRange100,
    /// Count over 8,000 consecutive keys.
    ManifestCount8000,
    /// Point gets from 8 threads at once.
    ManifestGetPar8,
    /// Point gets from 1, 2, 4, 8 and 16 threads at once (`ai-meta sweep`).
    ManifestGetThreads,
    /// 100-entry scans from random offsets (uniform shards) from 1 to 16 threads at once
    /// (`ai-meta sweep`).
    ManifestScanThreads,
    /// Compare-and-swap of a random key's value.
    ManifestCas,
    /// Longest stored prefix of a chain query (80 % hits, 20 % misses), by each method.
    KvchainLpm,
    /// Point get of a chain query's answer (the stored prefix for a hit, the query itself
    /// for a miss) on the same store: the yardstick of a native lookup.
    KvchainGet,
    /// 500 dependent hops along a chain graph.
    ChainWalk500,
    /// A KV-cache request trace replayed request by request: longest cached prefix,
    /// insert batch, evict batch (see `trace_run`).
    KvcacheTrace,
    /// Point gets from 1, 4 or 8 reader threads (alternating with range scans), alone and
    /// beside a writer appending shards, in async and sync durability (see `ingest`).
    ManifestIngestGet,
    /// The same readers' 100-row range scans from a random key.
    ManifestIngestScan,
    /// The writer appending new 10,000-sample shards in atomic batches beside the readers.
    ManifestIngestWrite,
    /// Single puts committed with an fsync each from 1 and 8 writer threads (see `sync_put`).
    SyncPut,
}

/// Which data sets a workload runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// The shard manifests.
    Manifest,
    /// The kv-cache chain indexes.
    KvChain,
    /// The chain graphs.
    ChainGraph,
    /// A KV-cache request trace, replayed on a fresh store per measurement.
    Trace,
}

impl Workload {
    /// Every workload, in the order they run on a store (the writing ones last: CAS, then
    /// ingest and sync puts, which append keys).
    pub const ALL: [Workload; 18] = [
        Workload::BulkLoad,
        Workload::ManifestScan,
        Workload::ManifestGet,
        Workload::ManifestList,
        Workload::ManifestRange100,
        Workload::ManifestCount8000,
        Workload::ManifestGetPar8,
        Workload::ManifestGetThreads,
        Workload::ManifestScanThreads,
        Workload::KvchainLpm,
        Workload::KvchainGet,
        Workload::ChainWalk500,
        Workload::ManifestCas,
        Workload::KvcacheTrace,
        Workload::ManifestIngestGet,
        Workload::ManifestIngestScan,
        Workload::ManifestIngestWrite,
        Workload::SyncPut,
    ];

    /// What `ai-meta run` and the bench measure when no workload is named: every one but
    /// the thread sweeps, which `ai-meta sweep` runs on its largest data set.
    pub fn default_set() -> Vec<Workload> {
        Workload::ALL
            .into_iter()
            .filter(|w| {
                !matches!(
                    w,
                    Workload::ManifestGetThreads | Workload::ManifestScanThreads
                )
            })
            .collect()
    }

    /// The workload's name in results and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::BulkLoad => "bulk_load",
            Workload::ManifestScan => "manifest_scan",
            Workload::ManifestGet => "manifest_get",
            Workload::ManifestList => "manifest_list",
            Workload::ManifestRange100 => "manifest_range100",
            Workload::ManifestCount8000 => "manifest_count8000",
            Workload::ManifestGetPar8 => "manifest_get_par8",
            Workload::ManifestGetThreads => "manifest_get_threads",
            Workload::ManifestScanThreads => "manifest_scan_threads",
            Workload::ManifestCas => "manifest_cas",
            Workload::KvchainLpm => "kvchain_lpm",
            Workload::KvchainGet => "kvchain_get",
            Workload::ChainWalk500 => "chain_walk500",
            Workload::KvcacheTrace => "kvcache_trace",
            Workload::ManifestIngestGet => "manifest_ingest_get",
            Workload::ManifestIngestScan => "manifest_ingest_scan",
            Workload::ManifestIngestWrite => "manifest_ingest_write",
            Workload::SyncPut => "sync_put",
        }
    }

    /// The family of data sets it runs on (bulk load runs on all).
    pub fn family(self) -> Option<Family> {
        match self {
            Workload::BulkLoad => None,
            Workload::KvchainLpm | Workload::KvchainGet => Some(Family::KvChain),
            Workload::ChainWalk500 => Some(Family::ChainGraph),
            Workload::KvcacheTrace => Some(Family::Trace),
            _ => Some(Family::Manifest),
        }
    }

    /// Parses a workload name.
    pub fn parse(name: &str) -> Result<Workload, RunError> {
        error::find_by_name("workload", name, &Self::ALL, Workload::name)
    }
}

/// How the cache budget is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetMode {
    /// Each engine's own cache is the budget; the OS page cache is left alone.
    Engine,
    /// The timed phase also runs in a memory cgroup limited to budget + overhead, so the
    /// page cache counts too.
    Cgroup,
}

impl BudgetMode {
    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            BudgetMode::Engine => "engine",
            BudgetMode::Cgroup => "cgroup",
        }
    }

    /// Parses a mode name.
    pub fn parse(s: &str) -> Result<BudgetMode, RunError> {
        match s.trim() {
            "engine" => Ok(BudgetMode::Engine),
            "cgroup" => Ok(BudgetMode::Cgroup),
            _ => Err(RunError::UnknownName {
                what: "budget mode",
                name: s.to_string(),
                valid: "engine, cgroup".into(),
            }),
        }
    }
}

/// Memory the process needs besides the engines' caches in cgroup mode (heap, code,
/// generated queries); reported with the results.
pub const CGROUP_OVERHEAD_BYTES: u64 = 48 << 20;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Sizes, budget and operation counts.
    pub scale: Scale,
    /// Engines to measure.
    pub engines: Vec<EngineKind>,
    /// Workloads to measure.
    pub workloads: Vec<Workload>,
    /// How the budget is applied.
    pub budget_mode: BudgetMode,
    /// Drop each engine's files from the OS page cache before each timed phase.
    pub cold: bool,
    /// Durability of every write (the seed report used the asynchronous log).
    pub durability: Durability,
    /// Where the stores are created (each in a fresh subdirectory, removed afterwards).
    pub work_dir: PathBuf,
    /// Seed of data and queries.
    pub seed: u64,
    /// PostgreSQL server to use instead of a throwaway cluster.
    pub pg_url: Option<String>,
    /// etcd cluster (client URLs) to use instead of a throwaway cluster.
    pub etcd_endpoints: Option<Vec<String>>,
    /// How etcd serves reads.
    pub read_consistency: ReadConsistency,
    /// Also measure aimeta's full-frame reproduction mode (manifest_scan, manifest_get and
    /// kvchain_lpm; see `full_frame_variants`).
    pub full_frame: bool,
    /// The KV-cache trace kvcache_trace replays (None: the committed Mooncake trace).
    pub trace: Option<PathBuf>,
    /// Open-loop trace replays at this many requests a second (None: closed loop).
    pub rate: Option<f64>,
    /// Measure the device's floor under the work directory first (a few seconds; the
    /// results' `device`) with these options, and keep its probe file for the run: each
    /// timed phase of point gets on a data set past the budget then reads the device
    /// beside its operations (the records' `device_beside`). None: neither.
    pub device_floor: Option<crate::device::FloorOptions>,
    /// The command line, for provenance.
    pub command: String,
}

impl RunOptions {
    /// The seed report's settings at `scale`: engine budget mode, warm page cache, the
    /// asynchronous log, a throwaway PostgreSQL cluster, no full-frame variants, seed 42;
    /// `command` is this process's command line.
    pub fn new(
        scale: Scale,
        engines: Vec<EngineKind>,
        workloads: Vec<Workload>,
        work_dir: PathBuf,
    ) -> RunOptions {
        RunOptions {
            scale,
            engines,
            workloads,
            budget_mode: BudgetMode::Engine,
            cold: false,
            durability: Durability::Async,
            work_dir,
            seed: 42,
            pg_url: None,
            etcd_endpoints: None,
            read_consistency: ReadConsistency::Linearizable,
            full_frame: false,
            trace: None,
            rate: None,
            device_floor: None,
            command: std::env::args().collect::<Vec<_>>().join(" "),
        }
    }
}

/// Progress reporting, implemented by the command line (progress bars) or ignored.
pub trait Progress: Sync {
    /// A phase starts with `total` steps.
    fn begin(&self, label: &str, total: u64);
    /// `n` steps done.
    fn advance(&self, n: u64);
    /// The phase ended.
    fn end(&self);
    /// A one-line message.
    fn note(&self, msg: &str);
}

/// Progress that goes nowhere.
#[derive(Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn begin(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn end(&self) {}
    fn note(&self, _: &str) {}
}

/// One data set as the runner builds it.
#[derive(Debug, Clone)]
pub enum Data {
    /// A shard manifest.
    Manifest(Manifest),
    /// A kv-cache chain index.
    KvChain(KvChain),
    /// A chain graph.
    Graph(ChainGraph),
}

/// A data set to load: its description and its generator.
#[derive(Debug, Clone)]
pub struct Planned {
    /// What the results file says about it.
    pub meta: Dataset,
    /// Its contents.
    pub data: Data,
}

impl Workload {
    /// True when the workload runs on this data set (bulk load runs on all).
    pub fn runs_on(self, d: &Data) -> bool {
        matches!(
            (self.family(), d),
            (None, _)
                | (Some(Family::Manifest), Data::Manifest(_))
                | (Some(Family::KvChain), Data::KvChain(_))
                | (Some(Family::ChainGraph), Data::Graph(_))
        )
    }
}

/// The data sets the chosen workloads need, fits variant first.
pub fn plan_datasets(o: &RunOptions) -> Vec<Planned> {
    let s = &o.scale;
    let fam = |f: Family| o.workloads.iter().any(|w| w.family() == Some(f));
    // What the results file says about a data set of `keys` keys and `bytes` bytes.
    let meta = |name: &str, family: &str, keys: u64, bytes: u64| Dataset {
        name: name.into(),
        family: family.into(),
        keys,
        data_bytes: bytes,
        fits_budget: bytes < s.budget_bytes,
        ratio_to_budget: bytes as f64 / s.budget_bytes as f64,
    };
    let seed = |name: &str| derive_seed(o.seed, &[name.as_bytes()]);
    let mut out = Vec::new();
    if fam(Family::Manifest)
        || (o.workloads.contains(&Workload::BulkLoad) && o.workloads.len() == 1)
    {
        for (name, m) in [
            ("manifest_fits", s.manifest_fits),
            ("manifest_beyond", s.manifest_beyond),
        ] {
            let meta = meta(name, "manifest", m.keys(), m.data_bytes());
            let data = Data::Manifest(m);
            out.push(Planned { meta, data });
        }
    }
    if fam(Family::KvChain) {
        for (name, chains) in [
            ("kvchain_fits", s.kvchain_fits),
            ("kvchain_beyond", s.kvchain_beyond),
        ] {
            let kv = KvChain::seed_shape(chains, seed(name));
            let meta = meta(name, "kvchain", kv.keys(), kv.data_bytes());
            let data = Data::KvChain(kv);
            out.push(Planned { meta, data });
        }
    }
    if fam(Family::ChainGraph) {
        for (name, layout) in [
            ("chain_linear", Layout::Linear),
            ("chain_shuffled", Layout::Shuffled),
        ] {
            let g = ChainGraph::generate(s.graph_nodes, layout, seed(name));
            let meta = meta(name, "chain_graph", u64::from(g.nodes), g.data_bytes());
            let data = Data::Graph(g);
            out.push(Planned { meta, data });
        }
    }
    out
}

/// Runs everything `o` asks for and returns the results (not yet written anywhere).
/// The trace replay runs first: its input is the user's file, refused before anything
/// else is measured when it is not of the trace format.
pub fn run(o: &RunOptions, progress: &dyn Progress) -> Result<Results, RunError> {
    let plan = plan_datasets(o);
    check_room(o, &plan, o.device_floor)?;
    let mut results = new_results(o)?;
    let probe = measure_device(o, progress)?.map(|(probe, floor)| {
        results.device = Some(floor);
        probe
    });
    if o.workloads.contains(&Workload::KvcacheTrace) {
        let (datasets, records) = run_trace(o, progress)?;
        results.datasets.extend(datasets);
        results.records.extend(records);
    }
    for planned in plan {
        for &kind in &o.engines {
            let recs = match run_engine(o, kind, &planned, probe.as_ref(), progress) {
                Ok(recs) => recs,
                Err(e) => match fault_of_one_engine(&e) {
                    Some(why) => {
                        progress.note(&format!("{} failed, the run goes on: {why}", kind.name()));
                        failed_records(o, kind, &planned, &why)
                    }
                    None => return Err(e),
                },
            };
            results.records.extend(recs);
        }
        results.datasets.push(planned.meta);
    }
    Ok(results)
}

/// The message of `e` when it is one engine's failure (see `engine_fault`), with the
/// state of the memory cgroup its last phase ran in when that was full.
fn fault_of_one_engine(e: &RunError) -> Option<String> {
    let why = engine_fault(e)?;
    Some(match cgroup::last_group_full() {
        Some(full) => format!("{why} ({full})"),
        None => why,
    })
}

/// The device under the work directory (see `crate::device`): its probe file, kept for
/// the run, and its floor; None when `o` does not measure it.
pub fn measure_device(
    o: &RunOptions,
    progress: &dyn Progress,
) -> Result<Option<(Arc<DeviceProbe>, aimeta_reports::DeviceFloor)>, RunError> {
    let Some(options) = o.device_floor else {
        return Ok(None);
    };
    progress.note(&format!(
        "measuring the device under {} (random 4 KiB reads, a few seconds)",
        o.work_dir.display()
    ));
    let (probe, floor) = DeviceProbe::measure(&o.work_dir, options)?;
    progress.note(&format!(
        "device: 4 KiB read at queue depth 1 {:.0} us (p50 {:.0} us), {:.0} reads/s at depth 1, {:.0} at depth 8{}",
        floor.read_4k_qd1.mean / 1e3,
        floor.read_4k_qd1.p50 / 1e3,
        floor.iops_qd1,
        floor.iops_qd8,
        if floor.direct { "" } else { " (no O_DIRECT here: page cache dropped instead)" }
    ));
    Ok(Some((Arc::new(probe), floor)))
}

/// A results file with this run's provenance and settings and no records yet; creates
/// the work directory.
pub fn new_results(o: &RunOptions) -> Result<Results, RunError> {
    std::fs::create_dir_all(&o.work_dir).map_err(|source| RunError::WorkDir {
        path: o.work_dir.clone(),
        source,
    })?;
    let (machine, cores, memory_bytes) = sys::machine();
    Ok(Results {
        schema_version: SCHEMA_VERSION,
        device: None,
        provenance: Provenance {
            machine: format!("{machine}, {cores} cores, {} GiB", memory_bytes >> 30),
            cores,
            memory_bytes,
            os: sys::os(),
            commit: sys::git_commit(),
            date: sys::now_utc(),
            rustc: sys::rustc(),
            command: o.command.clone(),
            filesystem: sys::filesystem(&o.work_dir),
            engine_versions: crate::versions::engine_versions(),
        },
        config: RunConfig {
            scale: o.scale.name.into(),
            budget_bytes: o.scale.budget_bytes,
            budget_mode: o.budget_mode.name().into(),
            durability: format!("{:?}", o.durability).to_lowercase(),
            seed: o.seed,
            ops: o.scale.ops,
            sweep: None,
        },
        datasets: Vec::new(),
        records: Vec::new(),
    })
}

/// Loads one data set into one engine and runs every workload of its family.
pub(crate) fn run_engine(
    o: &RunOptions,
    kind: EngineKind,
    p: &Planned,
    probe: Option<&Arc<DeviceProbe>>,
    progress: &dyn Progress,
) -> Result<Vec<Record>, RunError> {
    let ds = &p.meta;
    let wanted: Vec<Workload> = o
        .workloads
        .iter()
        .copied()
        .filter(|w| w.runs_on(&p.data) && ingest::runs_on_dataset(*w, &ds.name))
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut s = match Session::load(o, kind, p, false, progress)? {
        Ok(s) => s,
        Err(not) => {
            progress.note(&format!("{} not measured: {not}", kind.name()));
            return Ok(wanted
                .iter()
                .map(|w| Record {
                    status: not.status,
                    note: Some(not.why.clone()),
                    ..base_record(*w, &ds.name, kind, None)
                })
                .collect());
        }
    };
    // Past the budget, point gets read the device beside them: their floor at the moment
    // they ran (the device drifts by a quarter between phases here).
    let beside = probe.filter(|_| !ds.fits_budget);
    s.read_device_beside(beside.cloned());
    let mut out = Vec::new();
    if wanted.contains(&Workload::BulkLoad) {
        out.push(s.load_record());
    }
    let caps = s.engine()?.capabilities();
    let native = caps.native_longest_prefix;
    // Measurements shortened to fit their time budget, and the note each record gets.
    let mut shortened: Vec<((Workload, Option<Variant>), String)> = Vec::new();
    // Measurements whose memory cgroup ran out (see cgroup.rs), and what it had charged.
    let mut past_budget: Vec<((Workload, Option<Variant>), OverBudget)> = Vec::new();
    for &w in wanted.iter().filter(|&&w| w != Workload::BulkLoad) {
        if w == Workload::ManifestCas {
            if let Some(why) = durability_not_offered(kind, caps.durability, o.durability) {
                out.push(Record {
                    status: Status::Unsupported,
                    note: Some(why),
                    ..base_record(w, &ds.name, kind, None)
                });
                continue;
            }
        }
        for v in variants(w, kind, o.full_frame) {
            if v == Some(Variant::Native) && !native {
                out.push(Record {
                    status: Status::Unsupported,
                    note: Some(format!("{} has no native longest-prefix lookup", s.name())),
                    ..base_record(w, &ds.name, kind, v)
                });
                continue;
            }
            let (warm, ops) = counts(o, w);
            let guard = enter_budget(o, &mut s)?;
            let (warmed, warm, ops) = match measurement_budget(kind) {
                Some(budget) => match project(&mut s, (w, v), (warm, ops), budget)? {
                    Projection::Within { warmed } => (warmed, warm, ops),
                    Projection::Shortened {
                        warmed,
                        ops: short,
                        note,
                    } => {
                        progress.note(&format!("{} {}: {note}", kind.name(), ds.name));
                        shortened.push(((w, v), note));
                        (warmed, warmed, short)
                    }
                },
                None => (0, warm, ops),
            };
            progress.begin(
                &format!(
                    "{} {} {} {}",
                    s.name(),
                    ds.name,
                    w.name(),
                    v.map_or("", Variant::name)
                ),
                ops,
            );
            let measured = s.measure_from(w, v, warmed, warm, ops, progress);
            progress.end();
            // Past the budget (the watchdog lifted the group's limit): the numbers had more
            // memory than the other engines'; an error then (an allocation refused before
            // the limit was lifted) is this measurement's, and the run goes on.
            if let Some(over) = guard.as_ref().and_then(CgroupGuard::over_budget) {
                progress.note(&format!("{} {}: {}", kind.name(), ds.name, over.note()));
                if let Err(e) = measured {
                    let mut r = base_record(w, &ds.name, kind, v);
                    r.note = Some(with_causes(&e));
                    cgroup::mark_past_budget(over, std::slice::from_mut(&mut r));
                    out.push(r);
                }
                past_budget.push(((w, v), over));
                continue;
            }
            measured?;
        }
    }
    out.extend(s.records().into_iter().map(|mut r| {
        let same = |(w, v): &(Workload, Option<Variant>)| {
            r.workload == w.name() && r.variant.as_deref() == v.map(Variant::name)
        };
        if let Some((_, note)) = shortened.iter().find(|(wv, _)| same(wv)) {
            r.note = Some(match r.note.take() {
                Some(own) => format!("{own}; {note}"),
                None => note.clone(),
            });
        }
        if let Some(&(_, over)) = past_budget.iter().find(|(wv, _)| same(wv)) {
            cgroup::mark_past_budget(over, std::slice::from_mut(&mut r));
        }
        r
    }));
    // The writes run last, the ones most likely to fail an engine (a write refused in a
    // full memory cgroup): the reads measured before them are kept.
    match ingest::measure_writes(o, &mut s, p, &wanted, progress) {
        Ok(recs) => out.extend(recs),
        Err(e) => {
            let why = fault_of_one_engine(&e).ok_or(e)?;
            progress.note(&format!("{} failed, the run goes on: {why}", kind.name()));
            let measured: Vec<String> = out.iter().map(|r| r.workload.clone()).collect();
            out.extend(
                failed_records(o, kind, p, &why)
                    .into_iter()
                    .filter(|r| !measured.contains(&r.workload)),
            );
        }
    }
    drop(s);
    let full_frame: Vec<(Workload, Variant)> = wanted
        .iter()
        .flat_map(|&w| full_frame_variants(w).iter().map(move |&v| (w, v)))
        .collect();
    if o.full_frame && kind == EngineKind::Aimeta && !full_frame.is_empty() {
        if let Ok(mut ff) = Session::load(o, kind, p, true, progress)? {
            ff.read_device_beside(beside.cloned());
            for (w, v) in full_frame {
                let (warm, ops) = counts(o, w);
                let _guard = enter_budget(o, &mut ff)?;
                progress.begin(&format!("aimeta {} {} {v}", ds.name, w.name()), ops);
                ff.measure(w, Some(v), warm, ops, progress)?;
                progress.end();
            }
            out.extend(ff.records());
        }
    }
    Ok(out)
}

/// (warm-up, timed) operations of a workload at the run's scale; a chain walk is 500 hops.
pub fn counts(o: &RunOptions, w: Workload) -> (u64, u64) {
    match w {
        Workload::ChainWalk500 => ((o.scale.warmup / 50).max(2), (o.scale.ops / 50).max(20)),
        _ => (o.scale.warmup, o.scale.ops),
    }
}

/// Sets up a timed phase: the work directory's file system is synced first (no phase runs
/// beside the write-back of what ran before it); with `--cold` or in cgroup mode the engine is closed (its own
/// cache freed, its memory maps gone: the kernel keeps a mapped page through
/// posix_fadvise DONTNEED, which left LMDB's and this engine's files warm from the phase
/// before), the store's files leave the OS page cache and the engine is reopened; in
/// cgroup mode the process enters the memory cgroup first, so that the reopened engine's
/// cache is allocated (and charged) there too: every engine then has budget + overhead
/// for everything, its own cache and the page cache. PostgreSQL's server runs in its own
/// processes, outside the cgroup, and is not reopened (docs/fairness.md).
fn enter_budget(o: &RunOptions, s: &mut Session) -> Result<Option<CgroupGuard>, RunError> {
    settle_file_system(&o.work_dir).map_err(|source| RunError::WorkDir {
        path: o.work_dir.clone(),
        source,
    })?;
    let cold = o.cold || o.budget_mode == BudgetMode::Cgroup;
    let reopens = cold && !s.kind().is_server();
    if reopens {
        s.close();
    }
    if cold {
        drop_from_page_cache(&s.dir).map_err(|source| RunError::WorkDir {
            path: s.dir.clone(),
            source,
        })?;
    }
    let guard = match o.budget_mode {
        BudgetMode::Engine => None,
        BudgetMode::Cgroup => Some(CgroupGuard::enter(
            o.scale.budget_bytes + CGROUP_OVERHEAD_BYTES,
        )?),
    };
    if reopens {
        s.reopen(o)?;
    }
    Ok(guard)
}
