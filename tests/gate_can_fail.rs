//! The performance gate can fail: with this engine opened in its full-frame reproduction
//! of the seed report's bug, `ai-meta gate` exits 1 on the checked-in baseline, while the
//! same build in its normal paged mode passes. Only the deterministic counters are checked
//! here (`--counters-only`): times from a debug build say nothing, and CI runs the whole
//! gate, ratios included, on a release build.

use std::path::Path;
use std::process::{Command, Output};

fn gate(work: &Path, extra: &[&str]) -> Result<Output, Box<dyn std::error::Error>> {
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/baselines/gate.json");
    let mut args = vec![
        "gate".to_string(),
        "--counters-only".to_string(),
        "--baseline".to_string(),
        baseline.to_str().ok_or("baseline path")?.to_string(),
        "--work-dir".to_string(),
        work.to_str().ok_or("work path")?.to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    Ok(Command::new(env!("CARGO_BIN_EXE_ai-meta"))
        .args(&args)
        .output()?)
}

fn verdict<'a>(table: &'a str, check: &str) -> Option<&'a str> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(check))
        .and_then(|l| l.split_whitespace().last())
}

#[test]
fn gate_fails_in_full_frame_mode_and_passes_paged() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;

    let bad = gate(dir.path(), &["--full-frame"])?;
    let table = String::from_utf8_lossy(&bad.stdout);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1), "{table}\n{err}");
    for check in [
        "full_frame_reads/all",
        "pages_per_scan_cold/manifest_beyond",
        "pages_per_lpm_cold/kvchain_beyond",
    ] {
        assert_eq!(verdict(&table, check), Some("FAIL"), "{check}:\n{table}");
    }
    // Point gets never take the walker path, so the reproduction leaves them alone.
    assert_eq!(
        verdict(&table, "pages_per_get_cold/manifest_beyond"),
        Some("pass"),
        "{table}"
    );
    assert!(table.contains("gate: FAIL"), "{table}");

    let good = gate(dir.path(), &[])?;
    let table = String::from_utf8_lossy(&good.stdout);
    let err = String::from_utf8_lossy(&good.stderr);
    assert_eq!(good.status.code(), Some(0), "{table}\n{err}");
    assert!(table.contains("gate: pass"), "{table}");
    Ok(())
}
