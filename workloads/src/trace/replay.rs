//! The replay itself: each tenant's requests against one engine, in arrival order, with
//! only the engine's calls timed. Per request, as a serving system's prefix cache does:
//! find the longest cached prefix of the request's chain (one longest-prefix lookup on
//! path keys; point-get probes or a bisect on chained keys), insert the missing blocks as
//! one write batch, and delete the blocks the cache model evicted as another. Keys,
//! values and the model's bookkeeping are built between the timed calls.
//!
//! Every lookup's answer is checked against the model's: a replay whose hits differ is
//! an error, not a measurement.

use std::time::{Duration, Instant};

use aimeta_adapters::{BatchOp, IoCounters, KvEngine, LpmMethod};
use hdrhistogram::Histogram;

use super::keys::{path_root, push_path_segment, ChainedKey, PATH_SEGMENT_LEN};
use super::schedule::{Arrival, Schedule};
use super::timing::{Clock, ReplayOptions};
use crate::histogram::histogram;

/// How the index's keys are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyDesign {
    /// `kv/<model>/<b0>/<b1>/...`: a block's key is its chain.
    Path,
    /// A 32-byte hash of the parent's key and the block id.
    Chained,
}

/// A key design with the lookup that finds a request's longest cached prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceMethod {
    /// Path keys, the engine's own longest-prefix lookup.
    PathNative,
    /// Path keys, the engine's own lookup stopping at a '/' boundary.
    PathNativeBoundary,
    /// Path keys, the predecessor-seek emulation.
    PathPredecessorSeek,
    /// Path keys, bisecting over the query's '/' positions with point gets.
    PathBisect,
    /// Chained keys, point gets block by block until the first miss.
    ChainedProbe,
    /// Chained keys, bisecting over the chain with point gets (valid: the cached set is
    /// prefix-closed).
    ChainedBisect,
}

impl TraceMethod {
    /// Every method.
    pub const ALL: [TraceMethod; 6] = [
        TraceMethod::PathNative,
        TraceMethod::PathNativeBoundary,
        TraceMethod::PathPredecessorSeek,
        TraceMethod::PathBisect,
        TraceMethod::ChainedProbe,
        TraceMethod::ChainedBisect,
    ];

    /// The method's name in results (the record's variant).
    pub fn name(self) -> &'static str {
        match self {
            TraceMethod::PathNative => "path_native",
            TraceMethod::PathNativeBoundary => "path_native_boundary",
            TraceMethod::PathPredecessorSeek => "path_predecessor_seek",
            TraceMethod::PathBisect => "path_bisect",
            TraceMethod::ChainedProbe => "chained_probe",
            TraceMethod::ChainedBisect => "chained_bisect",
        }
    }

    /// The key design it runs on.
    pub fn design(self) -> KeyDesign {
        match self {
            TraceMethod::ChainedProbe | TraceMethod::ChainedBisect => KeyDesign::Chained,
            _ => KeyDesign::Path,
        }
    }

    /// The adapter's longest-prefix method of a path-key lookup (None for chained keys).
    pub fn lpm_method(self) -> Option<LpmMethod> {
        match self {
            TraceMethod::PathNative => Some(LpmMethod::Native),
            TraceMethod::PathNativeBoundary => {
                Some(LpmMethod::NativeAtBoundary { delimiter: b'/' })
            }
            TraceMethod::PathPredecessorSeek => Some(LpmMethod::PredecessorSeek),
            TraceMethod::PathBisect => Some(LpmMethod::Bisect { delimiter: b'/' }),
            TraceMethod::ChainedProbe | TraceMethod::ChainedBisect => None,
        }
    }
}

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The engine failed a call.
    #[error("{step}: {source}")]
    Engine {
        /// The call: "prepare", "lookup", "insert batch", "evict batch".
        step: &'static str,
        /// The adapter's error.
        #[source]
        source: aimeta_adapters::Error,
    },
    /// A lookup found another prefix than the cache model: the engine lost or invented
    /// a block.
    #[error("{method}: tenant {tenant}'s request {request} found {engine_hits} cached blocks, the cache model {model_hits}")]
    WrongHits {
        /// The lookup.
        method: &'static str,
        /// The tenant.
        tenant: u32,
        /// The request's index in the trace.
        request: u32,
        /// Blocks the engine's lookup found.
        engine_hits: usize,
        /// Blocks the model says are cached.
        model_hits: usize,
    },
    /// A lookup returned the value of another block than its answer.
    #[error(
        "{method}: tenant {tenant}'s request {request} got a value that is not block {block}'s"
    )]
    WrongValue {
        /// The lookup.
        method: &'static str,
        /// The tenant.
        tenant: u32,
        /// The request's index in the trace.
        request: u32,
        /// The block whose value was expected.
        block: u32,
    },
    /// A client thread panicked (a bug in the harness or an adapter).
    #[error("a replay thread panicked")]
    ThreadPanicked,
}

