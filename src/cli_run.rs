//! `ai-meta run` and `ai-meta list`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use aimeta_adapters::{Durability, EngineKind, ReadConsistency};
use aimeta_workloads::run::{self, BudgetMode, Progress, RunError, RunOptions, Workload};
use aimeta_workloads::scale::{Scale, CI, LARGE, SCALES};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

/// Options of `ai-meta run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Data sizes, budget and operation counts: ci (a few minutes), quick, seed (the
    /// seed report's 2 M manifest keys and 30 k chains) or large (50 M manifest keys past
    /// memory, in the memory cgroup unless --budget-mode says otherwise).
    #[arg(long, default_value = "quick")]
    scale: String,
    /// Engines to measure, comma-separated (default: every engine this build has).
    #[arg(long, value_delimiter = ',')]
    engines: Vec<String>,
    /// Workloads to measure, comma-separated (default: all; see `ai-meta list`).
    #[arg(long, value_delimiter = ',')]
    workloads: Vec<String>,
    /// engine: each engine's own cache is the budget (the OS page cache is left alone);
    /// cgroup: the timed phases also run in a memory cgroup of budget + a fixed overhead,
    /// so page-cache users like LMDB get the same memory.
    /// Default: engine, and cgroup at the large scale.
    #[arg(long)]
    budget_mode: Option<String>,
    /// Before each timed phase, close each engine, drop its store's files from the OS page
    /// cache and reopen it (a file the engine maps would keep its pages otherwise).
    #[arg(long)]
    cold: bool,
    /// Durability of writes: none, async (the seed report's setting) or sync.
    #[arg(long, default_value = "async")]
    durability: String,
    /// Where the results JSON goes (written atomically).
    #[arg(long, default_value = "results/ai_meta.json")]
    out: PathBuf,
    /// Where the stores are built (each removed after its measurements).
    #[arg(long, default_value = "/var/tmp/ai-meta-work")]
    work_dir: PathBuf,
    /// Seed of data and queries.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// PostgreSQL server URL (default: AI_META_PG_URL, else a throwaway local cluster).
    #[arg(long)]
    pg_url: Option<String>,
    /// etcd client URLs of a running cluster, comma-separated (default: a throwaway
    /// cluster of three members for etcd, of one for etcd-1, in the work directory).
    #[arg(long, value_delimiter = ',')]
    etcd_endpoints: Vec<String>,
    /// How etcd serves reads: linearizable (a quorum read through the leader) or
    /// serializable (the member asked answers from its own state).
    #[arg(long, default_value = "linearizable")]
    etcd_reads: String,
    /// Skip aimeta's full-frame reproduction mode (manifest_scan, manifest_get and
    /// kvchain_lpm measured again with whole-frame reads, as in the seed report's bug).
    #[arg(long)]
    no_full_frame: bool,
    /// The KV-cache request trace kvcache_trace replays (Mooncake's JSON-lines format:
    /// timestamp, input_length, output_length, hash_ids); default: the committed
    /// Mooncake conversation trace (workloads/traces/).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Replay the trace open-loop at this many requests a second (timestamps scaled to
    /// it; latencies from each request's intended start); default: closed loop.
    #[arg(long)]
    rate: Option<f64>,
    /// Skip measuring the device's floor (random 4 KiB reads under the work directory, a
    /// few seconds before anything is loaded, and one beside each timed get on data past
    /// the budget; skipped at the ci scale anyway).
    #[arg(long)]
    no_device_floor: bool,
    /// Timed operations per measurement, with a fifth as many untimed ones before them
    /// (default: the scale's, 10,000 and 2,000 at quick): a shorter look at a slow engine.
    /// The results record the count.
    #[arg(long)]
    ops: Option<u64>,
}

/// Progress bars on standard error.
#[derive(Default)]
pub(crate) struct Bars {
    bar: Mutex<Option<ProgressBar>>,
}

