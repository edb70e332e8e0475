//! Shared emulations of the operations no compared engine has natively: longest-prefix lookup
//! (predecessor seek and bisect) and S3-style delimiter listing, plus prefix and range scans.
//!
//! Written once over [`OrderedRead`], the three primitives every adapter provides, so that
//! every engine runs the same algorithm and differences in results are engine differences.

// Which helpers are used depends on which engines are compiled in; with all of them (the
// default) unused code is still reported.
#![cfg_attr(
    not(all(
        feature = "rocksdb",
        feature = "sqlite",
        feature = "lmdb",
        feature = "redb",
        feature = "postgres"
    )),
    allow(dead_code)
)]

use crate::api::{BatchOp, ListItem, LpmMethod};
use crate::error::{Error, Result};
use std::path::Path;

/// The ordered-read primitives each adapter provides for the shared emulations.
pub(crate) trait OrderedRead {
    /// The engine's name, for errors.
    fn engine_name(&self) -> &'static str;

    /// Point lookup: copies the value into `out` (cleared first); returns whether found.
    fn point_get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;

    /// Finds the greatest stored key <= `key`, copying it and its value into the buffers
    /// (cleared first); returns whether one exists.
    fn seek_le(&self, key: &[u8], key_out: &mut Vec<u8>, val_out: &mut Vec<u8>) -> Result<bool>;

    /// Copies the greatest stored key into `key_out`; returns false on an empty store.
    fn last_key(&self, key_out: &mut Vec<u8>) -> Result<bool>;

    /// Visits stored keys in `[start, end)` (`end: None` = unbounded) ascending until `visit`
    /// returns false. `batch_hint` is how many pairs the caller expects to consume (it may
    /// stop earlier, and rarely asks for one more); engines that fetch in pages size them by it.
    fn walk(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        batch_hint: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()>;
}

/// The read operations that an adapter without native longest-prefix lookup or delimiter
/// listing answers through the shared emulations, written once for every such adapter:
/// `emulated_reads!(scans)` gives `scan_prefix`, `scan_range`, `list_delimited` and
/// `longest_prefix`; `emulated_reads!(scans, count)` adds `count_range`. (Unused in a build
/// with only this engine's adapter, which reads natively.)
#[allow(unused_macros)]
macro_rules! emulated_reads {
    (scans) => {
        fn scan_prefix(
            &self,
            prefix: &[u8],
            limit: usize,
            visit: &mut dyn FnMut(&[u8], &[u8]),
        ) -> $crate::error::Result<usize> {
            $crate::emul::scan_prefix(self, prefix, limit, visit)
        }

        fn scan_range(
            &self,
            start_inclusive: &[u8],
            limit: usize,
            visit: &mut dyn FnMut(&[u8], &[u8]),
        ) -> $crate::error::Result<usize> {
            $crate::emul::scan_range(self, start_inclusive, limit, visit)
        }

        fn list_delimited(
            &self,
            prefix: &[u8],
            start_after: Option<&[u8]>,
            delimiter: u8,
            limit: usize,
            visit: &mut dyn FnMut($crate::api::ListItem<'_>),
        ) -> $crate::error::Result<usize> {
            $crate::emul::list_delimited(self, prefix, start_after, delimiter, limit, visit)
        }

        fn longest_prefix(
            &self,
            query: &[u8],
            method: $crate::api::LpmMethod,
            out: &mut Vec<u8>,
        ) -> $crate::error::Result<Option<usize>> {
            $crate::emul::longest_prefix(self, query, method, out)
        }
    };
    (scans, count) => {
        $crate::emul::emulated_reads!(scans);

        fn count_range(
            &self,
            start_inclusive: &[u8],
            end_exclusive: &[u8],
        ) -> $crate::error::Result<u64> {
            $crate::emul::count_range(self, start_inclusive, end_exclusive)
        }
    };
}
#[allow(unused_imports)]
pub(crate) use emulated_reads;

/// The smallest byte string greater than every string starting with `prefix`, or `None` when
/// there is none (`prefix` empty or all 0xFF), in which case a scan runs to the end.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut succ = prefix[..=keep].to_vec();
    succ[keep] += 1;
    Some(succ)
}

/// The smallest byte string strictly greater than `key`: `key` followed by 0x00.
pub fn key_successor(key: &[u8]) -> Vec<u8> {
    let mut succ = Vec::with_capacity(key.len() + 1);
    succ.extend_from_slice(key);
    succ.push(0);
    succ
}

/// Checks `bulk_load` input: keys non-empty, strictly ascending, and above the largest key
/// stored before the load started.
pub(crate) struct SortedCheck {
    engine: &'static str,
    prev: Vec<u8>,
    have_prev: bool,
    index: u64,
}

impl SortedCheck {
    /// Starts a check; `store_max` is the largest key already stored, if any.
    pub(crate) fn new(engine: &'static str, store_max: Option<Vec<u8>>) -> Self {
        let have_prev = store_max.is_some();
        SortedCheck {
            engine,
            prev: store_max.unwrap_or_default(),
            have_prev,
            index: 0,
        }
    }

