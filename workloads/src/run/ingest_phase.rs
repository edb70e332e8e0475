//! One ingest phase on a loaded manifest: reader threads, each alternating a point get of
//! a random loaded key and a 100-row range scan from one, either alone for a fixed number
//! of operations or beside one writer appending new shards, until the writer is done.
//! Only engine calls are timed; every answer is checked after its timer stops.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use aimeta_adapters::{BatchOp, KvEngine};
use hdrhistogram::Histogram;
use rand::RngExt as _;

use super::measure::histogram;
pub(crate) use super::ops::{engine_err, wrong};
use super::{sys, Progress, RunError};
use crate::gen::{derive_seed, seeded, Manifest, Rng};

/// Bytes of a manifest value (the arrays below hold `Manifest::value`'s, so a change there
/// fails to compile here).
const VALUE_LEN: usize = 24;

/// Rows of each range scan.
const SCAN_ROWS: u64 = 100;

/// Operations every reader runs at least, alone or beside the writer.
pub(crate) const MIN_READER_OPS: u64 = 50;

/// Samples in each of the writer's batches: one whole new shard, as LAION's shards are.
pub(crate) const SAMPLES_PER_BATCH: u32 = 10_000;

/// Joins scoped threads; a panicking thread becomes an error (as in manifest_get_par8).
pub(crate) fn join_all<T>(
    engine: &dyn KvEngine,
    workload: &str,
    handles: Vec<std::thread::ScopedJoinHandle<'_, Result<T, RunError>>>,
) -> Result<Vec<T>, RunError> {
    handles
        .into_iter()
        .map(|h| {
            h.join().unwrap_or_else(|_| {
                Err(wrong(
                    engine,
                    workload,
                    "a worker thread panicked".to_string(),
                ))
            })
        })
        .collect()
}

/// Records `d` into `h` (at least 1 ns: the histogram starts there).
pub(crate) fn record(h: &mut Histogram<u64>, d: Duration) {
    h.saturating_record((d.as_nanos() as u64).max(1));
}

/// One reader's state: its generator, buffers and histograms.
struct Reader<'a> {
    engine: &'a dyn KvEngine,
    m: Manifest,
    dataset: &'a str,
    rng: Rng,
    buf: Vec<u8>,
    last: Vec<u8>,
    gets: Histogram<u64>,
    scans: Histogram<u64>,
}

impl<'a> Reader<'a> {
    fn new(engine: &'a dyn KvEngine, m: Manifest, dataset: &'a str, seed: u64) -> Self {
        Reader {
            engine,
            m,
            dataset,
            rng: seeded(seed),
            buf: Vec::new(),
            last: Vec::new(),
            gets: histogram(),
            scans: histogram(),
        }
    }

    /// Operation `i`: a get when even, a scan when odd.
    fn op(&mut self, i: u64) -> Result<(), RunError> {
        if i.is_multiple_of(2) {
            self.get()
        } else {
            self.scan()
        }
    }

    /// A point get of a random loaded key. manifest_cas, which runs before on this store,
    /// rewrites the first 8 bytes of the values it swaps; the other 16 are still the
    /// generator's, so they are what is checked.
    fn get(&mut self) -> Result<(), RunError> {
        let n = self.rng.random_range(0..self.m.keys());
        let key = self.m.nth_key(n);
        let per = u64::from(self.m.per_shard);
        let want = Manifest::value((n / per) as u32, (n % per) as u32);
        let start = Instant::now();
        let found = self.engine.get(&key, &mut self.buf);
        let took = start.elapsed();
        let found = found.map_err(engine_err(self.engine, self.dataset, "manifest_ingest_get"))?;
        record(&mut self.gets, took);
        if !found || self.buf.len() != VALUE_LEN || self.buf[8..] != want[8..] {
            return Err(wrong(
                self.engine,
                "manifest_ingest_get",
                format!(
                    "{}: found {found}, value {:?}",
                    String::from_utf8_lossy(&key),
                    self.buf
                ),
            ));
        }
        Ok(())
    }

    /// A range scan of up to 100 rows from a random loaded key, never reaching the
    /// appended shards (which sort after every loaded key): its first and last keys, its
    /// row count and its value bytes are checked.
    fn scan(&mut self) -> Result<(), RunError> {
        let keys = self.m.keys();
        let rows = SCAN_ROWS.min(keys);
        let n = self.rng.random_range(0..=keys - rows);
        let start_key = self.m.nth_key(n);
        let want_last = self.m.nth_key(n + rows - 1);
        let (mut count, mut bytes, mut first_ok) = (0usize, 0usize, false);
        let last = &mut self.last;
        let start = Instant::now();
        let got = self
            .engine
            .scan_range(&start_key, rows as usize, &mut |k, v| {
                if count == 0 {
                    first_ok = k == start_key.as_slice();
                }
                count += 1;
                bytes += v.len();
                last.clear();
                last.extend_from_slice(k);
            });
        let took = start.elapsed();
        let got = got.map_err(engine_err(
            self.engine,
            self.dataset,
            "manifest_ingest_scan",
        ))?;
        record(&mut self.scans, took);
        let rows = rows as usize;
        if got != rows || count != rows || bytes != rows * VALUE_LEN || !first_ok {
            return Err(wrong(
                self.engine,
                "manifest_ingest_scan",
                format!(
                    "from key #{n}: {got} rows ({count} visited, {bytes} value bytes, first \
                     key right: {first_ok}); expected {rows}"
                ),
            ));
        }
        if *last != want_last {
            return Err(wrong(
                self.engine,
                "manifest_ingest_scan",
                format!(
                    "from key #{n}: last row {}, expected {}",
                    String::from_utf8_lossy(last),
                    String::from_utf8_lossy(&want_last)
                ),
            ));
        }
        Ok(())
    }
}

