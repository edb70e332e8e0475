//! Records of what was not measured, and why: an engine this machine lacks or a data set
//! it cannot hold ([`NotLoaded`]), a durability it does not offer, and an engine whose
//! server failed mid-run (its remaining records are errors; the run goes on).

use aimeta_adapters::{Durability, EngineKind};
use aimeta_reports::{Record, Status};

use super::{base_record, ingest, Planned, RunError, RunOptions};

/// Why an engine was not loaded, and so what its records say: skipped where the machine
/// lacks it (no PostgreSQL or etcd binaries), N/A where it cannot hold the data set (a
/// store over etcd's 8 GiB quota).
#[derive(Debug, Clone, PartialEq)]
pub struct NotLoaded {
    /// [`Status::Skipped`] or [`Status::Unsupported`].
    pub status: Status,
    /// The adapter's message.
    pub why: String,
}

impl NotLoaded {
    /// The adapter's error as a reason not to load, or `None` when it is a real failure.
    pub fn from_error(e: &aimeta_adapters::Error) -> Option<NotLoaded> {
        let status = if e.is_unavailable() {
            Status::Skipped
        } else if e.is_too_large() {
            Status::Unsupported
        } else {
            return None;
        };
        Some(NotLoaded {
            status,
            why: e.to_string(),
        })
    }
}

impl std::fmt::Display for NotLoaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

/// The message of a failure of one engine's server that leaves the run's other engines
/// unharmed (an etcd member that exited), or `None` for any other error, which stops the run.
pub(crate) fn engine_fault(e: &RunError) -> Option<String> {
    match e {
        RunError::Engine { source, .. }
            if matches!(**source, aimeta_adapters::Error::EtcdMemberDied { .. }) =>
        {
            Some(e.to_string())
        }
        _ => None,
    }
}

/// One error record per workload `kind` was to run on `p`, each with `why`.
pub(crate) fn failed_records(
    o: &RunOptions,
    kind: EngineKind,
    p: &Planned,
    why: &str,
) -> Vec<Record> {
    o.workloads
        .iter()
        .filter(|w| w.runs_on(&p.data) && ingest::runs_on_dataset(**w, &p.meta.name))
        .map(|&w| Record {
            status: Status::Error,
            note: Some(why.to_string()),
            ..base_record(w, &p.meta.name, kind, None)
        })
        .collect()
}

/// Why `kind` does not measure writes at durability `d`: its engine offers no such mode
/// (etcd fsyncs every commit), so its writes there would be another mode's numbers.
pub fn durability_not_offered(
    kind: EngineKind,
    offered: &[Durability],
    d: Durability,
) -> Option<String> {
    if offered.contains(&d) {
        return None;
    }
    let offered: Vec<String> = offered
        .iter()
        .map(|d| format!("{d:?}").to_lowercase())
        .collect();
    let asked = format!("{d:?}").to_lowercase();
    Some(format!(
        "{} has no {asked} durability (it offers {}: etcd fsyncs its log on every commit and \
         has no weaker mode); its writes are measured with --durability {}",
        kind.name(),
        offered.join(", "),
        offered.first().map_or("sync", String::as_str)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aimeta_adapters::{Capabilities, Error};

    #[test]
    fn a_dead_member_is_a_fault_of_its_engine_only() {
        let engine_err = |source: Error| RunError::Engine {
            engine: "etcd".into(),
            dataset: "manifest_fits".into(),
            step: "manifest_get".into(),
            source: Box::new(source),
        };
        let died = engine_err(Error::EtcdMemberDied {
            member: "m1 (http://127.0.0.1:1, pid 7)".into(),
            status: "signal: 9 (SIGKILL)".into(),
            log_tail: String::new(),
        });
        let why = engine_fault(&died);
        assert!(why
            .as_deref()
            .is_some_and(|w| w.contains("m1 (http://127.0.0.1:1, pid 7)")));
        let other = engine_err(Error::Poisoned { engine: "etcd" });
        assert_eq!(engine_fault(&other), None);
    }

    #[test]
    fn only_a_missing_durability_is_named() {
        let sync_only = EngineKind::Etcd.durabilities();
        assert_eq!(
            durability_not_offered(EngineKind::Etcd, sync_only, Durability::Sync),
            None
        );
        let why = durability_not_offered(EngineKind::Etcd, sync_only, Durability::Async);
        assert!(
            why.as_deref()
                .is_some_and(|w| w.starts_with("etcd has no async durability")
                    && w.ends_with("--durability sync")),
            "{why:?}"
        );
        let all = Capabilities::emulated(false, None);
        assert_eq!(
            durability_not_offered(EngineKind::Lmdb, all.durability, Durability::None),
            None
        );
    }

    #[test]
    fn not_loaded_tells_skipped_from_too_large() {
        let skipped = NotLoaded::from_error(&Error::EtcdUnavailable {
            searched: "PATH".into(),
        });
        assert_eq!(skipped.map(|n| n.status), Some(Status::Skipped));
        let too_large = NotLoaded::from_error(&Error::EtcdQuota {
            need_bytes: 9 << 30,
            max_bytes: 8 << 30,
        });
        assert_eq!(too_large.map(|n| n.status), Some(Status::Unsupported));
        assert_eq!(
            NotLoaded::from_error(&Error::Poisoned { engine: "x" }),
            None
        );
    }
}
