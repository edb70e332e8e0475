//! Model-based test: random operation sequences against the tree and a BTreeMap, with a
//! pool of 8 pages so that pages are evicted and read back all the time. Each case draws
//! how page misses are read: copied out of the map, or shared in place with the page cache
//! (`DataReads::Shared`, whose images stay valid only while no writer reuses their place),
//! and whether a copying pool keeps a reserve of ready buffers (`reserve_cache`, whose
//! buffers go round between eviction, misses and a writer's new pages).

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use aimeta_engine::{DataReads, RangeBuilder, Readable, Tree, TreeConfig, MAX_KEY_LEN};
use common::{apply_batch, env_count, model_list, model_lpm, model_range, Ops};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Cas(Vec<u8>, bool, Option<Vec<u8>>),
    Batch(Ops),
    Get(Vec<u8>),
    Range(
        Bound<Vec<u8>>,
        Bound<Vec<u8>>,
        Option<Vec<u8>>,
        bool,
        Option<usize>,
    ),
    List(Vec<u8>, Option<u8>, Option<Vec<u8>>, Option<usize>),
    Lpm(Vec<u8>),
    LpmAt(Vec<u8>),
    Count(Bound<Vec<u8>>, Bound<Vec<u8>>),
    Checkpoint,
    Reopen,
}

/// Keys over a small alphabet so that they share prefixes, are prefixes of each other
/// and hold 0x00 and 0xFF bytes; now and then a long one, up to the longest accepted
/// (long keys of one start are prefixes of each other, as path keys of a chain are).
/// The range scan an `Op::Range` describes.
fn range_of(
    tree: &Tree,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    prefix: Option<&[u8]>,
    rev: bool,
    limit: Option<usize>,
) -> RangeBuilder {
    let mut b = tree.range().bounds((lo.clone(), hi.clone()));
    if let Some(p) = prefix {
        b = b.prefix(p);
    }
    if rev {
        b = b.rev();
    }
    if let Some(l) = limit {
        b = b.limit(l);
    }
    b
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        16 => prop::collection::vec(prop::sample::select(vec![0x00u8, b'/', b'a', b'b', b'c', 0xFF]), 1..7),
        2 => (prop::collection::vec(prop::sample::select(vec![b'a', b'/']), 1..4), 900usize..1024)
            .prop_map(|(p, n)| { let mut k = p; k.resize(n, b'z'); k }),
        1 => (prop::collection::vec(prop::sample::select(vec![b'a', b'/']), 1..4), 1024usize..=MAX_KEY_LEN)
            .prop_map(|(p, n)| { let mut k = p; k.resize(n, b'z'); k }),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        10 => prop::collection::vec(any::<u8>(), 0..300),
        1 => (1200usize..9000, any::<u8>()).prop_map(|(n, b)| vec![b; n]),
    ]
}

/// A batch as a request of the trace writes path keys: a chain of keys, each the one
/// before plus a segment, put in order (contiguous keys, one or two leaves), then some of
/// them deleted or put again in the same batch, so that the last write of a key must win.
fn chain_batch() -> impl Strategy<Value = Ops> {
    let letters = || prop::sample::select(vec![b'a', b'b', b'c']);
    (
        prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'/']), 1..4),
        prop::collection::vec(prop::collection::vec(letters(), 1..8), 1..24),
        prop::collection::vec(
            (any::<prop::sample::Index>(), prop::option::of(value())),
            0..8,
        ),
    )
        .prop_map(|(start, segments, again)| {
            let mut key = start;
            let mut ops: Ops = Vec::new();
            for segment in segments {
                key.push(b'/');
                key.extend(segment);
                ops.push((key.clone(), Some(vec![key.len() as u8; 40])));
            }
            let keys: Vec<Vec<u8>> = ops.iter().map(|(k, _)| k.clone()).collect();
            for (i, v) in again {
                ops.push((i.get(&keys).clone(), v));
            }
            ops
        })
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        Just(Bound::Unbounded),
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
    ]
}

fn small_prefix() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(vec![0x00u8, b'/', b'a', b'b', 0xFF]),
        0..3,
    )
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (key(), value()).prop_map(|(k, v)| Op::Put(k, v)),
        10 => key().prop_map(Op::Delete),
        4 => (key(), any::<bool>(), prop::option::of(value())).prop_map(|(k, b, v)| Op::Cas(k, b, v)),
        4 => prop::collection::vec((key(), prop::option::of(value())), 1..30).prop_map(Op::Batch),
        3 => chain_batch().prop_map(Op::Batch),
        6 => key().prop_map(Op::Get),
        6 => (bound(), bound(), prop::option::of(small_prefix()), any::<bool>(), prop::option::of(0usize..40))
            .prop_map(|(a, b, p, r, l)| Op::Range(a, b, p, r, l)),
        5 => (small_prefix(), prop::option::of(prop::sample::select(vec![b'/', 0x00, 0xFF])), prop::option::of(key()), prop::option::of(1usize..20))
            .prop_map(|(p, d, s, l)| Op::List(p, d, s, l)),
        6 => key().prop_map(Op::Lpm),
        3 => key().prop_map(Op::LpmAt),
        4 => (bound(), bound()).prop_map(|(a, b)| Op::Count(a, b)),
        1 => Just(Op::Checkpoint),
        1 => Just(Op::Reopen),
    ]
}

