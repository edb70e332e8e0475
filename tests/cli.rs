//! The `ai-meta` command's error paths and a tiny real run.

use std::process::Command;

fn ai_meta(args: &[&str]) -> std::io::Result<std::process::Output> {
    Command::new(env!("CARGO_BIN_EXE_ai-meta"))
        .args(args)
        .output()
}

/// `ai-meta run --scale ci` on `engines` and `workloads`, results to `out`, stores under
/// `work`, with `extra` flags.
fn run_ci(
    engines: &str,
    workloads: &str,
    extra: &[&str],
    out: &std::path::Path,
    work: &std::path::Path,
) -> Result<std::process::Output, Box<dyn std::error::Error>> {
    let mut args = vec![
        "run",
        "--scale",
        "ci",
        "--engines",
        engines,
        "--workloads",
        workloads,
        "--out",
        out.to_str().ok_or("path")?,
        "--work-dir",
        work.to_str().ok_or("path")?,
    ];
    args.extend_from_slice(extra);
    Ok(ai_meta(&args)?)
}

fn one_line_exit_2(args: &[&str], needle: &str) -> Result<(), Box<dyn std::error::Error>> {
    let out = ai_meta(args)?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim().lines().count(),
        1,
        "{args:?} printed more than one line: {err}"
    );
    assert!(err.contains(needle), "{args:?}: {err}");
    Ok(())
}

#[test]
fn bad_names_and_paths_get_one_line_and_exit_2() -> Result<(), Box<dyn std::error::Error>> {
    one_line_exit_2(
        &["run", "--scale", "huge"],
        "unknown scale \"huge\"; valid: ci, quick, seed",
    )?;
    one_line_exit_2(&["run", "--engines", "aimeta,oracle"], "valid names are")?;
    one_line_exit_2(&["run", "--workloads", "manifest_scna"], "unknown workload")?;
    one_line_exit_2(&["run", "--budget-mode", "magic"], "unknown budget mode")?;
    one_line_exit_2(&["run", "--durability", "maybe"], "unknown durability")?;
    one_line_exit_2(&["run", "--ops", "0"], "--ops 0 measures nothing")?;
    one_line_exit_2(
        &["run", "--out", "/proc/no-such-dir/results.json"],
        "cannot",
    )?;
    one_line_exit_2(
        &["report", "--results", "/no/such/results.json"],
        "results.json",
    )?;
    one_line_exit_2(&["gate", "--scale", "huge"], "unknown scale")?;
    one_line_exit_2(
        &["gate", "--baseline", "/no/such/gate.json"],
        "/no/such/gate.json",
    )?;
    one_line_exit_2(&["gate", "--scale", "quick"], "was recorded at scale ci")?;
    one_line_exit_2(
        &["gate", "--update-baseline", "--full-frame"],
        "drop --full-frame",
    )?;
    Ok(())
}

#[test]
fn a_small_run_writes_results_json() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("r.json");
    let work = dir.path().join("work");
    let o = run_ci("aimeta,lmdb", "manifest_get,kvchain_lpm", &[], &out, &work)?;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = aimeta_reports::Results::load(&out)?;
    assert!(r
        .find("manifest_get", "manifest_beyond", "aimeta", None)
        .is_some());
    assert!(r
        .find("manifest_get", "manifest_fits", "lmdb", None)
        .is_some());
    let native = r
        .find("kvchain_lpm", "kvchain_beyond", "aimeta", Some("native"))
        .ok_or("aimeta native lpm")?;
    assert_eq!(native.status, aimeta_reports::Status::Ok);
    let lmdb = r
        .find("kvchain_lpm", "kvchain_beyond", "lmdb", Some("native"))
        .ok_or("lmdb native lpm")?;
    assert_eq!(lmdb.status, aimeta_reports::Status::Unsupported);
    assert!(r
        .datasets
        .iter()
        .any(|d| d.name == "manifest_beyond" && !d.fits_budget && d.ratio_to_budget >= 4.0));
    assert!(!r.provenance.commit.is_empty());
    Ok(())
}

#[test]
fn a_trace_that_is_not_of_the_format_is_refused_with_its_line_and_nothing_is_written(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let trace = dir.path().join("bad.jsonl");
    std::fs::write(
        &trace,
        "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1, 2]}\n\
         {\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [3, 2]}\n",
    )?;
    let out = dir.path().join("r.json");
    let work = dir.path().join("work");
    let args = [
        "run",
        "--scale",
        "ci",
        "--engines",
        "aimeta",
        "--workloads",
        "kvcache_trace",
        "--trace",
        trace.to_str().ok_or("path")?,
        "--out",
        out.to_str().ok_or("path")?,
        "--work-dir",
        work.to_str().ok_or("path")?,
    ];
    one_line_exit_2(&args, "line 2: block 2 follows parent 3 here but 1")?;
    assert!(!out.exists(), "a refused trace wrote results");
    one_line_exit_2(&["run", "--rate", "0"], "--rate 0 is not a rate")?;
    Ok(())
}

#[test]
fn a_short_trace_replays_on_both_designs_with_the_models_hits(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/workloads/traces/mooncake_conversation_trace.jsonl"
    ))?;
    let trace = dir.path().join("mooncake_head.jsonl");
    let head: Vec<&str> = committed.lines().take(40).collect();
    std::fs::write(&trace, head.join("\n"))?;
    let out = dir.path().join("r.json");
    let trace_flag = ["--trace", trace.to_str().ok_or("path")?];
    let o = run_ci(
        "aimeta,lmdb",
        "kvcache_trace",
        &trace_flag,
        &out,
        &dir.path().join("work"),
    )?;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = aimeta_reports::Results::load(&out)?;
    let replays: Vec<_> = r
        .records
        .iter()
        .filter(|x| x.workload == "kvcache_trace")
        .collect();
    // aimeta: 6 methods x 3 capacities + 6 at 8 threads; lmdb: 5 x 3 + 5.
    assert_eq!(replays.len(), 24 + 20);
    for x in &replays {
        match (x.engine.as_str(), x.variant.as_deref()) {
            ("lmdb", Some("path_native")) => {
                assert_eq!(x.status, aimeta_reports::Status::Unsupported)
            }
            _ => {
                assert_eq!(x.status, aimeta_reports::Status::Ok, "{x:?}");
                let t = x.trace.as_ref().ok_or("trace stats")?;
                assert_eq!(t.hits, t.model_hits);
                assert_eq!(x.ops, 40);
            }
        }
    }
    assert!(r.datasets.iter().any(|d| d.name == "mooncake_x1_cap10"));
    Ok(())
}
