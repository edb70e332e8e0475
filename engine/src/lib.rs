//! aimeta-engine: an embedded ordered key-value store.
