//! A synthetic results file for the report tests: every workload, seven engines, some
//! unsupported, skipped and failed records, and one huge outlier; the same with trace
//! replays (`with_trace`); the trace replays alone as a separate run (`trace_only`); and
//! the PNG check that no chart text overlaps.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use aimeta_reports::{
    AllocPerOp, Dataset, DeviceFloor, IoPerOp, Latency, Provenance, Record, Results, RunConfig,
    Status, SweepConfig, TraceStats, WorkingSet, WorkingSetSource, BEGIN_MARKER, END_MARKER,
    SCHEMA_VERSION,
};
use resvg::{tiny_skia, usvg};

/// The engines, in the order the report lists them.
pub const ENGINES: [&str; 7] = [
    "aimeta",
    "lmdb",
    "rocksdb",
    "sqlite",
    "sqlite-tuned",
    "redb",
    "postgres",
];

/// Every workload and the data sets it runs on.
pub const WORKLOADS: [(&str, &[&str]); 10] = [
    ("manifest_scan", &["manifest_fits", "manifest_beyond"]),
    ("manifest_get", &["manifest_fits", "manifest_beyond"]),
    ("manifest_list", &["manifest_fits", "manifest_beyond"]),
    ("manifest_range100", &["manifest_fits", "manifest_beyond"]),
    ("manifest_count8000", &["manifest_fits", "manifest_beyond"]),
    ("manifest_get_par8", &["manifest_beyond"]),
    ("manifest_cas", &["manifest_beyond"]),
    ("kvchain_lpm", &["kvchain_fits", "kvchain_beyond"]),
    ("chain_walk500", &["chain_linear", "chain_shuffled"]),
    ("bulk_load", &["manifest_beyond"]),
];

/// The outlier: sqlite counting 8,000 entries beyond the budget, in ns.
pub const OUTLIER_NS: f64 = 987_654_321.0;

fn dataset(name: &str, family: &str, keys: u64, fits: bool, ratio: f64) -> Dataset {
    Dataset {
        name: name.into(),
        family: family.into(),
        keys,
        data_bytes: keys * 200,
        fits_budget: fits,
        ratio_to_budget: ratio,
    }
}

fn base_ns(workload: &str) -> f64 {
    match workload {
        "manifest_scan" => 40_000.0,
        "manifest_get" => 900.0,
        "manifest_list" => 6_000.0,
        "manifest_range100" => 4_000.0,
        "manifest_count8000" => 250_000.0,
        "manifest_get_par8" => 1_500.0,
        "manifest_cas" => 3_000.0,
        "kvchain_lpm" => 2_000.0,
        "chain_walk500" => 90_000.0,
        _ => 700.0,
    }
}

fn engine_factor(engine: &str) -> f64 {
    match engine {
        "aimeta" => 0.8,
        "lmdb" => 1.0,
        "rocksdb" => 1.9,
        "sqlite" => 2.6,
        "sqlite-tuned" => 1.7,
        "redb" => 1.3,
        _ => 3.0,
    }
}

