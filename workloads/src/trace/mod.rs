//! KV-cache request traces (Mooncake's format) and the cache manager that replays them:
//! what a serving system's prefix cache does per request (find the longest cached prefix
//! of the request's block chain, insert the missing blocks, evict least-recently-used
//! leaves when full), kept as the harness's own bookkeeping.

mod keys;
mod model;
mod parse;

pub use keys::{chained_key, path_key, ChainedKey, PATH_SEGMENT_LEN};
pub use model::{CacheModel, RequestOutcome};
pub use parse::{
    committed_trace_path, parse_trace, read_trace, Request, Trace, TraceError, TraceErrorKind,
};
