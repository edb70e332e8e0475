//! Frames: the file is a sequence of blob frames (512 KiB by default), each a run of
//! pages (4 KiB by default). Frames are the unit of file growth and of bulk-load layout;
//! pages are the unit of caching and I/O.

mod alloc;
mod geometry;

pub use alloc::{Allocator, Reclaimed, Recoverable};
pub use geometry::{Geometry, MIN_PAGE_SIZE};