fn record(workload: &str, dataset: &str, engine: &str, variant: Option<&str>) -> Record {
    let beyond = dataset.contains("beyond") || dataset == "chain_shuffled";
    let mut mean = base_ns(workload) * engine_factor(engine);
    if engine == "aimeta" && (workload == "manifest_cas" || workload == "bulk_load") {
        // aimeta slower than LMDB here: 1.4× its time.
        mean *= 1.75;
    }
    if beyond {
        mean *= if workload == "manifest_scan" {
            60.0
        } else {
            2.5
        };
    }
    let mut status = Status::Ok;
    let mut note = None;
    match (workload, engine, variant) {
        (_, "postgres", _) => {
            status = Status::Skipped;
            note = Some("no PostgreSQL server on this machine (set AIMETA_PG_URL to use one)");
        }
        ("manifest_cas", "rocksdb", _) => {
            status = Status::Unsupported;
            note = Some("no compare-and-swap without a TransactionDB");
        }
        ("kvchain_lpm", e, Some("native")) if e != "aimeta" => {
            status = Status::Unsupported;
            note = Some("no native longest-prefix lookup");
        }
        ("kvchain_lpm", _, Some("bisect")) => mean *= 2.2,
        ("kvchain_lpm", "aimeta", Some("native")) => mean *= 0.3,
        ("chain_walk500", "redb", _) if beyond => {
            status = Status::Error;
            note = Some("timed out after 600 s");
        }
        ("manifest_scan", "aimeta", Some("full_frame")) => mean *= 7.0,
        ("manifest_count8000", "sqlite", _) if beyond => mean = OUTLIER_NS,
        _ => {}
    }
    let ok = status == Status::Ok;
    let threads = if workload == "manifest_get_par8" {
        8
    } else {
        1
    };
    Record {
        workload: workload.into(),
        dataset: dataset.into(),
        engine: engine.into(),
        variant: variant.map(String::from),
        status,
        note: note.map(String::from),
        ops: if ok { 1000 } else { 0 },
        threads,
        ns_per_op: if ok {
            Latency {
                mean,
                p50: mean * 0.9,
                p99: mean * 2.5,
                p999: mean * 4.0,
                min: mean * 0.5,
                max: mean * 9.0,
            }
        } else {
            Latency::default()
        },
        ops_per_sec: if ok {
            1e9 / mean * f64::from(threads)
        } else {
            0.0
        },
        size_on_disk_bytes: ok.then_some(48 << 20),
        io_per_op: (ok && engine == "aimeta").then_some(IoPerOp {
            pages_read: if beyond { 3.0 } else { 0.0 },
            page_hits: 12.0,
            page_misses: if beyond { 3.0 } else { 0.0 },
            full_frame_reads: if variant == Some("full_frame") {
                2.0
            } else {
                0.0
            },
            bytes_read: if beyond { 12288.0 } else { 0.0 },
            readahead_pages: 1.0,
            os_read_bytes: 0.0,
        }),
        load_secs: ok.then_some(1.5),
        trace: None,
        working_set: None,
        alloc_per_op: None,
        device_beside: None,
    }
}

/// The synthetic results.
pub fn synthetic() -> Results {
    let mut records = Vec::new();
    for (w, datasets) in WORKLOADS {
        for ds in datasets {
            for e in ENGINES {
                let variants: &[Option<&str>] = match (w, e) {
                    ("manifest_scan", "aimeta") => &[Some("paged"), Some("full_frame")],
                    ("kvchain_lpm", _) => {
                        &[Some("native"), Some("predecessor_seek"), Some("bisect")]
                    }
                    _ => &[None],
                };
                for v in variants {
                    records.push(record(w, ds, e, *v));
                }
            }
        }
    }
    Results {
        schema_version: SCHEMA_VERSION,
        device: None,
        provenance: Provenance {
            machine: "AMD EPYC 7B13, 2 cores, 24 GiB".into(),
            cores: 2,
            memory_bytes: 24 << 30,
            os: "Linux 6.1 x86_64".into(),
            commit: "c5d275a1b2c3".into(),
            date: "2026-11-30T02:00:00Z".into(),
            rustc: "rustc 1.95.0".into(),
            command: "ai-meta run --scale ci".into(),
            filesystem: "ext4".into(),
            engine_versions: Default::default(),
        },
        config: RunConfig {
            scale: "ci".into(),
            budget_bytes: 64 << 20,
            budget_mode: "engine".into(),
            durability: "async".into(),
            seed: 42,
            ops: 1000,
            sweep: None,
        },
        datasets: vec![
            dataset("manifest_beyond", "manifest", 2_000_000, false, 6.0),
            dataset("manifest_fits", "manifest", 100_000, true, 0.3),
            dataset("kvchain_beyond", "kvchain", 1_500_000, false, 4.5),
            dataset("kvchain_fits", "kvchain", 80_000, true, 0.25),
            dataset("chain_linear", "chain_graph", 50_000, true, 0.15),
            dataset("chain_shuffled", "chain_graph", 50_000, true, 0.15),
        ],
        records,
    }
}

