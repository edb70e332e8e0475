//! `ai-meta sweep`: the same manifest workloads at several data sizes (10^5 to 5 x 10^7
//! keys by default) for every engine at one fixed budget, in the memory cgroup by default,
//! and gets and scans from 1 to 16 threads on the largest size; the device's floor first.
//! Its results draw per-operation cost against data size and throughput against threads.

use aimeta_reports::{Dataset, Results, SweepConfig};

use super::{
    check_room, measure_device, new_results, run_engine, Data, Planned, Progress, RunError,
    RunOptions, ThreadCount, Workload,
};
use crate::gen::Manifest;
use crate::scale::{Scale, LARGE};

/// The sizes swept by default, in keys.
pub const SWEEP_SIZES: [u64; 4] = [100_000, 1_000_000, 10_000_000, 50_000_000];

/// Samples per shard of a swept manifest (LAION's shard size, as every scale has).
pub const SWEEP_PER_SHARD: u32 = 10_000;

/// The budget, operation counts and trace settings of a sweep: the large scale's (64 MiB,
/// 5,000 timed operations after 1,000 untimed ones); its data sets are the sizes swept.
pub const SWEEP_SCALE: Scale = Scale {
    name: "sweep",
    ..LARGE
};

/// The workloads measured at every size (thread counts only on the largest).
pub const SWEEP_WORKLOADS: [Workload; 4] = [
    Workload::BulkLoad,
    Workload::ManifestGet,
    Workload::ManifestScan,
    Workload::ManifestRange100,
];

/// The workloads measured at every thread count of `ThreadCount::ALL` on the largest size.
pub const SWEEP_THREAD_WORKLOADS: [Workload; 2] =
    [Workload::ManifestGetThreads, Workload::ManifestScanThreads];

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Engines, budget (its scale's `budget_bytes`), budget mode, durability, work
    /// directory, seed, PostgreSQL URL, device floor, command line. Its scale's data sets
    /// and workloads are not used: the sweep's are.
    pub run: RunOptions,
    /// Sizes in keys, ascending.
    pub sizes: Vec<u64>,
}

/// The data set name of a size: `manifest_1e5`, `manifest_5e7`, or the number when it
/// is not one digit times a power of ten (`manifest_120000`).
pub fn size_name(keys: u64) -> String {
    let mut mantissa = keys;
    let mut exponent = 0;
    while mantissa >= 10 && mantissa.is_multiple_of(10) {
        mantissa /= 10;
        exponent += 1;
    }
    if mantissa < 10 && exponent > 0 {
        format!("manifest_{mantissa}e{exponent}")
    } else {
        format!("manifest_{keys}")
    }
}

/// The manifest of `keys` keys: shards of 10,000 samples, or one smaller shard.
pub fn manifest_of(keys: u64) -> Result<Manifest, RunError> {
    let per = u64::from(SWEEP_PER_SHARD);
    let bad = |why: &str| RunError::BadSweep {
        detail: format!("size {keys}: {why}"),
    };
    if keys < 100 {
        return Err(bad(
            "a swept manifest needs at least 100 keys (one scan's worth)",
        ));
    }
    if keys <= per {
        return Ok(Manifest {
            shards: 1,
            per_shard: keys as u32,
        });
    }
    if !keys.is_multiple_of(per) {
        return Err(bad(&format!(
            "sizes above {per} keys must be whole shards of {per} samples"
        )));
    }
    let shards = u32::try_from(keys / per).map_err(|_| bad("too many shards"))?;
    Ok(Manifest {
        shards,
        per_shard: SWEEP_PER_SHARD,
    })
}

/// The data sets of a sweep, smallest first.
pub fn plan_sweep(o: &SweepOptions) -> Result<Vec<Planned>, RunError> {
    if o.sizes.is_empty() {
        return Err(RunError::BadSweep {
            detail: "no sizes given".into(),
        });
    }
    let mut sizes = o.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    let budget = o.run.scale.budget_bytes;
    sizes
        .into_iter()
        .map(|keys| {
            let m = manifest_of(keys)?;
            let bytes = m.data_bytes();
            Ok(Planned {
                meta: Dataset {
                    name: size_name(keys),
                    family: "manifest".into(),
                    keys,
                    data_bytes: bytes,
                    fits_budget: bytes < budget,
                    ratio_to_budget: bytes as f64 / budget as f64,
                },
                data: Data::Manifest(m),
            })
        })
        .collect()
}

/// Runs the sweep; returns its results (not yet written anywhere).
pub fn sweep(o: &SweepOptions, progress: &dyn Progress) -> Result<Results, RunError> {
    let plan = plan_sweep(o)?;
    check_room(&o.run, &plan, o.run.device_floor)?;
    let mut results = new_results(&o.run)?;
    let largest = plan.last().map(|p| p.meta.name.clone()).unwrap_or_default();
    results.config.sweep = Some(SweepConfig {
        sizes: plan.iter().map(|p| p.meta.keys).collect(),
        threads: ThreadCount::ALL.iter().map(|t| t.count()).collect(),
        threads_dataset: largest.clone(),
    });
    let probe = measure_device(&o.run, progress)?.map(|(probe, floor)| {
        results.device = Some(floor);
        probe
    });
    for planned in plan {
        let mut workloads = SWEEP_WORKLOADS.to_vec();
        if planned.meta.name == largest {
            workloads.extend(SWEEP_THREAD_WORKLOADS);
        }
        let at_size = RunOptions {
            workloads,
            full_frame: false,
            ..o.run.clone()
        };
        for &kind in &at_size.engines {
            let records = run_engine(&at_size, kind, &planned, probe.as_ref(), progress)?;
            results.records.extend(records);
        }
        results.datasets.push(planned.meta);
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_named_and_shaped_and_bad_ones_refused() -> Result<(), RunError> {
        assert_eq!(size_name(100_000), "manifest_1e5");
        assert_eq!(size_name(50_000_000), "manifest_5e7");
        assert_eq!(size_name(120_000), "manifest_120000");
        assert_eq!(size_name(7), "manifest_7");
        let m = manifest_of(50_000_000)?;
        assert_eq!((m.shards, m.per_shard), (5_000, 10_000));
        let small = manifest_of(5_000)?;
        assert_eq!((small.shards, small.per_shard), (1, 5_000));
        for bad in [10, 15_000] {
            assert!(
                matches!(manifest_of(bad), Err(RunError::BadSweep { .. })),
                "{bad}"
            );
        }
        let o = SweepOptions {
            run: RunOptions::new(
                SWEEP_SCALE,
                vec![],
                vec![],
                std::path::PathBuf::from("unused"),
            ),
            sizes: vec![10_000_000, 100_000, 100_000],
        };
        let plan = plan_sweep(&o)?;
        let names: Vec<&str> = plan.iter().map(|p| p.meta.name.as_str()).collect();
        assert_eq!(names, ["manifest_1e5", "manifest_1e7"]);
        assert!(plan[0].meta.fits_budget && !plan[1].meta.fits_budget);
        let none = SweepOptions {
            sizes: vec![],
            ..o.clone()
        };
        assert!(matches!(plan_sweep(&none), Err(RunError::BadSweep { .. })));
        Ok(())
    }
}
