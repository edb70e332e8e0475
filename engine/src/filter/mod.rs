//! The stored-key filter and its file.

mod bloom;
mod file;

pub use bloom::{hash_key, KeyFilter, PrefixHasher, MAX_BITS_PER_KEY};
pub(crate) use file::{decode, encode, FILTER_FILE};
