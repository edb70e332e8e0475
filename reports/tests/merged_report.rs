//! Two results files drawn together through `ai-meta report --results a --results b`:
//! a run of every workload and a separate trace-only run at another scale, budget and
//! commit. The README's section lists each run with its workloads and keeps the trace
//! charts first; every chart's subtitle names the run of its own records; results.md has
//! a provenance column per file; files that overlap are refused with nothing written.

mod support;

use std::error::Error;
use std::path::{Path, PathBuf};

use aimeta_reports::{
    render_report, report_main_with, run_report, ReadmeTarget, ReportRequest, CHARTS_DIR,
};

type TestResult = Result<(), Box<dyn Error>>;

const TRACE_STEMS: [&str; 3] = [
    "trace_request_time",
    "trace_hit_rate",
    "trace_lookup_percentiles",
];

/// The all-workloads run's and the trace run's subtitle settings and commits.
const SEED_SETTINGS: &str = "scale ci · cache budget 64 MiB (engine mode)";
const SEED_COMMIT: &str = "commit c5d275a1b2c3";
const TRACE_SETTINGS: &str = "scale quick · cache budget 256 MiB (engine mode)";
const TRACE_COMMIT: &str = "commit 9e8d7c6b5a4f";

/// Writes the two runs as results files; returns (all workloads, trace only).
fn two_files(dir: &Path) -> Result<(PathBuf, PathBuf), Box<dyn Error>> {
    let (all, trace) = (
        dir.join("ai_meta-ci.json"),
        dir.join("kvcache_trace-quick.json"),
    );
    support::synthetic().save(&all)?;
    support::trace_only().save(&trace)?;
    Ok((all, trace))
}

fn request(results: Vec<PathBuf>, out: &Path, readme: ReadmeTarget) -> ReportRequest {
    ReportRequest {
        results,
        out: out.to_path_buf(),
        readme,
    }
}

fn chart(dir: &Path, stem: &str) -> Result<String, Box<dyn Error>> {
    let path = dir.join(CHARTS_DIR).join(format!("{stem}-light.svg"));
    Ok(std::fs::read_to_string(path)?)
}

#[test]
fn the_readme_lists_each_run_and_keeps_the_trace_charts_first() -> TestResult {
    let inputs = tempfile::tempdir()?;
    let (all, trace) = two_files(inputs.path())?;
    let dir = tempfile::tempdir()?;
    let readme = support::readme_with_markers(dir.path())?;
    let target = ReadmeTarget::At(readme.clone());
    run_report(&request(
        vec![all.clone(), trace.clone()],
        dir.path(),
        target,
    ))?;
    let text = std::fs::read_to_string(&readme)?;
    let machine = "AMD EPYC 7B13, 2 cores, 24 GiB";
    let runs = [
        "Measured in 2 runs:\n".to_string(),
        format!(
            "- manifest_scan, manifest_get, manifest_list, manifest_range100, manifest_count8000, \
             manifest_get_par8, manifest_cas, kvchain_lpm, chain_walk500, bulk_load: measured on \
             {machine} at commit `c5d275a1b2c3` on 2026-11-30T02:00:00Z: scale ci, cache budget \
             64 MiB (engine mode), durability async (`{}`).\n",
            all.display()
        ),
        format!(
            "- kvcache_trace: measured on {machine} at commit `9e8d7c6b5a4f` on \
             2026-12-01T09:30:00Z: scale quick, cache budget 256 MiB (engine mode), durability \
             async (`{}`).\n",
            trace.display()
        ),
    ];
    support::assert_contains_all(&text, &runs.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        !text.contains("Measured on "),
        "no single-run line:\n{text}"
    );
    let sources: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split("srcset=\"docs/benchmarks/").nth(1))
        .filter_map(|l| l.split("-dark.svg").next())
        .collect();
    assert_eq!(&sources[..3], TRACE_STEMS, "{sources:?}");
    assert_eq!(sources[3], "aimeta_vs_lmdb");
    let at = |needle: &str| text.find(needle).ok_or(format!("README lacks {needle}"));
    let table = at("<summary>The trace replay in numbers: 1 tenant · capacity 10 % · 1 thread · closed loop</summary>")?;
    assert!(at("trace_lookup_percentiles-light.svg")? < table);
    assert!(table < at("aimeta_vs_lmdb-light.svg")?);
    Ok(())
}

