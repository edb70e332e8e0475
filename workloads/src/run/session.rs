//! A session: one engine loaded with one data set, ready to run that data set's workloads
//! operation by operation. The runner times a fixed number of operations per workload;
//! the criterion bench times as many as criterion asks for; both record every latency
//! into the same per-(workload, variant) histograms that become results records.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use aimeta_adapters::{
    aimeta::AimetaEngine, open, CacheBudget, EngineKind, KvEngine, LpmMethod, OpenOptions,
};
use aimeta_reports::{Dataset, Latency, Record, Status};

use super::ops::{self, ManifestOps};
use super::{
    BudgetMode, Data, NotLoaded, Planned, Progress, RunError, RunOptions, ThreadCount, Variant,
    Workload,
};
use crate::alloc_count;
use crate::device::DeviceProbe;
use crate::gen::{derive_seed, seeded};

mod op_state;
mod timing;

use op_state::{OpState, QueryLayout, CHAIN_QUERIES};
use timing::Tally;

/// A workload in one of its variants (None: its one form): what a session keeps state,
/// histograms and a seed for.
pub type Measured = (Workload, Option<Variant>);

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
        memory_limit_bytes: (o.budget_mode == BudgetMode::Cgroup)
            .then_some(o.scale.budget_bytes + super::CGROUP_OVERHEAD_BYTES),
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
    // Every engine alike: glibc's per-thread arenas bounded before the first opens.
    crate::malloc_arenas::bound_malloc_arenas();
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
