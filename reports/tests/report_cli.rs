//! `ai-meta report` end to end through its typed entry point: the README round trip,
//! results.md, and the error paths (typed errors, one line on stderr, exit code 2,
//! nothing half-written). The command-line flags themselves are the binary's: see
//! tests/report_flags.rs at the workspace root.

mod support;

use std::error::Error;
use std::path::Path;

use aimeta_reports::{
    render_report, report_main_with, run_report, ReadmeTarget, ReportError, ReportRequest, Results,
    BEGIN_MARKER, CHARTS_DIR, END_MARKER,
};

type TestResult = Result<(), Box<dyn Error>>;

/// `--results results --out out`, with `readme` for `--readme` / `--no-readme`.
fn request(results: &Path, out: &Path, readme: ReadmeTarget) -> ReportRequest {
    ReportRequest {
        results: vec![results.to_path_buf()],
        out: out.to_path_buf(),
        readme,
    }
}

/// Runs the command; returns (exit code, stdout, stderr).
fn run(request: &ReportRequest) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = report_main_with(request, &mut out, &mut err);
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// A temp repository root with a README and a saved synthetic results file.
fn repo() -> Result<(tempfile::TempDir, std::path::PathBuf), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    support::readme_with_markers(dir.path())?;
    let results = dir.path().join("results.json");
    support::synthetic().save(&results)?;
    Ok((dir, results))
}

#[test]
fn the_readme_section_is_regenerated_and_a_second_run_changes_nothing() -> TestResult {
    let (dir, results) = repo()?;
    let readme = dir.path().join("README.md");
    let before = std::fs::read_to_string(&readme)?;
    let default_readme = request(&results, dir.path(), ReadmeTarget::InOutput);
    let (code, out, err) = run(&default_readme);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    assert!(out.contains("README.md updated"), "{out}");
    let after = std::fs::read_to_string(&readme)?;
    let head = &before[..before.find(BEGIN_MARKER).ok_or("marker")?];
    let tail = &before[before.find(END_MARKER).ok_or("marker")?..];
    assert!(
        after.starts_with(head) && after.ends_with(tail),
        "outside the markers untouched"
    );
    assert!(!after.contains("old numbers"));
    for needle in [
        "<source media=\"(prefers-color-scheme: dark)\" srcset=\"docs/benchmarks/aimeta_vs_lmdb-dark.svg\">",
        "<img alt=\"The scan cliff: manifest_scan inside and beyond the cache budget\" src=\"docs/benchmarks/scan_cliff-light.svg\">",
        "docs/benchmarks/manifest_count8000-light.svg",
        "Measured on AMD EPYC 7B13, 2 cores, 24 GiB at commit `c5d275a1b2c3` on 2026-11-30T02:00:00Z: scale ci, cache budget 64 MiB (engine mode)",
        "[docs/fairness.md](docs/fairness.md)",
        "[docs/benchmarks/results.md](docs/benchmarks/results.md)",
    ] {
        assert!(after.contains(needle), "README lacks {needle}");
    }
    assert_eq!(after.matches("<picture>").count(), 13);

    let again = run_report(&default_readme)?;
    assert!(
        again.changed.is_empty(),
        "second run rewrote {:?}",
        again.changed
    );
    assert_eq!(std::fs::read_to_string(&readme)?, after);
    let (code, out, _) = run(&default_readme);
    assert_eq!(code, 0);
    assert!(
        out.contains("README.md unchanged") && out.contains("0 files changed"),
        "{out}"
    );
    Ok(())
}

#[test]
fn a_readme_elsewhere_links_back_to_the_output_root() -> TestResult {
    let (dir, _) = repo()?;
    std::fs::create_dir(dir.path().join("site"))?;
    let readme = support::readme_with_markers(&dir.path().join("site"))?;
    render_report(&support::synthetic(), dir.path(), Some(&readme))?;
    let text = std::fs::read_to_string(&readme)?;
    assert!(text.contains("srcset=\"../docs/benchmarks/scan_cliff-dark.svg\""));
    assert!(text.contains("(../docs/fairness.md)"));
    Ok(())
}