#[test]
fn each_chart_and_table_names_the_run_of_its_own_records() -> TestResult {
    let inputs = tempfile::tempdir()?;
    let (all, trace) = two_files(inputs.path())?;
    let dir = tempfile::tempdir()?;
    let summary = run_report(&request(
        vec![all.clone(), trace.clone()],
        dir.path(),
        ReadmeTarget::Skip,
    ))?;
    let trace_run = [TRACE_SETTINGS, TRACE_COMMIT];
    let seed_run = [SEED_SETTINGS, SEED_COMMIT];
    let only = |stem: &str, run: [&str; 2], not: [&str; 2]| -> TestResult {
        let svg = chart(dir.path(), stem)?;
        support::assert_contains_all(&svg, &run);
        for absent in not {
            assert!(
                !svg.contains(absent),
                "{stem} names the other run: {absent}"
            );
        }
        Ok(())
    };
    for stem in TRACE_STEMS {
        only(stem, trace_run, seed_run)?;
    }
    for stem in ["manifest_scan", "scan_cliff", "lpm_variants", "bulk_load"] {
        only(stem, seed_run, trace_run)?;
    }
    // The headline draws both runs' records: each run's lines, headed by its workloads.
    let headline = chart(dir.path(), "aimeta_vs_lmdb")?;
    support::assert_contains_all(
        &headline,
        &[
            SEED_SETTINGS,
            SEED_COMMIT,
            ">kvcache_trace: scale quick",
            TRACE_COMMIT,
        ],
    );

    let md = std::fs::read_to_string(&summary.results_md)?;
    let needles = [
        format!("| | `{}` | `{}` |", all.display(), trace.display()),
        "| workloads | manifest_scan, ".to_string(),
        "bulk_load | kvcache_trace |".to_string(),
        "| scale | ci | quick |".to_string(),
        "| commit | `c5d275a1b2c3` | `9e8d7c6b5a4f` |".to_string(),
        "## kvcache_trace\n\nReplay of a KV-cache request trace".to_string(),
        format!(
            "Measured in `{}` (scale quick, cache budget 256 MiB, commit `9e8d7c6b5a4f`).",
            trace.display()
        ),
        format!(
            "## manifest_scan\n\n100 entries of a shard, with values.\n\nMeasured in `{}` (scale ci, cache budget 64 MiB, commit `c5d275a1b2c3`).",
            all.display()
        ),
    ];
    support::assert_contains_all(&md, &needles.iter().map(String::as_str).collect::<Vec<_>>());

    // The longer subtitles still leave every text clear of the others.
    let drawn: Vec<PathBuf> = summary
        .charts
        .iter()
        .filter(|p| {
            let name = p.to_string_lossy();
            name.contains("aimeta_vs_lmdb") || name.contains("trace_hit_rate")
        })
        .cloned()
        .collect();
    let png_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("merged_report_png");
    support::render_pngs_and_check_text(&drawn, &png_dir)?;
    Ok(())
}

#[test]
fn files_that_overlap_are_refused_naming_both_and_nothing_is_written() -> TestResult {
    let inputs = tempfile::tempdir()?;
    let (all, trace) = two_files(inputs.path())?;
    let both = inputs.path().join("ai_meta-with-trace.json");
    support::with_trace().save(&both)?;
    let dir = tempfile::tempdir()?;
    let readme = support::readme_with_markers(dir.path())?;
    let before = std::fs::read_to_string(&readme)?;
    for (files, needles) in [
        (
            vec![both.clone(), trace.clone()],
            vec![
                "is measured in both".to_string(),
                both.display().to_string(),
                trace.display().to_string(),
            ],
        ),
        (
            vec![all.clone(), all.clone()],
            vec![format!("{} is given twice with --results", all.display())],
        ),
    ] {
        let r = request(files, dir.path(), ReadmeTarget::At(readme.clone()));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = report_main_with(&r, &mut out, &mut err);
        let err = String::from_utf8(err)?;
        assert_eq!(code, 2, "{err}");
        assert!(out.is_empty());
        assert_eq!(err.lines().count(), 1, "{err}");
        for needle in needles {
            assert!(err.contains(&needle), "{err} lacks {needle}");
        }
        assert!(!dir.path().join(CHARTS_DIR).exists(), "nothing written");
        assert_eq!(std::fs::read_to_string(&readme)?, before);
    }
    Ok(())
}

#[test]
fn one_file_renders_exactly_as_render_report_does() -> TestResult {
    let inputs = tempfile::tempdir()?;
    let (all, _) = two_files(inputs.path())?;
    let (through_request, direct) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let mut written = Vec::new();
    for dir in [through_request.path(), direct.path()] {
        let readme = support::readme_with_markers(dir)?;
        let summary = if dir == direct.path() {
            render_report(&aimeta_reports::Results::load(&all)?, dir, Some(&readme))?
        } else {
            run_report(&request(vec![all.clone()], dir, ReadmeTarget::At(readme)))?
        };
        let mut files: Vec<PathBuf> = summary.changed.clone();
        files.sort();
        let texts = files
            .iter()
            .map(|p| {
                Ok((
                    p.strip_prefix(dir)?.to_path_buf(),
                    std::fs::read_to_string(p)?,
                ))
            })
            .collect::<Result<Vec<_>, Box<dyn Error>>>()?;
        written.push(texts);
    }
    assert!(written[0].len() > 20, "charts, results.md and the README");
    assert_eq!(written[0], written[1]);
    Ok(())
}
