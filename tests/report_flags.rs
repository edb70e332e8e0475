//! `ai-meta report`'s command line, parsed by clap in the binary: bad flags are exit code
//! 2 with nothing written, `--help` describes the outputs and the exit codes, and a good
//! command line reaches the reports crate (whose behaviour reports/tests/report_cli.rs
//! asserts through its typed entry point).

use std::path::Path;
use std::process::{Command, Output};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn report(args: &[&str]) -> std::io::Result<Output> {
    Command::new(env!("CARGO_BIN_EXE_ai-meta"))
        .arg("report")
        .args(args)
        .output()
}

/// A results file the reports crate reads: the checked-in seed run.
fn results() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("results/ai_meta-seed.json")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn bad_command_lines_are_exit_code_2_and_write_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = dir.path().to_str().ok_or("temp path")?;
    let results = results();
    let readme = dir.path().join("README.md");
    let readme = readme.to_str().ok_or("temp path")?;
    for (args, needle) in [
        (
            &["--results", &results, "--out", root, "--frobnicate"][..],
            "--frobnicate",
        ),
        (&["--out", root], "--results"),
        (&["--out", root, "--results"], "--results"),
        (&["--out", root, "--results="], "--results"),
        (
            &["--out", root, "--results", &results, "--results", &results],
            "--results",
        ),
        (
            &[
                "--out",
                root,
                "--results",
                &results,
                "--readme",
                readme,
                "--no-readme",
            ],
            "--no-readme",
        ),
        (&["--out", root, "--results", &results, "stray"], "stray"),
    ] {
        let out = report(args)?;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(
            std::fs::read_dir(dir.path())?.next().is_none(),
            "{args:?}: nothing written"
        );
    }
    Ok(())
}

#[test]
fn help_names_the_flags_the_outputs_and_the_exit_codes() -> TestResult {
    let out = report(&["--help"])?;
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Usage: ai-meta report",
        "--results <FILE>",
        "--out <DIR>",
        "--readme <PATH>",
        "--no-readme",
        "docs/benchmarks/results.md",
        "<!-- performance:begin -->",
        "Exit codes: 0 done, 1 an output could not be written, 2 bad input",
    ] {
        assert!(text.contains(needle), "help lacks {needle}:\n{text}");
    }
    Ok(())
}

#[test]
fn a_good_command_line_writes_the_charts_and_an_unwritable_output_is_1() -> TestResult {
    let dir = tempfile::tempdir()?;
    let root = dir.path().to_str().ok_or("temp path")?;
    let out = report(&["--results", &results(), "--out", root, "--no-readme"])?;
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("chart files and results.md in"), "{text}");
    assert!(dir.path().join("docs/benchmarks/results.md").is_file());

    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x")?;
    let file = file.to_str().ok_or("temp path")?;
    let out = report(&["--results", &results(), "--out", file, "--no-readme"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.starts_with("ai-meta report: cannot write"), "{err}");
    Ok(())
}