/// Writes a README with the performance markers and text around them.
pub fn readme_with_markers(dir: &Path) -> std::io::Result<PathBuf> {
    let path = dir.join("README.md");
    let text = format!(
        "# Project\n\nIntro text.\n\n## Performance\n\n{BEGIN_MARKER}\nold numbers\n{END_MARKER}\n\n## After\n\nTail text, untouched.\n"
    );
    std::fs::write(&path, text)?;
    Ok(path)
}

/// Asserts that `text` contains every one of `needles`, naming the first one missing.
pub fn assert_contains_all(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "lacks {needle:?}:\n{text}");
    }
}

/// The trace replay's variants: key design and lookup method.
pub const TRACE_VARIANTS: [&str; 6] = [
    "path_native",
    "path_native_boundary",
    "path_predecessor_seek",
    "path_bisect",
    "chained_probe",
    "chained_bisect",
];

/// Why LMDB records N/A for the path design.
pub const LMDB_PATH_NOTE: &str =
    "the trace's longest path key is 1,740 bytes, over LMDB's 511-byte key limit";

/// Blocks found cached at each capacity (percent; `None`: unlimited), of 288,500.
fn trace_hits(capacity_percent: Option<u32>) -> u64 {
    match capacity_percent {
        Some(10) => 41_000,
        Some(_) => 98_000,
        None => 105_710,
    }
}

/// One replay: `engine` with `variant` at `capacity_percent`, `threads`, and an open-loop
/// `rate` when given.
fn trace_record(
    engine: &str,
    variant: &str,
    capacity_percent: Option<u32>,
    threads: u32,
    rate: Option<f64>,
) -> Record {
    let cap = capacity_percent.map_or("all".to_string(), |p| p.to_string());
    let native = variant.starts_with("path_native");
    let mut r = Record {
        workload: "kvcache_trace".into(),
        dataset: format!("mooncake_x1_cap{cap}"),
        engine: engine.into(),
        variant: Some(variant.into()),
        status: Status::Ok,
        note: None,
        ops: 12_031,
        threads,
        ns_per_op: Latency::default(),
        ops_per_sec: 0.0,
        size_on_disk_bytes: None,
        io_per_op: None,
        load_secs: None,
        trace: None,
        working_set: None,
        alloc_per_op: None,
        device_beside: None,
    };
    match engine {
        "postgres" => {
            r.status = Status::Skipped;
            r.note =
                Some("no PostgreSQL server on this machine (set AIMETA_PG_URL to use one)".into());
            return r;
        }
        "lmdb" if variant.starts_with("path") => {
            r.status = Status::Unsupported;
            r.note = Some(LMDB_PATH_NOTE.into());
            return r;
        }
        e if native && e != "aimeta" => {
            r.status = Status::Unsupported;
            r.note = Some("no native longest-prefix lookup".into());
            return r;
        }
        _ => {}
    }
    let mut mean = 30_000.0 * engine_factor(engine);
    if variant.starts_with("chained") {
        mean *= 1.3;
    }
    if variant.ends_with("bisect") {
        mean *= 1.5;
    }
    if native {
        mean *= 0.6;
    }
    let latency = |m: f64| Latency {
        mean: m,
        p50: m * 0.8,
        p99: m * 3.0,
        p999: m * 7.0,
        min: m * 0.2,
        max: m * 15.0,
    };
    let hits = trace_hits(capacity_percent);
    let blocks = capacity_percent.map(|p| 182_790 * u64::from(p) / 100);
    r.ns_per_op = latency(mean);
    r.ops_per_sec = 1e9 / mean * f64::from(threads);
    r.size_on_disk_bytes = Some(24 << 20);
    r.trace = Some(TraceStats {
        trace: "workloads/traces/mooncake_conversation.jsonl".into(),
        tenants: 1,
        capacity_percent,
        capacity_blocks: blocks,
        distinct_blocks: 182_790,
        blocks_requested: 288_500,
        hits,
        model_hits: hits,
        hit_rate: hits as f64 / 288_500.0,
        inserted: 288_500 - hits,
        evicted: blocks.map_or(0, |b| 182_790 - b),
        final_keys: blocks.unwrap_or(182_790),
        lookup: latency(mean * 0.3),
        insert: latency(mean * 0.5),
        insert_batches: 9_000,
        evict: if blocks.is_some() {
            latency(mean * 0.2)
        } else {
            Latency::default()
        },
        evict_batches: if blocks.is_some() { 8_000 } else { 0 },
        lookup_io: None,
        open_loop_rate: rate,
    });
    r
}

