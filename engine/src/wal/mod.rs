//! The write-ahead log: each commit's mutations as one numbered, checksummed record,
//! appended before the commit becomes visible, replayed on open after the last
//! checkpoint. Two files alternate: a checkpoint syncs the active one and switches to the
//! other, whose records the previous checkpoint already made durable. Format and
//! protocol: docs/durability.md.

mod error;
mod log;
mod record;

pub use error::WalError;
pub use log::{Wal, WalOpened, WAL_FILES};
#[cfg(test)]
pub use record::OPS_AT;
pub use record::{encode_ops, encoded_op_len, start_record, Record, FILE_HEADER_LEN, WAL_VERSION};