/// The readers of one phase.
pub(crate) struct ReaderPlan<'a> {
    /// The loaded manifest (the keys readers draw from).
    pub m: Manifest,
    /// Its data set's name.
    pub dataset: &'a str,
    /// Reader threads.
    pub threads: u32,
    /// The phase's seed; reader `t` draws from `derive_seed(seed, [t])`.
    pub seed: u64,
    /// Operations per reader, alone or beside the writer (beside it, more if the writer
    /// has not written its least batches by then).
    pub ops_alone: u64,
}

/// The writer of one phase: new shards from `first_shard` upward, one batch each, at
/// least `min_batches` and for as long as any reader has not run its `ops_alone`
/// operations, up to `max_batches`.
pub(crate) struct WriterPlan {
    /// The first new shard's id (above every loaded or earlier appended shard).
    pub first_shard: u32,
    /// Batches written whatever the readers do, one shard of `SAMPLES_PER_BATCH` each.
    pub min_batches: u32,
    /// Batches written at most, however long the readers take (a bound on the store's
    /// growth).
    pub max_batches: u32,
}

/// What the writer did.
pub(crate) struct WriterOutcome {
    /// Latency of each batch.
    pub batches: Histogram<u64>,
    /// Keys written and acknowledged.
    pub keys: u64,
    /// Time spent inside `write_batch`.
    pub busy: Duration,
    /// Batches (shards) written: the appended shards are `first_shard..first_shard + this`.
    pub shards: u32,
}

/// What one phase measured.
pub(crate) struct Outcome {
    /// Every reader's gets.
    pub gets: Histogram<u64>,
    /// Every reader's scans.
    pub scans: Histogram<u64>,
    /// From the first thread's start to the last one's end.
    pub wall: Duration,
    /// The writer's outcome, when there was one.
    pub writer: Option<WriterOutcome>,
    /// Bytes the reader threads themselves caused to be read from storage (the writer's
    /// and any background thread's reads are not in it).
    pub readers_os_read_bytes: u64,
}

/// The seed of reader `thread` of a phase seeded `seed`.
pub(crate) fn reader_seed(seed: u64, thread: u32) -> u64 {
    derive_seed(seed, &[b"reader", &thread.to_le_bytes()])
}

/// `ops` untimed reader operations, so that each phase starts from a warm cache as the
/// runner's other measurements do.
pub(crate) fn warm_up(
    engine: &dyn KvEngine,
    m: Manifest,
    dataset: &str,
    seed: u64,
    ops: u64,
) -> Result<(), RunError> {
    let mut r = Reader::new(engine, m, dataset, derive_seed(seed, &[b"warm-up"]));
    (0..ops).try_for_each(|i| r.op(i))
}

/// Sets a flag when dropped, so that readers stop even when the writer fails or panics.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Shard `shard`'s batch: built outside the writer's timer, one batch at a time, so that
/// a long phase holds one in memory, not all of them.
fn build_batch(shard: u32, into: &mut Vec<(Vec<u8>, [u8; VALUE_LEN])>) {
    into.clear();
    into.extend(
        (0..SAMPLES_PER_BATCH).map(|i| (Manifest::key(shard, i), Manifest::value(shard, i))),
    );
}

/// Counts a reader out of the readers still short of their operations when dropped (on
/// an error too, so that the writer never waits for a reader that stopped).
struct ReaderDone<'a> {
    left: &'a AtomicU32,
    counted: bool,
}

