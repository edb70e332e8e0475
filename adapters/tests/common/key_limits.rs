//! Key limits: every engine stores a key of exactly its `Capabilities::max_key_len` (4,096
//! bytes where it reports none) through put, write_batch and bulk_load, finds it again, holds
//! the KV-cache trace's longest path key with its whole prefix chain, and refuses one byte
//! more with `Error::InvalidKey` before writing anything.

use super::{assert_full_contents, model_lpm, seeded, CheckResult, Model};
use aimeta_adapters::{BatchOp, Error, KvEngine, LpmMethod};
use rand::Rng as _;

/// The key length tried where an engine reports no limit.
pub const UNLIMITED_PROBE: usize = 4096;
/// Blocks in the trace's longest chain, and the bytes of one path segment ('/' + 6 hex).
pub const TRACE_CHAIN_BLOCKS: usize = 247;
const SEGMENT: usize = 7;
/// The model part of the path keys.
const PATH_ROOT: &str = "kv/llama70b";

/// The trace's longest path key, as the replay builds it: `kv/llama70b` and 247 segments of
/// '/' and 6 lowercase hex digits, 1,740 bytes.
pub fn longest_path_key() -> Vec<u8> {
    let mut rng = seeded(0x1740);
    let mut key = PATH_ROOT.as_bytes().to_vec();
    for _ in 0..TRACE_CHAIN_BLOCKS {
        key.extend_from_slice(format!("/{:06x}", rng.next_u32() & 0xFF_FFFF).as_bytes());
    }
    key
}

/// Where the path key ends a block: the length of each of its 247 '/'-prefixes (the
/// stored block keys `kv/llama70b/b0`, `kv/llama70b/b0/b1`, ..., the whole key).
fn block_ends() -> impl Iterator<Item = usize> {
    (1..=TRACE_CHAIN_BLOCKS).map(|blocks| PATH_ROOT.len() + blocks * SEGMENT)
}

/// Random bytes (incompressible, so PostgreSQL cannot shrink them into its index) under a
/// fixed first byte that places them in the key order.
fn random_key(first: u8, len: usize, seed: u64) -> Vec<u8> {
    let mut key = vec![0u8; len];
    seeded(seed).fill_bytes(&mut key);
    if let Some(b) = key.first_mut() {
        *b = first;
    }
    key
}

/// The deepest stored key among the query's candidates for `method`: every prefix for
/// Native and PredecessorSeek, prefixes ending before a '/' (or the whole query) for
/// Bisect and NativeAtBoundary.
fn expected_lpm(m: &Model, q: &[u8], method: LpmMethod) -> Option<usize> {
    match method {
        LpmMethod::Bisect { delimiter } | LpmMethod::NativeAtBoundary { delimiter } => (1..=q
            .len())
            .rev()
            .filter(|&l| l == q.len() || q[l] == delimiter)
            .find(|&l| m.contains_key(&q[..l])),
        _ => model_lpm(m, q).map(|(l, _)| l),
    }
}

fn check_lpm_methods(e: &dyn KvEngine, m: &Model, q: &[u8], methods: &[LpmMethod]) -> CheckResult {
    let mut out = Vec::new();
    for &method in methods {
        let want = expected_lpm(m, q, method);
        let got = e.longest_prefix(q, method, &mut out)?;
        assert_eq!(
            got,
            want,
            "{}: {method:?} of a {}-byte query",
            e.name(),
            q.len()
        );
        if let Some(len) = want {
            assert_eq!(
                Some(&out),
                m.get(&q[..len]),
                "{}: {method:?} value",
                e.name()
            );
        }
    }
    Ok(())
}

