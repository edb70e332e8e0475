//! Ingest beside readers and small sync commits (issue 15 item 3), run last on the
//! beyond-the-budget manifest because they append keys: for async and sync durability
//! (the store reopened with each), 1, 4 and 8 reader threads alone and then beside one
//! writer appending new 10,000-sample shards in atomic batches; then `sync_put`. Every
//! acknowledged key is read back afterwards, after a clean reopen where the engine allows.

use aimeta_adapters::{Durability, EngineKind, KvEngine};
use aimeta_reports::{Record, Status};

use super::ingest_phase::{
    self, engine_err, warm_up, wrong, ReaderPlan, WriterPlan, MIN_READER_OPS, SAMPLES_PER_BATCH,
};
use super::measure::{io_per_op, latency};
use super::{
    base_record, enter_budget, sync_put, workload_seed, Data, Planned, Progress, RunError,
    RunOptions, Session, Variant, Workload,
};
use crate::gen::Manifest;
use crate::scale::Scale;

/// The workloads measured here, after every other one on the store.
pub(crate) const WRITING: [Workload; 4] = [
    Workload::ManifestIngestGet,
    Workload::ManifestIngestScan,
    Workload::ManifestIngestWrite,
    Workload::SyncPut,
];

/// The three records of the ingest phases.
const INGEST: [Workload; 3] = [
    Workload::ManifestIngestGet,
    Workload::ManifestIngestScan,
    Workload::ManifestIngestWrite,
];

/// The one data set the writing workloads run on.
const DATASET: &str = "manifest_beyond";

/// Whether `w` runs on the data set named `dataset`: the writing workloads only on the
/// beyond-the-budget manifest, the others wherever their family says.
pub(crate) fn runs_on_dataset(w: Workload, dataset: &str) -> bool {
    !WRITING.contains(&w) || dataset == DATASET
}

/// Reader threads of an ingest phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IngestReaders {
    /// One reader.
    R1,
    /// Four readers.
    R4,
    /// Eight readers.
    R8,
}

impl IngestReaders {
    /// Every reader count, fewest first (the order the phases run in).
    pub const ALL: [IngestReaders; 3] = [IngestReaders::R1, IngestReaders::R4, IngestReaders::R8];

    /// How many reader threads.
    pub fn count(self) -> u32 {
        match self {
            IngestReaders::R1 => 1,
            IngestReaders::R4 => 4,
            IngestReaders::R8 => 8,
        }
    }

    fn index(self) -> usize {
        match self {
            IngestReaders::R1 => 0,
            IngestReaders::R4 => 1,
            IngestReaders::R8 => 2,
        }
    }
}

/// The durability the store is reopened with for an ingest phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IngestDurability {
    /// `Durability::Async`: logged, not fsynced per commit.
    Async,
    /// `Durability::Sync`: fsynced before each commit returns.
    Sync,
}

impl IngestDurability {
    /// Both, in the order the phases run.
    pub const ALL: [IngestDurability; 2] = [IngestDurability::Async, IngestDurability::Sync];

    /// The adapters' durability mode.
    pub fn durability(self) -> Durability {
        match self {
            IngestDurability::Async => Durability::Async,
            IngestDurability::Sync => Durability::Sync,
        }
    }

    /// `async` or `sync`.
    pub fn name(self) -> &'static str {
        match self {
            IngestDurability::Async => "async",
            IngestDurability::Sync => "sync",
        }
    }

    fn index(self) -> usize {
        match self {
            IngestDurability::Async => 0,
            IngestDurability::Sync => 1,
        }
    }
}

/// Readers' variant names, by [readers][beside the writer][durability].
const READER_NAMES: [[[&str; 2]; 2]; 3] = [
    [
        ["r1_alone_async", "r1_alone_sync"],
        ["r1_writer_async", "r1_writer_sync"],
    ],
    [
        ["r4_alone_async", "r4_alone_sync"],
        ["r4_writer_async", "r4_writer_sync"],
    ],
    [
        ["r8_alone_async", "r8_alone_sync"],
        ["r8_writer_async", "r8_writer_sync"],
    ],
];