impl Progress for Bars {
    fn begin(&self, label: &str, total: u64) {
        let pb = ProgressBar::new(total);
        if let Ok(style) = ProgressStyle::with_template(
            "{msg:48} {bar:30} {pos:>9}/{len:9} {elapsed_precise} eta {eta}",
        ) {
            pb.set_style(style);
        }
        pb.set_message(label.to_string());
        if let Ok(mut b) = self.bar.lock() {
            *b = Some(pb);
        }
    }
    fn advance(&self, n: u64) {
        if let Ok(b) = self.bar.lock() {
            if let Some(pb) = b.as_ref() {
                pb.inc(n);
            }
        }
    }
    fn end(&self) {
        if let Ok(mut b) = self.bar.lock() {
            if let Some(pb) = b.take() {
                pb.finish();
            }
        }
    }
    fn note(&self, msg: &str) {
        eprintln!("{msg}");
    }
}

fn usage_error(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("ai-meta run: {e}");
    ExitCode::from(2)
}

/// The scale named `name`, or the message that lists the valid ones.
pub(crate) fn parse_scale(name: &str) -> Result<Scale, String> {
    Scale::by_name(name).ok_or_else(|| {
        RunError::UnknownName {
            what: "scale",
            name: name.to_string(),
            valid: SCALES.map(|s| s.name).join(", "),
        }
        .to_string()
    })
}

fn parse(args: &RunArgs) -> Result<RunOptions, String> {
    let mut scale = parse_scale(&args.scale)?;
    match args.ops {
        Some(0) => return Err("--ops 0 measures nothing; give at least 1".to_string()),
        Some(ops) => {
            scale.ops = ops;
            scale.warmup = ops / 5;
        }
        None => {}
    }
    let engines = parse_engines(&args.engines)?;
    let workloads = if args.workloads.is_empty() {
        Workload::default_set()
    } else {
        let mut w: Vec<Workload> = args
            .workloads
            .iter()
            .map(|n| Workload::parse(n).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        w.sort_by_key(|x| Workload::ALL.iter().position(|y| y == x));
        w
    };
    let durability = parse_durability(&args.durability)?;
    if let Some(rate) = args.rate.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(format!(
            "--rate {rate} is not a rate; give requests per second above 0"
        ));
    }
    Ok(RunOptions {
        scale,
        engines,
        workloads,
        budget_mode: match &args.budget_mode {
            Some(mode) => BudgetMode::parse(mode).map_err(|e| e.to_string())?,
            None if scale.name == LARGE.name => BudgetMode::Cgroup,
            None => BudgetMode::Engine,
        },
        cold: args.cold,
        durability,
        work_dir: args.work_dir.clone(),
        seed: args.seed,
        pg_url: args.pg_url.clone(),
        etcd_endpoints: etcd_endpoints(&args.etcd_endpoints),
        read_consistency: parse_read_consistency(&args.etcd_reads)?,
        full_frame: !args.no_full_frame,
        trace: args.trace.clone(),
        rate: args.rate,
        device_floor: (!args.no_device_floor && scale.name != CI.name)
            .then(aimeta_workloads::device::FloorOptions::default),
        command: std::env::args().collect::<Vec<_>>().join(" "),
    })
}

/// The engines named (every engine this build has when none is).
pub(crate) fn parse_engines(names: &[String]) -> Result<Vec<EngineKind>, String> {
    if names.is_empty() {
        return Ok(EngineKind::enabled());
    }
    names
        .iter()
        .map(|n| n.parse::<EngineKind>().map_err(|e| e.to_string()))
        .collect()
}

/// A durability name: none, async or sync.
pub(crate) fn parse_durability(name: &str) -> Result<Durability, String> {
    match name {
        "none" => Ok(Durability::None),
        "async" => Ok(Durability::Async),
        "sync" => Ok(Durability::Sync),
        other => Err(format!(
            "unknown durability {other:?}; valid: none, async, sync"
        )),
    }
}

/// The etcd endpoints given, or `None` for a throwaway cluster.
pub(crate) fn etcd_endpoints(urls: &[String]) -> Option<Vec<String>> {
    let urls: Vec<String> = urls
        .iter()
        .map(|u| u.trim().to_string())
        .filter(|u| !u.is_empty())
        .collect();
    (!urls.is_empty()).then_some(urls)
}

/// An etcd read mode: linearizable or serializable.
pub(crate) fn parse_read_consistency(name: &str) -> Result<ReadConsistency, String> {
    match name {
        "linearizable" => Ok(ReadConsistency::Linearizable),
        "serializable" => Ok(ReadConsistency::Serializable),
        other => Err(format!(
            "unknown etcd read mode {other:?}; valid: linearizable, serializable"
        )),
    }
}

