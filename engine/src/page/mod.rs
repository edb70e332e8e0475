//! On-disk page formats: the common header with its checksum, the superblock, leaf,
//! inner, overflow and free-list pages. Each layout is drawn once, beside its offset
//! constants, with tests asserting it; docs/format.md explains them.

mod error;
mod freelist;
mod header;
mod id_hash;
mod inner;
mod key_lengths;
mod kind;
mod leaf;
mod meta;
mod overflow;
mod slotted;

pub use error::{Corruption, PageError};
pub use freelist::{decode_freelist_page, encode_freelist_pages, freelist_pages_needed};
pub use header::{
    cmp_prefixed, lcp, read_u32, read_u64, seal, verify, write_u32, write_u64, PageHeader,
    HEADER_LEN, KIND_AT,
};
pub use id_hash::{PageMap, PageSet};
pub use inner::{inner_max_separator_len, InnerNode, InnerView, INNER_FIXED};
pub use key_lengths::{KeyLengths, KEY_LENGTH_BITS};
pub use kind::{PageId, PageKind};
pub use leaf::{
    leaf_max_key_len, value_fits_inline, KeySpans, LeafEntry, LeafNode, LeafSizer, LeafView, Probe,
    Value, ValueCell,
};
pub use meta::{MetaReject, Superblock, FORMAT_VERSION, META_LEN, OLDEST_READ_VERSION};
pub use overflow::{decode_overflow_run, encode_overflow_run, overflow_pages_for};
