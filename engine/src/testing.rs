//! For the engine's own scenario tests, not for applications: the on-disk layouts a test
//! needs to build or damage a file the way another build or a failing disk would. Nothing
//! here is stable API.

pub use crate::page::{KeyLengths, Superblock, FORMAT_VERSION, META_LEN};
pub use crate::wal::FILE_HEADER_LEN;
