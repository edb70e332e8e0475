//! The charts of a full synthetic results file: well-formed SVG, the expected labels,
//! values, units and subtitle, fixed engine colours, the outlier cut, the log axis, the
//! headline's reference line, determinism, and (with system fonts, when present) PNG
//! renderings whose text does not overlap.

mod support;

use std::collections::BTreeSet;
use std::error::Error;
use std::path::{Path, PathBuf};

use aimeta_reports::{engine_colour, render_report, ReportSummary, CHARTS_DIR};
use resvg::usvg;

type TestResult = Result<(), Box<dyn Error>>;

fn render(dir: &Path) -> Result<ReportSummary, Box<dyn Error>> {
    Ok(render_report(&support::synthetic(), dir, None)?)
}

/// A temporary output root with the synthetic results rendered into it.
fn rendered() -> Result<tempfile::TempDir, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    render(dir.path())?;
    Ok(dir)
}

fn chart(dir: &Path, stem: &str, theme: &str) -> Result<String, Box<dyn Error>> {
    Ok(std::fs::read_to_string(
        dir.join(CHARTS_DIR).join(format!("{stem}-{theme}.svg")),
    )?)
}

#[test]
fn a_full_results_file_gives_every_chart_in_both_themes() -> TestResult {
    let dir = tempfile::tempdir()?;
    let summary = render(dir.path())?;
    let mut stems = vec!["aimeta_vs_lmdb", "scan_cliff", "lpm_variants"];
    stems.extend(support::WORKLOADS.iter().map(|(w, _)| *w));
    let expected: Vec<PathBuf> = stems
        .iter()
        .flat_map(|s| {
            ["light", "dark"].map(|t| dir.path().join(CHARTS_DIR).join(format!("{s}-{t}.svg")))
        })
        .collect();
    assert_eq!(summary.charts, expected);
    assert_eq!(
        summary.results_md,
        dir.path().join(CHARTS_DIR).join("results.md")
    );
    assert_eq!(summary.changed.len(), expected.len() + 1);
    let opt = usvg::Options::default();
    for path in &summary.charts {
        let text = std::fs::read_to_string(path)?;
        let tree =
            usvg::Tree::from_str(&text, &opt).map_err(|e| format!("{}: {e}", path.display()))?;
        assert!(tree.size().width() >= 900.0, "{}", path.display());
    }
    Ok(())
}

#[test]
fn charts_carry_engines_values_units_and_the_subtitle() -> TestResult {
    let dir = rendered()?;
    for theme in ["light", "dark"] {
        let get = chart(dir.path(), "manifest_get", theme)?;
        for e in support::ENGINES {
            assert!(get.contains(&format!(">{e}</text>")), "{e} label missing");
        }
        let needles = [
            // aimeta: 900 ns × 0.8 on manifest_fits; lmdb: 900 ns × 2.5 beyond the budget.
            ">720 ns</text>",
            ">2.25 µs</text>",
            "scale ci · cache budget 64 MiB (engine mode)",
            ">mean time per operation in µs (lower is better)</text>",
            // Tick labels carry units.
            " µs</text>",
            "N/A: skipped: no PostgreSQL server",
            "manifest_beyond: beyond the cache budget",
        ];
        support::assert_contains_all(&get, &needles);
        for (stem, needle) in [
            ("manifest_cas", "N/A: unsupported: no compare-and-swap"),
            ("chain_walk500", "error: timed out after 600 s"),
            ("bulk_load", "mean time per key loaded"),
            ("manifest_get_par8", "per thread"),
        ] {
            support::assert_contains_all(&chart(dir.path(), stem, theme)?, &[needle]);
        }
    }
    Ok(())
}

#[test]
fn the_outlier_is_cut_at_an_axis_break_with_its_true_value() -> TestResult {
    let dir = rendered()?;
    let count = chart(dir.path(), "manifest_count8000", "light")?;
    let needles = [
        // The true value is printed.
        ">988 ms (bar cut)</text>",
        "marks an axis break",
        // The break glyph is drawn.
        "<polygon",
    ];
    support::assert_contains_all(&count, &needles);
    assert!(!count.contains("log scale"));
    Ok(())
}

#[test]
fn story_charts_tell_their_stories() -> TestResult {
    let dir = rendered()?;
    let cliff = [
        ">mean time per scan, log scale (lower is better)</text>",
        ">paged · fits the budget</text>",
        ">full_frame · beyond the budget</text>",
        "60× the fits time",
        // The fits bars are drawn lighter.
        "fill-opacity",
    ];
    let lpm = [
        ">native</text>",
        ">predecessor_seek</text>",
        ">bisect</text>",
        "data set kvchain_beyond",
        "N/A: unsupported: no native longest-prefix lookup",
    ];
    let head = [
        // The reference line at 1.
        "stroke-dasharray",
        ">1×</text>",
        "← aimeta faster",
        "log scale",
        ">0.80×</text>",
        ">0.24× · aimeta native vs LMDB predecessor_seek</text>",
        // aimeta is slower on some workloads.
        ">1.4×</text>",
        ">chain_walk500, chain_shuffled</text>",
    ];
    let stories: [(&str, &[&str]); 3] = [
        ("scan_cliff", &cliff),
        ("lpm_variants", &lpm),
        ("aimeta_vs_lmdb", &head),
    ];
    for (stem, needles) in stories {
        support::assert_contains_all(&chart(dir.path(), stem, "light")?, needles);
    }
    Ok(())
}

