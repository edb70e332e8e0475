//! The runner: for each data set and engine, a fresh directory, a timed load, a
//! checkpoint, then each workload (warm-up, then timed operations into an HDR histogram),
//! producing the results JSON records.

mod error;
mod measure;
mod ops;
mod sys;

use std::path::{Path, PathBuf};
use std::time::Instant;

use aimeta_adapters::{
    aimeta::AimetaEngine, open, CacheBudget, Durability, EngineKind, KvEngine, LpmMethod,
    OpenOptions,
};
use aimeta_reports::{Dataset, Provenance, Record, Results, RunConfig, Status, SCHEMA_VERSION};

pub use error::RunError;
pub use sys::{drop_from_page_cache, CgroupGuard};

use crate::gen::{ChainGraph, KvChain, Layout, Manifest, Rng};
use crate::scale::Scale;
use measure::{histogram, latency, time_ops, Timed};

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
    /// Compare-and-swap of a random key's value.
    ManifestCas,
    /// Longest stored prefix of a chain query (80 % hits, 20 % misses), by each method.
    KvchainLpm,
    /// 500 dependent hops along a chain graph.
    ChainWalk500,
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
}

impl Workload {
    /// Every workload, in the order they run on a store (CAS last: it writes).
    pub const ALL: [Workload; 10] = [
        Workload::BulkLoad,
        Workload::ManifestScan,
        Workload::ManifestGet,
        Workload::ManifestList,
        Workload::ManifestRange100,
        Workload::ManifestCount8000,
        Workload::ManifestGetPar8,
        Workload::KvchainLpm,
        Workload::ChainWalk500,
        Workload::ManifestCas,
    ];

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
            Workload::ManifestCas => "manifest_cas",
            Workload::KvchainLpm => "kvchain_lpm",
            Workload::ChainWalk500 => "chain_walk500",
        }
    }

    /// The family of data sets it runs on (bulk load runs on all).
    pub fn family(self) -> Option<Family> {
        match self {
            Workload::BulkLoad => None,
            Workload::KvchainLpm => Some(Family::KvChain),
            Workload::ChainWalk500 => Some(Family::ChainGraph),
            _ => Some(Family::Manifest),
        }
    }

    /// Parses a workload name.
    pub fn parse(name: &str) -> Result<Workload, RunError> {
        Self::ALL
            .into_iter()
            .find(|w| w.name() == name.trim())
            .ok_or_else(|| RunError::UnknownName {
                what: "workload",
                name: name.to_string(),
                valid: Self::ALL.map(Workload::name).join(", "),
            })
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
    /// Also measure aimeta's full-frame reproduction mode on manifest_scan.
    pub full_frame: bool,
    /// The command line, for provenance.
    pub command: String,
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
enum Data {
    Manifest(Manifest),
    KvChain(KvChain),
    Graph(ChainGraph),
}

struct Planned {
    meta: Dataset,
    data: Data,
}

fn plan_datasets(o: &RunOptions) -> Vec<Planned> {
    let s = &o.scale;
    let fam = |f: Family| o.workloads.iter().any(|w| w.family() == Some(f));
    let ratio = |bytes: u64| bytes as f64 / s.budget_bytes as f64;
    let mut out = Vec::new();
    if fam(Family::Manifest)
        || (o.workloads.contains(&Workload::BulkLoad) && o.workloads.len() == 1)
    {
        for (name, m) in [
            ("manifest_fits", s.manifest_fits),
            ("manifest_beyond", s.manifest_beyond),
        ] {
            out.push(Planned {
                meta: Dataset {
                    name: name.into(),
                    family: "manifest".into(),
                    keys: m.keys(),
                    data_bytes: m.data_bytes(),
                    fits_budget: m.data_bytes() < s.budget_bytes,
                    ratio_to_budget: ratio(m.data_bytes()),
                },
                data: Data::Manifest(m),
            });
        }
    }
    if fam(Family::KvChain) {
        for (name, chains, salt) in [
            ("kvchain_fits", s.kvchain_fits, 1),
            ("kvchain_beyond", s.kvchain_beyond, 2),
        ] {
            let kv = KvChain::seed_shape(chains, o.seed ^ salt);
            out.push(Planned {
                meta: Dataset {
                    name: name.into(),
                    family: "kvchain".into(),
                    keys: kv.keys(),
                    data_bytes: kv.data_bytes(),
                    fits_budget: kv.data_bytes() < s.budget_bytes,
                    ratio_to_budget: ratio(kv.data_bytes()),
                },
                data: Data::KvChain(kv),
            });
        }
    }
    if fam(Family::ChainGraph) {
        for (name, layout) in [
            ("chain_linear", Layout::Linear),
            ("chain_shuffled", Layout::Shuffled),
        ] {
            let g = ChainGraph::generate(s.graph_nodes, layout, o.seed ^ 3);
            out.push(Planned {
                meta: Dataset {
                    name: name.into(),
                    family: "chain_graph".into(),
                    keys: u64::from(g.nodes),
                    data_bytes: g.data_bytes(),
                    fits_budget: g.data_bytes() < s.budget_bytes,
                    ratio_to_budget: ratio(g.data_bytes()),
                },
                data: Data::Graph(g),
            });
        }
    }
    out
}

/// Runs everything `o` asks for and returns the results (not yet written anywhere).
pub fn run(o: &RunOptions, progress: &dyn Progress) -> Result<Results, RunError> {
    std::fs::create_dir_all(&o.work_dir).map_err(|source| RunError::WorkDir {
        path: o.work_dir.clone(),
        source,
    })?;
    let (machine, cores, memory_bytes) = sys::machine();
    let mut results = Results {
        schema_version: SCHEMA_VERSION,
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
        },
        datasets: Vec::new(),
        records: Vec::new(),
    };
    for planned in plan_datasets(o) {
        for &kind in &o.engines {
            let recs = run_engine(o, kind, &planned, progress)?;
            results.records.extend(recs);
        }
        results.datasets.push(planned.meta);
    }
    Ok(results)
}