fn engine_error(step: &'static str) -> impl FnOnce(aimeta_adapters::Error) -> ReplayError {
    move |source| ReplayError::Engine { step, source }
}

/// Bytes of a block's value: its location in the KV-cache pool.
pub const BLOCK_VALUE_LEN: usize = 40;

/// The value stored for `block` of `tenant`: a 40-byte block location (tenant, block,
/// offset and length in the pool, device, generation), as an index entry carries.
pub fn block_value(tenant: u32, block: u32) -> [u8; BLOCK_VALUE_LEN] {
    // 512 tokens of a 70B model's KV cache in fp16: 80 layers x 2 x 8 KV heads x 128 dims
    // x 2 bytes x 512 tokens = 160 MiB.
    const BLOCK_BYTES: u64 = 160 << 20;
    let mut v = [0u8; BLOCK_VALUE_LEN];
    v[0..4].copy_from_slice(&tenant.to_le_bytes());
    v[4..8].copy_from_slice(&block.to_le_bytes());
    v[8..16].copy_from_slice(&(u64::from(block) * BLOCK_BYTES).to_le_bytes());
    v[16..24].copy_from_slice(&BLOCK_BYTES.to_le_bytes());
    v[24..32].copy_from_slice(&u64::from(tenant % 8).to_le_bytes());
    v[32..40].copy_from_slice(&1u64.to_le_bytes());
    v
}

/// Writes what the index holds before the first request: for path keys, `kv` and each
/// tenant's model entry `kv/<model>` (so every query's '/'-prefixes are prefix-closed);
/// nothing for chained keys.
pub fn prepare(
    engine: &dyn KvEngine,
    schedule: &Schedule,
    design: KeyDesign,
) -> Result<(), ReplayError> {
    if design == KeyDesign::Chained {
        return Ok(());
    }
    let roots: Vec<Vec<u8>> = (0..schedule.tenants)
        .map(|t| path_root(&Schedule::model_name(t)))
        .collect();
    let mut ops = vec![BatchOp::Put {
        key: b"kv",
        value: b"models",
    }];
    ops.extend(roots.iter().map(|key| BatchOp::Put {
        key,
        value: b"model",
    }));
    engine.write_batch(&ops).map_err(engine_error("prepare"))
}

/// The longest key the replay writes with `design`.
pub fn longest_key(schedule: &Schedule, design: KeyDesign) -> usize {
    match design {
        KeyDesign::Path => {
            path_root(&Schedule::model_name(schedule.tenants.saturating_sub(1))).len()
                + PATH_SEGMENT_LEN * schedule.longest_chain
        }
        KeyDesign::Chained => std::mem::size_of::<ChainedKey>(),
    }
}

/// What one replay measured.
#[derive(Debug, Clone)]
pub struct ReplayOutcome {
    /// Lookup latencies.
    pub lookup: Histogram<u64>,
    /// Insert-batch latencies (requests that inserted something).
    pub insert: Histogram<u64>,
    /// Evict-batch latencies (requests that evicted something).
    pub evict: Histogram<u64>,
    /// Per-request totals (from the intended start in open-loop replays).
    pub request: Histogram<u64>,
    /// Blocks the lookups found cached.
    pub hits: u64,
    /// Blocks inserted.
    pub inserted: u64,
    /// Blocks evicted.
    pub evicted: u64,
    /// Requests replayed.
    pub requests: u64,
    /// The busiest thread's time inside engine calls.
    pub busy: Duration,
    /// Wall time of the whole replay, harness work included.
    pub wall: Duration,
    /// The engine's counters summed over the lookups only (single-threaded replays of
    /// engines that count).
    pub lookup_io: Option<IoCounters>,
}