/// The synthetic results with trace replays: every engine and variant at 10 %, 50 % and
/// unlimited capacity with 1 and 8 threads, and an open-loop replay at 10 %; LMDB's path
/// design N/A (its key limit), the other engines' native lookups N/A, postgres skipped.
pub fn with_trace() -> Results {
    let mut results = synthetic();
    for capacity in [Some(10), Some(50), None] {
        let cap = capacity.map_or("all".to_string(), |p: u32| p.to_string());
        results.datasets.push(Dataset {
            name: format!("mooncake_x1_cap{cap}"),
            family: "kvcache_trace".into(),
            keys: 182_790,
            data_bytes: 182_790 * 100,
            fits_budget: true,
            ratio_to_budget: 0.27,
        });
        for engine in ENGINES {
            for variant in TRACE_VARIANTS {
                for threads in [1, 8] {
                    results
                        .records
                        .push(trace_record(engine, variant, capacity, threads, None));
                }
                if capacity == Some(10) {
                    let open = trace_record(engine, variant, capacity, 1, Some(2_000.0));
                    results.records.push(open);
                }
            }
        }
    }
    results
}

/// A separate trace-only run, as `ai-meta run --workloads kvcache_trace --scale quick`
/// writes it: the trace replays of [`with_trace`] and their data sets alone, made at
/// another commit, scale and cache budget than [`synthetic`].
pub fn trace_only() -> Results {
    let mut results = with_trace();
    results.records.retain(|r| r.workload == "kvcache_trace");
    results.datasets.retain(|d| d.family == "kvcache_trace");
    results.provenance.commit = "9e8d7c6b5a4f".into();
    results.provenance.date = "2026-12-01T09:30:00Z".into();
    results.provenance.command = "ai-meta run --workloads kvcache_trace --scale quick".into();
    results.config.scale = "quick".into();
    results.config.budget_bytes = 256 << 20;
    results
}

/// The sizes of the sweep fixture, in keys, and their data set names.
pub const SWEEP_SIZES: [(u64, &str); 4] = [
    (100_000, "manifest_1e5"),
    (1_000_000, "manifest_1e6"),
    (10_000_000, "manifest_1e7"),
    (50_000_000, "manifest_5e7"),
];

/// The sweep's engines: postgres is skipped throughout.
pub const SWEEP_ENGINES: [&str; 4] = ["aimeta", "lmdb", "rocksdb", "postgres"];

/// The sweep fixture's cache budget: 16 MiB.
pub const SWEEP_BUDGET: u64 = 16 << 20;

/// The device floor of the sweep fixture: 61 µs per 4 KiB read at QD1, 16,400 reads/s at
/// QD1 and 48,000 at QD8.
pub fn device() -> DeviceFloor {
    DeviceFloor {
        path: "/work/tmp".into(),
        file_bytes: 1 << 30,
        direct: true,
        read_4k_qd1: Latency {
            mean: 61_000.0,
            p50: 58_000.0,
            p99: 120_000.0,
            p999: 200_000.0,
            min: 40_000.0,
            max: 900_000.0,
        },
        iops_qd1: 16_400.0,
        iops_qd8: 48_000.0,
        secs: 3.0,
    }
}

