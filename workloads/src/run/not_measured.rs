//! Records of what was not measured, and why: an engine this machine lacks or a data set
//! it cannot hold ([`NotLoaded`]), a durability it does not offer, and an engine whose
//! server failed mid-run (its remaining records are errors; the run goes on).

use std::time::{Duration, Instant};

use aimeta_adapters::{Durability, EngineKind};
use aimeta_reports::{Record, Status};

use super::{base_record, ingest, Planned, RunError, RunOptions, Session, Variant, Workload};

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

/// How long one measurement of etcd (its warm-up and timed operations) may take.
pub const ETCD_MEASUREMENT_BUDGET: Duration = Duration::from_secs(8 * 60);
/// Warm-up operations run before the ones timed to project a measurement.
const PROBE_SETTLE: u64 = 10;
/// Warm-up operations timed to project a measurement.
const PROBE_OPS: u64 = 20;

/// How long one measurement of `kind` may take, if it is bounded: etcd's only. etcd 3.4
/// collects every key of a range from its index before it applies the limit (etcd-io/etcd
/// issue 11057), so an operation whose ranges span many keys (each of a listing's
/// re-seeks walks a whole shard) costs tens of milliseconds, and the quick scale's 12,000
/// of one would take a quarter of an hour. Every other engine measures each workload of
/// the project's scales in seconds to a few minutes, and none is cut short.
pub fn measurement_budget(kind: EngineKind) -> Option<Duration> {
    matches!(kind, EngineKind::Etcd | EngineKind::Etcd1).then_some(ETCD_MEASUREMENT_BUDGET)
}

/// What the first operations of a measurement's warm-up foretell.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Projection {
    /// The measurement fits its budget; this many warm-up operations have run.
    Within {
        /// Warm-up operations already run.
        warmed: u64,
    },
    /// It would not: the N/A record's note, with the cost measured.
    Past(String),
}

/// Runs the first warm-up operations of (w, v) on `s`, times [`PROBE_OPS`] of them after
/// [`PROBE_SETTLE`], and projects from their mean the whole measurement: `warm` untimed and
/// `ops` timed operations.
pub(crate) fn project(
    s: &mut Session,
    (w, v): (Workload, Option<Variant>),
    (warm, ops): (u64, u64),
    budget: Duration,
) -> Result<Projection, RunError> {
    let settle = PROBE_SETTLE.min(warm);
    let timed = PROBE_OPS.min(warm - settle);
    for i in 0..settle {
        s.op(w, v, i)?;
    }
    if timed == 0 {
        return Ok(Projection::Within { warmed: settle });
    }
    let start = Instant::now();
    for i in settle..settle + timed {
        s.op(w, v, i)?;
    }
    let per_op = start.elapsed() / timed as u32;
    let name = match v {
        Some(v) => format!("{} {v}", w.name()),
        None => w.name().to_string(),
    };
    Ok(
        match past_budget(s.kind(), &name, per_op, timed, warm + ops, budget) {
            Some(why) => Projection::Past(why),
            None => Projection::Within {
                warmed: settle + timed,
            },
        },
    )
}

/// The note of a measurement that `per_op` (the mean of `timed` operations) projects past
/// `budget` for `total` operations, or `None` when it fits.
pub(crate) fn past_budget(
    kind: EngineKind,
    workload: &str,
    per_op: Duration,
    timed: u64,
    total: u64,
    budget: Duration,
) -> Option<String> {
    let projected = per_op.saturating_mul(u32::try_from(total).unwrap_or(u32::MAX));
    if projected <= budget {
        return None;
    }
    Some(format!(
        "{} took {:.1} ms per {workload} operation over {timed} of its warm-up \
         operations, so the {total} operations of this measurement would take {:.1} minutes, \
         past the {:.0} minutes one measurement of etcd may take (etcd 3.4 collects every key \
         of a range from its index before it applies the limit: etcd-io/etcd issue 11057, \
         docs/fairness.md)",
        kind.name(),
        per_op.as_secs_f64() * 1e3,
        projected.as_secs_f64() / 60.0,
        budget.as_secs_f64() / 60.0,
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
    fn a_measurement_past_its_budget_names_its_measured_cost() {
        let budget = ETCD_MEASUREMENT_BUDGET;
        assert_eq!(measurement_budget(EngineKind::Etcd1), Some(budget));
        assert_eq!(measurement_budget(EngineKind::Etcd), Some(budget));
        assert_eq!(measurement_budget(EngineKind::Postgres), None);
        assert_eq!(measurement_budget(EngineKind::Lmdb), None);
        let ms = Duration::from_millis;
        // 30 ms x 12,000 = 6 minutes: within 8.
        assert_eq!(
            past_budget(
                EngineKind::Etcd1,
                "manifest_list",
                ms(30),
                20,
                12_000,
                budget
            ),
            None
        );
        // 55 ms x 12,000 = 11 minutes.
        let why = past_budget(
            EngineKind::Etcd1,
            "manifest_list",
            ms(55),
            20,
            12_000,
            budget,
        );
        assert!(
            why.as_deref()
                .is_some_and(|w| w.contains("etcd-1 took 55.0 ms per manifest_list")
                    && w.contains("over 20 of its warm-up")
                    && w.contains("the 12000 operations")
                    && w.contains("would take 11.0 minutes")
                    && w.contains("past the 8 minutes")),
            "{why:?}"
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
