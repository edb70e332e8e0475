//! Helpers the unit tests of every module share.

/// What a test returns: `?` on any error fails it.
pub(crate) type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Asserts that `text` contains every one of `needles`, naming the first one missing.
pub(crate) fn assert_contains_all(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "lacks {needle:?}:\n{text}");
    }
}

/// Asserts that `f` turns each input of `cases` into its text.
pub(crate) fn assert_formats<T: Copy + std::fmt::Debug>(
    f: impl Fn(T) -> String,
    cases: &[(T, &str)],
) {
    for &(input, want) in cases {
        assert_eq!(f(input), want, "of {input:?}");
    }
}

/// The provenance of a test run on a small Linux machine, made with `rustc` by `command`.
pub(crate) fn provenance(rustc: &str, command: &str) -> crate::Provenance {
    crate::Provenance {
        machine: "test".into(),
        cores: 2,
        memory_bytes: 1 << 30,
        os: "linux".into(),
        commit: "abc".into(),
        date: "2026-11-30T00:00:00Z".into(),
        rustc: rustc.into(),
        command: command.into(),
        filesystem: "ext4".into(),
        engine_versions: Default::default(),
    }
}

/// A trace replay record of `engine` with `variant` (e.g. `path_native`) on one tenant at
/// `capacity_percent` (`None`: unlimited) with `threads`: hit counts that fall with the
/// capacity (the same for every engine), a per-request time by engine and design.
pub(crate) fn trace_record(
    engine: &str,
    variant: &str,
    capacity_percent: Option<u32>,
    threads: u32,
) -> crate::Record {
    let cap = capacity_percent.map_or("all".to_string(), |p| p.to_string());
    let hits = match capacity_percent {
        Some(p) if p <= 10 => 41_000,
        Some(_) => 98_000,
        None => 105_710,
    };
    let engine_factor = match engine {
        "aimeta" => 0.7,
        "lmdb" => 1.0,
        _ => 1.8,
    };
    let design_factor = if variant.starts_with("chained") {
        1.4
    } else {
        1.0
    };
    let method_factor = if variant.ends_with("bisect") {
        1.3
    } else {
        1.0
    };
    let mean = 40_000.0 * engine_factor * design_factor * method_factor;
    let latency = |m: f64| crate::Latency {
        mean: m,
        p50: m * 0.8,
        p99: m * 3.0,
        p999: m * 6.0,
        min: m * 0.2,
        max: m * 12.0,
    };
    crate::Record {
        workload: "kvcache_trace".into(),
        dataset: format!("mooncake_x1_cap{cap}"),
        engine: engine.into(),
        variant: Some(variant.into()),
        status: crate::Status::Ok,
        note: None,
        ops: 12_031,
        threads,
        ns_per_op: latency(mean),
        ops_per_sec: 1e9 / mean * f64::from(threads),
        size_on_disk_bytes: Some(24 << 20),
        io_per_op: None,
        load_secs: None,
        trace: Some(crate::TraceStats {
            trace: "workloads/traces/mooncake_conversation.jsonl".into(),
            tenants: 1,
            capacity_percent,
            capacity_blocks: capacity_percent.map(|p| 182_790 * u64::from(p) / 100),
            distinct_blocks: 182_790,
            blocks_requested: 288_500,
            hits,
            model_hits: hits,
            hit_rate: hits as f64 / 288_500.0,
            inserted: 288_500 - hits,
            evicted: capacity_percent.map_or(0, |_| 150_000),
            final_keys: capacity_percent.map_or(182_790, |p| 182_790 * u64::from(p) / 100),
            lookup: latency(mean * 0.25),
            insert: latency(mean * 0.6),
            insert_batches: 9_000,
            evict: capacity_percent.map_or_else(crate::Latency::default, |_| latency(mean * 0.3)),
            evict_batches: capacity_percent.map_or(0, |_| 8_000),
            lookup_io: None,
            open_loop_rate: None,
        }),
        working_set: None,
        alloc_per_op: None,
        device_beside: None,
    }
}

/// Results holding `records`, with a trace data set entry for each data set they use.
pub(crate) fn trace_results(records: Vec<crate::Record>) -> crate::Results {
    let mut datasets: Vec<crate::Dataset> = Vec::new();
    for r in &records {
        if datasets.iter().all(|d| d.name != r.dataset) {
            datasets.push(crate::Dataset {
                name: r.dataset.clone(),
                family: "kvcache_trace".into(),
                keys: 182_790,
                data_bytes: 182_790 * 100,
                fits_budget: true,
                ratio_to_budget: 0.3,
            });
        }
    }
    crate::Results {
        schema_version: crate::SCHEMA_VERSION,
        device: None,
        provenance: provenance("rustc 1.95.0", "ai-meta run --workloads kvcache_trace"),
        config: crate::RunConfig {
            scale: "ci".into(),
            budget_bytes: 64 << 20,
            budget_mode: "engine".into(),
            durability: "async".into(),
            seed: 1,
            ops: 1000,
            sweep: None,
        },
        datasets,
        records,
    }
}

const TOO_LONG: &str = "the trace's longest path key is 1,740 bytes, over lmdb's 511";

/// Trace replays: lmdb's path design unsupported (one record without stats, one with), and
/// replays the featured chart must leave out: 8 threads, open loop, no limit.
pub(crate) fn trace_mix() -> crate::Results {
    let unsupported = |variant: &str, stats: bool| {
        let mut r = trace_record("lmdb", variant, Some(10), 1);
        r.status = crate::Status::Unsupported;
        r.note = Some(TOO_LONG.to_string());
        if !stats {
            r.trace = None;
        }
        r
    };
    let mut eight = trace_record("aimeta", "path_native", Some(10), 8);
    eight.ns_per_op.mean = 1.0;
    let mut open = trace_record("aimeta", "path_native", Some(10), 1);
    open.ns_per_op.mean = 2.0;
    if let Some(t) = open.trace.as_mut() {
        t.open_loop_rate = Some(2_000.0);
    }
    trace_results(vec![
        trace_record("aimeta", "path_native", Some(10), 1),
        trace_record("aimeta", "path_bisect", Some(10), 1),
        trace_record("aimeta", "chained_probe", Some(10), 1),
        unsupported("path_predecessor_seek", false),
        unsupported("path_bisect", true),
        trace_record("lmdb", "chained_probe", Some(10), 1),
        trace_record("lmdb", "chained_probe", Some(50), 1),
        trace_record("lmdb", "chained_probe", None, 1),
        eight,
        open,
    ])
}
