//! `ai-meta gate`: the CI performance gate against LMDB and the checked-in baseline.

use std::path::PathBuf;
use std::process::ExitCode;

use aimeta_adapters::EngineKind;
use aimeta_reports::gate::{self, GateBaseline, GateMeasurement, GateShape};
use aimeta_workloads::gate::{Gate, GateOptions};
use aimeta_workloads::run::{self, NoProgress, RunOptions};
use aimeta_workloads::scale::Scale;
use clap::Args;

use crate::cli_run::parse_scale;

/// Options of `ai-meta gate`.
#[derive(Args, Debug)]
pub struct GateArgs {
    /// The checked-in bounds.
    #[arg(long, default_value = "reports/baselines/gate.json")]
    baseline: PathBuf,
    /// Rewrite the baseline from this run instead of checking it (only for an intended
    /// change, stated in the commit message; see docs/gate.md).
    #[arg(long)]
    update_baseline: bool,
    /// Lower the baseline's counters to this run's where it reads fewer pages, keeping
    /// its ratios and every other counter (after a change that reads fewer pages, on
    /// another machine kind than the ratios were recorded on; see docs/gate.md).
    #[arg(long)]
    update_counters: bool,
    /// Scale of the gate's data sets; the baseline's counters hold only at its own scale.
    #[arg(long, default_value = "ci")]
    scale: String,
    /// Alternating rounds per ratio (the median is checked).
    #[arg(long, default_value_t = 7)]
    rounds: u32,
    /// Timed operations per engine per round.
    #[arg(long, default_value_t = 3000)]
    ops: u64,
    /// Add the checks this gate measures that the baseline lacks (ratios at this run's
    /// median, default slack), keeping every check it has; for a gate that gained checks
    /// (see docs/gate.md).
    #[arg(long)]
    add_new_checks: bool,
    /// Record these ratio checks (comma-separated) again at this run's medians, keeping
    /// their slack and every other check; refused for any that did not get lower. For a
    /// gain to lock in (see docs/gate.md).
    #[arg(long, value_delimiter = ',')]
    lock_in: Vec<String>,
    /// Check only the deterministic counters (times from a debug build mean nothing).

    #[arg(long)]
    counters_only: bool,
    /// Self-test: open this engine in its full-frame reproduction of the seed report's
    /// bug; the gate must then fail.
    #[arg(long)]
    full_frame: bool,
    /// Where the stores are built (removed afterwards).
    #[arg(long, default_value = "/var/tmp/ai-meta-work-gate")]
    work_dir: PathBuf,
    /// Seed of data and queries (the baseline's counters hold for its seed).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Print every round of every ratio on stderr (this engine's and LMDB's trimmed mean
    /// and their ratio), to see which side moved.
    #[arg(long)]
    show_rounds: bool,
}

fn usage_error(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("ai-meta gate: {e}");
    ExitCode::from(2)
}

fn options(args: &GateArgs, scale: Scale) -> GateOptions {
    GateOptions {
        run: RunOptions {
            seed: args.seed,
            ..RunOptions::new(
                scale,
                vec![EngineKind::Aimeta, EngineKind::Lmdb],
                Vec::new(),
                args.work_dir.clone(),
            )
        },
        rounds: args.rounds.max(1),
        ops_per_round: args.ops.max(1),
        full_frame: args.full_frame,
        show_rounds: args.show_rounds,
    }
}

/// `ai-meta gate`.
pub fn gate(args: GateArgs) -> ExitCode {
    let scale = match parse_scale(&args.scale) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    if args.update_counters && (args.full_frame || args.update_baseline) {
        return usage_error(
            "--update-counters records the normal engine's counters into the existing baseline; drop --full-frame and --update-baseline",
        );
    }
    if args.add_new_checks
        && (args.full_frame || args.update_baseline || args.update_counters || args.counters_only)
    {
        return usage_error(
            "--add-new-checks adds a full run's new checks of the normal engine to the existing baseline; drop --full-frame, --counters-only and the other --update flags",
        );
    }
    if !args.lock_in.is_empty()
        && (args.full_frame
            || args.update_baseline
            || args.update_counters
            || args.counters_only
            || args.add_new_checks)
    {
        return usage_error(
            "--lock-in records a full run's ratios of the normal engine into the existing baseline; drop --full-frame, --counters-only and the other --update and --add flags",
        );
    }
    if args.update_baseline && (args.full_frame || args.counters_only) {
        return usage_error(
            "--update-baseline records a full run of the normal engine; drop --full-frame and --counters-only",
        );
    }
    for engine in [EngineKind::Aimeta, EngineKind::Lmdb] {
        if !engine.is_enabled() {
            return usage_error(format!(
                "the gate needs {} compiled in; build with the default features",
                engine.name()
            ));
        }
    }
    let previous = match GateBaseline::load(&args.baseline) {
        Ok(b) => Some(b),
        Err(gate::GateError::Io { source, .. })
            if args.update_baseline && source.kind() == std::io::ErrorKind::NotFound =>
        {
            None
        }
        Err(e) => return usage_error(e),
    };
    if let (Some(b), false) = (&previous, args.update_baseline) {
        if let Err(e) = b.check_scale(&args.baseline, scale.name) {
            return usage_error(e);
        }
    }
    let o = options(&args, scale);
    let provenance = match run::new_results(&o.run) {
        Ok(r) => r.provenance,
        Err(e) => return usage_error(e),
    };
    eprintln!(
        "gate: aimeta{} against lmdb at scale {} ({} rounds of {} operations per engine)",
        if args.full_frame {
            " in full-frame reproduction mode"
        } else {
            ""
        },
        scale.name,
        o.rounds,
        o.ops_per_round
    );
    match measure_and_judge(&args, o, previous, provenance) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ai-meta gate: {e}");
            ExitCode::FAILURE
        }
    }
}