fn options(o: &RunOptions, data_bytes: u64) -> OpenOptions {
    OpenOptions {
        cache: CacheBudget(o.scale.budget_bytes),
        durability: o.durability,
        expected_data_bytes: data_bytes,
        pg_url: o.pg_url.clone(),
    }
}

fn base_record(workload: &str, dataset: &str, engine: &str, variant: Option<&str>) -> Record {
    Record {
        workload: workload.into(),
        dataset: dataset.into(),
        engine: engine.into(),
        variant: variant.map(str::to_string),
        status: Status::Ok,
        note: None,
        ops: 0,
        threads: 1,
        ns_per_op: Default::default(),
        ops_per_sec: 0.0,
        size_on_disk_bytes: None,
        io_per_op: None,
        load_secs: None,
    }
}

fn timed_record(
    workload: &str,
    ds: &Dataset,
    engine: &str,
    variant: Option<&str>,
    t: &Timed,
    size: u64,
    load: f64,
) -> Record {
    Record {
        status: Status::Ok,
        ops: t.ops,
        ns_per_op: latency(&t.hist),
        ops_per_sec: t.ops as f64 / t.wall.as_secs_f64().max(1e-9),
        size_on_disk_bytes: Some(size),
        io_per_op: t.io,
        load_secs: Some(load),
        ..base_record(workload, &ds.name, engine, variant)
    }
}

fn open_engine(
    o: &RunOptions,
    kind: EngineKind,
    dir: &Path,
    data_bytes: u64,
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
            &options(o, data_bytes),
            mode,
        )?));
    }
    open(kind, dir, &options(o, data_bytes))
}