    /// Starts a check against the largest key `engine` already holds.
    pub(crate) fn for_engine(engine: &dyn OrderedRead) -> Result<Self> {
        let mut max = Vec::new();
        let found = engine.last_key(&mut max)?;
        Ok(Self::new(engine.engine_name(), found.then_some(max)))
    }

    /// Accepts the next key or explains why it cannot be loaded.
    pub(crate) fn check(&mut self, key: &[u8]) -> Result<()> {
        check_key(self.engine, key)?;
        if self.have_prev && key <= self.prev.as_slice() {
            return Err(Error::UnsortedInput {
                engine: self.engine,
                index: self.index,
            });
        }
        self.prev.clear();
        self.prev.extend_from_slice(key);
        self.have_prev = true;
        self.index += 1;
        Ok(())
    }
}

/// Refuses the empty key, which LMDB cannot store and so no engine here accepts.
pub(crate) fn check_key(engine: &'static str, key: &[u8]) -> Result<()> {
    if key.is_empty() {
        return Err(Error::InvalidKey {
            engine,
            reason: "keys must be at least one byte long".into(),
        });
    }
    Ok(())
}

/// Refuses a batch holding a put of the empty key, before any of it is written.
pub(crate) fn check_batch(engine: &'static str, ops: &[BatchOp<'_>]) -> Result<()> {
    for op in ops {
        if let BatchOp::Put { key, .. } = op {
            check_key(engine, key)?;
        }
    }
    Ok(())
}

/// Refuses the empty key and a key over `max_key_len` (the engine's limit, as its
/// `Capabilities::max_key_len` reports it; `limit` names where it comes from).
pub(crate) fn check_key_within(
    engine: &'static str,
    key: &[u8],
    max_key_len: usize,
    limit: &'static str,
) -> Result<()> {
    check_key(engine, key)?;
    if key.len() > max_key_len {
        return Err(Error::InvalidKey {
            engine,
            reason: format!(
                "{} bytes is over {limit} of {max_key_len} bytes; check \
                 capabilities().max_key_len before writing, or shorten the key (e.g. hash it)",
                key.len()
            ),
        });
    }
    Ok(())
}