/// A working set of `bytes` against the sweep's budget.
pub fn working_set(bytes: u64) -> WorkingSet {
    WorkingSet {
        pages: bytes / 4096,
        bytes,
        ratio_to_budget: bytes as f64 / SWEEP_BUDGET as f64,
        source: WorkingSetSource::KeyLayout,
        touched_pages: None,
    }
}

/// One sweep measurement with a mean of `mean` ns and `ops_per_sec`.
fn sweep_record(
    workload: &str,
    dataset: &str,
    engine: &str,
    variant: Option<&str>,
    threads: u32,
    mean: f64,
    ops_per_sec: f64,
) -> Record {
    let skipped = engine == "postgres";
    Record {
        workload: workload.into(),
        dataset: dataset.into(),
        engine: engine.into(),
        variant: variant.map(String::from),
        status: if skipped { Status::Skipped } else { Status::Ok },
        note: skipped.then(|| "no PostgreSQL server on this machine".to_string()),
        ops: if skipped { 0 } else { 1000 },
        threads,
        ns_per_op: if skipped {
            Latency::default()
        } else {
            Latency {
                mean,
                p50: mean * 0.9,
                p99: mean * 3.0,
                p999: mean * 5.0,
                min: mean * 0.5,
                max: mean * 10.0,
            }
        },
        ops_per_sec: if skipped { 0.0 } else { ops_per_sec },
        size_on_disk_bytes: None,
        io_per_op: None,
        load_secs: None,
        trace: None,
        working_set: None,
        alloc_per_op: (!skipped).then_some(AllocPerOp {
            bytes: 48.0,
            allocations: 1.0,
        }),
        device_beside: None,
    }
}

/// An `ai-meta sweep` results file: manifest_get and manifest_scan (the seed's shape,
/// `offset_uniform` and `offset_zipf`) at 10^5 to 5 x 10^7 keys on aimeta, lmdb and
/// rocksdb (postgres skipped; rocksdb's get at 50 M keys failed), gets and scans at 1 to
/// 16 threads on manifest_5e7, with the device floor when `with_device`. The seed's scan
/// shape touches 2.4 MiB at every size (it fits the 16 MiB budget); the offset scans and
/// the gets touch a tenth of the data.
pub fn sweep(with_device: bool) -> Results {
    let mut records = Vec::new();
    let factor = |e: &str| match e {
        "aimeta" => 1.0,
        "lmdb" => 1.3,
        _ => 2.0,
    };
    for (keys, name) in SWEEP_SIZES {
        let data = keys * 200;
        let decades = (keys as f64 / 1e5).log10();
        for engine in SWEEP_ENGINES {
            let f = factor(engine);
            let mut get = sweep_record(
                "manifest_get",
                name,
                engine,
                None,
                1,
                900.0 * f * 10f64.powf(decades * 0.8),
                0.0,
            );
            get.working_set = Some(working_set(data / 10));
            if engine == "rocksdb" && keys == 50_000_000 {
                get.status = Status::Error;
                get.note = Some("timed out after 600 s".into());
            }
            records.push(get);
            for variant in [None, Some("offset_uniform"), Some("offset_zipf")] {
                let growth = if variant.is_some() { 0.9 } else { 0.1 };
                let mut scan = sweep_record(
                    "manifest_scan",
                    name,
                    engine,
                    variant,
                    1,
                    40_000.0 * f * 10f64.powf(decades * growth),
                    0.0,
                );
                let ws = if variant.is_some() {
                    data / 10
                } else {
                    2_516_582
                };
                scan.working_set = Some(working_set(ws));
                records.push(scan);
            }
        }
    }
    for threads in [1u32, 2, 4, 8, 16] {
        for engine in SWEEP_ENGINES {
            let f = factor(engine);
            let scale = f64::from(threads).powf(0.8);
            for (workload, base) in [
                ("manifest_get_threads", 40_000.0),
                ("manifest_scan_threads", 5_000.0),
            ] {
                let variant = format!("t{threads}");
                records.push(sweep_record(
                    workload,
                    "manifest_5e7",
                    engine,
                    Some(&variant),
                    threads,
                    1e9 / base * f,
                    base / f * scale,
                ));
            }
        }
    }
    let datasets = SWEEP_SIZES
        .iter()
        .map(|(keys, name)| {
            let data = keys * 200;
            Dataset {
                name: (*name).into(),
                family: "manifest".into(),
                keys: *keys,
                data_bytes: data,
                fits_budget: data <= SWEEP_BUDGET,
                ratio_to_budget: data as f64 / SWEEP_BUDGET as f64,
            }
        })
        .collect();
    let mut results = synthetic();
    results.provenance.commit = "5e5e5e5e5e5e".into();
    results.provenance.command = "ai-meta sweep".into();
    results.config = RunConfig {
        scale: "sweep".into(),
        budget_bytes: SWEEP_BUDGET,
        budget_mode: "cgroup".into(),
        durability: "async".into(),
        seed: 42,
        ops: 1000,
        sweep: Some(SweepConfig {
            sizes: SWEEP_SIZES.iter().map(|(k, _)| *k).collect(),
            threads: vec![1, 2, 4, 8, 16],
            threads_dataset: "manifest_5e7".into(),
        }),
    };
    results.datasets = datasets;
    results.records = records;
    results.device = with_device.then(device);
    results
}