impl ReplayOutcome {
    /// Nothing measured yet; `count_io`: sum the lookups' counters.
    fn empty(count_io: bool) -> ReplayOutcome {
        ReplayOutcome {
            lookup: histogram(),
            insert: histogram(),
            evict: histogram(),
            request: histogram(),
            hits: 0,
            inserted: 0,
            evicted: 0,
            requests: 0,
            busy: Duration::ZERO,
            wall: Duration::ZERO,
            lookup_io: count_io.then(IoCounters::default),
        }
    }
}

/// One tenant as a client thread serves it.
struct Tenant {
    id: u32,
    root: Vec<u8>,
    chained: Vec<ChainedKey>,
}

/// Reusable buffers of a client thread.
#[derive(Default)]
struct Buffers {
    query: Vec<u8>,
    value: Vec<u8>,
    values: Vec<[u8; BLOCK_VALUE_LEN]>,
    evicted_keys: Vec<Vec<u8>>,
    chain: Vec<u32>,
}

/// Replays `schedule` on `engine` (already `prepare`d) with `method`. `advance` is
/// called with the number of requests done, now and then.
pub fn replay(
    engine: &dyn KvEngine,
    schedule: &Schedule,
    method: TraceMethod,
    options: &ReplayOptions,
    advance: &(dyn Fn(u64) + Sync),
) -> Result<ReplayOutcome, ReplayError> {
    let inputs = ReplayInputs::new(schedule, method, options.threads);
    replay_with(engine, schedule, method, inputs, options, advance)
}

/// What each client thread of a replay replays: its tenants' arrivals and, for chained
/// keys, its tenants' precomputed keys (32 bytes per block: 93 MB at 16 tenants). Built
/// before a replay in a memory cgroup enters it, as every workload's queries are: the
/// budget is the engine's, not the harness's.
pub struct ReplayInputs {
    per_thread: Vec<(Vec<Arrival>, Vec<Tenant>)>,
}

impl ReplayInputs {
    /// The inputs of `threads` client threads replaying `schedule` by `method`.
    pub fn new(schedule: &Schedule, method: TraceMethod, threads: u32) -> ReplayInputs {
        let threads = threads.max(1);
        let per_thread = (0..threads)
            .map(|thread| {
                let mine: Vec<Arrival> = schedule
                    .arrivals
                    .iter()
                    .copied()
                    .filter(|a| a.tenant % threads == thread)
                    .collect();
                let tenants: Vec<Tenant> = (0..schedule.tenants)
                    .map(|id| Tenant {
                        id,
                        root: path_root(&Schedule::model_name(id)),
                        chained: if method.design() == KeyDesign::Chained && id % threads == thread
                        {
                            schedule.chained_keys(id)
                        } else {
                            Vec::new()
                        },
                    })
                    .collect();
                (mine, tenants)
            })
            .collect();
        ReplayInputs { per_thread }
    }
}

