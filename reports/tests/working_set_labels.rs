//! "Beyond the budget" only where the working set is: a data set whose data is many
//! times the budget but whose measurements touch less than it is labelled "data 6× the
//! budget, working set fits" in every chart heading, the headline and the scan cliff;
//! one whose working set is beyond keeps the word, with its size in the subtitle.

mod support;

use std::error::Error;
use std::path::Path;

use aimeta_reports::{render_report, Results, WorkingSet, WorkingSetSource, CHARTS_DIR};

type TestResult = Result<(), Box<dyn Error>>;

const MIB: u64 = 1 << 20;

/// The synthetic results (64 MiB budget) with every measurement on manifest_beyond
/// touching `mib` MiB.
fn with_working_set(mib: f64) -> Results {
    let mut results = support::synthetic();
    let bytes = (mib * MIB as f64) as u64;
    for r in &mut results.records {
        if r.dataset == "manifest_beyond" {
            r.working_set = Some(WorkingSet {
                pages: bytes / 4096,
                bytes,
                ratio_to_budget: bytes as f64 / (64 * MIB) as f64,
                source: WorkingSetSource::KeyLayout,
                touched_pages: None,
            });
        }
    }
    results
}

fn chart(dir: &Path, stem: &str) -> Result<String, Box<dyn Error>> {
    let path = dir.join(CHARTS_DIR).join(format!("{stem}-light.svg"));
    Ok(std::fs::read_to_string(path)?)
}

#[test]
fn a_beyond_named_data_set_whose_working_set_fits_is_not_labelled_beyond() -> TestResult {
    let dir = tempfile::tempdir()?;
    let summary = render_report(&with_working_set(2.4), dir.path(), None)?;
    let get = chart(dir.path(), "manifest_get")?;
    support::assert_contains_all(
        &get,
        &[
            ">manifest_beyond: data 6× the budget, working set fits (2,000,000 keys, 381 MiB of \
             data)</text>",
            ">manifest_beyond: working set 2.4 MiB fits the 64 MiB budget</text>",
        ],
    );
    let cliff = chart(dir.path(), "scan_cliff")?;
    support::assert_contains_all(
        &cliff,
        &[
            "The scan cliff: manifest_scan on data inside and larger than the cache budget",
            "working set fits</text>",
            "labelled beyond only where the scans&apos;",
        ],
    );
    // No chart calls manifest_beyond beyond: not its headings, the headline's labels
    // ("manifest_get, beyond") or the scan cliff's ("paged · beyond the budget").
    for path in &summary.charts {
        let svg = std::fs::read_to_string(path)?;
        for line in svg.lines() {
            let manifest = line.contains(">manifest_")
                || line.contains(">paged ·")
                || line.contains(">full_frame ·")
                || line.contains(">fits the budget");
            assert!(
                !(manifest && (line.contains("beyond</text>") || line.contains("beyond the"))),
                "{}: {line}",
                path.display()
            );
        }
    }
    // The longer labels still fit without overlapping.
    let png_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-png-working-set");
    let stories: Vec<std::path::PathBuf> = summary
        .charts
        .iter()
        .filter(|p| {
            let name = p.to_string_lossy();
            ["aimeta_vs_lmdb", "scan_cliff", "manifest_get-"]
                .iter()
                .any(|s| name.contains(s))
        })
        .cloned()
        .collect();
    assert_eq!(stories.len(), 6);
    support::render_pngs_and_check_text(&stories, &png_dir)?;
    let md = std::fs::read_to_string(&summary.results_md)?;
    support::assert_contains_all(
        &md,
        &[
            "| data set | family | keys | data | data fits the budget | data ÷ budget | working set |",
            "| manifest_beyond | manifest | 2000000 | 381 MiB (400000000) | no | 6.00 | 2.4 MiB fits the 64 MiB budget |",
            "| 2.4 MiB (0.04× the budget, fits; key layout) |",
        ],
    );
    Ok(())
}

#[test]
fn a_working_set_beyond_the_budget_keeps_the_word_and_says_its_size() -> TestResult {
    let dir = tempfile::tempdir()?;
    render_report(&with_working_set(160.0), dir.path(), None)?;
    let get = chart(dir.path(), "manifest_get")?;
    support::assert_contains_all(
        &get,
        &[
            ">manifest_beyond: beyond the cache budget (2,000,000 keys, 381 MiB of data, 6× the \
             budget)</text>",
            ">manifest_beyond: working set 160 MiB = 2.5× the 64 MiB budget</text>",
        ],
    );
    let cliff = chart(dir.path(), "scan_cliff")?;
    support::assert_contains_all(
        &cliff,
        &[
            "The scan cliff: manifest_scan inside and beyond the cache budget",
            ">full_frame · beyond the budget</text>",
            "working set 160 MiB = 2.5× the 64 MiB budget",
        ],
    );
    let head = chart(dir.path(), "aimeta_vs_lmdb")?;
    support::assert_contains_all(
        &head,
        &[
            ">manifest_get, beyond</text>",
            "working set 160 MiB = 2.5× the 64 MiB budget",
        ],
    );
    Ok(())
}
