//! Errors of the runner.

use std::path::PathBuf;

/// Why a run could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A name given on the command line is not known.
    #[error("unknown {what} {name:?}; valid: {valid}")]
    UnknownName {
        /// engine, workload, variant, scale or budget mode.
        what: &'static str,
        /// The name given.
        name: String,
        /// The names accepted.
        valid: String,
    },
    /// A workload was asked to run in a variant it does not have.
    #[error("{workload} has no variant {variant}; its variants: {valid}")]
    NoSuchVariant {
        /// The workload.
        workload: &'static str,
        /// The variant asked for ("none" for the workload's plain form).
        variant: &'static str,
        /// The variants it has.
        valid: String,
    },
    /// An engine failed while loading or measuring.
    #[error("{engine} on {dataset}, {step}: {source}")]
    Engine {
        /// The engine.
        engine: String,
        /// The data set.
        dataset: String,
        /// What was being done.
        step: String,
        /// The adapter's error.
        #[source]
        source: Box<aimeta_adapters::Error>,
    },
    /// An engine returned a wrong answer: the measurement would be meaningless.
    #[error("{engine} gave a wrong answer in {workload}: {detail}")]
    WrongAnswer {
        /// The engine.
        engine: String,
        /// The workload.
        workload: String,
        /// What was expected and what came back.
        detail: String,
    },
    /// The run needs more disk or memory than the machine has free; nothing was loaded.
    #[error("not enough {resource} for {detail}: it needs {need}, {free} is free; {hint}")]
    NoRoom {
        /// disk or memory.
        resource: &'static str,
        /// What needs it (which store of which data set, or which budget).
        detail: String,
        /// How much it needs.
        need: String,
        /// How much is free.
        free: String,
        /// What to do about it.
        hint: &'static str,
    },
    /// The sizes of a sweep cannot be made into manifests.
    #[error("bad sweep: {detail}; give sizes in keys like 1e5,1e6,1e7,5e7 (whole shards of 10,000 above 10,000)")]
    BadSweep {
        /// What is wrong.
        detail: String,
    },
    /// The device's floor could not be measured.
    #[error(transparent)]
    Device(#[from] crate::device::DeviceError),
    /// The work directory could not be prepared.
    #[error("cannot use work directory {path}: {source}; pass --work-dir with a writable directory that has room")]
    WorkDir {
        /// The directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The memory cgroup for `--budget-mode cgroup` could not be set up.
    #[error("--budget-mode cgroup needs a writable memory cgroup (v2 or v1, as root): {detail}; use --budget-mode engine instead")]
    Cgroup {
        /// What failed.
        detail: String,
    },
    /// A session's engine is closed: a reopen failed (its error was reported first).
    #[error("{engine} on {dataset} is closed after a failed reopen; start the run again")]
    Closed {
        /// The engine.
        engine: String,
        /// The data set.
        dataset: String,
    },
    /// The trace file cannot be replayed (bad input: the file, line and reason).
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
    /// The trace cannot be scheduled as asked.
    #[error("trace {path}: {source}")]
    Schedule {
        /// The trace file.
        path: PathBuf,
        /// Why.
        #[source]
        source: crate::trace::ScheduleError,
    },
    /// A trace replay failed on an engine.
    #[error("{engine} replaying {dataset} ({variant}): {source}")]
    Replay {
        /// The engine.
        engine: String,
        /// The replay's data set name.
        dataset: String,
        /// Its key design and lookup.
        variant: String,
        /// What failed.
        #[source]
        source: Box<crate::trace::ReplayError>,
    },
    /// An engine the command needs is not available on this machine.
    #[error("{engine} is needed here but not available: {detail}")]
    Unavailable {
        /// The engine.
        engine: String,
        /// Why not.
        detail: String,
    },
}

impl RunError {
    /// Whether the error is the user's input (a bad name, trace file or setting), which
    /// the command line reports with exit code 2 (1 for failures while measuring).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            RunError::UnknownName { .. }
                | RunError::NoSuchVariant { .. }
                | RunError::Trace(_)
                | RunError::Schedule { .. }
                | RunError::NoRoom { .. }
                | RunError::BadSweep { .. }
        )
    }
}

/// The one of `all` that `name_of` names `name` (spaces around it ignored), or the
/// `UnknownName` error that lists every valid name.
pub(crate) fn find_by_name<T: Copy>(
    what: &'static str,
    name: &str,
    all: &[T],
    name_of: fn(T) -> &'static str,
) -> Result<T, RunError> {
    all.iter()
        .copied()
        .find(|&x| name_of(x) == name.trim())
        .ok_or_else(|| RunError::UnknownName {
            what,
            name: name.to_string(),
            valid: all
                .iter()
                .map(|&x| name_of(x))
                .collect::<Vec<_>>()
                .join(", "),
        })
}