/// [`replay`] from inputs built beforehand (see [`ReplayInputs`]): as many client
/// threads as the inputs were built for.
pub fn replay_with(
    engine: &dyn KvEngine,
    schedule: &Schedule,
    method: TraceMethod,
    inputs: ReplayInputs,
    options: &ReplayOptions,
    advance: &(dyn Fn(u64) + Sync),
) -> Result<ReplayOutcome, ReplayError> {
    let threads = inputs.per_thread.len().max(1) as u32;
    let clock = Clock::start(schedule, options);
    let count_io = threads == 1 && engine.capabilities().io_counters;
    let outcomes: Vec<Result<ReplayOutcome, ReplayError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = inputs
            .per_thread
            .into_iter()
            .map(|(mine, tenants)| {
                let clock = &clock;
                scope.spawn(move || {
                    client(
                        engine, schedule, method, clock, &mine, &tenants, count_io, advance,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(ReplayError::ThreadPanicked)))
            .collect()
    });
    let wall = clock.elapsed();
    let mut total = ReplayOutcome {
        wall,
        ..ReplayOutcome::empty(false)
    };
    for outcome in outcomes {
        let o = outcome?;
        // Histograms of one configuration always add up.
        let _ = total.lookup.add(&o.lookup);
        let _ = total.insert.add(&o.insert);
        let _ = total.evict.add(&o.evict);
        let _ = total.request.add(&o.request);
        total.hits += o.hits;
        total.inserted += o.inserted;
        total.evicted += o.evicted;
        total.requests += o.requests;
        total.busy = total.busy.max(o.busy);
        total.lookup_io = total.lookup_io.or(o.lookup_io);
    }
    Ok(total)
}

/// One client thread: its tenants' requests in arrival order.
#[allow(clippy::too_many_arguments)]
fn client(
    engine: &dyn KvEngine,
    schedule: &Schedule,
    method: TraceMethod,
    clock: &Clock,
    arrivals: &[Arrival],
    tenants: &[Tenant],
    count_io: bool,
    advance: &(dyn Fn(u64) + Sync),
) -> Result<ReplayOutcome, ReplayError> {
    let mut out = ReplayOutcome::empty(count_io);
    let mut buffers = Buffers::default();
    let record = |h: &mut Histogram<u64>, d: Duration| {
        h.saturating_record((d.as_nanos() as u64).max(1));
    };
    for (done, arrival) in arrivals.iter().enumerate() {
        let planned = &schedule.requests[arrival.request as usize];
        let tenant = &tenants[arrival.tenant as usize];
        let chain = &planned.chain;
        if method.design() == KeyDesign::Path {
            buffers.query.clear();
            buffers.query.extend_from_slice(&tenant.root);
            for &block in chain {
                push_path_segment(&mut buffers.query, block);
            }
        }
        let intended = clock.wait_for(arrival);
        let before = if count_io { engine.io_counters() } else { None };
        let start = Instant::now();
        let hits = lookup(engine, method, tenant, chain, &mut buffers)?;
        let looked_up = Instant::now();
        if let (Some(acc), Some(b), Some(a)) =
            (out.lookup_io.as_mut(), before, engine.io_counters())
        {
            add_counters(acc, &b, &a);
        }
        let lookup_time = looked_up - start;
        record(
            &mut out.lookup,
            looked_up.saturating_duration_since(intended.unwrap_or(start)),
        );
        if hits != planned.hits {
            return Err(ReplayError::WrongHits {
                method: method.name(),
                tenant: tenant.id,
                request: arrival.request,
                engine_hits: hits,
                model_hits: planned.hits,
            });
        }
        if method.design() == KeyDesign::Path && hits > 0 {
            let block = chain[hits - 1];
            if buffers.value[..] != block_value(tenant.id, block)[..] {
                return Err(ReplayError::WrongValue {
                    method: method.name(),
                    tenant: tenant.id,
                    request: arrival.request,
                    block,
                });
            }
        }
        // The insert batch: the blocks after the hit, each below the one before.
        buffers.values.clear();
        buffers
            .values
            .extend(chain[hits..].iter().map(|&b| block_value(tenant.id, b)));
        let ops: Vec<BatchOp<'_>> = (hits..chain.len())
            .map(|i| BatchOp::Put {
                key: block_key(method, tenant, &buffers.query, chain, i),
                value: &buffers.values[i - hits],
            })
            .collect();
        let mut engine_time = lookup_time;
        if !ops.is_empty() {
            let t = Instant::now();
            engine
                .write_batch(&ops)
                .map_err(engine_error("insert batch"))?;
            let d = t.elapsed();
            record(&mut out.insert, d);
            engine_time += d;
        }
        drop(ops);
        // The evict batch: the model's victims, leaves first.
        if !planned.evicted.is_empty() {
            let keys = evicted_keys(schedule, method, tenant, &planned.evicted, &mut buffers);
            let ops: Vec<BatchOp<'_>> = keys.iter().map(|k| BatchOp::Delete { key: k }).collect();
            let t = Instant::now();
            engine
                .write_batch(&ops)
                .map_err(engine_error("evict batch"))?;
            let d = t.elapsed();
            record(&mut out.evict, d);
            engine_time += d;
            buffers.evicted_keys = keys;
        }
        let total = match intended {
            Some(at) => Instant::now().saturating_duration_since(at),
            None => engine_time,
        };
        record(&mut out.request, total);
        out.busy += engine_time;
        out.hits += hits as u64;
        out.inserted += (chain.len() - hits) as u64;
        out.evicted += planned.evicted.len() as u64;
        out.requests += 1;
        if done % 64 == 63 {
            advance(64);
        }
    }
    advance(arrivals.len() as u64 % 64);
    Ok(out)
}

/// The key of `chain[i]`: a prefix of the request's path query, or the tenant's chained
/// key of the block.
fn block_key<'a>(
    method: TraceMethod,
    tenant: &'a Tenant,
    query: &'a [u8],
    chain: &[u32],
    i: usize,
) -> &'a [u8] {
    match method.design() {
        KeyDesign::Path => &query[..tenant.root.len() + PATH_SEGMENT_LEN * (i + 1)],
        KeyDesign::Chained => &tenant.chained[chain[i] as usize],
    }
}

