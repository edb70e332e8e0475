//! The ai_meta workloads: deterministic generators for dataset manifests, KV-cache chain
//! indexes and chain graphs, the scales, and the runner that times every workload over
//! the engine adapters and writes the results JSON.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod alloc_count;
pub mod device;
pub mod gate;
pub mod gen;
mod histogram;
pub mod malloc_arenas;
pub mod run;
pub mod scale;
pub mod trace;
mod versions;