#[test]
fn results_md_holds_every_number_and_every_reason() -> TestResult {
    let (dir, results) = repo()?;
    let (code, _, err) = run(&request(&results, dir.path(), ReadmeTarget::Skip));
    assert_eq!(code, 0, "{err}");
    let md = std::fs::read_to_string(dir.path().join(CHARTS_DIR).join("results.md"))?;
    for (w, _) in support::WORKLOADS {
        assert!(md.contains(&format!("\n## {w}\n")), "{w} table");
    }
    for needle in [
        "| mean ns | p50 ns | p99 ns | p99.9 ns | ops/s |",
        "| pages read/op | page hits/op |",
        "| manifest_fits | aimeta | paged | ok | 32000.0 | 28800.0 | 80000.0 | 128000.0 |",
        "| manifest_beyond | postgres |  | skipped | N/A | N/A | N/A | N/A | N/A |",
        "no PostgreSQL server on this machine",
        "| unsupported | N/A |",
        "no compare-and-swap without a TransactionDB",
        "timed out after 600 s",
        "48 MiB (50331648)",
        "## aimeta ÷ LMDB",
        "| kvchain_lpm | kvchain_beyond | 1200.0 | native | 5000.0 | predecessor_seek | 0.240 |",
        "| cache budget | 64 MiB (67108864 bytes), engine mode |",
        "[fairness](../fairness.md)",
    ] {
        assert!(md.contains(needle), "results.md lacks {needle}");
    }
    assert!(
        !md.contains("\n| manifest_beyond | postgres |  | skipped | 0.0"),
        "no zeros for N/A"
    );
    Ok(())
}

fn assert_one_line_exit_2(request: &ReportRequest, expect: &str) {
    let (code, out, err) = run(request);
    assert_eq!(code, 2, "{request:?}: {err}");
    assert!(out.is_empty(), "{request:?}: {out}");
    assert_eq!(err.lines().count(), 1, "{request:?}: one line: {err}");
    assert!(
        err.starts_with("ai-meta report: ") && err.contains(expect),
        "{request:?}: {err}"
    );
}

#[test]
fn bad_input_gets_one_line_and_exit_code_2() -> TestResult {
    let (dir, results) = repo()?;
    let root = dir.path();
    let into_root = |results: &Path| request(results, root, ReadmeTarget::InOutput);
    let missing = dir.path().join("missing.json");
    assert_one_line_exit_2(&into_root(&missing), "missing.json");
    assert!(matches!(
        Results::load(&missing),
        Err(ReportError::Io { .. })
    ));

    let mut newer = serde_json::to_value(support::synthetic())?;
    newer["schema_version"] = 99.into();
    let newer_path = dir.path().join("newer.json");
    std::fs::write(&newer_path, serde_json::to_vec(&newer)?)?;
    assert_one_line_exit_2(&into_root(&newer_path), "schema_version 99");

    let mut empty = support::synthetic();
    empty.records.clear();
    let empty_path = dir.path().join("empty.json");
    empty.save(&empty_path)?;
    assert_one_line_exit_2(&into_root(&empty_path), "holds no records");

    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{\"schema_version\": 1,\n oops")?;
    assert_one_line_exit_2(&into_root(&garbage), "not a results file");

    let no_readme = dir.path().join("nowhere/README.md");
    assert_one_line_exit_2(
        &request(&results, root, ReadmeTarget::At(no_readme)),
        "nowhere/README.md",
    );
    assert!(
        !dir.path().join(CHARTS_DIR).exists(),
        "nothing written on bad input"
    );
    Ok(())
}

#[test]
fn a_readme_without_markers_is_refused_and_left_alone() -> TestResult {
    let (dir, results) = repo()?;
    let readme = dir.path().join("README.md");
    let text = "# Project\n\n## Performance\n\nHand-written numbers.\n";
    std::fs::write(&readme, text)?;
    assert_one_line_exit_2(
        &request(&results, dir.path(), ReadmeTarget::InOutput),
        "performance:begin",
    );
    assert_eq!(std::fs::read_to_string(&readme)?, text);
    assert!(
        !dir.path().join(CHARTS_DIR).exists(),
        "refused before writing anything"
    );
    let e = render_report(&support::synthetic(), dir.path(), Some(&readme));
    assert!(matches!(e, Err(ReportError::Readme { .. })), "{e:?}");

    std::fs::write(&readme, format!("{END_MARKER}\n{BEGIN_MARKER}\n"))?;
    let e = render_report(&support::synthetic(), dir.path(), Some(&readme));
    assert!(
        matches!(e, Err(ReportError::Readme { ref problem, .. }) if problem.contains("before"))
    );
    Ok(())
}

#[test]
fn an_unwritable_output_is_exit_code_1() -> TestResult {
    let (dir, results) = repo()?;
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x")?;
    let (code, _, err) = run(&request(&results, &file, ReadmeTarget::Skip));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot write"), "{err}");
    let e = render_report(&support::synthetic(), &file, None);
    assert!(matches!(e, Err(ReportError::Write { .. })), "{e:?}");
    Ok(())
}
