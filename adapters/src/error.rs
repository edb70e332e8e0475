//! The crate's typed errors. Each message says what to do; the engine's own error is kept as
//! the `source()` so callers can print the whole chain.

use std::path::PathBuf;

/// A boxed engine error, kept as the `source()` of [`Error::Backend`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The result type of every adapter call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything an adapter can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The engine has no native way to do this operation.
    #[error(
        "{engine} does not support {operation} natively; check capabilities() first or use an \
         emulated method (e.g. LpmMethod::PredecessorSeek)"
    )]
    Unsupported {
        /// The engine's name.
        engine: &'static str,
        /// What was asked for.
        operation: &'static str,
    },

    /// An environment setting the adapters read holds a value they do not know.
    #[error("{name}={value:?} is not a valid setting: use one of {valid}, or unset it")]
    BadSetting {
        /// The environment variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// The values it accepts.
        valid: &'static str,
    },

    /// An engine name that [`crate::EngineKind`] does not know.
    #[error("unknown engine {name:?}; valid names are: {valid}")]
    UnknownEngine {
        /// The name given.
        name: String,
        /// The valid names, comma-separated.
        valid: String,
    },

    /// The engine exists but this build left it out.
    #[error(
        "engine {engine} is not compiled in; rebuild aimeta-adapters with feature \"{feature}\" \
         (it is on by default)"
    )]
    FeatureDisabled {
        /// The engine's name.
        engine: &'static str,
        /// The Cargo feature that enables it.
        feature: &'static str,
    },

    /// `bulk_load` got a key that is not greater than the one before it or than the largest
    /// key already stored.
    #[error(
        "{engine}: bulk_load input is not strictly ascending at pair #{index} (or it is not above \
         the largest stored key); sort and deduplicate the pairs, or load them with put()"
    )]
    UnsortedInput {
        /// The engine's name.
        engine: &'static str,
        /// Zero-based position of the offending pair in this call's input.
        index: u64,
    },

    /// A key the engine cannot store (empty, or over the engine's size limit).
    #[error("{engine}: invalid key: {reason}")]
    InvalidKey {
        /// The engine's name.
        engine: &'static str,
        /// Why the key was refused and what is allowed.
        reason: String,
    },

    /// A file-system operation on the engine's directory failed.
    #[error("{engine}: could not {action} {path}; check that the directory exists, is writable and the disk has room")]
    Io {
        /// The engine's name.
        engine: &'static str,
        /// What was being done.
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// The engine itself returned an error.
    #[error(
        "{engine}: {operation} failed (the engine's error follows); check the engine's directory, \
         free disk space and, for PostgreSQL, the server log"
    )]
    Backend {
        /// The engine's name.
        engine: &'static str,
        /// What was being done.
        operation: &'static str,
        /// The engine's error.
        #[source]
        source: BoxError,
    },

    /// A previous call panicked while holding this engine's connection lock.
    #[error("{engine}: a previous call panicked while holding the connection lock; drop and reopen the engine")]
    Poisoned {
        /// The engine's name.
        engine: &'static str,
    },

    /// No PostgreSQL server binaries were found for the throwaway cluster.
    #[error(
        "PostgreSQL server binaries not found ({searched}); install them (Debian: apt-get install \
         postgresql) or point AI_META_PG_URL / OpenOptions::pg_url at a running server"
    )]
    PostgresUnavailable {
        /// Where we looked.
        searched: String,
    },

    /// The throwaway PostgreSQL cluster could not be created or started.
    #[error("PostgreSQL throwaway cluster: {step} failed: {detail}")]
    PostgresCluster {
        /// Which step (initdb, start, connect, ...).
        step: &'static str,
        /// What went wrong and what to do, including the tail of the server log where useful.
        detail: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },

    /// No `etcd` binary was found for the throwaway cluster.
    #[error(
        "etcd not found ({searched}); install it (Debian: apt-get install etcd-server) or \
         point --etcd-endpoints (OpenOptions::etcd_endpoints) at a running cluster"
    )]
    EtcdUnavailable {
        /// Where we looked.
        searched: String,
    },

    /// The throwaway etcd cluster could not be started or did not become healthy.
    #[error("etcd throwaway cluster: {step} failed: {detail}")]
    EtcdCluster {
        /// Which step (pick ports, start, health, ...).
        step: &'static str,
        /// What went wrong and what to do, with the tail of the member's log where useful.
        detail: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },

    /// A member of the throwaway etcd cluster exited while the engine was in use.
    #[error(
        "etcd member {member} exited during the run ({status}); the cluster is no longer the \
         one measured; its log ends: {log_tail}"
    )]
    EtcdMemberDied {
        /// The member's name, client URL and process id.
        member: String,
        /// How it exited.
        status: String,
        /// The last lines of its log.
        log_tail: String,
    },

    /// The store would need more than etcd's largest backend quota.
    #[error(
        "etcd: the store needs a backend of about {need_bytes} bytes, over etcd's documented \
         maximum --quota-backend-bytes of {max_bytes} bytes (8 GiB); run it at a smaller scale"
    )]
    EtcdQuota {
        /// The backend size this data set needs.
        need_bytes: u64,
        /// etcd's maximum quota.
        max_bytes: u64,
    },
}

impl Error {
    /// The engine cannot run on this machine (no server binaries), so a caller skips it
    /// with this error's message instead of failing.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            Error::PostgresUnavailable { .. } | Error::EtcdUnavailable { .. }
        )
    }

    /// The engine cannot hold a data set this large: the measurement is N/A, not failed.
    pub fn is_too_large(&self) -> bool {
        matches!(self, Error::EtcdQuota { .. })
    }

    /// Wraps an engine error with the engine's name and the operation.
    pub fn backend(
        engine: &'static str,
        operation: &'static str,
        source: impl Into<BoxError>,
    ) -> Self {
        Error::Backend {
            engine,
            operation,
            source: source.into(),
        }
    }

    /// Wraps an I/O error on a path.
    pub fn io(
        engine: &'static str,
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Error::Io {
            engine,
            action,
            path: path.into(),
            source,
        }
    }
}
