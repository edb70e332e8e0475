//! Naming and opening engines: [`EngineKind`] and [`open`].

use crate::api::{Durability, KvEngine, OpenOptions};
use crate::error::{Error, Result};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// The engines this crate can open, by the names used on the command line and in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum EngineKind {
    /// This project's engine (copy-on-write B+tree under a page-granular pool), `"aimeta"`.
    Aimeta,
    /// RocksDB (LSM tree), `"rocksdb"`.
    RocksDb,
    /// SQLite with its defaults (rollback journal, synchronous=FULL, no statement cache), `"sqlite"`.
    Sqlite,
    /// SQLite tuned (WAL, synchronous=NORMAL, cached statements, cache = budget), `"sqlite-tuned"`.
    SqliteTuned,
    /// LMDB through heed (copy-on-write B+tree over mmap), `"lmdb"`.
    Lmdb,
    /// redb (copy-on-write B-tree in pure Rust), `"redb"`.
    Redb,
    /// PostgreSQL over a unix socket (a throwaway local cluster unless a URL is given), `"postgres"`.
    Postgres,
    /// etcd, a throwaway cluster of three members on loopback (or `--etcd-endpoints`), `"etcd"`.
    Etcd,
    /// etcd, a throwaway cluster of one member, `"etcd-1"`.
    Etcd1,
}

impl EngineKind {
    /// Every engine kind, compiled in or not.
    pub const ALL: [EngineKind; 9] = [
        EngineKind::Aimeta,
        EngineKind::RocksDb,
        EngineKind::Sqlite,
        EngineKind::SqliteTuned,
        EngineKind::Lmdb,
        EngineKind::Redb,
        EngineKind::Postgres,
        EngineKind::Etcd,
        EngineKind::Etcd1,
    ];

    /// The engine's name, as accepted by `FromStr`.
    pub const fn name(self) -> &'static str {
        match self {
            EngineKind::Aimeta => "aimeta",
            EngineKind::RocksDb => "rocksdb",
            EngineKind::Sqlite => "sqlite",
            EngineKind::SqliteTuned => "sqlite-tuned",
            EngineKind::Lmdb => "lmdb",
            EngineKind::Redb => "redb",
            EngineKind::Postgres => "postgres",
            EngineKind::Etcd => "etcd",
            EngineKind::Etcd1 => "etcd-1",
        }
    }

    /// The Cargo feature of aimeta-adapters that compiles this engine in.
    pub const fn feature(self) -> &'static str {
        match self {
            EngineKind::Aimeta => "aimeta",
            EngineKind::RocksDb => "rocksdb",
            EngineKind::Sqlite | EngineKind::SqliteTuned => "sqlite",
            EngineKind::Lmdb => "lmdb",
            EngineKind::Redb => "redb",
            EngineKind::Postgres => "postgres",
            EngineKind::Etcd | EngineKind::Etcd1 => "etcd",
        }
    }

    /// Whether this build can open the engine.
    pub const fn is_enabled(self) -> bool {
        match self {
            EngineKind::Aimeta => cfg!(feature = "aimeta"),
            EngineKind::RocksDb => cfg!(feature = "rocksdb"),
            EngineKind::Sqlite | EngineKind::SqliteTuned => cfg!(feature = "sqlite"),
            EngineKind::Lmdb => cfg!(feature = "lmdb"),
            EngineKind::Redb => cfg!(feature = "redb"),
            EngineKind::Postgres => cfg!(feature = "postgres"),
            EngineKind::Etcd | EngineKind::Etcd1 => cfg!(feature = "etcd"),
        }
    }

    /// The engine runs as a server outside this process (PostgreSQL, etcd): closing and
    /// reopening it would lose its store, and a memory cgroup around this process does not
    /// bound it.
    pub const fn is_server(self) -> bool {
        matches!(
            self,
            EngineKind::Postgres | EngineKind::Etcd | EngineKind::Etcd1
        )
    }

    /// The durability modes the engine offers, as its `capabilities().durability` says,
    /// known before it is opened: etcd fsyncs every commit and has no other mode, so the
    /// runner records its other modes without starting a cluster (the conformance suite
    /// checks that the two agree).
    pub const fn durabilities(self) -> &'static [Durability] {
        match self {
            EngineKind::Etcd | EngineKind::Etcd1 => &[Durability::Sync],
            _ => &Durability::ALL,
        }
    }

    /// The engine kinds this build can open.
    pub fn enabled() -> Vec<EngineKind> {
        Self::ALL.into_iter().filter(|k| k.is_enabled()).collect()
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = Error;

    /// Parses an engine name (case-insensitive; `_` may stand for `-`).
    fn from_str(s: &str) -> Result<Self> {
        let wanted = s.trim().to_ascii_lowercase().replace('_', "-");
        Self::ALL
            .into_iter()
            .find(|k| k.name() == wanted)
            .ok_or_else(|| Error::UnknownEngine {
                name: s.to_string(),
                valid: Self::ALL.map(EngineKind::name).join(", "),
            })
    }
}

