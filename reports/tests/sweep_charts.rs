//! The charts of an `ai-meta sweep` file: cost against data size on log-log axes per
//! workload and scan shape, throughput against threads, the device's floor drawn only
//! when the file measured it, both themes, text that does not overlap, and the README
//! showing them after the story charts when the sweep is merged with another run.

mod support;

use std::error::Error;
use std::path::{Path, PathBuf};

use aimeta_reports::{
    engine_colour, render_report, run_report, ReadmeTarget, ReportRequest, CHARTS_DIR,
};

type TestResult = Result<(), Box<dyn Error>>;

const SIZE_STEMS: [&str; 4] = [
    "size_manifest_scan",
    "size_manifest_scan_offset_uniform",
    "size_manifest_scan_offset_zipf",
    "size_manifest_get",
];
const THREAD_STEMS: [&str; 2] = ["threads_manifest_get", "threads_manifest_scan"];

fn chart(dir: &Path, stem: &str, theme: &str) -> Result<String, Box<dyn Error>> {
    let path = dir.join(CHARTS_DIR).join(format!("{stem}-{theme}.svg"));
    Ok(std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?)
}

#[test]
fn a_sweep_draws_cost_against_size_and_throughput_against_threads() -> TestResult {
    let dir = tempfile::tempdir()?;
    let summary = render_report(&support::sweep(true), dir.path(), None)?;
    for stem in SIZE_STEMS.iter().chain(&THREAD_STEMS) {
        for theme in ["light", "dark"] {
            let path = dir
                .path()
                .join(CHARTS_DIR)
                .join(format!("{stem}-{theme}.svg"));
            assert!(summary.charts.contains(&path), "{stem} {theme} missing");
        }
    }
    let get = chart(dir.path(), "size_manifest_get", "light")?;
    let needles = [
        ">Cost against data size: manifest_get</text>",
        // Decade ticks, and the largest size.
        ">10⁵</text>",
        ">1 M</text>",
        ">10 M</text>",
        ">50 M</text>",
        ">data set size in keys, log scale</text>",
        ">mean time per operation, log scale (lower is better)</text>",
        // One mark per measured point, with its value: aimeta at 10^5 keys, 900 ns.
        "<title>aimeta, manifest_get on manifest_1e5 (10⁵ keys): 900 ns</title></circle>",
        // The engines' colours, and postgres (skipped) in the legend only.
        engine_colour("rocksdb"),
        ">postgres: N/A</text>",
        "Not drawn: rocksdb at 50 M keys: error: timed out after 600 s; postgres: N/A: skipped",
        // Provenance, the sweep's sizes and the working set of the largest size.
        "scale sweep · cache budget 16 MiB (cgroup mode)",
        "commit 5e5e5e5e5e5e",
        "sweep: 4 sizes from 10⁵ to 50 M keys",
        "manifest_5e7: working set 954 MiB = 60× the 16 MiB budget",
    ];
    support::assert_contains_all(&get, &needles);
    // Three engines drew lines (rocksdb's has three points).
    assert_eq!(get.matches("<polyline").count(), 3);
    assert_eq!(get.matches("</circle>").count(), 4 + 4 + 3);
    let zipf = chart(dir.path(), "size_manifest_scan_offset_zipf", "dark")?;
    support::assert_contains_all(
        &zipf,
        &[
            "fill=\"#0d1117\"",
            "a random sample inside a shard chosen by a Zipf draw",
        ],
    );
    let threads = chart(dir.path(), "threads_manifest_get", "light")?;
    let needles = [
        ">Throughput against reader threads: manifest_get</text>",
        ">1</text>",
        ">16</text>",
        ">reader threads, log₂ scale</text>",
        ">operations per second over all threads, log scale (higher is better)</text>",
        "<title>aimeta, manifest_get with 16 threads: 368 k/s</title>",
        "on manifest_5e7 · one line per engine",
    ];
    support::assert_contains_all(&threads, &needles);
    // results.md: allocations per operation where measured, empty cells where not.
    let md = std::fs::read_to_string(&summary.results_md)?;
    support::assert_contains_all(
        &md,
        &[
            "| working set | alloc bytes/op | allocations/op | note |",
            "| manifest_1e5 | aimeta |  | ok | 900.0 |",
            "| 48.0 | 1.00 |  |",
            "|  |  | no PostgreSQL server on this machine |",
        ],
    );
    let png_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-png-sweep");
    let sweep_charts: Vec<PathBuf> = summary
        .charts
        .iter()
        .filter(|p| {
            let name = p.to_string_lossy();
            name.contains("size_") || name.contains("threads_manifest")
        })
        .cloned()
        .collect();
    assert_eq!(
        sweep_charts.len(),
        2 * (SIZE_STEMS.len() + THREAD_STEMS.len())
    );
    support::render_pngs_and_check_text(&sweep_charts, &png_dir)
}

