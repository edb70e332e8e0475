//! The gate's baseline file: the bounds each check must stay within, the run that
//! recorded them, and the ways a later run may change them (record, lower the counters,
//! add new checks, lock in a gain).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::measure::GateMeasurement;
use crate::Provenance;

/// The baseline schema version this build writes and reads.
pub const GATE_SCHEMA_VERSION: u32 = 1;

/// Slack given to a ratio check that has none recorded yet (see docs/gate.md).
pub const DEFAULT_SLACK: f64 = 0.25;

/// Why the gate's baseline cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid baseline.
    #[error("{path} is not a gate baseline: {source}; restore it from git or record a new one with `ai-meta gate --update-baseline`")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The JSON error, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The file's schema version is not one this build reads.
    #[error("{path} has schema_version {found}; this build reads version {supported}: record a new baseline with `ai-meta gate --update-baseline`")]
    Schema {
        /// The file.
        path: PathBuf,
        /// Version found.
        found: u32,
        /// Version supported.
        supported: u32,
    },
    /// The baseline was recorded at another scale, so its counters do not apply.
    #[error("{path} was recorded at scale {recorded}, this gate ran at scale {ran}: run the gate with `--scale {recorded}`, or record a new baseline")]
    ScaleMismatch {
        /// The file.
        path: PathBuf,
        /// Scale of the baseline.
        recorded: String,
        /// Scale of this run.
        ran: String,
    },
}

/// A ratio check's recorded value and allowed slack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioBound {
    /// Stable name, e.g. `manifest_scan/manifest_beyond`.
    pub check: String,
    /// What is divided by what.
    pub what: String,
    /// The median ratio the recording run measured.
    pub ratio: f64,
    /// Allowed relative increase: the bound is `ratio * (1 + slack)`.
    pub slack: f64,
    /// An absolute ceiling that holds whatever the baseline (1.0 for "native must be faster
    /// than its emulation").
    #[serde(default)]
    pub cap: Option<f64>,
}

impl RatioBound {
    /// The largest ratio that passes.
    pub fn bound(&self) -> f64 {
        let b = self.ratio * (1.0 + self.slack);
        self.cap.map_or(b, |c| b.min(c))
    }
}

/// A deterministic counter's recorded value; the bound is the value itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterBound {
    /// Stable name, e.g. `pages_per_scan_cold/manifest_beyond`.
    pub check: String,
    /// What is counted.
    pub what: String,
    /// The value recorded; a run passes while it measures at most this (times
    /// `1 + slack` when the check has one).
    pub value: f64,
    /// Allowed relative increase, for the few counters that are not exactly repeatable
    /// (None: exact). Each such check says why where it is measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<f64>,
}

impl CounterBound {
    /// The largest value that passes.
    pub fn bound(&self) -> f64 {
        self.value * (1.0 + self.slack.unwrap_or(0.0))
    }
}

/// How a gate run measures: its data sets' scale and how many timed operations it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateShape {
    /// Scale of the data sets (counters only hold at the scale they were recorded at).
    pub scale: String,
    /// Alternating rounds per ratio.
    pub rounds: u32,
    /// Timed operations per engine per round.
    pub ops_per_round: u64,
}

impl GateShape {
    /// The shape of a run at `scale` with `rounds` rounds of `ops_per_round` operations.
    pub fn new(scale: &str, rounds: u32, ops_per_round: u64) -> GateShape {
        GateShape {
            scale: scale.to_string(),
            rounds,
            ops_per_round,
        }
    }
}

