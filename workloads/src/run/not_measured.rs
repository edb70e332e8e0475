//! Records of what was not measured, or not in full, and why: an engine this machine lacks
//! or a data set it cannot hold ([`NotLoaded`]), a durability it does not offer, an engine
//! whose server failed mid-run (its remaining records are errors; the run goes on), and an
//! etcd measurement shortened to fit its time budget.

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

/// The message of a failure that is one engine's alone, or `None` for any other error,
/// which stops the run: an engine's operation that failed while loading or measuring (an
/// etcd member that exited, a write refused when the phase's memory cgroup ran out, a
/// corrupt store) ends that engine's measurements on that data set, recorded as errors
/// with the whole chain of causes, and the run's other engines go on. Until 2026-12-05
/// only a dead etcd member did; a large run lost 17 minutes of every engine's results to
/// one engine's failed write.
pub(crate) fn engine_fault(e: &RunError) -> Option<String> {
    matches!(e, RunError::Engine { .. }).then(|| with_causes(e))
}

/// `e`'s message followed by each of its causes', the way a reader needs them ("redb:
/// write_batch failed (the engine's error follows): ...: Cannot allocate memory").
pub fn with_causes(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        // Some errors repeat their source's message in their own.
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = cause.source();
    }
    out
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
/// The fewest timed operations a shortened measurement keeps, whatever their cost.
const MIN_SHORTENED_OPS: u64 = 100;

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
    /// It would not: fewer operations are timed, after the warm-up already run.
    Shortened {
        /// Warm-up operations already run (the rest of the warm-up is skipped).
        warmed: u64,
        /// Timed operations that fit the budget.
        ops: u64,
        /// The record's note: the count, the cost measured and why.
        note: String,
    },
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
    let warmed = settle + timed;
    let probe = Probe {
        per_op,
        timed,
        warmed,
    };
    Ok(
        match shortened(s.kind(), &name, probe, (warm, ops), budget) {
            Some((ops, note)) => Projection::Shortened { warmed, ops, note },
            None => Projection::Within { warmed },
        },
    )
}

/// The warm-up operations timed to project a measurement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe {
    /// Their mean.
    pub(crate) per_op: Duration,
    /// How many were timed.
    pub(crate) timed: u64,
    /// How many warm-up operations have run, those timed included.
    pub(crate) warmed: u64,
}

/// When `probe` projects the measurement's `warm` and `ops` operations past `budget`: the
/// timed operations that fit it once the probe's warm-up has run (at least
/// [`MIN_SHORTENED_OPS`]), with the record's note; `None` when the whole measurement fits.
pub(crate) fn shortened(
    kind: EngineKind,
    workload: &str,
    probe: Probe,
    (warm, ops): (u64, u64),
    budget: Duration,
) -> Option<(u64, String)> {
    let total = warm + ops;
    let projected = probe
        .per_op
        .saturating_mul(u32::try_from(total).unwrap_or(u32::MAX));
    if projected <= budget {
        return None;
    }
    let left = budget.saturating_sub(probe.per_op.saturating_mul(probe.warmed as u32));
    let fit = left.as_nanos() / probe.per_op.as_nanos().max(1);
    let short = u64::try_from(fit)
        .unwrap_or(u64::MAX)
        .clamp(MIN_SHORTENED_OPS.min(ops), ops);
    Some((
        short,
        format!(
            "{short} timed operations of the scale's {ops}, after {warmed} to warm up: {} \
             took {:.1} ms per {workload} operation over {timed} of them, so the {total} \
             operations of the whole measurement would take {:.1} minutes, past the {:.0} \
             minutes one measurement of etcd may take (etcd 3.4 collects every key of a \
             range from its index before it applies the limit: etcd-io/etcd issue 11057, \
             docs/fairness.md)",
            kind.name(),
            probe.per_op.as_secs_f64() * 1e3,
            projected.as_secs_f64() / 60.0,
            budget.as_secs_f64() / 60.0,
            warmed = probe.warmed,
            timed = probe.timed,
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aimeta_adapters::{Capabilities, Error};

    #[test]
    fn an_engine_failure_is_that_engine_s_alone() {
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
        let poisoned = engine_err(Error::Poisoned { engine: "etcd" });
        assert!(engine_fault(&poisoned).is_some());
        let other = RunError::WorkDir {
            path: "/nowhere".into(),
            source: std::io::Error::other("gone"),
        };
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
    fn a_measurement_past_its_budget_is_shortened_and_names_its_cost() {
        let budget = ETCD_MEASUREMENT_BUDGET;
        assert_eq!(measurement_budget(EngineKind::Etcd1), Some(budget));
        assert_eq!(measurement_budget(EngineKind::Etcd), Some(budget));
        assert_eq!(measurement_budget(EngineKind::Postgres), None);
        assert_eq!(measurement_budget(EngineKind::Lmdb), None);
        let probe = |ms: u64| Probe {
            per_op: Duration::from_millis(ms),
            timed: 20,
            warmed: 30,
        };
        // 30 ms x 12,000 = 6 minutes: within 8.
        let quick = (2_000, 10_000);
        assert_eq!(
            shortened(EngineKind::Etcd1, "manifest_list", probe(30), quick, budget),
            None
        );
        // 60 ms x 12,000 = 12 minutes: 8 minutes less the 30 warm-up operations' 1.8 s
        // leave 7,970 operations of 60 ms.
        let (ops, why) = shortened(EngineKind::Etcd1, "manifest_list", probe(60), quick, budget)
            .ok_or("not shortened")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ops, 7_970);
        assert!(
            why.starts_with("7970 timed operations of the scale's 10000, after 30 to warm up")
                && why.contains("etcd-1 took 60.0 ms per manifest_list operation over 20")
                && why.contains("the 12000 operations")
                && why.contains("would take 12.0 minutes")
                && why.contains("past the 8 minutes"),
            "{why}"
        );
        // However slow, at least 100 operations are timed (and never more than asked).
        let slow = shortened(
            EngineKind::Etcd,
            "manifest_list",
            probe(10_000),
            quick,
            budget,
        );
        assert_eq!(slow.map(|(ops, _)| ops), Some(100));
        let few = shortened(
            EngineKind::Etcd,
            "manifest_list",
            probe(10_000),
            (10, 50),
            budget,
        );
        assert_eq!(few.map(|(ops, _)| ops), Some(50));
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