/// The writer's variant names, by [readers beside it][durability].
const WRITER_NAMES: [[&str; 2]; 3] = [
    ["r1_async", "r1_sync"],
    ["r4_async", "r4_sync"],
    ["r8_async", "r8_sync"],
];

/// The name of `Variant::Ingest { readers, writer, durability }`.
pub(crate) fn reader_variant_name(
    readers: IngestReaders,
    writer: bool,
    durability: IngestDurability,
) -> &'static str {
    READER_NAMES[readers.index()][usize::from(writer)][durability.index()]
}

/// The name of `Variant::IngestWriter { readers, durability }`.
pub(crate) fn writer_variant_name(
    readers: IngestReaders,
    durability: IngestDurability,
) -> &'static str {
    WRITER_NAMES[readers.index()][durability.index()]
}

/// The writer's batches per phase at `scale`, at least and at most: ci 2 to 20, quick 5
/// to 100, seed and above 10 to 200 (it writes on while any reader is short of its
/// operations; the bound keeps the store from growing past 2 M appended keys a phase).
fn batches(scale: &Scale) -> (u32, u32) {
    match scale.name {
        "ci" => (2, 20),
        "quick" => (5, 100),
        _ => (10, 200),
    }
}

/// `o` with another durability (what a reopen for a phase uses).
fn with_durability(o: &RunOptions, durability: Durability) -> RunOptions {
    RunOptions {
        durability,
        ..o.clone()
    }
}

/// Why PostgreSQL keeps its handle, for its records' notes.
const POSTGRES_KEPT: &str = "PostgreSQL is not reopened (its server runs outside this \
    process and a reopen would drop its table): its sessions were switched with SET \
    synchronous_commit instead";

/// Why etcd keeps its handle, for its records' notes.
pub(crate) const ETCD_KEPT: &str = "etcd is not reopened (its cluster runs outside this \
    process and a reopen would lose its store); it fsyncs every commit, its one durability";

/// Why an engine that cannot switch keeps the run's durability, for its records' notes.
const CANNOT_SWITCH: &str = "this engine is neither reopened nor switched in place (a \
    reopen would lose its store), so it was measured at the run's durability only";

/// Puts the store in durability `d`: reopened where the engine allows, switched in place
/// where it can be (PostgreSQL's sessions); false when neither is possible.
fn switch_durability(
    o: &RunOptions,
    s: &mut Session,
    d: Durability,
    reopens: bool,
) -> Result<bool, RunError> {
    if reopens {
        s.reopen(&with_durability(o, d))?;
        return Ok(true);
    }
    let engine = s.engine()?;
    engine
        .set_durability(d)
        .map_err(engine_err(engine, &s.dataset.name, "set durability"))
}

