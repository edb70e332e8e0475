//! A results file with trace replays (`kvcache_trace`) through `render_report`: the three
//! trace charts come first in the README's Performance section, with the featured
//! replays' table folded under them; results.md holds every replay; the charts say why a
//! design is N/A, keep the engines' colours, and their text does not overlap.

mod support;

use std::error::Error;
use std::path::{Path, PathBuf};

use aimeta_reports::{engine_colour, render_report, CHARTS_DIR};

type TestResult = Result<(), Box<dyn Error>>;

const TRACE_STEMS: [&str; 3] = [
    "trace_request_time",
    "trace_hit_rate",
    "trace_lookup_percentiles",
];

fn chart(dir: &Path, stem: &str) -> Result<String, Box<dyn Error>> {
    let path = dir.join(CHARTS_DIR).join(format!("{stem}-light.svg"));
    Ok(std::fs::read_to_string(path)?)
}

#[test]
fn the_trace_charts_come_first_in_the_readme_with_their_table() -> TestResult {
    let dir = tempfile::tempdir()?;
    let readme = support::readme_with_markers(dir.path())?;
    render_report(&support::with_trace(), dir.path(), Some(&readme))?;
    let text = std::fs::read_to_string(&readme)?;
    let sources: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split("srcset=\"docs/benchmarks/").nth(1))
        .filter_map(|l| l.split("-dark.svg").next())
        .collect();
    assert_eq!(&sources[..3], TRACE_STEMS, "{sources:?}");
    assert_eq!(sources[3], "aimeta_vs_lmdb");
    assert!(
        !sources.contains(&"kvcache_trace"),
        "no generic workload chart"
    );
    // The table sits between the trace charts and the other story charts.
    let at = |needle: &str| text.find(needle).ok_or(format!("README lacks {needle}"));
    let table = at("<summary>The trace replay in numbers: 1 tenant · capacity 10 % · 1 thread · closed loop</summary>")?;
    assert!(at("trace_lookup_percentiles-light.svg")? < table);
    assert!(table < at("aimeta_vs_lmdb-light.svg")?);
    for needle in [
        "| 1 | 10 % | 1 | closed loop | aimeta | path | native | ok | 14.4 µs |",
        "| 1 | 10 % | 1 | any | lmdb | path | bisect | unsupported | N/A |",
        "over LMDB's 511-byte key limit |",
        "(docs/benchmarks/results.md#kvcache_trace)",
    ] {
        at(needle)?;
    }
    // Only the featured setting: no 8-thread, open-loop or other-capacity rows.
    for absent in ["| 8 | closed loop |", "open loop at", "| 50 % |"] {
        assert!(!text.contains(absent), "README has {absent}");
    }
    Ok(())
}

#[test]
fn results_md_holds_every_replay() -> TestResult {
    let dir = tempfile::tempdir()?;
    let summary = render_report(&support::with_trace(), dir.path(), None)?;
    let md = std::fs::read_to_string(&summary.results_md)?;
    let rows = md.lines().filter(|l| l.starts_with("| 1 | ")).count();
    // 3 capacities × 7 engines × 6 variants × 2 thread counts, and the open-loop replays
    // at 10 %: 252 + 42.
    assert_eq!(rows, 294, "{md}");
    for needle in [
        "| 1 | 10 % | 1 | open loop at 2,000 requests/s | aimeta | path | native | ok |",
        "| 1 | unlimited | 8 | closed loop | lmdb | chained | bisect | ok |",
        "| 1 | 10 % | 1 | any | postgres | chained | probe | skipped | N/A |",
        "| 14.2 % (41,000 of 288,500) | yes | 18,279 | 24 MiB |",
        "| none | none |",
    ] {
        assert!(md.contains(needle), "results.md lacks {needle}");
    }
    // The headline compares the 1-thread closed-loop replays: aimeta's native path
    // (14.4 µs) against LMDB's chained probe (39 µs).
    let headline = "| kvcache_trace | mooncake_x1_cap10 | 14400.0 | path_native | 39000.0 | chained_probe | 0.369 |";
    assert!(md.contains(headline), "{md}");
    Ok(())
}

#[test]
fn trace_charts_say_why_keep_colours_and_do_not_overlap() -> TestResult {
    let dir = tempfile::tempdir()?;
    let summary = render_report(&support::with_trace(), dir.path(), None)?;
    let request = chart(dir.path(), TRACE_STEMS[0])?;
    support::assert_contains_all(
        &request,
        &[
            "N/A: unsupported: the trace&apos;s longest path key is 1,740 bytes",
            "N/A: skipped: no PostgreSQL server",
            ">14.4 µs · native, fastest of 4 methods</text>",
        ],
    );
    let hit = chart(dir.path(), TRACE_STEMS[1])?;
    support::assert_contains_all(&hit, &[">14.2 % · 41,000 of 288,500 blocks</text>"]);
    assert!(!hit.contains("DISAGREE"));
    let lookups = chart(dir.path(), TRACE_STEMS[2])?;
    support::assert_contains_all(&lookups, &[">path · native_boundary</text>", " · p99.9 "]);
    // Every bar of the time charts is its engine's colour.
    for svg in [&request, &lookups] {
        for line in svg
            .lines()
            .filter(|l| l.starts_with("<rect") && l.contains("<title>"))
        {
            let fill = line
                .split("fill=\"")
                .nth(1)
                .and_then(|f| f.split('"').next());
            let tip = line.split("<title>").nth(1).unwrap_or("");
            let engine = tip.split(' ').next().unwrap_or("");
            assert_eq!(fill, Some(engine_colour(engine)), "{line}");
        }
    }
    let charts: Vec<PathBuf> = summary
        .charts
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("trace_"))
        .collect();
    assert_eq!(charts.len(), 6);
    let png_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-png-trace");
    support::render_pngs_and_check_text(&charts, &png_dir)
}