/// The checked-in bounds of the gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateBaseline {
    /// `GATE_SCHEMA_VERSION`.
    pub schema_version: u32,
    /// How the gate ran when it recorded these bounds (flattened: the file keeps `scale`,
    /// `rounds` and `ops_per_round` at its top level).
    #[serde(flatten)]
    pub shape: GateShape,
    /// The run that recorded these bounds.
    pub provenance: Provenance,
    /// Timed checks.
    pub ratios: Vec<RatioBound>,
    /// Deterministic checks.
    pub counters: Vec<CounterBound>,
    /// The run that recorded the counters, when it is not the one that recorded the
    /// ratios (`ai-meta gate --update-counters`: counters are exact on any machine, the
    /// ratios belong to the machine kind they were measured on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters_provenance: Option<Provenance>,
    /// Checks added after the baseline was recorded (`ai-meta gate --add-new-checks`) or
    /// recorded again lower (`--lock-in`), each group with the run that measured it: the
    /// other checks keep their recording.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additions: Vec<Addition>,
}

/// Checks a later run added to a baseline (or recorded again), and that run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Addition {
    /// The checks added.
    pub checks: Vec<String>,
    /// The run that measured them.
    pub provenance: Provenance,
    /// Whether they were new checks or ratios recorded again lower.
    #[serde(default, skip_serializing_if = "AdditionKind::is_new")]
    pub kind: AdditionKind,
}

/// How a later run changed a baseline's checks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AdditionKind {
    /// Checks the baseline lacked (`ai-meta gate --add-new-checks`).
    #[default]
    New,
    /// Ratios recorded again at a lower median, to lock in a gain (`ai-meta gate
    /// --lock-in`).
    LockedIn,
}

impl AdditionKind {
    fn is_new(&self) -> bool {
        *self == AdditionKind::New
    }

    /// The verb the gate prints for it.
    pub fn verb(self) -> &'static str {
        match self {
            AdditionKind::New => "added",
            AdditionKind::LockedIn => "locked in",
        }
    }
}

impl GateBaseline {
    /// A baseline recording `m`; slacks (and the order of checks) are kept from
    /// `previous` where it has the same check, `DEFAULT_SLACK` otherwise.
    pub fn record(
        m: &GateMeasurement,
        shape: GateShape,
        provenance: Provenance,
        previous: Option<&GateBaseline>,
    ) -> GateBaseline {
        let slack = |check: &str| {
            previous
                .and_then(|p| p.ratios.iter().find(|b| b.check == check))
                .map_or(DEFAULT_SLACK, |b| b.slack)
        };
        GateBaseline {
            schema_version: GATE_SCHEMA_VERSION,
            shape,
            provenance,
            ratios: m
                .ratios
                .iter()
                .map(|r| RatioBound {
                    check: r.check.clone(),
                    what: r.what.clone(),
                    ratio: r.median(),
                    slack: slack(&r.check),
                    cap: r.cap,
                })
                .collect(),
            counters: m
                .counters
                .iter()
                .map(|c| CounterBound {
                    check: c.check.clone(),
                    what: c.what.clone(),
                    value: c.value,
                    slack: previous
                        .and_then(|p| p.counters.iter().find(|b| b.check == c.check))
                        .map_or(c.slack, |b| b.slack),
                })
                .collect(),
            counters_provenance: None,
            additions: Vec::new(),
        }
    }

    /// This baseline with the counters `m` lowered (their slacks kept; a counter `m` reads
    /// higher keeps its bound, so that no counter is loosened this way) and its ratios as
    /// they were: what `--update-counters` writes after a change that reads fewer pages.
    pub fn with_counters(&self, m: &GateMeasurement, provenance: Provenance) -> GateBaseline {
        let counters = m
            .counters
            .iter()
            .map(|c| {
                let old = self.counters.iter().find(|b| b.check == c.check);
                CounterBound {
                    check: c.check.clone(),
                    what: c.what.clone(),
                    value: old.map_or(c.value, |b| b.value.min(c.value)),
                    slack: old.map_or(c.slack, |b| b.slack),
                }
            })
            .collect();
        GateBaseline {
            counters,
            counters_provenance: Some(provenance),
            ..self.clone()
        }
    }