/// How a case's tree reads and keeps its pages.
#[derive(Debug, Clone, Copy)]
struct Mode {
    reads: DataReads,
    reserve: bool,
}

fn open(dir: &std::path::Path, mode: Mode) -> Tree {
    Tree::open(
        TreeConfig::new(dir)
            .data_reads(mode.reads)
            .reserve_cache(mode.reserve)
            .cache_bytes(8 * 4096)
            .frame_size(32 * 1024)
            .readahead_bytes(16 * 1024),
    )
    .expect("open")
}

fn run(ops: Vec<Op>, mode: Mode) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut tree = open(dir.path(), mode);
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for (n, op) in ops.into_iter().enumerate() {
        match op {
            Op::Put(k, v) => {
                tree.put(&k, &v).expect("put");
                model.insert(k, v);
            }
            Op::Delete(k) => {
                let was = tree.delete(&k).expect("delete");
                prop_assert_eq!(was, model.remove(&k).is_some(), "delete result, op {}", n);
            }
            Op::Cas(k, use_current, new) => {
                let current = model.get(&k).cloned();
                let expected = if use_current {
                    current.clone()
                } else {
                    Some(b"not-it".to_vec())
                };
                let r = tree
                    .compare_and_swap(&k, expected.as_deref(), new.as_deref())
                    .expect("cas");
                if expected == current {
                    prop_assert!(r.is_ok(), "cas should succeed, op {}", n);
                    match new {
                        Some(v) => model.insert(k, v),
                        None => model.remove(&k),
                    };
                } else {
                    prop_assert_eq!(
                        r.expect_err("conflict").current,
                        current,
                        "cas conflict value, op {}",
                        n
                    );
                }
            }
            Op::Batch(ops) => {
                apply_batch(&tree, &mut model, ops).expect("batch");
            }
            Op::Get(k) => {
                prop_assert_eq!(
                    tree.get(&k).expect("get"),
                    model.get(&k).cloned(),
                    "get, op {}",
                    n
                );
            }
            Op::Range(lo, hi, prefix, rev, limit) => {
                let scan = || range_of(&tree, &lo, &hi, prefix.as_deref(), rev, limit);
                let got: Vec<_> = scan().iter().collect::<Result<_, _>>().expect("range");
                let want = model_range(&model, &lo, &hi, prefix.as_deref(), rev, limit);
                prop_assert_eq!(&got, &want, "range, op {}", n);
                // The visitor path hands out the same entries.
                let mut visited = Vec::new();
                let count = scan()
                    .iter()
                    .for_each_entry(&mut |k, v| {
                        visited.push((k.to_vec(), v.to_vec()));
                        true
                    })
                    .expect("range visit");
                prop_assert_eq!(count, visited.len());
                prop_assert_eq!(visited, want, "range visit, op {}", n);
            }
            Op::List(prefix, delim, start_after, limit) => {
                let mut b = tree.scan_keys().prefix(&prefix);
                if let Some(d) = delim {
                    b = b.delimiter(d);
                }
                if let Some(s) = &start_after {
                    b = b.start_after(s);
                }
                if let Some(l) = limit {
                    b = b.limit(l);
                }
                let got: Vec<_> = b.iter().collect::<Result<_, _>>().expect("list");
                let want = model_list(&model, &prefix, delim, start_after.as_deref(), limit);
                prop_assert_eq!(got, want, "list, op {}", n);
            }
            Op::Lpm(q) => {
                let got = tree.longest_prefix_record(&q).expect("lpm");
                prop_assert_eq!(got, model_lpm(&model, &q), "lpm, op {}", n);
            }
            Op::LpmAt(q) => {
                let got = tree.longest_prefix_record_at(&q, b'/').expect("lpm at");
                let want = (1..=q.len())
                    .rev()
                    .filter(|&l| l == q.len() || q[l] == b'/')
                    .find_map(|l| model.get(&q[..l]).map(|v| (q[..l].to_vec(), v.clone())));
                prop_assert_eq!(got, want, "lpm at '/', op {}", n);
            }
            Op::Count(lo, hi) => {
                let got = tree.count((lo.clone(), hi.clone())).expect("count");
                let want = model_range(&model, &lo, &hi, None, false, None).len() as u64;
                prop_assert_eq!(got, want, "count, op {}", n);
            }
            Op::Checkpoint => tree.checkpoint().expect("checkpoint"),
            Op::Reopen => {
                drop(tree);
                tree = open(dir.path(), mode);
                tree.check_integrity().expect("integrity after reopen");
            }
        }
        prop_assert_eq!(tree.len(), model.len() as u64, "len, op {}", n);
    }
    tree.check_integrity().expect("integrity at the end");
    let all: Vec<_> = tree
        .range()
        .iter()
        .collect::<Result<_, _>>()
        .expect("full scan");
    let want: Vec<_> = model.into_iter().collect();
    prop_assert_eq!(all, want);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: env_count("MODEL_CASES", 96),
        max_shrink_iters: 2000,
        .. ProptestConfig::default()
    })]

    #[test]
    fn tree_matches_btreemap(
        ops in prop::collection::vec(op(), 1..250),
        mode in prop_oneof![
            Just(Mode { reads: DataReads::Mapped, reserve: false }),
            Just(Mode { reads: DataReads::Mapped, reserve: true }),
            Just(Mode { reads: DataReads::Shared, reserve: false }),
        ],
    ) {
        run(ops, mode)?;
    }
}