impl ReaderDone<'_> {
    fn count(&mut self) {
        if !self.counted {
            self.counted = true;
            self.left.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for ReaderDone<'_> {
    fn drop(&mut self) {
        self.count();
    }
}

/// Runs one phase: the readers alone, or beside the writer when `writer` is given. Each
/// reader runs its `ops_alone` operations either way, so that the two phases compare the
/// same number of operations from the same warm-up; beside the writer it goes on until
/// the writer has written its `min_batches`, and the writer goes on until every reader is
/// done (phases of a few batches lasted tens of milliseconds at the seed scale: too few
/// operations for a p99, taken just after the warm-up).
pub(crate) fn run(
    engine: &dyn KvEngine,
    plan: &ReaderPlan<'_>,
    writer: Option<&WriterPlan>,
    progress: &dyn Progress,
) -> Result<Outcome, RunError> {
    let min_written = AtomicBool::new(writer.is_none());
    let readers_left = AtomicU32::new(plan.threads);
    let beside = writer.is_some();
    let dataset = plan.dataset;
    let start = Instant::now();
    let (readers, written) = std::thread::scope(|scope| {
        let (min_written, readers_left) = (&min_written, &readers_left);
        let reader_handles: Vec<_> = (0..plan.threads)
            .map(|t| {
                let seed = reader_seed(plan.seed, t);
                let (m, alone_ops) = (plan.m, plan.ops_alone);
                scope.spawn(move || {
                    let mut done = ReaderDone {
                        left: readers_left,
                        counted: false,
                    };
                    let mut r = Reader::new(engine, m, dataset, seed);
                    let read_before = sys::thread_os_read_bytes();
                    let mut i = 0;
                    while i < alone_ops || !min_written.load(Ordering::Acquire) {
                        r.op(i)?;
                        i += 1;
                        if i == alone_ops {
                            done.count();
                        }
                    }
                    done.count();
                    if !beside {
                        progress.advance(i);
                    }
                    let read = sys::thread_os_read_bytes().saturating_sub(read_before);
                    Ok((r.gets, r.scans, read))
                })
            })
            .collect();
        let writer_handle = writer.map(|w| {
            scope.spawn(move || {
                let _finished = SetOnDrop(min_written);
                write_all(engine, dataset, w, min_written, readers_left, progress)
            })
        });
        let written = writer_handle.map(|h| join_all(engine, "manifest_ingest_write", vec![h]));
        (
            join_all(engine, "manifest_ingest_get", reader_handles),
            written,
        )
    });
    let wall = start.elapsed();
    let writer = match written {
        Some(w) => w?.pop(),
        None => None,
    };
    let (mut gets, mut scans, mut readers_os_read_bytes) = (histogram(), histogram(), 0);
    for (g, s, read) in readers? {
        // Same bounds on both sides: adding cannot fail.
        let _ = gets.add(g);
        let _ = scans.add(s);
        readers_os_read_bytes += read;
    }
    Ok(Outcome {
        gets,
        scans,
        wall,
        writer,
        readers_os_read_bytes,
    })
}

/// The writer: every batch through one atomic `write_batch`, only that call timed; at
/// least `plan.min_batches` (then it sets `min_written`), and on while any reader is
/// short of its operations, up to `plan.max_batches`.
fn write_all(
    engine: &dyn KvEngine,
    dataset: &str,
    plan: &WriterPlan,
    min_written: &AtomicBool,
    readers_left: &AtomicU32,
    progress: &dyn Progress,
) -> Result<WriterOutcome, RunError> {
    let mut out = WriterOutcome {
        batches: histogram(),
        keys: 0,
        busy: Duration::ZERO,
        shards: 0,
    };
    let mut batch = Vec::with_capacity(SAMPLES_PER_BATCH as usize);
    while out.shards < plan.max_batches {
        if out.shards >= plan.min_batches {
            min_written.store(true, Ordering::Release);
            if readers_left.load(Ordering::Acquire) == 0 {
                break;
            }
        }
        build_batch(plan.first_shard + out.shards, &mut batch);
        let ops: Vec<BatchOp<'_>> = batch
            .iter()
            .map(|(key, value)| BatchOp::Put { key, value })
            .collect();
        let start = Instant::now();
        let r = engine.write_batch(&ops);
        let took = start.elapsed();
        r.map_err(engine_err(engine, dataset, "manifest_ingest_write"))?;
        record(&mut out.batches, took);
        out.keys += ops.len() as u64;
        out.busy += took;
        out.shards += 1;
        progress.advance(1);
    }
    Ok(out)
}

/// Reads back every appended shard: each key with its value, in order, and no other key
/// under its prefix. The store's key count is checked by the caller.
pub(crate) fn verify_shards(
    engine: &dyn KvEngine,
    dataset: &str,
    shards: std::ops::Range<u32>,
) -> Result<(), RunError> {
    for s in shards {
        let mut i = 0u32;
        let mut bad: Option<String> = None;
        let n = engine
            .scan_prefix(
                &Manifest::shard_prefix(s),
                SAMPLES_PER_BATCH as usize + 1,
                &mut |k, v| {
                    if bad.is_none()
                        && (k != Manifest::key(s, i).as_slice()
                            || v != Manifest::value(s, i).as_slice())
                    {
                        bad = Some(format!(
                            "row {i} of shard {s} is {} with value {v:?}",
                            String::from_utf8_lossy(k)
                        ));
                    }
                    i += 1;
                },
            )
            .map_err(engine_err(
                engine,
                dataset,
                "reading back the ingested shards",
            ))?;
        if let Some(detail) = bad {
            return Err(wrong(engine, "manifest_ingest_write", detail));
        }
        if n != SAMPLES_PER_BATCH as usize {
            return Err(wrong(
                engine,
                "manifest_ingest_write",
                format!("appended shard {s} holds {n} keys; {SAMPLES_PER_BATCH} were acknowledged"),
            ));
        }
    }
    Ok(())
}