    /// This baseline with the checks of `m` that it lacks added (a ratio at its median
    /// with `DEFAULT_SLACK`, a counter at its value with the slack it asks for) and every
    /// check it has kept as it is: what `--add-new-checks` writes after the gate gained
    /// checks, so that they are guarded without recording the others again on another
    /// day or machine kind. Returns the new baseline and the names of the checks added.
    pub fn with_new_checks(
        &self,
        m: &GateMeasurement,
        provenance: Provenance,
    ) -> (GateBaseline, Vec<String>) {
        let mut b = self.clone();
        let mut added = Vec::new();
        for r in &m.ratios {
            if !b.ratios.iter().any(|x| x.check == r.check) {
                b.ratios.push(RatioBound {
                    check: r.check.clone(),
                    what: r.what.clone(),
                    ratio: r.median(),
                    slack: DEFAULT_SLACK,
                    cap: r.cap,
                });
                added.push(r.check.clone());
            }
        }
        for c in &m.counters {
            if !b.counters.iter().any(|x| x.check == c.check) {
                b.counters.push(CounterBound {
                    check: c.check.clone(),
                    what: c.what.clone(),
                    value: c.value,
                    slack: c.slack,
                });
                added.push(c.check.clone());
            }
        }
        if !added.is_empty() {
            b.additions.push(Addition {
                checks: added.clone(),
                provenance,
                kind: AdditionKind::New,
            });
        }
        (b, added)
    }

    /// This baseline with the ratio checks named in `checks` recorded again at `m`'s
    /// medians, keeping their slack and cap, and every other check as it is: a gain
    /// locked in. Fails, changing nothing, when a check is not a ratio of both the
    /// baseline and `m`, or when its median is not below its recorded ratio (recording
    /// it higher would loosen the gate; that is `--update-baseline`, with a reason).
    pub fn with_locked_in(
        &self,
        m: &GateMeasurement,
        checks: &[String],
        provenance: Provenance,
    ) -> Result<GateBaseline, String> {
        let mut b = self.clone();
        for name in checks {
            let Some(measured) = m.ratios.iter().find(|r| &r.check == name) else {
                return Err(format!("{name}: this run measured no such ratio"));
            };
            let Some(bound) = b.ratios.iter_mut().find(|r| &r.check == name) else {
                return Err(format!(
                    "{name}: the baseline has no such ratio (new checks: --add-new-checks)"
                ));
            };
            let median = measured.median();
            if median >= bound.ratio {
                return Err(format!(
                    "{name}: measured {median:.3}, not below the recorded {:.3}; nothing to lock in",
                    bound.ratio
                ));
            }
            bound.ratio = median;
        }
        if !checks.is_empty() {
            b.additions.push(Addition {
                checks: checks.to_vec(),
                provenance,
                kind: AdditionKind::LockedIn,
            });
        }
        Ok(b)
    }

    /// Reads and checks a baseline file.
    pub fn load(path: &Path) -> Result<GateBaseline, GateError> {
        use crate::atomic::{read_json_versioned, ReadFailure};
        read_json_versioned(path, GATE_SCHEMA_VERSION).map_err(|f| match f {
            ReadFailure::Io(source) => GateError::Io {
                path: path.to_path_buf(),
                source,
            },
            ReadFailure::Parse(source) => GateError::Parse {
                path: path.to_path_buf(),
                source,
            },
            ReadFailure::Version(found) => GateError::Schema {
                path: path.to_path_buf(),
                found,
                supported: GATE_SCHEMA_VERSION,
            },
        })
    }

    /// Checks that the baseline applies to a gate run at `scale`.
    pub fn check_scale(&self, path: &Path, scale: &str) -> Result<(), GateError> {
        if self.shape.scale == scale {
            Ok(())
        } else {
            Err(GateError::ScaleMismatch {
                path: path.to_path_buf(),
                recorded: self.shape.scale.clone(),
                ran: scale.to_string(),
            })
        }
    }

    /// Writes the file atomically, pretty-printed.
    pub fn save(&self, path: &Path) -> Result<(), GateError> {
        crate::atomic::write_json(path, self).map_err(|source| GateError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}
