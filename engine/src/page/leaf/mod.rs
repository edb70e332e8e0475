//! Leaf pages: the layout with its constants (`layout.rs`), the view that searches and
//! decodes a page in place (`view.rs`), its validation (`validate.rs`) and the encoder
//! of owned entries (`encode.rs`).

mod encode;
mod layout;
mod validate;
mod view;

pub use encode::{KeySpans, LeafEntry, LeafNode, LeafSizer, Value};
pub use layout::{leaf_max_key_len, value_fits_inline};
pub use view::{LeafView, Probe, ValueCell};
