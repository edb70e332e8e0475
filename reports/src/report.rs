//! `render_report`: a results file to charts, docs/benchmarks/results.md and the
//! README's Performance section. Everything is made in memory first and the README is
//! checked before any file is written; each file is then replaced atomically, and only
//! when its content changes, so a second run on the same input touches nothing.

use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::charts::{merged_charts, RenderedChart};
use crate::merge::Merged;
use crate::results::{ReportError, Results};
use crate::{markdown, readme, write_atomically};

/// Where the charts and results.md go, under the output root.
pub const CHARTS_DIR: &str = "docs/benchmarks";

/// What `render_report` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportSummary {
    /// Every chart file, for each chart its light then its dark SVG.
    pub charts: Vec<PathBuf>,
    /// The tables: `<out>/docs/benchmarks/results.md`.
    pub results_md: PathBuf,
    /// The README whose Performance section was regenerated, if one was given.
    pub readme: Option<PathBuf>,
    /// The files whose content changed; the others were left untouched.
    pub changed: Vec<PathBuf>,
}

/// Renders `results` into `out_dir` (the repository root): one SVG per chart and theme
/// in `out_dir/docs/benchmarks/`, `results.md` beside them, and, when `readme` is given,
/// the README's section between `<!-- performance:begin -->` and
/// `<!-- performance:end -->`.
///
/// Refuses with [`ReportError::Readme`] before writing anything when the README's
/// markers are missing or repeated, and with [`ReportError::Io`] when it cannot be read.
pub fn render_report(
    results: &Results,
    out_dir: &Path,
    readme: Option<&Path>,
) -> Result<ReportSummary, ReportError> {
    render_merged(&Merged::single(results.clone()), out_dir, readme)
}

/// [`render_report`] of several results files drawn together: every chart names the
/// run (scale, budget, commit) of its own records, results.md has a provenance column
/// per file, and the README's section lists each file's run with its workloads. One
/// file renders exactly as [`render_report`] does.
pub fn render_merged(
    merged: &Merged,
    out_dir: &Path,
    readme: Option<&Path>,
) -> Result<ReportSummary, ReportError> {
    let charts = merged_charts(merged);
    let dir = out_dir.join(CHARTS_DIR);

    let readme_update = match readme {
        Some(path) => {
            let old = fs::read_to_string(path).map_err(|source| ReportError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            let prefix = relative_prefix(path, out_dir);
            let body = readme::section(merged, &charts, &prefix, &fairness_link(path, out_dir));
            let new = readme::splice(&old, &body).map_err(|problem| ReportError::Readme {
                path: path.to_path_buf(),
                problem,
            })?;
            Some((path.to_path_buf(), new))
        }
        None => None,
    };

    let mut changed = Vec::new();
    let mut chart_paths = Vec::new();
    for RenderedChart {
        stem, light, dark, ..
    } in &charts
    {
        for (theme, svg) in [("light", light), ("dark", dark)] {
            let path = dir.join(format!("{stem}-{theme}.svg"));
            write_if_changed(&path, svg, &mut changed)?;
            chart_paths.push(path);
        }
    }
    let results_md = dir.join("results.md");
    let md = markdown::results_md(merged, &fairness_link(&results_md, out_dir));
    write_if_changed(&results_md, &md, &mut changed)?;
    if let Some((path, text)) = &readme_update {
        write_if_changed(path, text, &mut changed)?;
    }
    Ok(ReportSummary {
        charts: chart_paths,
        results_md,
        readme: readme_update.map(|(p, _)| p),
        changed,
    })
}

fn write_if_changed(
    path: &Path,
    text: &str,
    changed: &mut Vec<PathBuf>,
) -> Result<(), ReportError> {
    if fs::read(path).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(());
    }
    write_atomically(path, text.as_bytes()).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    changed.push(path.to_path_buf());
    Ok(())
}

/// An absolute, and where possible symlink-free, form of `p`.
fn resolved(p: &Path) -> PathBuf {
    let p = if p.as_os_str().is_empty() {
        Path::new(".")
    } else {
        p
    };
    fs::canonicalize(p)
        .or_else(|_| std::path::absolute(p))
        .unwrap_or_else(|_| p.to_path_buf())
}

/// Where docs/fairness.md lives, as a link from the file `from`: in the nearest of
/// `out_dir` and its ancestors that has it (a report drawn into a folder of the repository,
/// such as docs/etcd, still links the repository's page), else in `out_dir` itself.
pub(crate) fn fairness_link(from: &Path, out_dir: &Path) -> String {
    let start = resolved(out_dir);
    let root = start
        .ancestors()
        .find(|d| d.join(FAIRNESS).is_file())
        .unwrap_or(&start);
    let page = root.join(FAIRNESS);
    let folder = page.parent().unwrap_or(root);
    format!("{}fairness.md", relative_prefix(from, folder))
}

/// The page that says what each engine is given, under the repository root.
const FAIRNESS: &str = "docs/fairness.md";

/// The URL path prefix leading from the README's folder to `out_dir`: "" when they are
/// the same folder, else for example "../" or "site/".
pub(crate) fn relative_prefix(readme: &Path, out_dir: &Path) -> String {
    let from = resolved(readme.parent().unwrap_or(Path::new(".")));
    let to = resolved(out_dir);
    let names = |p: &Path| -> Vec<String> {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                Component::ParentDir => Some("..".to_string()),
                _ => None,
            })
            .collect()
    };
    let (from, to) = (names(&from), names(&to));
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut prefix = "../".repeat(from.len() - common);
    for part in &to[common..] {
        prefix.push_str(part);
        prefix.push('/');
    }
    prefix
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fairness_page_is_the_repositorys_from_any_output_folder() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        fs::create_dir_all(root.join("docs/etcd/docs/benchmarks"))?;
        // No fairness page anywhere: the output root's own place for it.
        assert_eq!(
            fairness_link(&root.join("docs/etcd/README.md"), &root.join("docs/etcd")),
            "docs/fairness.md"
        );
        fs::write(root.join("docs/fairness.md"), "x")?;
        // Drawn into the repository root (the README and docs/benchmarks/results.md).
        assert_eq!(
            fairness_link(&root.join("README.md"), root),
            "docs/fairness.md"
        );
        assert_eq!(
            fairness_link(&root.join("docs/benchmarks/results.md"), root),
            "../fairness.md"
        );
        // Drawn into a folder of the repository: still the repository's page.
        let out = root.join("docs/etcd");
        assert_eq!(
            fairness_link(&out.join("README.md"), &out),
            "../fairness.md"
        );
        assert_eq!(
            fairness_link(&out.join("docs/benchmarks/results.md"), &out),
            "../../../fairness.md"
        );
        Ok(())
    }

    #[test]
    fn prefixes_lead_from_the_readme_to_the_output_root() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        fs::create_dir_all(root.join("a/b"))?;
        assert_eq!(relative_prefix(&root.join("README.md"), root), "");
        assert_eq!(relative_prefix(&root.join("a/README.md"), root), "../");
        assert_eq!(
            relative_prefix(&root.join("README.md"), &root.join("a/b")),
            "a/b/"
        );
        assert_eq!(
            relative_prefix(&root.join("a/b/R.md"), &root.join("a/c")),
            "../c/"
        );
        Ok(())
    }
}
