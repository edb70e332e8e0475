//! A run that measures the device keeps its probe file for the whole run and reads it
//! beside each timed get on data past the budget, one read right after each get: those
//! records carry the device's latency of the same moment (`device_beside`), for every
//! engine; gets on data that fits and the other workloads carry none, and the probe file
//! is gone when the run ends.

use aimeta_adapters::EngineKind;
use aimeta_workloads::device::FloorOptions;
use aimeta_workloads::run::{run, NoProgress, RunOptions, Workload};
use aimeta_workloads::scale::CI;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[test]
fn gets_past_the_budget_carry_the_device_read_beside_them() -> TestResult {
    let work = tempfile::tempdir()?;
    let mut o = RunOptions::new(
        CI,
        vec![EngineKind::Aimeta, EngineKind::Lmdb],
        vec![Workload::ManifestGet, Workload::ManifestRange100],
        work.path().to_path_buf(),
    );
    o.device_floor = Some(FloorOptions {
        file_bytes: 4 << 20,
        qd1_secs: 0.05,
        qd8_secs: 0.05,
    });
    let results = run(&o, &NoProgress)?;
    assert!(
        results.device.is_some(),
        "the floor before the run is there too"
    );
    let mut beside = 0;
    for r in &results.records {
        let past = results
            .datasets
            .iter()
            .find(|d| d.name == r.dataset)
            .is_some_and(|d| !d.fits_budget);
        if r.workload == "manifest_get" && past {
            let device = r
                .device_beside
                .ok_or_else(|| format!("no device_beside: {r:?}"))?;
            assert!(device.mean > 0.0 && device.min <= device.max, "{r:?}");
            // The probe's own reads (4 KiB a get) are not charged to the engine: the
            // ci-scale store was just written and its pages are in the page cache.
            let os = r.io_per_op.map_or(0.0, |io| io.os_read_bytes);
            assert!(
                os < 2048.0,
                "the probe's reads leaked into the counter: {r:?}"
            );
            beside += 1;
        } else {
            assert!(r.device_beside.is_none(), "{r:?}");
        }
    }
    assert_eq!(
        beside, 2,
        "one manifest_get record past the budget per engine"
    );
    let left: Vec<_> = std::fs::read_dir(work.path())?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains("device-floor"))
        .collect();
    assert!(left.is_empty(), "the probe file is removed: {left:?}");
    Ok(())
}