#[test]
fn the_device_floor_is_drawn_only_when_the_run_measured_it() -> TestResult {
    let with = tempfile::tempdir()?;
    render_report(&support::sweep(true), with.path(), None)?;
    let without = tempfile::tempdir()?;
    render_report(&support::sweep(false), without.path(), None)?;
    for stem in SIZE_STEMS {
        let svg = chart(with.path(), stem, "light")?;
        support::assert_contains_all(
            &svg,
            &[
                ">disk: 4 KiB read at QD1, 61.0 µs</text>",
                "stroke-dasharray",
                "random 4 KiB reads at queue depth 1 with O_DIRECT",
            ],
        );
        let bare = chart(without.path(), stem, "light")?;
        assert!(!bare.contains("stroke-dasharray"), "{stem}: a floor line");
        assert!(!bare.contains("disk:"), "{stem}: a floor label");
    }
    let get = chart(with.path(), "threads_manifest_get", "light")?;
    support::assert_contains_all(
        &get,
        &[
            ">disk: random 4 KiB reads at QD8, 48.0 k/s</text>",
            ">disk: random 4 KiB reads at QD1, 16.4 k/s</text>",
        ],
    );
    assert_eq!(get.matches("stroke-dasharray").count(), 2);
    // Scans read many pages each: no per-read floor is drawn against them.
    let scan = chart(with.path(), "threads_manifest_scan", "light")?;
    assert!(!scan.contains("stroke-dasharray"));
    let bare = chart(without.path(), "threads_manifest_get", "light")?;
    assert!(!bare.contains("stroke-dasharray"));
    Ok(())
}

#[test]
fn merged_with_a_run_the_readme_shows_the_sweep_after_the_stories() -> TestResult {
    let inputs = tempfile::tempdir()?;
    let (run, sweep) = (
        inputs.path().join("ci.json"),
        inputs.path().join("sweep.json"),
    );
    support::synthetic().save(&run)?;
    support::sweep(true).save(&sweep)?;
    let dir = tempfile::tempdir()?;
    let readme = support::readme_with_markers(dir.path())?;
    run_report(&ReportRequest {
        results: vec![run, sweep],
        out: dir.path().to_path_buf(),
        readme: ReadmeTarget::At(readme.clone()),
    })?;
    let text = std::fs::read_to_string(&readme)?;
    let sources: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split("srcset=\"docs/benchmarks/").nth(1))
        .filter_map(|l| l.split("-dark.svg").next())
        .collect();
    let mut want = vec!["aimeta_vs_lmdb", "scan_cliff", "lpm_variants"];
    want.extend(SIZE_STEMS);
    want.extend(THREAD_STEMS);
    assert_eq!(&sources[..want.len()], want, "{sources:?}");
    let at = |needle: &str| text.find(needle).ok_or(format!("README lacks {needle}"));
    assert!(at("threads_manifest_scan-light.svg")? < at("<summary>One chart per workload")?);
    // The story charts draw the single-scale run, not the sweep's sizes.
    let head = chart(dir.path(), "aimeta_vs_lmdb", "light")?;
    assert!(!head.contains("manifest_1e"), "the headline drew the sweep");
    assert!(!head.contains("scale sweep"));
    let cliff = chart(dir.path(), "scan_cliff", "light")?;
    assert!(
        !cliff.contains("manifest_5e7"),
        "the scan cliff drew the sweep"
    );
    // The sweep's charts name the sweep's run, not the other.
    let get = chart(dir.path(), "size_manifest_get", "light")?;
    assert!(get.contains("commit 5e5e5e5e5e5e") && !get.contains("commit c5d275a1b2c3"));
    Ok(())
}

#[test]
fn a_run_without_a_sweep_has_no_sweep_charts() -> TestResult {
    let dir = tempfile::tempdir()?;
    let summary = render_report(&support::synthetic(), dir.path(), None)?;
    assert!(summary.charts.iter().all(|p| {
        let name = p.to_string_lossy();
        !name.contains("/size_") && !name.contains("/threads_")
    }));
    Ok(())
}