/// The keys of the evicted blocks (their chains rebuilt from the parents for path keys),
/// reusing the previous request's key buffers.
fn evicted_keys(
    schedule: &Schedule,
    method: TraceMethod,
    tenant: &Tenant,
    evicted: &[u32],
    buffers: &mut Buffers,
) -> Vec<Vec<u8>> {
    let mut keys = std::mem::take(&mut buffers.evicted_keys);
    keys.resize_with(evicted.len(), Vec::new);
    for (key, &block) in keys.iter_mut().zip(evicted) {
        key.clear();
        match method.design() {
            KeyDesign::Path => {
                schedule.chain_of(block, &mut buffers.chain);
                key.extend_from_slice(&tenant.root);
                for &b in &buffers.chain {
                    push_path_segment(key, b);
                }
            }
            KeyDesign::Chained => key.extend_from_slice(&tenant.chained[block as usize]),
        }
    }
    keys
}

/// The number of leading blocks of `chain` the engine holds, by `method`.
fn lookup(
    engine: &dyn KvEngine,
    method: TraceMethod,
    tenant: &Tenant,
    chain: &[u32],
    buffers: &mut Buffers,
) -> Result<usize, ReplayError> {
    let found =
        |key: &[u8], value: &mut Vec<u8>| engine.get(key, value).map_err(engine_error("lookup"));
    match method.lpm_method() {
        Some(lpm) => {
            let matched = engine
                .longest_prefix(&buffers.query, lpm, &mut buffers.value)
                .map_err(engine_error("lookup"))?;
            // The model entry `kv/<model>` always matches; each block adds a segment.
            Ok(matched.map_or(0, |len| {
                len.saturating_sub(tenant.root.len()) / PATH_SEGMENT_LEN
            }))
        }
        None if method == TraceMethod::ChainedProbe => {
            let mut hits = 0;
            for &block in chain {
                if !found(&tenant.chained[block as usize], &mut buffers.value)? {
                    break;
                }
                hits += 1;
            }
            Ok(hits)
        }
        None => {
            // The answer lies in [low, high]: blocks 0..low are cached, high.. are not.
            let (mut low, mut high) = (0, chain.len());
            while low < high {
                let mid = (low + high).div_ceil(2);
                if found(&tenant.chained[chain[mid - 1] as usize], &mut buffers.value)? {
                    low = mid;
                } else {
                    high = mid - 1;
                }
            }
            Ok(low)
        }
    }
}

fn add_counters(acc: &mut IoCounters, before: &IoCounters, after: &IoCounters) {
    acc.cache_hits += after.cache_hits.saturating_sub(before.cache_hits);
    acc.cache_misses += after.cache_misses.saturating_sub(before.cache_misses);
    acc.pages_read += after.pages_read.saturating_sub(before.pages_read);
    acc.bytes_read += after.bytes_read.saturating_sub(before.bytes_read);
    acc.full_frame_reads += after
        .full_frame_reads
        .saturating_sub(before.full_frame_reads);
    acc.readahead_pages += after.readahead_pages.saturating_sub(before.readahead_pages);
}
