//! One interface over this project's engine and the engines it is measured against.
//!
//! [`KvEngine`] is the interface; [`open`] opens any engine by [`EngineKind`]. Each compared
//! engine lives in its own module behind its own Cargo feature (all on by default):
//! `rocksdb`, `sqlite` (two configurations), `lmdb`, `redb`, `postgres`, `etcd` (a
//! three-member and a one-member throwaway cluster). None of them has a
//! native longest-prefix lookup or delimiter listing, so those run the shared emulations in
//! [`emul`], written once over three ordered-read primitives every adapter provides.
//! docs/fairness.md records what each engine is given for a cache budget and durability mode.

mod api;
pub mod emul;
mod error;
mod spec;

#[cfg(feature = "aimeta")]
pub mod aimeta;
#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "lmdb")]
mod lmdb;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redb")]
mod redb;
#[cfg(feature = "rocksdb")]
mod rocksdb;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use api::{
    BatchOp, CacheBudget, Capabilities, CasOutcome, Durability, IoCounters, KvEngine, KvPair,
    ListItem, LpmMethod, OpenOptions, ReadConsistency,
};
pub use error::{BoxError, Error, Result};
pub use spec::{open, EngineKind};
