//! The writing workloads through the public runner at the ci scale, on aimeta and LMDB:
//! 1, 4 and 8 readers alone and beside a writer appending shards, in async and sync
//! durability, then 1 and 8 sync writers. Every record is there with the counts the scale
//! implies, only on the beyond-the-budget manifest; the run itself reads back every key
//! the writers were acknowledged (a lost one fails it with a wrong answer), so its success
//! is the check that nothing was lost.

use aimeta_adapters::EngineKind;
use aimeta_reports::{Record, Status};
use aimeta_workloads::run::{run, NoProgress, RunOptions, Workload};
use aimeta_workloads::scale::CI;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WORKLOADS: [Workload; 4] = [
    Workload::ManifestIngestGet,
    Workload::ManifestIngestScan,
    Workload::ManifestIngestWrite,
    Workload::SyncPut,
];

fn find<'a>(
    records: &'a [Record],
    engine: &str,
    workload: &str,
    variant: &str,
) -> Result<&'a Record, String> {
    records
        .iter()
        .find(|r| {
            r.engine == engine && r.workload == workload && r.variant.as_deref() == Some(variant)
        })
        .ok_or_else(|| format!("no {workload} {variant} record for {engine}"))
}

#[test]
fn ingest_and_sync_put_records_have_the_scales_counts_and_nothing_is_lost() -> TestResult {
    let work = tempfile::tempdir()?;
    let engines = vec![EngineKind::Aimeta, EngineKind::Lmdb];
    let o = RunOptions::new(
        CI,
        engines.clone(),
        WORKLOADS.to_vec(),
        work.path().to_path_buf(),
    );
    let results = run(&o, &NoProgress)?;
    let records = &results.records;
    // 12 get, 12 scan, 6 write and 2 sync_put records per engine, none on manifest_fits.
    assert_eq!(records.len(), 32 * engines.len());
    for r in records {
        assert_eq!(r.status, Status::Ok, "{r:?}");
        assert_eq!(r.dataset, "manifest_beyond", "{r:?}");
        assert!(r.ops_per_sec > 0.0 && r.ns_per_op.p99 > 0.0, "{r:?}");
        assert!(r.note.as_deref().is_some_and(|n| n.contains("durability")));
    }
    for engine in engines.iter().map(|e| e.name()) {
        for d in ["async", "sync"] {
            for readers in [1u64, 4, 8] {
                let per_reader = (CI.ops / readers).max(50);
                for (workload, share) in [
                    ("manifest_ingest_get", per_reader.div_ceil(2)),
                    ("manifest_ingest_scan", per_reader / 2),
                ] {
                    let alone = find(records, engine, workload, &format!("r{readers}_alone_{d}"))?;
                    assert_eq!(alone.threads as u64, readers);
                    assert_eq!(alone.ops, readers * share, "{alone:?}");
                    let beside =
                        find(records, engine, workload, &format!("r{readers}_writer_{d}"))?;
                    assert_eq!(beside.threads as u64, readers);
                    assert!(beside.ops >= readers * 25, "{beside:?}");
                }
                let write = find(
                    records,
                    engine,
                    "manifest_ingest_write",
                    &format!("r{readers}_{d}"),
                )?;
                // Batches of one 10,000-sample shard each, 2 to 20 at the ci scale: the
                // writer goes on past two while a reader is still short of its operations
                // (on a loaded machine, as when the whole test suite runs at once).
                assert!(
                    write.ops % 10_000 == 0 && (20_000..=200_000).contains(&write.ops),
                    "{write:?}"
                );
                assert_eq!(write.threads, 1);
                assert!(write.ns_per_op.min > 0.0);
                assert!(write
                    .note
                    .as_deref()
                    .is_some_and(|n| n.contains("read back")));
            }
        }
        // ci: 1,000 ops / 10 = 100 puts in total, divided among the writers (rounded up).
        for (variant, threads, ops) in [("t1", 1, 100), ("t8", 8, 104)] {
            let r = find(records, engine, "sync_put", variant)?;
            assert_eq!((r.threads, r.ops), (threads, ops), "{r:?}");
        }
    }
    Ok(())
}
