//! The variants of a workload: the different ways one engine runs the same operations
//! (longest-prefix methods, scan modes), each recorded under its own name.

use std::fmt;
use std::str::FromStr;

use aimeta_adapters::LpmMethod;

use crate::trace::TraceMethod;

use super::ingest::{self, IngestDurability, IngestReaders};
use super::RunError;

/// One way of running a workload, named in results as `variant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// kvchain_lpm through the engine's own longest-prefix lookup.
    Native,
    /// kvchain_lpm through aimeta's lookup that stops at a '/' boundary.
    NativeBoundary,
    /// kvchain_lpm emulated with one predecessor seek and a check.
    PredecessorSeek,
    /// kvchain_lpm emulated by bisecting over the query's '/' boundaries with point gets.
    Bisect,
    /// manifest_scan on aimeta in its normal paged mode, beside its full-frame run.
    Paged,
    /// manifest_scan or manifest_get on aimeta in its full-frame reproduction mode.
    FullFrame,
    /// kvchain_lpm's native lookup on aimeta in its full-frame reproduction mode.
    NativeFullFrame,
    /// kvchain_lpm's bisect emulation on aimeta in its full-frame reproduction mode.
    BisectFullFrame,
    /// kvcache_trace in one key design and lookup (named as the method is).
    Trace(TraceMethod),
    /// manifest_scan from a uniformly random sample inside a uniformly chosen shard.
    OffsetUniform,
    /// manifest_scan from a uniformly random sample inside a Zipf-chosen shard (YCSB's
    /// constant 0.99).
    OffsetZipf,
    /// manifest_ingest_get or manifest_ingest_scan: `readers` reader threads, alone or
    /// beside the writer, on the store reopened with `durability` (`r4_writer_sync`).
    Ingest {
        /// Reader threads.
        readers: IngestReaders,
        /// Whether the writer appends shards meanwhile.
        writer: bool,
        /// The durability the store was reopened with.
        durability: IngestDurability,
    },
    /// manifest_ingest_write: the writer beside `readers` reader threads (`r4_sync`).
    IngestWriter {
        /// Reader threads beside it.
        readers: IngestReaders,
        /// The durability the store was reopened with.
        durability: IngestDurability,
    },
    /// The same operations from this many threads at once (sync_put's writers, thread
    /// sweeps): `t1` .. `t16`.
    Threads(ThreadCount),
}

/// A thread count of a variant measured at several.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThreadCount {
    /// One thread.
    T1,
    /// Two threads.
    T2,
    /// Four threads.
    T4,
    /// Eight threads.
    T8,
    /// Sixteen threads.
    T16,
}

impl ThreadCount {
    /// Every thread count, fewest first.
    pub const ALL: [ThreadCount; 5] = [
        ThreadCount::T1,
        ThreadCount::T2,
        ThreadCount::T4,
        ThreadCount::T8,
        ThreadCount::T16,
    ];

    /// How many threads.
    pub fn count(self) -> u32 {
        match self {
            ThreadCount::T1 => 1,
            ThreadCount::T2 => 2,
            ThreadCount::T4 => 4,
            ThreadCount::T8 => 8,
            ThreadCount::T16 => 16,
        }
    }

    /// The variant name: `t1` .. `t16`.
    pub fn name(self) -> &'static str {
        match self {
            ThreadCount::T1 => "t1",
            ThreadCount::T2 => "t2",
            ThreadCount::T4 => "t4",
            ThreadCount::T8 => "t8",
            ThreadCount::T16 => "t16",
        }
    }
}

impl Variant {
    /// Every variant.
    pub const ALL: [Variant; 39] = [
        Variant::Native,
        Variant::NativeBoundary,
        Variant::PredecessorSeek,
        Variant::Bisect,
        Variant::Paged,
        Variant::FullFrame,
        Variant::NativeFullFrame,
        Variant::BisectFullFrame,
        Variant::Trace(TraceMethod::PathNative),
        Variant::Trace(TraceMethod::PathNativeBoundary),
        Variant::Trace(TraceMethod::PathPredecessorSeek),
        Variant::Trace(TraceMethod::PathBisect),
        Variant::Trace(TraceMethod::ChainedProbe),
        Variant::Trace(TraceMethod::ChainedBisect),
        Variant::OffsetUniform,
        Variant::OffsetZipf,
        Variant::Ingest {
            readers: IngestReaders::R1,
            writer: false,
            durability: IngestDurability::Async,
        },
        Variant::Ingest {
            readers: IngestReaders::R1,
            writer: false,
            durability: IngestDurability::Sync,
        },
        Variant::Ingest {
            readers: IngestReaders::R1,
            writer: true,
            durability: IngestDurability::Async,
        },
        Variant::Ingest {
            readers: IngestReaders::R1,
            writer: true,
            durability: IngestDurability::Sync,
        },
        Variant::Ingest {
            readers: IngestReaders::R4,
            writer: false,
            durability: IngestDurability::Async,
        },
        Variant::Ingest {
            readers: IngestReaders::R4,
            writer: false,
            durability: IngestDurability::Sync,
        },
        Variant::Ingest {
            readers: IngestReaders::R4,
            writer: true,
            durability: IngestDurability::Async,
        },
        Variant::Ingest {
            readers: IngestReaders::R4,
            writer: true,
            durability: IngestDurability::Sync,
        },
        Variant::Ingest {
            readers: IngestReaders::R8,
            writer: false,
            durability: IngestDurability::Async,
        },
        Variant::Ingest {
            readers: IngestReaders::R8,
            writer: false,
            durability: IngestDurability::Sync,
        },
        Variant::Ingest {
            readers: IngestReaders::R8,
            writer: true,
            durability: IngestDurability::Async,
        },
        Variant::Ingest {
            readers: IngestReaders::R8,
            writer: true,
            durability: IngestDurability::Sync,
        },
        Variant::IngestWriter {
            readers: IngestReaders::R1,
            durability: IngestDurability::Async,
        },
        Variant::IngestWriter {
            readers: IngestReaders::R1,
            durability: IngestDurability::Sync,
        },
        Variant::IngestWriter {
            readers: IngestReaders::R4,
            durability: IngestDurability::Async,
        },
        Variant::IngestWriter {
            readers: IngestReaders::R4,
            durability: IngestDurability::Sync,
        },
        Variant::IngestWriter {
            readers: IngestReaders::R8,
            durability: IngestDurability::Async,
        },
        Variant::IngestWriter {
            readers: IngestReaders::R8,
            durability: IngestDurability::Sync,
        },
        Variant::Threads(ThreadCount::T1),
        Variant::Threads(ThreadCount::T2),
        Variant::Threads(ThreadCount::T4),
        Variant::Threads(ThreadCount::T8),
        Variant::Threads(ThreadCount::T16),
    ];

