//! KV-cache request traces (Mooncake's format) and their replay: what a serving system's
//! prefix cache does per request (find the longest cached prefix of the request's block
//! chain, insert the missing blocks, evict least-recently-used leaves when full), the
//! cache manager's bookkeeping kept by the harness, the engine's calls timed.

mod keys;
mod model;
mod parse;
mod replay;
mod schedule;
mod timing;

pub use keys::{
    chained_key, path_key, path_root, push_path_segment, ChainedKey, PATH_BLOCK_LIMIT,
    PATH_SEGMENT_LEN,
};
pub use model::{CacheModel, RequestOutcome};
pub use parse::{
    committed_trace_path, parse_trace, read_trace, Request, Trace, TraceError, TraceErrorKind,
};
pub use replay::{
    block_value, longest_key, prepare, replay, replay_with, KeyDesign, ReplayError, ReplayInputs,
    ReplayOutcome, TraceMethod, BLOCK_VALUE_LEN,
};
pub use schedule::{Arrival, Planned, Schedule, ScheduleError};
pub use timing::ReplayOptions;
