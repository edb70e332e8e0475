//! Checks made before anything is loaded: that the largest store a run builds fits the
//! free disk under the work directory, and that the memory the run needs (the budget in
//! cgroup mode, the generated data it sorts in memory) is there. A 50 M-key run that would
//! fill the disk after half an hour is refused in a second instead, with the sizes.

use std::path::Path;

use aimeta_adapters::EngineKind;

use super::{BudgetMode, Data, Planned, RunError, RunOptions, CGROUP_OVERHEAD_BYTES};
use crate::device::FloorOptions;

/// Bytes on disk per byte of keys and values, per engine, with a quarter's margin: the
/// seed scale's measured sizes after load (results/ai_meta-seed.json, manifest_beyond:
/// aimeta 0.60, RocksDB 0.71, SQLite 1.27, LMDB 1.19, redb 2.28, PostgreSQL 2.54), so that
/// space for compaction, logs and checkpoints is left.
fn disk_per_data_byte(kind: EngineKind) -> f64 {
    let measured = match kind {
        EngineKind::Aimeta => 0.60,
        EngineKind::RocksDb => 0.71,
        EngineKind::Sqlite | EngineKind::SqliteTuned => 1.27,
        EngineKind::Lmdb => 1.19,
        EngineKind::Redb => 2.28,
        // Not measured yet: each member keeps a backend of up to three times the data
        // (the adapter's quota) and a write-ahead log of about the data again.
        EngineKind::Etcd1 => 4.0,
        EngineKind::Etcd => 12.0,
        // PostgreSQL, and any engine added later until it is measured.
        _ => 2.54,
    };
    measured * 1.25
}

/// The most disk one store of `data_bytes` bytes of keys and values takes on `kind`.
pub fn store_bytes_estimate(kind: EngineKind, data_bytes: u64) -> u64 {
    (data_bytes as f64 * disk_per_data_byte(kind)) as u64
}

/// Bytes free for an unprivileged writer under `dir` (its nearest existing ancestor).
pub fn free_disk_bytes(dir: &Path) -> Option<u64> {
    let existing = dir.ancestors().find(|p| p.exists())?;
    let st = rustix::fs::statvfs(existing).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// MemAvailable from /proc/meminfo, in bytes.
pub fn available_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn mib(bytes: u64) -> String {
    if bytes >= 10 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", bytes.div_ceil(1 << 20))
    }
}

/// Memory the runner holds while loading `p`: a chain index is generated and sorted in
/// memory before it is loaded (keys, values and two vector headers per pair); the other
/// shapes stream.
fn generation_bytes(p: &Planned) -> u64 {
    match &p.data {
        Data::KvChain(kv) => kv.data_bytes() + kv.keys() * 64,
        Data::Graph(g) => u64::from(g.nodes) * 4,
        Data::Manifest(_) => 0,
    }
}

/// Refuses `plan` on `o` when its largest store, with the device-floor probe file if
/// one is measured (kept for the whole run), is larger than the free disk under the work
/// directory, or the memory it needs is more than the machine has available.
pub fn check_room(
    o: &RunOptions,
    plan: &[Planned],
    floor: Option<FloorOptions>,
) -> Result<(), RunError> {
    let probe = floor.map_or(0, |f| f.file_bytes);
    let largest = plan
        .iter()
        .flat_map(|p| {
            o.engines
                .iter()
                .map(move |&k| (store_bytes_estimate(k, p.meta.data_bytes), k, p))
        })
        .max_by_key(|(bytes, _, _)| *bytes);
    if let (Some((store, kind, p)), Some(free)) = (largest, free_disk_bytes(&o.work_dir)) {
        let need = store + probe;
        if need > free {
            return Err(RunError::NoRoom {
                resource: "disk",
                need: mib(need),
                free: mib(free),
                detail: format!(
                    "{}'s store of {} ({} keys, {} of keys and values) under {}",
                    kind.name(),
                    p.meta.name,
                    p.meta.keys,
                    mib(p.meta.data_bytes),
                    o.work_dir.display()
                ),
                hint: "free disk space, pass --work-dir on a larger file system, or choose a smaller scale",
            });
        }
    }
    let budget = match o.budget_mode {
        BudgetMode::Cgroup => o.scale.budget_bytes + CGROUP_OVERHEAD_BYTES,
        BudgetMode::Engine => o.scale.budget_bytes,
    };
    let generated = plan.iter().map(generation_bytes).max().unwrap_or(0);
    if let Some(free) = available_memory_bytes() {
        let need = budget + generated;
        if need > free {
            return Err(RunError::NoRoom {
                resource: "memory",
                need: mib(need),
                free: mib(free),
                detail: format!(
                    "the {} budget of scale {} and {} of generated data sorted before loading",
                    mib(budget),
                    o.scale.name,
                    mib(generated)
                ),
                hint: "close other programs or choose a smaller scale",
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::plan_datasets;
    use crate::scale::{CI, LARGE};

    #[test]
    fn estimates_cover_the_measured_sizes() {
        // PostgreSQL's seed-scale manifest: 304 MB on disk for 120 MB of keys and values.
        assert!(store_bytes_estimate(EngineKind::Postgres, 120_000_000) > 304_000_000);
        assert!(store_bytes_estimate(EngineKind::Aimeta, 120_000_000) > 72_000_000);
    }

    #[test]
    fn a_run_larger_than_the_disk_is_refused_with_its_sizes() {
        let mut o = RunOptions::new(
            LARGE,
            vec![EngineKind::Aimeta, EngineKind::Postgres],
            vec![crate::run::Workload::ManifestGet],
            std::path::PathBuf::from("/proc/self"),
        );
        // /proc reports no free blocks: the large manifest cannot fit there.
        let plan = plan_datasets(&o);
        let e = check_room(&o, &plan, None);
        match &e {
            Err(RunError::NoRoom {
                resource: "disk",
                detail,
                ..
            }) => {
                assert!(
                    detail.contains("postgres's store of manifest_beyond"),
                    "{detail}"
                );
                assert!(detail.contains("50000000 keys"), "{detail}");
            }
            other => panic!("expected a refusal for the disk, got {other:?}"),
        }
        let message = e.map_err(|e| e.to_string()).err().unwrap_or_default();
        assert!(message.contains("free"), "{message}");
        // The ci scale fits anywhere with a few MiB.
        o.scale = CI;
        o.work_dir = std::env::temp_dir();
        let plan = plan_datasets(&o);
        assert!(check_room(&o, &plan, None).is_ok());
    }
}