/// Runs the writing workloads of `wanted` on a loaded manifest session, after every other
/// workload, reads back everything they wrote, and returns their records.
pub(crate) fn measure_writes(
    o: &RunOptions,
    s: &mut Session,
    p: &Planned,
    wanted: &[Workload],
    progress: &dyn Progress,
) -> Result<Vec<Record>, RunError> {
    let Data::Manifest(m) = p.data else {
        return Ok(Vec::new());
    };
    let ingest: Vec<Workload> = INGEST.into_iter().filter(|w| wanted.contains(w)).collect();
    let sync = wanted.contains(&Workload::SyncPut);
    if (ingest.is_empty() && !sync) || m.keys() == 0 {
        return Ok(Vec::new());
    }
    let reopens = !s.kind().is_server();
    let mut out = Vec::new();
    let mut appended = m.shards..m.shards;
    for d in IngestDurability::ALL
        .into_iter()
        .filter(|_| !ingest.is_empty())
    {
        if !switch_durability(o, s, d.durability(), reopens)? {
            out.extend(unsupported_ingest(s, &ingest, d, o.durability));
            continue;
        }
        let od = with_durability(o, d.durability());
        for r in IngestReaders::ALL {
            out.extend(phase(&od, s, m, &ingest, r, d, None, progress)?.0);
            let (min_batches, max_batches) = batches(&o.scale);
            let writer = WriterPlan {
                first_shard: appended.end,
                min_batches,
                max_batches,
            };
            let (records, shards) = phase(&od, s, m, &ingest, r, d, Some(writer), progress)?;
            appended.end += shards;
            out.extend(records);
        }
    }
    let mut written = Vec::new();
    if sync {
        if !switch_durability(o, s, Durability::Sync, reopens)? {
            out.extend(sync_put::THREADS.map(|t| Record {
                status: Status::Unsupported,
                note: Some(format!(
                    "{CANNOT_SWITCH} ({:?}), and sync_put needs sync",
                    o.durability
                )),
                ..base_record(
                    Workload::SyncPut,
                    &s.dataset.name,
                    s.kind(),
                    Some(Variant::Threads(t)),
                )
            }));
        } else {
            let od = with_durability(o, Durability::Sync);
            let (records, w) = sync_put::measure(&od, s, progress)?;
            out.extend(records);
            written = w;
        }
    }
    // Back to the run's durability: a clean close and open before the read-back (or
    // the sessions switched back).
    switch_durability(o, s, o.durability, reopens)?;
    let engine = s.engine()?;
    let dataset = s.dataset.name.as_str();
    ingest_phase::verify_shards(engine, dataset, appended.clone())?;
    sync_put::verify(engine, dataset, &written)?;
    verify_count(engine, dataset, m, appended.len() as u64)?;
    Ok(out)
}

/// Checks the store holds the loaded keys and the appended shards under the manifest's
/// prefix, no more and no fewer.
pub(crate) fn verify_count(
    engine: &dyn KvEngine,
    dataset: &str,
    m: Manifest,
    appended_shards: u64,
) -> Result<(), RunError> {
    let want = m.keys() + appended_shards * u64::from(SAMPLES_PER_BATCH);
    let got = engine
        .count_range(Manifest::LIST_PREFIX, b"ds/laion0")
        .map_err(engine_err(engine, dataset, "counting the manifest's keys"))?;
    if got != want {
        return Err(wrong(
            engine,
            "manifest_ingest_write",
            format!(
                "the store holds {got} manifest keys; {} loaded + {appended_shards} appended \
                 shards of {SAMPLES_PER_BATCH} make {want}",
                m.keys()
            ),
        ));
    }
    Ok(())
}