fn measure_and_judge(
    args: &GateArgs,
    o: GateOptions,
    previous: Option<GateBaseline>,
    provenance: aimeta_reports::Provenance,
) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let (scale, rounds, ops) = (o.run.scale.name, o.rounds, o.ops_per_round);
    let mut g = Gate::load(o, &NoProgress)?;
    let mut first = GateMeasurement {
        counters: g.counters()?,
        ratios: Vec::new(),
    };
    first.counters.extend(g.trace_counters()?);
    if !args.counters_only && !args.update_counters {
        first.ratios = g.ratios(None, &NoProgress)?;
    }
    first.counters.push(g.full_frame_reads()?);

    if args.add_new_checks {
        let Some(previous) = previous else {
            return Err(format!("no baseline at {} to add to", args.baseline.display()).into());
        };
        let (b, added) = previous.with_new_checks(&first, provenance);
        if added.is_empty() {
            println!("no new checks: {} is unchanged", args.baseline.display());
            return Ok(ExitCode::SUCCESS);
        }
        b.save(&args.baseline)?;
        let mut rows = gate::evaluate(&b, &first, None);
        rows.retain(|r| added.contains(&r.check));
        print!("{}", gate::render_table(&rows));
        println!("added to {}: {}", args.baseline.display(), added.join(", "));
        return Ok(ExitCode::SUCCESS);
    }
    if !args.lock_in.is_empty() {
        let Some(previous) = previous else {
            return Err(format!("no baseline at {} to lock in to", args.baseline.display()).into());
        };
        let b = previous.with_locked_in(&first, &args.lock_in, provenance)?;
        b.save(&args.baseline)?;
        let mut rows = gate::evaluate(&b, &first, None);
        rows.retain(|r| args.lock_in.contains(&r.check));
        print!("{}", gate::render_table(&rows));
        println!(
            "locked in to {}: {}",
            args.baseline.display(),
            args.lock_in.join(", ")
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.update_counters {
        let Some(previous) = previous else {
            return Err(format!("no baseline at {} to update", args.baseline.display()).into());
        };
        let b = previous.with_counters(&first, provenance);
        b.save(&args.baseline)?;
        let mut rows = gate::evaluate(&b, &first, None);
        rows.retain(|r| r.kind == gate::CheckKind::Counter);
        print!("{}", gate::render_table(&rows));
        println!("counters written to {}", args.baseline.display());
        return Ok(ExitCode::SUCCESS);
    }

    if args.update_baseline {
        let b = GateBaseline::record(
            &first,
            GateShape::new(scale, rounds, ops),
            provenance,
            previous.as_ref(),
        );
        b.save(&args.baseline)?;
        let rows = gate::evaluate(&b, &first, None);
        print!("{}", gate::render_table(&rows));
        println!("baseline written to {}", args.baseline.display());
        return Ok(ExitCode::SUCCESS);
    }
    let Some(mut baseline) = previous else {
        return Err(format!("no baseline at {}", args.baseline.display()).into());
    };
    if args.counters_only {
        baseline.ratios.clear();
    }
    let rows = gate::evaluate(&baseline, &first, None);
    let again = gate::failing_ratios(&rows);
    let rows = if again.is_empty() {
        rows
    } else {
        eprintln!(
            "gate: re-measuring {} ratio(s) over their bound, to tell noise from a regression",
            again.len()
        );
        let second = GateMeasurement {
            ratios: g.ratios(Some(&again), &NoProgress)?,
            counters: Vec::new(),
        };
        gate::evaluate(&baseline, &first, Some(&second))
    };
    drop(g);
    print!("{}", gate::render_table(&rows));
    let p = &baseline.provenance;
    println!(
        "baseline: {} (recorded {} at commit {}, scale {}, {} rounds of {} ops)",
        args.baseline.display(),
        p.date,
        p.commit,
        baseline.shape.scale,
        baseline.shape.rounds,
        baseline.shape.ops_per_round
    );
    if let Some(c) = &baseline.counters_provenance {
        println!("counters recorded {} at commit {}", c.date, c.commit);
    }
    for a in &baseline.additions {
        println!(
            "{} {} {} at commit {}",
            a.checks.join(", "),
            a.kind.verb(),
            a.provenance.date,
            a.provenance.commit
        );
    }
    if gate::passes(&rows) {
        println!("gate: pass");
        Ok(ExitCode::SUCCESS)
    } else {
        print!("{}", gate::explain_failures(&rows));
        println!("gate: FAIL (see docs/gate.md for how to read a failure)");
        Ok(ExitCode::FAILURE)
    }
}