/// [`check_batch`] with [`check_key_within`]: a put of an empty or over-long key refuses
/// the whole batch before any of it is written.
pub(crate) fn check_batch_within(
    engine: &'static str,
    ops: &[BatchOp<'_>],
    max_key_len: usize,
    limit: &'static str,
) -> Result<()> {
    for op in ops {
        if let BatchOp::Put { key, .. } = op {
            check_key_within(engine, key, max_key_len, limit)?;
        }
    }
    Ok(())
}

/// Prefix scan over `walk` with the prefix successor as the exclusive upper bound.
pub(crate) fn scan_prefix(
    e: &dyn OrderedRead,
    prefix: &[u8],
    limit: usize,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<usize> {
    let end = prefix_successor(prefix);
    bounded_scan(e, prefix, end.as_deref(), limit, visit)
}

/// Range scan from `start` with no upper bound.
pub(crate) fn scan_range(
    e: &dyn OrderedRead,
    start: &[u8],
    limit: usize,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<usize> {
    bounded_scan(e, start, None, limit, visit)
}

fn bounded_scan(
    e: &dyn OrderedRead,
    start: &[u8],
    end: Option<&[u8]>,
    limit: usize,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<usize> {
    let mut n = 0usize;
    if limit == 0 {
        return Ok(0);
    }
    e.walk(start, end, limit, &mut |k, v| {
        visit(k, v);
        n += 1;
        n < limit
    })?;
    Ok(n)
}

/// Counts `[start, end)` by walking it; SQL engines override this with `count(*)`.
pub(crate) fn count_range(e: &dyn OrderedRead, start: &[u8], end: &[u8]) -> Result<u64> {
    if start >= end {
        return Ok(0);
    }
    let mut n = 0u64;
    e.walk(start, Some(end), usize::MAX, &mut |_, _| {
        n += 1;
        true
    })?;
    Ok(n)
}

/// Dispatches [`LpmMethod`] for an engine without native longest-prefix lookup.
pub(crate) fn longest_prefix(
    e: &dyn OrderedRead,
    query: &[u8],
    method: LpmMethod,
    out: &mut Vec<u8>,
) -> Result<Option<usize>> {
    match method {
        LpmMethod::Native | LpmMethod::NativeAtBoundary { .. } => Err(Error::Unsupported {
            engine: e.engine_name(),
            operation: "native longest-prefix lookup (LpmMethod::Native)",
        }),
        LpmMethod::PredecessorSeek => lpm_predecessor_seek(e, query, out),
        LpmMethod::Bisect { delimiter } => lpm_bisect(e, query, delimiter, out),
    }
}

/// Predecessor seek: correct on any key set. Each round either finds the answer or strictly
/// shortens the query, so it takes at most one seek per distinct common-prefix length.
///
/// Why shrinking is safe: let `k` be the greatest key <= `q` and not a prefix of `q`, and `l` the
/// length of their common prefix. A stored prefix `p` of `q` is <= `k`; were it longer than `l`
/// it would share `q[l] > k[l]` and so be > `k`. So every answer is a prefix of `q[..l]`.
pub(crate) fn lpm_predecessor_seek(
    e: &dyn OrderedRead,
    query: &[u8],
    out: &mut Vec<u8>,
) -> Result<Option<usize>> {
    out.clear();
    let mut q_len = query.len();
    let mut found = Vec::new();
    while q_len > 0 {
        let q = &query[..q_len];
        if !e.seek_le(q, &mut found, out)? {
            break;
        }
        if q.starts_with(&found) {
            return Ok(Some(found.len()));
        }
        q_len = found.iter().zip(q).take_while(|(a, b)| a == b).count();
    }
    out.clear();
    Ok(None)
}

/// The naive bisect over candidate lengths; valid only on key sets prefix-closed along the
/// query (see [`LpmMethod::Bisect`]).
pub(crate) fn lpm_bisect(
    e: &dyn OrderedRead,
    query: &[u8],
    delimiter: u8,
    out: &mut Vec<u8>,
) -> Result<Option<usize>> {
    let mut cands: Vec<usize> = query
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b == delimiter && i > 0)
        .map(|(i, _)| i)
        .collect();
    if !query.is_empty() && cands.last() != Some(&query.len()) {
        cands.push(query.len());
    }
    // Invariant: the first `lo` candidates are (assumed) stored, those past `hi` are not.
    let (mut lo, mut hi) = (0usize, cands.len());
    let mut probe = Vec::new();
    out.clear();
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if e.point_get(&query[..cands[mid - 1]], &mut probe)? {
            lo = mid;
            std::mem::swap(out, &mut probe);
        } else {
            hi = mid - 1;
        }
    }
    if lo == 0 {
        out.clear();
        return Ok(None);
    }
    Ok(Some(cands[lo - 1]))
}

/// S3 ListObjectsV2 over `walk`: keys are emitted as they come; on meeting a key that rolls up
/// into a common prefix, the prefix is emitted once and the walk re-seeks to the prefix's
/// successor instead of stepping over every key under it.
pub(crate) fn list_delimited(
    e: &dyn OrderedRead,
    prefix: &[u8],
    start_after: Option<&[u8]>,
    delimiter: u8,
    limit: usize,
    visit: &mut dyn FnMut(ListItem<'_>),
) -> Result<usize> {
    let end = prefix_successor(prefix);
    let mut cursor = match start_after {
        Some(sa) if sa >= prefix => key_successor(sa),
        _ => prefix.to_vec(),
    };
    let mut emitted = 0usize;
    while emitted < limit {
        if end.as_deref().is_some_and(|end| cursor.as_slice() >= end) {
            break;
        }
        let mut reseek: Option<Vec<u8>> = None;
        let mut exhausted = true;
        e.walk(&cursor, end.as_deref(), limit - emitted + 1, &mut |k, _| {
            let Some(rest) = k.strip_prefix(prefix) else {
                return false; // cannot happen with a correct walk bound; stop rather than panic
            };
            match rest.iter().position(|&b| b == delimiter) {
                Some(i) => {
                    let common = &k[..prefix.len() + i + 1];
                    if start_after.is_none_or(|sa| common > sa) {
                        visit(ListItem::CommonPrefix(common));
                        emitted += 1;
                    }
                    reseek = Some(prefix_successor(common).unwrap_or_default());
                    exhausted = false;
                    false
                }
                None => {
                    visit(ListItem::Key(k));
                    emitted += 1;
                    if emitted < limit {
                        true
                    } else {
                        exhausted = false;
                        false
                    }
                }
            }
        })?;
        match reseek {
            // An empty successor means the common prefix was all 0xFF: nothing sorts after it.
            Some(next) if !next.is_empty() => cursor = next,
            _ => break,
        }
        if exhausted {
            break;
        }
    }
    Ok(emitted)
}

/// Bytes allocated on disk by every file under `path` (st_blocks, so sparse files count what
/// they use rather than their length).
pub(crate) fn dir_size(engine: &'static str, path: &Path) -> Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io(engine, "stat", path, e))?;
    if !meta.is_dir() {
        return Ok(meta.blocks() * 512);
    }
    let mut total = 0u64;
    let entries = std::fs::read_dir(path).map_err(|e| Error::io(engine, "list", path, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(engine, "list", path, e))?;
        total += dir_size(engine, &entry.path())?;
    }
    Ok(total)
}

/// Creates the engine's directory if needed.
pub(crate) fn ensure_dir(engine: &'static str, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(engine, "create directory", dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_successor_handles_trailing_ff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(&[b'a', 0xFF, 0xFF]), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
        assert_eq!(prefix_successor(b""), None);
    }

    #[test]
    fn sorted_check_rejects_equal_and_smaller_keys() {
        let mut c = SortedCheck::new("t", Some(b"b".to_vec()));
        assert!(matches!(
            c.check(b"a"),
            Err(Error::UnsortedInput { index: 0, .. })
        ));
        let mut c = SortedCheck::new("t", None);
        assert!(c.check(b"a").is_ok());
        assert!(c.check(b"ab").is_ok());
        assert!(matches!(
            c.check(b"ab"),
            Err(Error::UnsortedInput { index: 2, .. })
        ));
        assert!(matches!(c.check(b""), Err(Error::InvalidKey { .. })));
    }

    #[test]
    fn key_limit_accepts_the_limit_and_refuses_one_more_and_the_empty_key() {
        let limit = "the test's limit";
        assert!(check_key_within("t", &[7; 10], 10, limit).is_ok());
        match check_key_within("t", &[7; 11], 10, limit) {
            Err(Error::InvalidKey { engine, reason }) => {
                assert_eq!(engine, "t");
                assert!(reason.contains("11 bytes") && reason.contains("of 10 bytes"));
            }
            other => panic!("an 11-byte key under a 10-byte limit gave {other:?}"),
        }
        assert!(matches!(
            check_key_within("t", b"", 10, limit),
            Err(Error::InvalidKey { .. })
        ));
        let long = [7u8; 11];
        let ops = [
            BatchOp::Put {
                key: b"ok",
                value: b"v",
            },
            BatchOp::Delete { key: &long },
        ];
        assert!(
            check_batch_within("t", &ops, 10, limit).is_ok(),
            "deletes are not checked"
        );
        let ops = [
            ops[0],
            BatchOp::Put {
                key: &long,
                value: b"v",
            },
        ];
        assert!(matches!(
            check_batch_within("t", &ops, 10, limit),
            Err(Error::InvalidKey { .. })
        ));
    }
}
