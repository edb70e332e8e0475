//! `ai-meta sweep`: bad sizes are refused before anything runs, a run too large for the
//! disk is refused with its sizes, and a tiny sweep writes every size and thread count.

use std::process::Command;

fn ai_meta(args: &[&str]) -> std::io::Result<std::process::Output> {
    Command::new(env!("CARGO_BIN_EXE_ai-meta"))
        .args(args)
        .output()
}

#[test]
fn bad_sizes_and_runs_too_large_for_the_disk_exit_2_with_one_line(
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("s.json");
    let out = out.to_str().ok_or("path")?;
    for (args, needle) in [
        (
            vec!["sweep", "--sizes", "lots", "--out", out],
            "not a number of keys",
        ),
        (
            vec!["sweep", "--sizes", "15000", "--out", out],
            "whole shards",
        ),
        (
            vec![
                "run",
                "--scale",
                "large",
                "--engines",
                "aimeta",
                "--workloads",
                "manifest_get",
                "--out",
                out,
                "--work-dir",
                "/proc/self/ai-meta",
            ],
            "not enough disk",
        ),
    ] {
        let o = ai_meta(&args)?;
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    assert!(!dir.path().join("s.json").exists(), "nothing was written");
    Ok(())
}

#[test]
fn a_tiny_sweep_records_every_size_and_thread_count() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("sweep.json");
    let work = dir.path().join("work");
    let o = ai_meta(&[
        "sweep",
        "--sizes",
        "1e3,1e4",
        "--engines",
        "aimeta,lmdb",
        "--budget-mib",
        "1",
        "--budget-mode",
        "engine",
        "--no-device-floor",
        "--out",
        out.to_str().ok_or("path")?,
        "--work-dir",
        work.to_str().ok_or("path")?,
    ])?;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out)?)?;
    let sweep = &r["config"]["sweep"];
    assert_eq!(sweep["sizes"], serde_json::json!([1000, 10000]));
    assert_eq!(sweep["threads_dataset"], "manifest_1e4");
    let records = r["records"].as_array().ok_or("records")?;
    let has = |w: &str, ds: &str, engine: &str, v: Option<&str>| {
        records.iter().any(|x| {
            x["workload"] == w
                && x["dataset"] == ds
                && x["engine"] == engine
                && x["variant"].as_str() == v
                && x["status"] == "ok"
        })
    };
    for engine in ["aimeta", "lmdb"] {
        for ds in ["manifest_1e3", "manifest_1e4"] {
            assert!(has("manifest_get", ds, engine, None), "{engine} {ds}");
            assert!(
                has("manifest_scan", ds, engine, Some("offset_zipf")),
                "{engine} {ds}"
            );
            assert!(has("bulk_load", ds, engine, None), "{engine} {ds}");
        }
        for t in ["t1", "t2", "t4", "t8", "t16"] {
            assert!(has("manifest_get_threads", "manifest_1e4", engine, Some(t)));
            assert!(has(
                "manifest_scan_threads",
                "manifest_1e4",
                engine,
                Some(t)
            ));
            assert!(!has(
                "manifest_get_threads",
                "manifest_1e3",
                engine,
                Some(t)
            ));
        }
    }
    // Every timed record says its working set; gets reach every page of the data set.
    let get = records
        .iter()
        .find(|x| x["workload"] == "manifest_get" && x["dataset"] == "manifest_1e4")
        .ok_or("no get")?;
    assert_eq!(
        get["working_set"]["pages"], 147,
        "10,000 entries of 60 bytes"
    );
    assert!(
        get["alloc_per_op"].is_object(),
        "the binary counts allocations"
    );
    assert!(
        !work.join("manifest_1e4").join("aimeta").exists(),
        "stores removed"
    );
    Ok(())
}