/// (fill, tooltip) of every bar with a tooltip.
fn bars(svg: &str) -> Vec<(String, String)> {
    svg.lines()
        .filter(|l| l.starts_with("<rect") && l.contains("<title>"))
        .filter_map(|l| {
            let fill = l.split("fill=\"").nth(1)?.split('"').next()?;
            let tip = l.split("<title>").nth(1)?.split("</title>").next()?;
            Some((fill.to_string(), tip.to_string()))
        })
        .collect()
}

#[test]
fn each_engine_keeps_one_colour_everywhere() -> TestResult {
    let dir = tempfile::tempdir()?;
    let summary = render(dir.path())?;
    let mut seen = BTreeSet::new();
    for path in &summary.charts {
        for (fill, tip) in bars(&std::fs::read_to_string(path)?) {
            let engine = tip.split([' ', ',']).next().unwrap_or("");
            assert_eq!(fill, engine_colour(engine), "{}: {tip}", path.display());
            seen.insert(engine.to_string());
        }
    }
    assert_eq!(
        seen.len(),
        6,
        "every engine but postgres (skipped) has bars: {seen:?}"
    );
    Ok(())
}

#[test]
fn the_dark_variant_is_light_text_on_dark() -> TestResult {
    let dir = rendered()?;
    let dark = chart(dir.path(), "manifest_get", "dark")?;
    support::assert_contains_all(&dark, &["fill=\"#0d1117\"", "fill=\"#e6edf3\""]);
    assert!(!dark.contains("fill=\"#ffffff\""));
    let light = chart(dir.path(), "manifest_get", "light")?;
    support::assert_contains_all(&light, &["fill=\"#ffffff\"", "fill=\"#1f2328\""]);
    Ok(())
}

#[test]
fn rendering_is_deterministic() -> TestResult {
    let (a, b) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let first = render(a.path())?;
    let again = render(a.path())?;
    assert!(
        again.changed.is_empty(),
        "second run rewrote {:?}",
        again.changed
    );
    render(b.path())?;
    let mut shuffled = support::synthetic();
    shuffled.records.reverse();
    let c = tempfile::tempdir()?;
    render_report(&shuffled, c.path(), None)?;
    for path in first.charts.iter().chain([&first.results_md]) {
        let rel = path.strip_prefix(a.path())?;
        let bytes = std::fs::read(path)?;
        assert_eq!(
            bytes,
            std::fs::read(b.path().join(rel))?,
            "{}",
            rel.display()
        );
        assert_eq!(
            bytes,
            std::fs::read(c.path().join(rel))?,
            "record order: {}",
            rel.display()
        );
    }
    Ok(())
}

#[test]
fn pngs_render_and_no_text_overlaps() -> TestResult {
    let dir = tempfile::tempdir()?;
    let summary = render(dir.path())?;
    let png_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-png");
    support::render_pngs_and_check_text(&summary.charts, &png_dir)
}

#[test]
fn long_engine_names_wrap_without_overlapping() -> TestResult {
    let mut results = support::synthetic();
    let long = "an-engine-with-a-rather-long-name-for-the-chart_v2";
    let extra: Vec<_> = results
        .records
        .iter()
        .filter(|r| r.engine == "rocksdb" && r.workload == "kvchain_lpm")
        .map(|r| {
            let mut r = r.clone();
            r.engine = long.to_string();
            r.note = r.note.map(|n| {
                format!(
                    "{n}, and a note long enough to need cutting short at the edge of the chart"
                )
            });
            r
        })
        .collect();
    results.records.extend(extra);
    let dir = tempfile::tempdir()?;
    let summary = render_report(&results, dir.path(), None)?;
    let lpm = chart(dir.path(), "kvchain_lpm", "light")?;
    let label_lines: Vec<&str> = lpm.lines().filter(|l| l.contains(">an-engine")).collect();
    assert!(
        label_lines.iter().all(|l| !l.contains('…')) && !label_lines.is_empty(),
        "wrapped, not cut: {label_lines:?}"
    );
    assert!(lpm.contains("<title>an-engine-with-a-rather-long-name-for-the-chart_v2 bisect"));
    let png_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-png-long");
    let charts: Vec<PathBuf> = summary
        .charts
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("lpm"))
        .collect();
    support::render_pngs_and_check_text(&charts, &png_dir)
}
