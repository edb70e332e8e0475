//! The `ai-meta` command: run the workloads, list what can be run, turn results into
//! charts and tables, inspect an engine directory.

mod cli_gate;
mod cli_report;
mod cli_repro;
mod cli_run;
mod cli_sweep;

use std::process::ExitCode;

use aimeta_workloads::alloc_count::CountingAllocator;

use aimeta_engine::{Tree, TreeConfig};
use clap::{Parser, Subcommand};

/// Counts each thread's allocations, so that results carry allocations per operation
/// (docs/performance.md); it forwards every call to the system allocator.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// How embedded storage engines behave on AI-metadata workloads.
#[derive(Parser, Debug)]
#[command(name = "ai-meta", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Measure engines on the ai_meta workloads and write results JSON.
    Run(cli_run::RunArgs),
    /// The same manifest workloads at 10^5 to 5 x 10^7 keys for every engine at one
    /// budget (memory cgroup), gets and scans from 1 to 16 threads, the device's floor.
    Sweep(cli_sweep::SweepArgs),
    /// The CI performance gate: ratios to LMDB and I/O counters against the baseline.
    Gate(cli_gate::GateArgs),
    /// Reproduce the seed report: scans and longest-prefix lookups beyond the pool, with
    /// this engine in its full-frame reproduction of the bug and in its paged mode.
    Repro(cli_repro::ReproArgs),
    /// This engine's ratios to LMDB and to the best other engine (per shape) in each
    /// results file, and their medians.
    Ratios {
        /// Results files of `ai-meta run` (same scale and settings).
        #[arg(required = true)]
        files: Vec<std::path::PathBuf>,
    },
    /// List engines (with their capabilities), workloads and scales.
    List,
    /// Turn results JSON files into charts, tables and the README's Performance section.
    #[command(long_about = cli_report::LONG_ABOUT, after_help = cli_report::AFTER_HELP)]
    Report(cli_report::ReportArgs),
    /// Check an engine directory and print its size, height and counters.
    Inspect {
        /// The tree's directory.
        dir: String,
    },
}

fn inspect(dir: &str) -> anyhow::Result<()> {
    let tree = Tree::open(
        TreeConfig::new(dir)
            .cache_bytes(64 << 20)
            .background_checkpoints(false),
    )?;
    let report = tree.check_integrity()?;
    let m = tree.metrics();
    println!("directory      {dir}");
    println!("entries        {}", m.entries);
    println!("height         {}", m.height);
    println!("file pages     {} ({} free)", m.file_pages, m.free_pages);
    println!("leaf pages     {}", report.leaf_pages);
    println!("inner pages    {}", report.inner_pages);
    println!("overflow pages {}", report.overflow_pages);
    println!("size on disk   {} bytes", tree.size_on_disk()?);
    println!("integrity      ok");
    Ok(())
}

fn ratios(files: &[std::path::PathBuf]) -> ExitCode {
    let mut runs = Vec::new();
    for f in files {
        match aimeta_reports::Results::load(f) {
            Ok(r) => runs.push(r),
            Err(e) => {
                eprintln!("ai-meta ratios: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let rows = aimeta_reports::ratio_rows(&runs);
    print!("{}", aimeta_reports::render_ratios(&runs, &rows));
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Run(args) => cli_run::run(args),
        Command::Sweep(args) => cli_sweep::sweep(args),
        Command::Gate(args) => cli_gate::gate(args),
        Command::Repro(args) => cli_repro::repro(args),
        Command::Ratios { files } => ratios(&files),
        Command::List => {
            cli_run::list();
            ExitCode::SUCCESS
        }
        Command::Report(args) => cli_report::report(args),
        Command::Inspect { dir } => match inspect(&dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ai-meta inspect: {e:#}");
                ExitCode::FAILURE
            }
        },
    }
}
