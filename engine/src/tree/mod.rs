//! The public API: `Tree::open(TreeConfig::new(dir))`, point reads and writes,
//! compare-and-swap, atomic batches, range scans, delimiter listings, longest-prefix
//! lookups, counts, snapshots, bulk load, checkpoints and metrics.

mod background;
mod batch;
mod builder;
mod config;
mod handle;
mod keys;
mod open;
mod range;
mod readable;
mod scan;
mod shared;
mod snapshot;
mod spare;

pub use batch::WriteBatch;
pub use config::{Durability, TreeConfig};
pub use handle::{CasConflict, Tree};
pub use keys::{Keys, KeysBuilder};
pub use range::{Range, RangeBuilder};
pub use readable::Readable;
pub use snapshot::Snapshot;