/// Loads one data set into one engine and runs every workload of its family.
fn run_engine(
    o: &RunOptions,
    kind: EngineKind,
    p: &Planned,
    progress: &dyn Progress,
) -> Result<Vec<Record>, RunError> {
    let ds = &p.meta;
    let dir = o.work_dir.join(&ds.name).join(kind.name());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|source| RunError::WorkDir {
        path: dir.clone(),
        source,
    })?;
    let wanted: Vec<Workload> = o
        .workloads
        .iter()
        .copied()
        .filter(|w| {
            w.family().is_none_or(|f| {
                matches!(
                    (f, &p.data),
                    (Family::Manifest, Data::Manifest(_))
                        | (Family::KvChain, Data::KvChain(_))
                        | (Family::ChainGraph, Data::Graph(_))
                )
            })
        })
        .collect();
    let engine = match open_engine(o, kind, &dir, ds.data_bytes, false) {
        Ok(e) => e,
        Err(e @ aimeta_adapters::Error::PostgresUnavailable { .. }) => {
            progress.note(&format!("{} skipped: {e}", kind.name()));
            return Ok(wanted
                .iter()
                .map(|w| Record {
                    status: Status::Skipped,
                    note: Some(e.to_string()),
                    ..base_record(w.name(), &ds.name, kind.name(), None)
                })
                .collect());
        }
        Err(source) => {
            return Err(RunError::Engine {
                engine: kind.name().into(),
                dataset: ds.name.clone(),
                step: "open".into(),
                source,
            })
        }
    };
    let eng = engine.as_ref();
    let err = |step: &str| {
        let engine = kind.name().to_string();
        let dataset = ds.name.clone();
        let step = step.to_string();
        move |source| RunError::Engine {
            engine,
            dataset,
            step,
            source,
        }
    };
    progress.begin(&format!("load {} into {}", ds.name, kind.name()), ds.keys);
    let start = Instant::now();
    match &p.data {
        Data::Manifest(m) => eng.bulk_load(&mut m.pairs().inspect(|_| progress.advance(1))),
        Data::KvChain(kv) => eng.bulk_load(
            &mut kv
                .sorted_pairs()
                .into_iter()
                .inspect(|_| progress.advance(1)),
        ),
        Data::Graph(g) => eng.bulk_load(&mut g.pairs().inspect(|_| progress.advance(1))),
    }
    .map_err(err("bulk load"))?;
    eng.checkpoint().map_err(err("checkpoint after load"))?;
    let load_secs = start.elapsed().as_secs_f64();
    progress.end();
    let size = eng.size_on_disk().map_err(err("size on disk"))?;
    let mut out = Vec::new();
    for &w in &wanted {
        progress.begin(
            &format!("{} {} {}", kind.name(), ds.name, w.name()),
            o.scale.ops,
        );
        out.extend(measure_workload(
            o, eng, w, p, size, load_secs, &dir, progress,
        )?);
        progress.end();
    }
    drop(engine);
    if o.full_frame && kind == EngineKind::Aimeta {
        if let Data::Manifest(m) = &p.data {
            if wanted.contains(&Workload::ManifestScan) {
                let ff = open_engine(o, kind, &dir, ds.data_bytes, true)
                    .map_err(err("reopen in full-frame mode"))?;
                let mut mo = ops::ManifestOps::new(ff.as_ref(), *m, &ds.name, o.seed ^ 0x11);
                prepare(o, &dir)?;
                let _guard = enter_budget(o)?;
                let t = time_ops(ff.as_ref(), o.scale.warmup, o.scale.ops, |_| mo.scan())?;
                out.push(timed_record(
                    "manifest_scan",
                    ds,
                    kind.name(),
                    Some("full_frame"),
                    &t,
                    size,
                    load_secs,
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(out)
}

fn prepare(o: &RunOptions, dir: &Path) -> Result<(), RunError> {
    if o.cold || o.budget_mode == BudgetMode::Cgroup {
        drop_from_page_cache(dir).map_err(|source| RunError::WorkDir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    Ok(())
}

fn enter_budget(o: &RunOptions) -> Result<Option<CgroupGuard>, RunError> {
    match o.budget_mode {
        BudgetMode::Engine => Ok(None),
        BudgetMode::Cgroup => {
            CgroupGuard::enter(o.scale.budget_bytes + CGROUP_OVERHEAD_BYTES).map(Some)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn measure_workload(
    o: &RunOptions,
    eng: &dyn KvEngine,
    w: Workload,
    p: &Planned,
    size: u64,
    load_secs: f64,
    dir: &Path,
    progress: &dyn Progress,
) -> Result<Vec<Record>, RunError> {
    let ds = &p.meta;
    let name = eng.name();
    let (warm, ops) = (o.scale.warmup, o.scale.ops);
    let tick = |r: Result<(), RunError>| {
        progress.advance(1);
        r
    };
    if w == Workload::BulkLoad {
        let per_key = load_secs * 1e9 / ds.keys.max(1) as f64;
        let mut hist = histogram();
        hist.saturating_record(per_key.max(1.0) as u64);
        return Ok(vec![Record {
            ops: ds.keys,
            ns_per_op: aimeta_reports::Latency {
                mean: per_key,
                p50: per_key,
                p99: per_key,
                p999: per_key,
                min: per_key,
                max: per_key,
            },
            ops_per_sec: ds.keys as f64 / load_secs.max(1e-9),
            size_on_disk_bytes: Some(size),
            load_secs: Some(load_secs),
            note: Some("one timed load of the whole data set; ns_per_op is per key".into()),
            ..base_record(w.name(), &ds.name, name, None)
        }]);
    }
    prepare(o, dir)?;
    let _guard = enter_budget(o)?;
    let mut out = Vec::new();
    match (&p.data, w) {
        (Data::Manifest(m), Workload::ManifestGetPar8) => {
            out.push(par8(o, eng, *m, ds, size, load_secs)?);
        }
        (Data::Manifest(m), _) => {
            let mut mo = ops::ManifestOps::new(eng, *m, &ds.name, o.seed ^ w.name().len() as u64);
            let t = time_ops(eng, warm, ops, |i| {
                tick(match w {
                    Workload::ManifestScan => mo.scan(),
                    Workload::ManifestGet => mo.get(),
                    Workload::ManifestList => mo.list(),
                    Workload::ManifestRange100 => mo.range100(),
                    Workload::ManifestCount8000 => mo.count8000(),
                    _ => mo.cas(i),
                })
            })?;
            let variant = (w == Workload::ManifestScan && name == "aimeta" && o.full_frame)
                .then_some("paged");
            out.push(timed_record(
                w.name(),
                ds,
                name,
                variant,
                &t,
                size,
                load_secs,
            ));
        }
        (Data::KvChain(kv), _) => {
            let queries = kv.queries((warm + ops) as usize);
            let mut buf = Vec::new();
            let mut methods = vec![("native", LpmMethod::Native)];
            if name == "aimeta" {
                methods.push((
                    "native_boundary",
                    LpmMethod::NativeAtBoundary { delimiter: b'/' },
                ));
            }
            methods.push(("predecessor_seek", LpmMethod::PredecessorSeek));
            methods.push(("bisect", LpmMethod::Bisect { delimiter: b'/' }));
            for (variant, method) in methods {
                if method == LpmMethod::Native && !eng.capabilities().native_longest_prefix {
                    out.push(Record {
                        status: Status::Unsupported,
                        note: Some(format!("{name} has no native longest-prefix lookup")),
                        ..base_record(w.name(), &ds.name, name, Some(variant))
                    });
                    continue;
                }
                let t = time_ops(eng, warm, ops, |i| {
                    tick(ops::lpm(
                        eng,
                        &ds.name,
                        &queries[i as usize],
                        method,
                        &mut buf,
                    ))
                })?;
                out.push(timed_record(
                    w.name(),
                    ds,
                    name,
                    Some(variant),
                    &t,
                    size,
                    load_secs,
                ));
            }
        }
        (Data::Graph(g), _) => {
            let mut rng = Rng::new(o.seed ^ 0x9A);
            let mut buf = Vec::new();
            let walk_ops = (ops / 50).max(20);
            let t = time_ops(eng, (warm / 50).max(2), walk_ops, |_| {
                tick(ops::walk500(eng, &ds.name, g, &mut rng, &mut buf))
            })?;
            out.push(timed_record(w.name(), ds, name, None, &t, size, load_secs));
        }
    }
    Ok(out)
}

/// manifest_get_par8: 8 threads of point gets; latency per operation, throughput in total.
fn par8(
    o: &RunOptions,
    eng: &dyn KvEngine,
    m: Manifest,
    ds: &Dataset,
    size: u64,
    load_secs: f64,
) -> Result<Record, RunError> {
    const THREADS: u64 = 8;
    let per = (o.scale.ops / THREADS).max(1);
    let warm = o.scale.warmup / THREADS;
    let before = eng.io_counters();
    let os_before = sys::os_read_bytes();
    let start = Instant::now();
    let hists: Vec<Result<hdrhistogram::Histogram<u64>, RunError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || {
                    let mut mo = ops::ManifestOps::new(eng, m, &ds.name, o.seed ^ (0x100 + t));
                    for _ in 0..warm {
                        mo.get()?;
                    }
                    let mut h = histogram();
                    for _ in 0..per {
                        let t0 = Instant::now();
                        mo.get()?;
                        h.saturating_record((t0.elapsed().as_nanos() as u64).max(1));
                    }
                    Ok(h)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(RunError::WrongAnswer {
                        engine: eng.name().into(),
                        workload: "manifest_get_par8".into(),
                        detail: "a reader thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    let wall = start.elapsed();
    let mut all = histogram();
    for h in hists {
        let _ = all.add(h?);
    }
    let total = per * THREADS;
    let t = Timed {
        io: measure::io_per_op(
            before,
            eng.io_counters(),
            sys::os_read_bytes().saturating_sub(os_before),
            total,
        ),
        hist: all,
        wall,
        ops: total,
    };
    let mut r = timed_record(
        "manifest_get_par8",
        ds,
        eng.name(),
        None,
        &t,
        size,
        load_secs,
    );
    r.threads = THREADS as u32;
    Ok(r)
}