/// Text boxes of a parsed chart (empty without fonts: text needs fonts to be laid out).
fn text_boxes(group: &usvg::Group, out: &mut Vec<tiny_skia::Rect>) {
    for node in group.children() {
        match node {
            usvg::Node::Group(g) => text_boxes(g, out),
            usvg::Node::Text(t) => out.push(t.abs_bounding_box()),
            _ => {}
        }
    }
}

/// Renders every chart to PNG (kept under the target directory for a look), and, when
/// the system has fonts, checks that no two texts overlap and none leaves the canvas.
pub fn render_pngs_and_check_text(
    charts: &[PathBuf],
    png_dir: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut fontdb = usvg::fontdb::Database::new();
    fontdb.load_system_fonts();
    let have_fonts = !fontdb.is_empty();
    let opt = usvg::Options {
        fontdb: std::sync::Arc::new(fontdb),
        ..usvg::Options::default()
    };
    std::fs::create_dir_all(png_dir)?;
    for path in charts {
        let tree = usvg::Tree::from_str(&std::fs::read_to_string(path)?, &opt)?;
        let size = tree.size().to_int_size();
        let mut pixmap =
            tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("empty chart")?;
        resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
        let name = path.file_name().ok_or("no name")?;
        pixmap.save_png(png_dir.join(name).with_extension("png"))?;
        if !have_fonts {
            continue;
        }
        let mut boxes = Vec::new();
        text_boxes(tree.root(), &mut boxes);
        assert!(boxes.len() > 10, "{}: text was laid out", path.display());
        let (w, h) = (tree.size().width(), tree.size().height());
        for (i, a) in boxes.iter().enumerate() {
            assert!(
                a.left() >= 0.0 && a.top() >= 0.0 && a.right() <= w && a.bottom() <= h,
                "{}: text outside the canvas at {a:?}",
                path.display()
            );
            for b in &boxes[i + 1..] {
                let overlap_x = a.right().min(b.right()) - a.left().max(b.left());
                let overlap_y = a.bottom().min(b.bottom()) - a.top().max(b.top());
                assert!(
                    overlap_x <= 0.5 || overlap_y <= 0.5,
                    "{}: texts overlap: {a:?} and {b:?}",
                    path.display()
                );
            }
        }
    }
    Ok(())
}