/// The whole check; `model` follows every write.
pub fn check_key_limits(e: &dyn KvEngine, model: &mut Model) -> CheckResult {
    let name = e.name();
    let caps = e.capabilities();
    let longest = caps.max_key_len.unwrap_or(UNLIMITED_PROBE);
    let mut methods = vec![
        LpmMethod::PredecessorSeek,
        LpmMethod::Bisect { delimiter: b'/' },
    ];
    if caps.native_longest_prefix {
        methods.extend([
            LpmMethod::Native,
            LpmMethod::NativeAtBoundary { delimiter: b'/' },
        ]);
    }
    // Bisect is only right on key sets prefix-closed along the query, which a lone random
    // key is not.
    let any_key_set: Vec<LpmMethod> = methods
        .iter()
        .copied()
        .filter(|m| !matches!(m, LpmMethod::Bisect { .. }))
        .collect();
    let refused = |what: &str, r| refused_with(e, what, r);
    let mut out = Vec::new();

    // A key of exactly the limit, through put and through write_batch.
    let by_put = random_key(b'L', longest, 1);
    let by_batch = random_key(b'M', longest, 2);
    e.put(&by_put, b"longest by put")?;
    model.insert(by_put.clone(), b"longest by put".to_vec());
    e.write_batch(&[BatchOp::Put {
        key: &by_batch,
        value: b"longest by batch",
    }])?;
    model.insert(by_batch.clone(), b"longest by batch".to_vec());
    for k in [&by_put, &by_batch] {
        assert!(e.get(k, &mut out)?, "{name}: {longest}-byte key missed");
        assert_eq!(
            Some(&out),
            model.get(k),
            "{name}: {longest}-byte key's value"
        );
        // A query running past the limit still finds the longest key as its prefix.
        let past = [k.as_slice(), b"/past/the/limit"].concat();
        check_lpm_methods(e, model, &past, &any_key_set)?;
        check_lpm_methods(e, model, k, &any_key_set)?;
    }

    // The trace's longest path key with its 247 block keys (and `kv`, `kv/llama70b`, so the
    // set is prefix-closed whatever else is stored), in one batch.
    let path = longest_path_key();
    assert_eq!(path.len(), 1740);
    let values: Vec<Vec<u8>> = (1..=TRACE_CHAIN_BLOCKS)
        .map(|depth| format!("block {depth}").into_bytes())
        .collect();
    let mut ops = vec![
        BatchOp::Put {
            key: b"kv",
            value: b"root",
        },
        BatchOp::Put {
            key: PATH_ROOT.as_bytes(),
            value: b"model",
        },
    ];
    for (end, value) in block_ends().zip(&values) {
        ops.push(BatchOp::Put {
            key: &path[..end],
            value,
        });
    }
    match caps.max_key_len {
        Some(max) if max < path.len() => {
            // This engine cannot take the path design: the whole batch is refused.
            refused("write_batch of the path chain", e.write_batch(&ops));
            assert_full_contents(e, model)?;
        }
        _ => check_path_chain(e, model, &path, &ops, &methods)?,
    }

    // Bulk load of a key of exactly the limit, above everything stored.
    let loaded = [vec![0xFF; 8], random_key(0xFF, longest - 8, 3)].concat();
    let mut load = std::iter::once((loaded.clone(), b"loaded".to_vec()));
    assert_eq!(
        e.bulk_load(&mut load)?,
        1,
        "{name}: bulk_load of the longest key"
    );
    model.insert(loaded.clone(), b"loaded".to_vec());
    assert!(
        e.get(&loaded, &mut out)? && out == b"loaded",
        "{name}: loaded key"
    );

    let Some(max) = caps.max_key_len else {
        return Ok(());
    };
    // One byte more: refused with InvalidKey by every write path, nothing written.
    let over = random_key(b'N', max + 1, 4);
    refused("put", e.put(&over, b"v"));
    let existing = model.keys().next().ok_or("empty model")?.clone();
    let batch = [
        BatchOp::Put {
            key: b"limit/before",
            value: b"never",
        },
        BatchOp::Delete { key: &existing },
        BatchOp::Put {
            key: &over,
            value: b"v",
        },
    ];
    refused("write_batch", e.write_batch(&batch));
    let cas = e.compare_and_swap(&over, None, Some(b"v"));
    refused("compare_and_swap", cas.map(|_| ()));
    // Above the loaded key (16 x 0xFF against its 9), so only the length is wrong.
    let over_top = [vec![0xFF; 16], random_key(0xFF, max - 15, 5)].concat();
    let mut load = std::iter::once((over_top, b"v".to_vec()));
    refused("bulk_load", e.bulk_load(&mut load).map(|_| ()));
    // Reads of an over-long key are misses, not errors; deleting it is a no-op, alone or
    // in a batch, as for any absent key.
    assert!(!e.get(&over, &mut out)?, "{name}: over-long key found");
    e.delete(&over)?;
    e.write_batch(&[BatchOp::Delete { key: &over }])?;
    assert_full_contents(e, model)?;
    Ok(())
}

/// Asserts `r` is the engine's InvalidKey naming its limit.
fn refused_with(e: &dyn KvEngine, what: &str, r: aimeta_adapters::Result<()>) {
    let name = e.name();
    let max = e.capabilities().max_key_len.unwrap_or(usize::MAX);
    match r {
        Err(Error::InvalidKey { engine, reason }) => {
            assert_eq!(engine, name, "{what}");
            assert!(
                reason.contains(&max.to_string()),
                "{name}: {what}: {reason}"
            );
        }
        other => panic!("{name}: {what} over the {max}-byte limit gave {other:?}"),
    }
}

/// The path chain stored by one batch: every block key found, and the longest-prefix
/// answer on the full chain and on every truncated one.
fn check_path_chain(
    e: &dyn KvEngine,
    model: &mut Model,
    path: &[u8],
    ops: &[BatchOp<'_>],
    methods: &[LpmMethod],
) -> CheckResult {
    let name = e.name();
    let mut out = Vec::new();
    e.write_batch(ops)?;
    for op in ops {
        if let BatchOp::Put { key, value } = op {
            model.insert(key.to_vec(), value.to_vec());
        }
    }
    for end in block_ends() {
        assert!(
            e.get(&path[..end], &mut out)?,
            "{name}: block key of {end} bytes missed"
        );
        assert_eq!(
            Some(&out),
            model.get(&path[..end]),
            "{name}: block key of {end} bytes"
        );
    }
    // The full chain, every truncated chain, each cut mid-segment, and each followed by a
    // block that was never stored: the answer is the deepest stored block key.
    check_lpm_methods(e, model, path, methods)?;
    for end in block_ends() {
        let truncated = &path[..end];
        check_lpm_methods(e, model, truncated, methods)?;
        check_lpm_methods(e, model, &truncated[..end - 3], methods)?;
        let unstored = [truncated, b"/zzzzzz"].concat();
        check_lpm_methods(e, model, &unstored, methods)?;
    }
    assert_full_contents(e, model)
}
