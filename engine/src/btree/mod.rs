//! The copy-on-write B+tree over the buffer pool: read paths (point gets, counts, the
//! cursor behind scans, listings and longest-prefix lookups), the write transaction that
//! copies changed pages, the bulk loader and the integrity check.

mod bulk;
mod check;
mod cursor;
mod keys;
mod limits;
mod lpm;
mod read;
mod split;
mod version;
mod warm;
mod write;

pub use bulk::bulk_load;
pub use check::{check_tree, CheckReport};
pub use cursor::{Cursor, RunEnd, ScanBounds};
#[cfg(test)]
pub use keys::prefix_successor;
pub use keys::{prefix_successor_into, KeyItem, ListState};
pub use limits::{check_delete_key, check_key, check_value, MAX_KEY_LEN, MAX_VALUE_LEN};
pub use lpm::longest_prefix_in;
pub use read::{count_range, get_value, leaf_page_of, read_value};
pub use version::Version;
pub(crate) use warm::warm_inner_levels;
pub use write::{Mutation, WriteScratch, WriteTxn};
