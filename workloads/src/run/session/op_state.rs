//! What a session keeps per (workload, variant) between its operations: the generator
//! and buffers of each operation kind, the chain queries and where their answers lie in
//! the key layout (for the working set), and the kind of a parallel workload's operation.

use aimeta_adapters::LpmMethod;

use super::super::ops::ManifestOps;
use super::super::working_set::TouchedPages;
use super::super::Workload;
use crate::gen::{KvQuery, Rng};

/// Operation state of one (workload, variant).
pub(super) enum OpState {
    Manifest(ManifestOps),
    Lpm {
        queries: Vec<KvQuery>,
        method: LpmMethod,
        buf: Vec<u8>,
        next: usize,
        touched: Option<TouchedPages>,
    },
    KvGet {
        queries: Vec<KvQuery>,
        buf: Vec<u8>,
        next: usize,
        touched: Option<TouchedPages>,
    },
    Walk {
        rng: Rng,
        buf: Vec<u8>,
        touched: Option<TouchedPages>,
    },
}

impl OpState {
    /// Where the operations mark the pages they read.
    pub(super) fn touched(&mut self) -> &mut Option<TouchedPages> {
        match self {
            OpState::Manifest(mo) => &mut mo.touched,
            OpState::Lpm { touched, .. }
            | OpState::KvGet { touched, .. }
            | OpState::Walk { touched, .. } => touched,
        }
    }

    /// Makes ready the inputs of the next `count` operations of `w`, outside their timing:
    /// a point get's key is drawn and formatted (see [`ManifestOps::prepare_gets`]), a
    /// chain query's key read (see [`OpState::prefetch_inputs`]).
    pub(super) fn prepare_inputs(&mut self, w: Workload, count: u64) {
        match self {
            OpState::Manifest(mo) if w == Workload::ManifestGet => mo.prepare_gets(count),
            _ => self.prefetch_inputs(count),
        }
    }

    /// Reads the inputs the next `count` operations will take (the chain queries' keys),
    /// outside their timing. The queries were generated long before, and on the virtual
    /// machines this runs on a page untouched for a tenth of a second or more can cost
    /// 100-500 us to touch again (the host has reclaimed its backing; docs/gate.md): the
    /// first read of a query's key would otherwise charge that to whichever engine's
    /// operation happened to read it first.
    fn prefetch_inputs(&self, count: u64) {
        let (OpState::Lpm { queries, next, .. } | OpState::KvGet { queries, next, .. }) = self
        else {
            return;
        };
        if queries.is_empty() {
            return;
        }
        let mut sum = 0u64;
        for k in 0..count.min(queries.len() as u64) as usize {
            let q = &queries[(next + k) % queries.len()];
            sum = q.key.iter().fold(sum, |s, &b| s.wrapping_add(u64::from(b)));
        }
        std::hint::black_box(sum);
    }
}

/// Where each chain query's answer lies in the key layout of the kv-cache index: the
/// byte offset and length of the answer's entry (for a miss, the offset where the query
/// would be stored and one byte), per query, in the order `KvChain::queries` makes them.
#[derive(Debug, Clone, Default)]
pub(super) struct QueryLayout {
    spans: Vec<(u64, u64)>,
    /// Distinct pages of all the spans: the queries' working set, worked out once.
    pub(super) support_pages: u64,
}

impl QueryLayout {
    /// The layout of `queries` in the sorted pairs of the index.
    pub(super) fn new(sorted: &[(Vec<u8>, Vec<u8>)], queries: &[KvQuery]) -> QueryLayout {
        let mut offsets = Vec::with_capacity(sorted.len() + 1);
        let mut at = 0u64;
        for (k, v) in sorted {
            offsets.push(at);
            at += (k.len() + v.len()) as u64;
        }
        offsets.push(at);
        let spans = queries
            .iter()
            .map(|q| {
                let key = &q.key[..q.expect_len.unwrap_or(q.key.len())];
                match sorted.binary_search_by(|(k, _)| k.as_slice().cmp(key)) {
                    Ok(i) => (offsets[i], offsets[i + 1] - offsets[i]),
                    Err(i) => (offsets[i], 1),
                }
            })
            .collect::<Vec<_>>();
        let mut support = TouchedPages::new();
        for &(offset, len) in &spans {
            support.touch_bytes(offset, len);
        }
        QueryLayout {
            support_pages: support.pages(),
            spans,
        }
    }

    pub(super) fn touch(&self, query: usize, touched: &mut Option<TouchedPages>) {
        if let (Some(t), Some(&(offset, len))) = (touched.as_mut(), self.spans.get(query)) {
            t.touch_bytes(offset, len);
        }
    }
}

/// The operation of a parallel workload's threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ParallelOp {
    /// A point get of a random key.
    Get,
    /// 100 entries from a random sample of a uniformly chosen shard.
    Scan,
}

/// Queries a chain-index session draws from, cycling.
pub(super) const CHAIN_QUERIES: usize = 50_000;
