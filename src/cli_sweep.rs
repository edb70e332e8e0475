//! `ai-meta sweep`: per-operation cost against data size, and throughput against threads.

use std::path::PathBuf;
use std::process::ExitCode;

use aimeta_workloads::run::{
    self, BudgetMode, RunError, RunOptions, SweepOptions, SWEEP_SCALE, SWEEP_SIZES,
};
use clap::Args;

use crate::cli_run::{check_writable, is_pg_start_failure, parse_durability, parse_engines, Bars};

/// Options of `ai-meta sweep`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Manifest sizes in keys, comma-separated (1e5 style or plain numbers; whole
    /// 10,000-sample shards above 10,000).
    #[arg(long, value_delimiter = ',', default_value = "1e5,1e6,1e7,5e7")]
    sizes: Vec<String>,
    /// Engines to measure, comma-separated (default: every engine this build has).
    #[arg(long, value_delimiter = ',')]
    engines: Vec<String>,
    /// The one cache budget of every engine at every size, in MiB.
    #[arg(long, default_value_t = SWEEP_SCALE.budget_bytes >> 20)]
    budget_mib: u64,
    /// cgroup (default): the timed phases run in a memory cgroup of the budget plus a
    /// fixed overhead, page cache included; engine: only each engine's own cache knob.
    #[arg(long, default_value = "cgroup")]
    budget_mode: String,
    /// Durability of writes: none, async or sync.
    #[arg(long, default_value = "async")]
    durability: String,
    /// Where the results JSON goes (written atomically at the end).
    #[arg(long, default_value = "results/sweep.json")]
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
    /// Skip measuring the device's floor first.
    #[arg(long)]
    no_device_floor: bool,
}

/// A size like `1e5`, `5e7`, `250000` or `250_000`.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim().replace('_', "");
    let bad = || format!("size {text:?} is not a number of keys like 1e5 or 250000");
    if let Some((mantissa, exponent)) = t.split_once(['e', 'E']) {
        let m: u64 = mantissa.parse().map_err(|_| bad())?;
        let e: u32 = exponent.parse().map_err(|_| bad())?;
        return 10u64
            .checked_pow(e)
            .and_then(|p| p.checked_mul(m))
            .ok_or_else(bad);
    }
    t.parse().map_err(|_| bad())
}

fn parse(args: &SweepArgs) -> Result<SweepOptions, String> {
    let sizes = args
        .sizes
        .iter()
        .map(|s| parse_size(s))
        .collect::<Result<Vec<_>, _>>()?;
    let engines = parse_engines(&args.engines)?;
    if args.budget_mib == 0 {
        return Err("--budget-mib must be at least 1".into());
    }
    let durability = parse_durability(&args.durability)?;
    let scale = aimeta_workloads::scale::Scale {
        budget_bytes: args.budget_mib << 20,
        ..SWEEP_SCALE
    };
    let mut run = RunOptions::new(scale, engines, Vec::new(), args.work_dir.clone());
    run.budget_mode = BudgetMode::parse(&args.budget_mode).map_err(|e| e.to_string())?;
    run.durability = durability;
    run.seed = args.seed;
    run.pg_url = args.pg_url.clone();
    run.etcd_endpoints = crate::cli_run::etcd_endpoints(&args.etcd_endpoints);
    run.read_consistency = crate::cli_run::parse_read_consistency(&args.etcd_reads)?;
    run.device_floor =
        (!args.no_device_floor).then(aimeta_workloads::device::FloorOptions::default);
    Ok(SweepOptions {
        run,
        sizes: if sizes.is_empty() {
            SWEEP_SIZES.to_vec()
        } else {
            sizes
        },
    })
}

/// `ai-meta sweep`.
pub fn sweep(args: SweepArgs) -> ExitCode {
    let usage = |e: &dyn std::fmt::Display| {
        eprintln!("ai-meta sweep: {e}");
        ExitCode::from(2)
    };
    let opts = match parse(&args) {
        Ok(o) => o,
        Err(e) => return usage(&e),
    };
    if let Err(e) = check_writable(&args.out) {
        return usage(&e);
    }
    let started = std::time::Instant::now();
    let results = match run::sweep(&opts, &Bars::default()) {
        Ok(r) => r,
        Err(e @ (RunError::Cgroup { .. } | RunError::WorkDir { .. } | RunError::Device(_))) => {
            return usage(&e)
        }
        Err(e) if e.is_bad_input() || is_pg_start_failure(&e) => return usage(&e),
        Err(e) => {
            eprintln!("ai-meta sweep: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = results.save(&args.out) {
        eprintln!("ai-meta sweep: {e}");
        return ExitCode::FAILURE;
    }
    println!(
        "sweep of {} sizes on {} engines in {:.1} min; results written to {}",
        opts.sizes.len(),
        opts.run.engines.len(),
        started.elapsed().as_secs_f64() / 60.0,
        args.out.display()
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_both_spellings() {
        assert_eq!(parse_size("1e5"), Ok(100_000));
        assert_eq!(parse_size("5E7"), Ok(50_000_000));
        assert_eq!(parse_size("250_000"), Ok(250_000));
        assert!(parse_size("1e99").is_err());
        assert!(parse_size("lots").is_err());
    }
}
