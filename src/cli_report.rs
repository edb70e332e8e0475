//! `ai-meta report`: one or more results files to charts, tables and the README's
//! Performance section.

use std::path::PathBuf;
use std::process::ExitCode;

use aimeta_reports::{ReadmeTarget, ReportRequest};
use clap::Args;

/// What `ai-meta report --help` says beyond the one-line summary.
pub const LONG_ABOUT: &str = "Turn results JSON files into charts, tables and the README's \
Performance section: charts in DIR/docs/benchmarks/*-light.svg and *-dark.svg, tables in \
DIR/docs/benchmarks/results.md, and the README's section between \
<!-- performance:begin --> and <!-- performance:end -->.\n\n\
Repeat --results to draw several runs together (for example every workload at seed scale \
and a separate kvcache_trace run): each chart and table names the scale, budget and commit \
of the run its records came from, and the README lists every run with its workloads. The \
files must share a schema version, a measurement (workload, data set, engine, variant, \
threads) may come from one file only, and a data set named in two files must be the same.";

/// The exit codes, under the options in `ai-meta report --help`.
pub const AFTER_HELP: &str =
    "Exit codes: 0 done, 1 an output could not be written, 2 bad input (nothing written).";

/// Options of `ai-meta report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Results JSON written by `ai-meta run`; repeat to draw several runs together.
    #[arg(long, value_name = "FILE", required = true)]
    results: Vec<PathBuf>,
    /// Repository root to write into.
    #[arg(long, value_name = "DIR", default_value = ".")]
    out: PathBuf,
    /// README to update (default: DIR/README.md).
    #[arg(long, value_name = "PATH", conflicts_with = "no_readme")]
    readme: Option<PathBuf>,
    /// Write the charts and tables only.
    #[arg(long)]
    no_readme: bool,
}

impl ReportArgs {
    fn request(self) -> ReportRequest {
        let readme = match (self.readme, self.no_readme) {
            (_, true) => ReadmeTarget::Skip,
            (Some(path), false) => ReadmeTarget::At(path),
            (None, false) => ReadmeTarget::InOutput,
        };
        ReportRequest {
            results: self.results,
            out: self.out,
            readme,
        }
    }
}

/// `ai-meta report`.
pub fn report(args: ReportArgs) -> ExitCode {
    let code = aimeta_reports::report_main(&args.request());
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
