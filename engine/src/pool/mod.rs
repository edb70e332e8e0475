//! The buffer pool: page-granular residency and I/O under a byte budget, a page table
//! reached without a global lock, scan-resistant eviction (S3-FIFO) that favours inner
//! pages and never evicts the pinned root, readahead of adjacent pages in one read, and
//! the full-frame reproduction mode of the peer engine's bug.

mod buffer;
mod evict;
mod metrics;
mod page;
mod table;

pub use buffer::{lock, Access, BufferPool, PoolConfig, ScanIo};
pub use metrics::{Counter, Metrics};
pub use page::Page;