/// One phase (readers `r` alone, or beside `writer`) at durability `d`, already open.
#[allow(clippy::too_many_arguments)]
fn phase(
    o: &RunOptions,
    s: &mut Session,
    m: Manifest,
    wanted: &[Workload],
    r: IngestReaders,
    d: IngestDurability,
    writer: Option<WriterPlan>,
    progress: &dyn Progress,
) -> Result<(Vec<Record>, u32), RunError> {
    let v = Variant::Ingest {
        readers: r,
        writer: writer.is_some(),
        durability: d,
    };
    let guard = enter_budget(o, s)?;
    let dataset = s.dataset.name.clone();
    let seed = workload_seed(o.seed, (Workload::ManifestIngestGet, Some(v)), &dataset);
    let threads = r.count();
    let plan = ReaderPlan {
        m,
        dataset: &dataset,
        threads,
        seed,
        ops_alone: (o.scale.ops / u64::from(threads)).max(MIN_READER_OPS),
    };
    let engine = s.engine()?;
    // As many warm-up operations as the readers run alone: a phase beside the writer
    // lasts only as long as its batches (tens of milliseconds at the seed scale), so its
    // readers would otherwise run in a cache colder than the alone phase's average, and
    // the comparison would measure the cache's warming, not the writer (the sixteenth
    // session measured 3.4 times the reads from storage per operation for that reason).
    warm_up(
        engine,
        m,
        &dataset,
        seed,
        o.scale.warmup.max(plan.ops_alone * u64::from(threads)),
    )?;
    let total = writer
        .as_ref()
        .map_or(plan.ops_alone * u64::from(threads), |w| {
            u64::from(w.min_batches)
        });
    progress.begin(
        &format!("{} {dataset} manifest_ingest {v}", s.name()),
        total,
    );
    let io_before = engine.io_counters();
    let outcome = ingest_phase::run(engine, &plan, writer.as_ref(), progress)?;
    // The engine's counters over the whole phase (the writer's too) and the reader
    // threads' own reads from storage, over every reader operation: what the readers
    // paid in misses and device reads beside the writer, against alone.
    let io = io_per_op(
        io_before,
        engine.io_counters(),
        outcome.readers_os_read_bytes,
        outcome.gets.len() + outcome.scans.len(),
    );
    progress.end();
    let size = engine
        .size_on_disk()
        .map_err(engine_err(engine, &dataset, "size on disk"))?;
    let kept = match s.kind() {
        EngineKind::Postgres => format!("; {POSTGRES_KEPT}"),
        EngineKind::Etcd | EngineKind::Etcd1 => format!("; {ETCD_KEPT}"),
        _ => String::new(),
    };
    let durability = format!(
        "the store was reopened with {} durability for these records, so the run's \
         --durability does not apply{kept}",
        d.name()
    );
    let shards = outcome.writer.as_ref().map_or(0, |w| w.shards);
    let company = match &writer {
        None => format!("alone, {} operations each", plan.ops_alone),
        Some(w) => format!(
            "beside one writer appending new shards of {SAMPLES_PER_BATCH} samples, one \
             atomic batch each, while every reader ran its {} operations (as many as alone, \
             after as long a warm-up) and the writer at least {} batches: {shards} batches, \
             at most {}",
            plan.ops_alone, w.min_batches, w.max_batches
        ),
    };
    let base = |w: Workload, v: Variant| Record {
        size_on_disk_bytes: Some(size),
        load_secs: Some(s.load_secs),
        ..base_record(w, &dataset, s.kind(), Some(v))
    };
    let mut out = Vec::new();
    for (w, h, what) in [
        (Workload::ManifestIngestGet, &outcome.gets, "point gets"),
        (
            Workload::ManifestIngestScan,
            &outcome.scans,
            "100-row range scans",
        ),
    ] {
        if wanted.contains(&w) {
            out.push(Record {
                ops: h.len(),
                threads,
                ns_per_op: latency(h),
                ops_per_sec: h.len() as f64 / outcome.wall.as_secs_f64().max(1e-9),
                note: Some(format!(
                    "{threads} reader threads, each alternating a point get of a random loaded \
                     key and a 100-row range scan from one, {company}; these are the {what}, \
                     ops_per_sec their count over the phase's wall time; io_per_op is the \
                     engine's counters over the whole phase (the writer's too) and the reader \
                     threads' own reads from storage (os_read_bytes), over all its gets and \
                     scans; {durability}"
                )),
                io_per_op: io,
                ..base(w, v)
            });
        }
    }
    if let (Some(w), true) = (
        outcome.writer,
        wanted.contains(&Workload::ManifestIngestWrite),
    ) {
        out.push(Record {
            ops: w.keys,
            threads: 1,
            ns_per_op: latency(&w.batches),
            ops_per_sec: w.keys as f64 / w.busy.as_secs_f64().max(1e-9),
            note: Some(format!(
                "one writer appending {shards} new shards beside {threads} readers (until each \
                 had run its operations), each shard one atomic write_batch of \
                 {SAMPLES_PER_BATCH} samples; ops counts keys, \
                 ops_per_sec keys per second inside write_batch, ns_per_op is per batch; every \
                 acknowledged key was read back afterwards; {durability}"
            )),
            ..base(
                Workload::ManifestIngestWrite,
                Variant::IngestWriter {
                    readers: r,
                    durability: d,
                },
            )
        });
    }
    super::cgroup::mark_over_budget(guard.as_ref(), &mut out);
    Ok((out, shards))
}