/// Checks that `path` can be written before spending minutes measuring.
pub(crate) fn check_writable(path: &std::path::Path) -> Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let probe = dir.join(format!(".ai-meta-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| format!("cannot write to {}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// A throwaway PostgreSQL or etcd cluster that could not start: the machine's set-up, not
/// a measurement, failed.
pub(crate) fn is_pg_start_failure(e: &RunError) -> bool {
    matches!(e, RunError::Engine { source, .. } if matches!(
        **source,
        aimeta_adapters::Error::PostgresCluster { .. } | aimeta_adapters::Error::EtcdCluster { .. }
    ))
}

/// `ai-meta run`.
pub fn run(args: RunArgs) -> ExitCode {
    let opts = match parse(&args) {
        Ok(o) => o,
        Err(e) => return usage_error(e),
    };
    if let Err(e) = check_writable(&args.out) {
        return usage_error(e);
    }
    let bars = Bars::default();
    let results = match run::run(&opts, &bars) {
        Ok(r) => r,
        Err(
            e @ (RunError::UnknownName { .. }
            | RunError::Cgroup { .. }
            | RunError::WorkDir { .. }
            | RunError::Device(_)),
        ) => return usage_error(e),
        Err(e) if e.is_bad_input() => return usage_error(e),
        Err(e) if is_pg_start_failure(&e) => return usage_error(e),
        Err(e) => {
            eprintln!("ai-meta run: {}", run::with_causes(&e));
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = results.save(&args.out) {
        eprintln!("ai-meta run: {e}");
        return ExitCode::FAILURE;
    }
    summary(&results);
    println!("results written to {}", args.out.display());
    ExitCode::SUCCESS
}

fn summary(r: &aimeta_reports::Results) {
    println!(
        "{:<20} {:<16} {:<14} {:<18} {:>12} {:>12} {:>12}",
        "workload", "dataset", "engine", "variant", "mean ns/op", "p99 ns/op", "ops/s"
    );
    for rec in &r.records {
        let v = rec.variant.as_deref().unwrap_or("-");
        match rec.status {
            aimeta_reports::Status::Ok => println!(
                "{:<20} {:<16} {:<14} {:<18} {:>12.0} {:>12.0} {:>12.0}",
                rec.workload,
                rec.dataset,
                rec.engine,
                v,
                rec.ns_per_op.mean,
                rec.ns_per_op.p99,
                rec.ops_per_sec
            ),
            s => println!(
                "{:<20} {:<16} {:<14} {:<18} {:>12}",
                rec.workload,
                rec.dataset,
                rec.engine,
                v,
                format!("{s:?}")
            ),
        }
    }
}

/// `ai-meta list`.
pub fn list() {
    println!("engines (capabilities):");
    for k in EngineKind::ALL {
        let state = if k.is_enabled() {
            ""
        } else {
            " [not compiled in]"
        };
        let caps = match k {
            EngineKind::Aimeta => "native longest-prefix, native delimiter listing, I/O counters",
            EngineKind::RocksDb => "emulated longest-prefix and listing, block-cache counters",
            EngineKind::Etcd => {
                "three-member throwaway cluster; native counts, emulated longest-prefix and \
                 listing; sync durability only"
            }
            EngineKind::Etcd1 => {
                "one-member throwaway cluster; native counts, emulated longest-prefix and \
                 listing; sync durability only"
            }
            _ => "emulated longest-prefix and listing",
        };
        println!("  {:<14} {caps}{state}", k.name());
    }
    println!("workloads:");
    for w in Workload::ALL {
        println!("  {}", w.name());
    }
    println!("scales (budget; manifest beyond/fits keys; kv chains beyond/fits; trace tenants):");
    for s in SCALES {
        println!(
            "  {:<6} {:>4} MiB; {} / {} keys; {} / {} chains; {} tenants",
            s.name,
            s.budget_bytes >> 20,
            s.manifest_beyond.keys(),
            s.manifest_fits.keys(),
            s.kvchain_beyond,
            s.kvchain_fits,
            s.trace_tenants
        );
    }
}
