//! `ai-meta repro`: the seed report's two symptoms, with this engine in its full-frame
//! reproduction of the bug and in its paged mode, beside LMDB, RocksDB and SQLite.

use std::path::PathBuf;
use std::process::ExitCode;

use aimeta_adapters::EngineKind;
use aimeta_workloads::run::{self, RunError, RunOptions, Workload};
use clap::Args;

use crate::cli_run::{check_writable, is_pg_start_failure, parse_scale, Bars};

/// The engines of the seed report's table.
const SEED_ENGINES: [EngineKind; 4] = [
    EngineKind::Aimeta,
    EngineKind::Lmdb,
    EngineKind::RocksDb,
    EngineKind::Sqlite,
];

/// Options of `ai-meta repro`.
#[derive(Args, Debug)]
pub struct ReproArgs {
    /// seed: the report's own sizes (2 M manifest keys, 30 k chains; several minutes);
    /// quick or ci for a smaller look.
    #[arg(long, default_value = "seed")]
    scale: String,
    /// Engines beside this one, comma-separated (default: lmdb, rocksdb, sqlite).
    #[arg(long, value_delimiter = ',')]
    engines: Vec<String>,
    /// Where the results JSON goes (default: results/ai_meta-repro-<scale>.json); draw its
    /// charts with `ai-meta report --results FILE`.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Where the stores are built (each removed after its measurements).
    #[arg(long, default_value = "/var/tmp/ai-meta-work")]
    work_dir: PathBuf,
    /// Seed of data and queries.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

fn usage_error(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("ai-meta repro: {e}");
    ExitCode::from(2)
}

fn engines(args: &ReproArgs) -> Result<Vec<EngineKind>, String> {
    let mut v = vec![EngineKind::Aimeta];
    if args.engines.is_empty() {
        v.extend(SEED_ENGINES[1..].iter().filter(|k| k.is_enabled()));
    } else {
        for name in &args.engines {
            let k = name.parse::<EngineKind>().map_err(|e| e.to_string())?;
            if !v.contains(&k) {
                v.push(k);
            }
        }
    }
    Ok(v)
}

/// `ai-meta repro`.
pub fn repro(args: ReproArgs) -> ExitCode {
    let scale = match parse_scale(&args.scale) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    let engines = match engines(&args) {
        Ok(e) => e,
        Err(e) => return usage_error(e),
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("results/ai_meta-repro-{}.json", scale.name)));
    if let Err(e) = check_writable(&out) {
        return usage_error(e);
    }
    // The seed report's settings (engine budget, asynchronous log), with the full-frame
    // reproduction beside the paged mode.
    let opts = RunOptions {
        seed: args.seed,
        full_frame: true,
        ..RunOptions::new(
            scale,
            engines,
            vec![
                Workload::ManifestScan,
                Workload::ManifestGet,
                Workload::KvchainLpm,
            ],
            args.work_dir.clone(),
        )
    };
    let results = match run::run(&opts, &Bars::default()) {
        Ok(r) => r,
        Err(e @ (RunError::WorkDir { .. } | RunError::UnknownName { .. })) => {
            return usage_error(e)
        }
        Err(e) if is_pg_start_failure(&e) => return usage_error(e),
        Err(e) => {
            eprintln!("ai-meta repro: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = results.save(&out) {
        eprintln!("ai-meta repro: {e}");
        return ExitCode::FAILURE;
    }
    print!("{}", aimeta_reports::repro_tables(&results));
    println!(
        "results written to {}; its charts: ai-meta report --results {} --out DIR --no-readme",
        out.display(),
        out.display()
    );
    ExitCode::SUCCESS
}
