//! `ai-meta report` as a typed call: what to read and where to write, and the one line
//! it prints. The binary parses the command line (with clap, like its other commands)
//! into a [`ReportRequest`]; this crate never sees the raw arguments.

use std::io::Write;
use std::path::PathBuf;

use crate::merge::Merged;
use crate::report::{render_merged, ReportSummary, CHARTS_DIR};
use crate::results::ReportError;

/// Where the README's Performance section goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadmeTarget {
    /// `README.md` in the output root (the default).
    InOutput,
    /// This README (`--readme PATH`).
    At(PathBuf),
    /// No README: the charts and tables only (`--no-readme`).
    Skip,
}

/// What `ai-meta report` is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportRequest {
    /// The results JSON files written by `ai-meta run` (at least one), drawn together
    /// in this order: each measurement from one file only.
    pub results: Vec<PathBuf>,
    /// The repository root to write into.
    pub out: PathBuf,
    /// Which README to update, if any.
    pub readme: ReadmeTarget,
}

impl ReportRequest {
    /// The README to update, resolved against the output root.
    pub fn readme_path(&self) -> Option<PathBuf> {
        match &self.readme {
            ReadmeTarget::InOutput => Some(self.out.join("README.md")),
            ReadmeTarget::At(path) => Some(path.clone()),
            ReadmeTarget::Skip => None,
        }
    }
}

/// Runs `ai-meta report`: loads the results files, draws them together (see
/// [`Merged::merge`]) and renders them (see [`render_merged`]).
pub fn run_report(request: &ReportRequest) -> Result<ReportSummary, ReportError> {
    let merged = Merged::load(&request.results)?;
    render_merged(&merged, &request.out, request.readme_path().as_deref())
}

/// `ai-meta report` writing to the given streams: returns the exit code (0 done, 1 an
/// output could not be written, 2 bad input, nothing written). The outcome is one line,
/// on `out` when done, on `err` otherwise.
pub fn report_main_with(request: &ReportRequest, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match run_report(request) {
        Ok(s) => {
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
pub fn report_main(request: &ReportRequest) -> i32 {
    report_main_with(
        request,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_defaults_to_the_output_root() {
        let mut r = ReportRequest {
            results: vec!["r.json".into()],
            out: "o".into(),
            readme: ReadmeTarget::InOutput,
        };
        assert_eq!(r.readme_path(), Some(PathBuf::from("o").join("README.md")));
        r.readme = ReadmeTarget::At("R.md".into());
        assert_eq!(r.readme_path(), Some(PathBuf::from("R.md")));
        r.readme = ReadmeTarget::Skip;
        assert_eq!(r.readme_path(), None);
    }
}