    /// The variant's name in results.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Native => "native",
            Variant::NativeBoundary => "native_boundary",
            Variant::PredecessorSeek => "predecessor_seek",
            Variant::Bisect => "bisect",
            Variant::Paged => "paged",
            Variant::FullFrame => "full_frame",
            Variant::NativeFullFrame => "native_full_frame",
            Variant::BisectFullFrame => "bisect_full_frame",
            Variant::Trace(method) => method.name(),
            Variant::OffsetUniform => "offset_uniform",
            Variant::OffsetZipf => "offset_zipf",
            Variant::Ingest {
                readers,
                writer,
                durability,
            } => ingest::reader_variant_name(readers, writer, durability),
            Variant::IngestWriter {
                readers,
                durability,
            } => ingest::writer_variant_name(readers, durability),
            Variant::Threads(threads) => threads.name(),
        }
    }

    /// The longest-prefix method a kvchain_lpm variant runs; None for the scan modes and
    /// the trace's variants (whose lookups `TraceMethod` names).
    pub fn lpm_method(self) -> Option<LpmMethod> {
        match self {
            Variant::Native | Variant::NativeFullFrame => Some(LpmMethod::Native),
            Variant::NativeBoundary => Some(LpmMethod::NativeAtBoundary { delimiter: b'/' }),
            Variant::PredecessorSeek => Some(LpmMethod::PredecessorSeek),
            Variant::Bisect | Variant::BisectFullFrame => {
                Some(LpmMethod::Bisect { delimiter: b'/' })
            }
            Variant::Paged
            | Variant::FullFrame
            | Variant::Trace(_)
            | Variant::OffsetUniform
            | Variant::OffsetZipf => None,
            Variant::Ingest { .. } | Variant::IngestWriter { .. } | Variant::Threads(_) => None,
        }
    }

    /// The key design and lookup a kvcache_trace variant runs; None for the others.
    pub fn trace_method(self) -> Option<TraceMethod> {
        match self {
            Variant::Trace(method) => Some(method),
            _ => None,
        }
    }

    /// How a manifest_scan variant chooses its shard when it starts from a random offset;
    /// None for the seed's start-of-shard scan and the other variants.
    pub fn shard_choice(self) -> Option<super::ops::ShardChoice> {
        match self {
            Variant::OffsetUniform => Some(super::ops::ShardChoice::Uniform),
            Variant::OffsetZipf => Some(super::ops::ShardChoice::Zipf),
            _ => None,
        }
    }

    /// Parses a variant name.
    pub fn parse(name: &str) -> Result<Variant, RunError> {
        super::error::find_by_name("variant", name, &Self::ALL, Variant::name)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = RunError;

    fn from_str(name: &str) -> Result<Variant, RunError> {
        Variant::parse(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_a_misspelt_one_is_refused() {
        for v in Variant::ALL {
            assert_eq!(Variant::parse(v.name()).ok(), Some(v));
        }
        let e = "bisekt".parse::<Variant>();
        assert!(
            matches!(&e, Err(RunError::UnknownName { what: "variant", valid, .. }) if valid.contains("bisect, paged")),
            "{e:?}"
        );
        assert_eq!(
            Variant::BisectFullFrame.lpm_method(),
            Some(LpmMethod::Bisect { delimiter: b'/' })
        );
        assert_eq!(Variant::Paged.lpm_method(), None);
        for method in TraceMethod::ALL {
            let v = Variant::parse(method.name()).ok();
            assert_eq!(v.and_then(Variant::trace_method), Some(method));
        }
        assert_eq!(Variant::Bisect.trace_method(), None);
    }

    #[test]
    fn thread_counts_are_named_by_their_count() {
        for t in ThreadCount::ALL {
            let v = Variant::Threads(t);
            assert_eq!(v.name(), format!("t{}", t.count()));
            assert_eq!(Variant::parse(v.name()).ok(), Some(v));
            assert!(Variant::ALL.contains(&v), "{v:?} missing from ALL");
            assert_eq!(v.lpm_method(), None);
        }
        let counts: Vec<u32> = ThreadCount::ALL.map(ThreadCount::count).to_vec();
        assert_eq!(counts, [1, 2, 4, 8, 16]);
    }
}