/// The records of durability `d` for an engine that cannot be reopened with it.
fn unsupported_ingest(
    s: &Session,
    wanted: &[Workload],
    d: IngestDurability,
    run: Durability,
) -> Vec<Record> {
    let caps = s.engine().map(|e| e.capabilities());
    let note = caps
        .ok()
        .and_then(|caps| super::durability_not_offered(s.kind(), caps.durability, d.durability()))
        .unwrap_or_else(|| format!("{CANNOT_SWITCH} ({run:?}), not at {} durability", d.name()));
    let mut out = Vec::new();
    for r in IngestReaders::ALL {
        let mut measured: Vec<(Workload, Variant)> = Vec::new();
        for w in [Workload::ManifestIngestGet, Workload::ManifestIngestScan] {
            for writer in [false, true] {
                let v = Variant::Ingest {
                    readers: r,
                    writer,
                    durability: d,
                };
                measured.push((w, v));
            }
        }
        let v = Variant::IngestWriter {
            readers: r,
            durability: d,
        };
        measured.push((Workload::ManifestIngestWrite, v));
        out.extend(
            measured
                .into_iter()
                .filter(|(w, _)| wanted.contains(w))
                .map(|(w, v)| Record {
                    status: Status::Unsupported,
                    note: Some(note.clone()),
                    ..base_record(w, &s.dataset.name, s.kind(), Some(v))
                }),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use aimeta_adapters::{open, CacheBudget, OpenOptions};

    use super::*;
    use crate::run::NoProgress;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn every_ingest_variant_is_listed_and_named_as_the_results_spell_it() {
        let mut names = HashSet::new();
        for r in IngestReaders::ALL {
            for d in IngestDurability::ALL {
                let n = r.count();
                let d_name = d.name();
                for (writer, with) in [(false, "alone"), (true, "writer")] {
                    let v = Variant::Ingest {
                        readers: r,
                        writer,
                        durability: d,
                    };
                    assert_eq!(v.name(), format!("r{n}_{with}_{d_name}"));
                    assert_eq!(Variant::parse(v.name()).ok(), Some(v));
                    assert!(Variant::ALL.contains(&v), "{v:?} missing from ALL");
                    names.insert(v.name());
                }
                let v = Variant::IngestWriter {
                    readers: r,
                    durability: d,
                };
                assert_eq!(v.name(), format!("r{n}_{d_name}"));
                assert_eq!(Variant::parse(v.name()).ok(), Some(v));
                assert!(Variant::ALL.contains(&v), "{v:?} missing from ALL");
                names.insert(v.name());
            }
        }
        assert_eq!(names.len(), 18);
    }

    #[test]
    fn the_writing_workloads_run_only_beyond_the_budget_and_last() {
        for w in WRITING {
            assert!(runs_on_dataset(w, "manifest_beyond"));
            assert!(!runs_on_dataset(w, "manifest_fits"), "{w:?}");
            let at = Workload::ALL.iter().position(|x| *x == w);
            let cas = Workload::ALL
                .iter()
                .position(|x| *x == Workload::ManifestCas);
            assert!(at > cas, "{w:?} runs before manifest_cas");
        }
        assert!(runs_on_dataset(Workload::ManifestGet, "manifest_fits"));
        assert_eq!(
            Workload::parse("manifest_ingest_write").ok(),
            Some(Workload::ManifestIngestWrite)
        );
        assert_eq!(Workload::parse("sync_put").ok(), Some(Workload::SyncPut));
    }

    #[test]
    fn no_two_readers_of_any_phase_share_a_seed() {
        let mut seen = HashSet::new();
        for v in Variant::ALL
            .into_iter()
            .filter(|v| matches!(v, Variant::Ingest { .. }))
        {
            let seed = workload_seed(42, (Workload::ManifestIngestGet, Some(v)), DATASET);
            for t in 0..8 {
                assert!(
                    seen.insert(ingest_phase::reader_seed(seed, t)),
                    "{v:?} reader {t}"
                );
            }
        }
        assert_eq!(seen.len(), 12 * 8);
    }

    fn small_store(
        dir: &std::path::Path,
        m: Manifest,
    ) -> Result<Box<dyn KvEngine>, Box<dyn std::error::Error>> {
        let options = OpenOptions {
            cache: CacheBudget::mib(8),
            durability: Durability::Async,
            ..OpenOptions::default()
        };
        let engine = open(EngineKind::Aimeta, dir, &options)?;
        engine.bulk_load(&mut m.pairs())?;
        Ok(engine)
    }

    #[test]
    fn a_phase_beside_the_writer_appends_shards_that_read_back_and_a_lost_key_is_caught(
    ) -> TestResult {
        let dir = tempfile::tempdir()?;
        let m = Manifest {
            shards: 3,
            per_shard: 400,
        };
        let engine = small_store(dir.path(), m)?;
        let plan = ReaderPlan {
            m,
            dataset: "test",
            threads: 2,
            seed: 7,
            ops_alone: 60,
        };
        let alone = ingest_phase::run(engine.as_ref(), &plan, None, &NoProgress)?;
        assert_eq!((alone.gets.len(), alone.scans.len()), (60, 60));
        assert!(alone.writer.is_none());
        let writer = WriterPlan {
            first_shard: m.shards,
            min_batches: 2,
            max_batches: 2,
        };
        let beside = ingest_phase::run(engine.as_ref(), &plan, Some(&writer), &NoProgress)?;
        let w = beside.writer.ok_or("no writer outcome")?;
        assert_eq!(w.keys, 2 * u64::from(SAMPLES_PER_BATCH));
        assert_eq!((w.batches.len(), w.shards), (2, 2));
        // As many operations as alone at least, each reader until the writer was done.
        assert!(beside.gets.len() >= 60, "{}", beside.gets.len());
        ingest_phase::verify_shards(engine.as_ref(), "test", 3..5)?;
        verify_count(engine.as_ref(), "test", m, 2)?;
        // The checks can fail: one acknowledged key gone is a wrong answer.
        engine.delete(&Manifest::key(4, 9_999))?;
        let lost = ingest_phase::verify_shards(engine.as_ref(), "test", 3..5);
        assert!(
            matches!(&lost, Err(RunError::WrongAnswer { detail, .. }) if detail.contains("shard 4 holds 9999")),
            "{lost:?}"
        );
        let counted = verify_count(engine.as_ref(), "test", m, 2);
        assert!(
            matches!(counted, Err(RunError::WrongAnswer { .. })),
            "{counted:?}"
        );
        Ok(())
    }

    #[test]
    fn a_reader_refuses_a_wrong_value() -> TestResult {
        let dir = tempfile::tempdir()?;
        // One key: every get and scan reads it.
        let m = Manifest {
            shards: 1,
            per_shard: 1,
        };
        let engine = small_store(dir.path(), m)?;
        warm_up(engine.as_ref(), m, "test", 1, 4)?;
        let mut value = Manifest::value(0, 0);
        value[20] ^= 1;
        engine.put(&Manifest::key(0, 0), &value)?;
        let e = warm_up(engine.as_ref(), m, "test", 1, 1);
        assert!(
            matches!(&e, Err(RunError::WrongAnswer { workload, .. }) if workload == "manifest_ingest_get"),
            "{e:?}"
        );
        Ok(())
    }
}
