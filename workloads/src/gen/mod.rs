//! Deterministic data and query generators: the same seed gives the same bytes on any
//! machine (one value-stable PCG generator, seeds derived from names; see `rng`).

mod chain_graph;
mod kvchain;
mod manifest;
mod rng;
mod zipf;

pub use chain_graph::{ChainGraph, Layout};
pub use kvchain::{KvChain, KvQuery, LEVEL_BYTES};
pub use manifest::{Manifest, KEY_LEN as MANIFEST_KEY_LEN, VALUE_LEN as MANIFEST_VALUE_LEN};
pub use rng::{derive_seed, seeded, Rng};
pub use zipf::{Zipf, ZipfError, YCSB_THETA};
