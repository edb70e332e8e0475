//! `ai-meta report --results FILE [--out DIR] [--readme PATH | --no-readme]`: the command
//! line around `render_report`. Bad input gets one line on stderr and exit code 2.

use std::io::Write;
use std::path::PathBuf;

use crate::report::{render_report, ReportSummary, CHARTS_DIR};
use crate::results::{ReportError, Results};

/// Help text of `ai-meta report`.
pub const REPORT_USAGE: &str = "\
usage: ai-meta report --results FILE [--out DIR] [--readme PATH | --no-readme]

Turns a results file into charts (DIR/docs/benchmarks/*-light.svg and *-dark.svg),
tables (DIR/docs/benchmarks/results.md) and the README's Performance section, between
<!-- performance:begin --> and <!-- performance:end -->.

  --results FILE   results JSON written by `ai-meta run` (required)
  --out DIR        repository root to write into (default: .)
  --readme PATH    README to update (default: DIR/README.md)
  --no-readme      write the charts and tables only

Exit codes: 0 done, 1 an output could not be written, 2 bad input (nothing written).";

/// Parsed command line.
#[derive(Debug, PartialEq)]
struct Args {
    results: PathBuf,
    out: PathBuf,
    readme: Option<PathBuf>,
}

fn usage(message: impl Into<String>) -> ReportError {
    ReportError::Usage {
        message: message.into(),
    }
}

/// Parses the arguments after `report` (a leading `report` is skipped too). `Ok(None)`
/// asks for the help text.
fn parse(args: &[String]) -> Result<Option<Args>, ReportError> {
    let args = match args.first() {
        Some(a) if a == "report" => &args[1..],
        _ => args,
    };
    let (mut results, mut out, mut readme, mut no_readme) = (None, None, None, false);
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg, None),
        };
        let slot = match flag {
            "-h" | "--help" => return Ok(None),
            "--no-readme" if inline.is_none() => {
                no_readme = true;
                i += 1;
                continue;
            }
            "--results" => &mut results,
            "--out" => &mut out,
            "--readme" => &mut readme,
            f if f.starts_with('-') => return Err(usage(format!("unknown flag {f}"))),
            other => return Err(usage(format!("unexpected argument {other:?}"))),
        };
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i)
                    .cloned()
                    .ok_or_else(|| usage(format!("{flag} needs a value")))?
            }
        };
        if value.is_empty() {
            return Err(usage(format!("{flag} needs a non-empty value")));
        }
        if slot.replace(PathBuf::from(value)).is_some() {
            return Err(usage(format!("{flag} given twice")));
        }
        i += 1;
    }
    let results = results.ok_or_else(|| usage("missing --results FILE"))?;
    if no_readme && readme.is_some() {
        return Err(usage("--readme and --no-readme exclude each other"));
    }
    let out = out.unwrap_or_else(|| PathBuf::from("."));
    let readme = if no_readme {
        None
    } else {
        Some(readme.unwrap_or_else(|| out.join("README.md")))
    };
    Ok(Some(Args {
        results,
        out,
        readme,
    }))
}

/// Runs `ai-meta report` with `args` (the arguments after the subcommand) and returns
/// the summary, or `Ok(None)` when help was asked for.
pub fn run_report(args: &[String]) -> Result<Option<ReportSummary>, ReportError> {
    let Some(args) = parse(args)? else {
        return Ok(None);
    };
    let results = Results::load(&args.results)?;
    render_report(&results, &args.out, args.readme.as_deref()).map(Some)
}

/// `ai-meta report` writing to the given streams: returns the exit code (0 done, 1 an
/// output could not be written, 2 bad input). Errors are one line on `err`.
pub fn report_main_with(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match run_report(args) {
        Ok(None) => {
            let _ = writeln!(out, "{REPORT_USAGE}");
            0
        }
        Ok(Some(s)) => {
            let readme = match &s.readme {
                Some(p) if s.changed.contains(p) => format!("; {} updated", p.display()),
                Some(p) => format!("; {} unchanged", p.display()),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "ai-meta report: {} chart files and results.md in {}{readme}; {} files changed",
                s.charts.len(),
                s.results_md
                    .parent()
                    .map_or_else(|| CHARTS_DIR.into(), |p| p.display().to_string()),
                s.changed.len()
            );
            0
        }
        Err(e) => {
            let line = e.to_string().replace(['\n', '\r'], " ");
            let _ = writeln!(err, "ai-meta report: {line}");
            e.exit_code()
        }
    }
}

/// `ai-meta report` on the process's stdout and stderr: returns the exit code.
pub fn report_main(args: &[String]) -> i32 {
    report_main_with(
        args,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_flags_and_defaults() -> Result<(), ReportError> {
        let a = parse(&strings(&["report", "--results", "r.json"]))?;
        assert_eq!(
            a,
            Some(Args {
                results: "r.json".into(),
                out: ".".into(),
                readme: Some(PathBuf::from(".").join("README.md")),
            })
        );
        let a = parse(&strings(&["--results=r.json", "--out", "o", "--no-readme"]))?;
        assert_eq!(a.and_then(|a| a.readme), None);
        assert_eq!(parse(&strings(&["--help"]))?, None);
        Ok(())
    }

    #[test]
    fn rejects_bad_command_lines() -> TestResult {
        for bad in [
            &["--results"][..],
            &["--bogus"],
            &["stray"],
            &[],
            &["--results", "a", "--results", "b"],
            &["--results", "a", "--readme", "R", "--no-readme"],
            &["--results="],
        ] {
            let e = parse(&strings(bad));
            assert!(
                matches!(e, Err(ReportError::Usage { .. })),
                "{bad:?}: {e:?}"
            );
        }
        Ok(())
    }
}
