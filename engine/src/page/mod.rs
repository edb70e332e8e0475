//! On-disk page formats: the common header with its checksum, the superblock, leaf,
//! inner, overflow and free-list pages. Layouts are documented beside their offsets and
//! in docs/format.md.

mod error;
mod freelist;
mod header;
mod inner;
mod leaf;
mod meta;
mod overflow;
mod slotted;

pub use error::PageError;
pub use freelist::{decode_freelist_page, encode_freelist_pages, freelist_pages_needed};
pub use header::{
    cmp_prefixed, lcp, read_u32, read_u64, seal, verify, write_u32, write_u64, PageHeader, PageId,
    PageKind, HEADER_LEN,
};
pub use inner::{InnerNode, InnerView, INNER_CELL_FIXED, INNER_FIXED};
pub use leaf::{
    LeafEntry, LeafNode, LeafSizer, LeafView, Probe, Value, ValueCell, LEAF_CELL_FIXED, LEAF_FIXED,
};
pub use meta::{MetaReject, Superblock, FORMAT_VERSION, META_LEN};
pub use overflow::{decode_overflow_run, encode_overflow_run, overflow_pages_for};