/// Opens (creating if needed) an engine whose files live in `dir`, which should be the
/// engine's own: `size_on_disk` counts every file in it.
///
/// PostgreSQL keeps its data in its own server (see the postgres module): `dir` is not used
/// by it. etcd's throwaway cluster keeps its members' data and logs in `dir/etcd-cluster`. Fails with [`Error::FeatureDisabled`] for an engine this build left out.
pub fn open(kind: EngineKind, dir: &Path, opts: &OpenOptions) -> Result<Box<dyn KvEngine>> {
    let _ = (dir, opts); // unused when every engine feature is off
    match kind {
        #[cfg(feature = "aimeta")]
        EngineKind::Aimeta => Ok(Box::new(crate::aimeta::AimetaEngine::open(dir, opts)?)),
        #[cfg(feature = "rocksdb")]
        EngineKind::RocksDb => Ok(Box::new(crate::rocksdb::RocksEngine::open(dir, opts)?)),
        #[cfg(feature = "sqlite")]
        EngineKind::Sqlite => Ok(Box::new(crate::sqlite::SqliteEngine::open(
            dir, opts, false,
        )?)),
        #[cfg(feature = "sqlite")]
        EngineKind::SqliteTuned => Ok(Box::new(crate::sqlite::SqliteEngine::open(
            dir, opts, true,
        )?)),
        #[cfg(feature = "lmdb")]
        EngineKind::Lmdb => Ok(Box::new(crate::lmdb::LmdbEngine::open(dir, opts)?)),
        #[cfg(feature = "redb")]
        EngineKind::Redb => Ok(Box::new(crate::redb::RedbEngine::open(dir, opts)?)),
        #[cfg(feature = "postgres")]
        EngineKind::Postgres => Ok(Box::new(crate::postgres::PgEngine::open(opts)?)),
        #[cfg(feature = "etcd")]
        EngineKind::Etcd => Ok(Box::new(crate::etcd::EtcdEngine::open(
            crate::etcd::Members::Three,
            dir,
            opts,
        )?)),
        #[cfg(feature = "etcd")]
        EngineKind::Etcd1 => Ok(Box::new(crate::etcd::EtcdEngine::open(
            crate::etcd::Members::One,
            dir,
            opts,
        )?)),
        #[allow(unreachable_patterns)]
        other => Err(Error::FeatureDisabled {
            engine: other.name(),
            feature: other.feature(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_lists_valid_names() {
        for k in EngineKind::ALL {
            assert_eq!(k.name().parse::<EngineKind>().ok(), Some(k));
        }
        assert_eq!(
            "SQLite_Tuned".parse::<EngineKind>().ok(),
            Some(EngineKind::SqliteTuned)
        );
        let msg = match "leveldb".parse::<EngineKind>() {
            Err(e) => e.to_string(),
            Ok(k) => panic!("parsed leveldb as {k}"),
        };
        assert!(msg.contains("\"leveldb\""), "{msg}");
        assert!(
            msg.contains("rocksdb, sqlite, sqlite-tuned, lmdb, redb, postgres, etcd, etcd-1"),
            "{msg}"
        );
    }
}
