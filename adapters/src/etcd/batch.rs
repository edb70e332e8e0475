//! Write batches as etcd transactions. etcd refuses a transaction that writes one key twice
//! ("duplicate key given in txn request"), so a batch keeps only the last write of each key
//! (what applying it in order would leave); and a transaction holds at most
//! `--max-txn-ops` operations and a request at most `--max-request-bytes`, so a batch over
//! either is split into several transactions, in order, each atomic on its own.

use std::collections::HashMap;

use crate::api::BatchOp;

/// Bytes a request carries per operation besides its key and value (protobuf tags and
/// lengths of the request union, the put or delete message and its fields), rounded up.
pub(crate) const OP_OVERHEAD: usize = 32;
/// Bytes of a request's own framing left free under `--max-request-bytes`.
pub(crate) const REQUEST_MARGIN: usize = 4096;

/// One write of a transaction, borrowed from the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write<'a> {
    /// Put `key` = `value`.
    Put(&'a [u8], &'a [u8]),
    /// Delete exactly `key`.
    Delete(&'a [u8]),
}

impl Write<'_> {
    /// The bytes this write adds to a request.
    pub(crate) fn request_bytes(&self) -> usize {
        OP_OVERHEAD
            + match self {
                Write::Put(k, v) => k.len() + v.len(),
                Write::Delete(k) => k.len(),
            }
    }
}

/// The transaction limits writes are split at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Operations per transaction (`--max-txn-ops`).
    pub(crate) max_ops: usize,
    /// Bytes per request (`--max-request-bytes`).
    pub(crate) max_request_bytes: usize,
}

impl Limits {
    /// etcd's defaults: what an existing cluster is assumed to run with.
    pub(crate) const DEFAULT: Limits = Limits {
        max_ops: 128,
        max_request_bytes: 1536 * 1024,
    };

    /// The bytes of keys, values and per-operation overhead one transaction may carry.
    pub(crate) fn payload_bytes(&self) -> usize {
        self.max_request_bytes.saturating_sub(REQUEST_MARGIN).max(1)
    }
}

/// The batch's last write of each key, in the order of those last writes; deletes of the
/// empty key are dropped (a no-op, as in `delete`).
pub(crate) fn last_writes<'a>(ops: &[BatchOp<'a>]) -> Vec<Write<'a>> {
    let mut at: HashMap<&'a [u8], usize> = HashMap::with_capacity(ops.len());
    let mut out: Vec<Option<Write<'a>>> = Vec::with_capacity(ops.len());
    for op in ops {
        let w = match *op {
            BatchOp::Put { key, value } => Write::Put(key, value),
            BatchOp::Delete { key: [] } => continue,
            BatchOp::Delete { key } => Write::Delete(key),
        };
        let key = op.key();
        if let Some(&i) = at.get(key) {
            out[i] = None;
        }
        at.insert(key, out.len());
        out.push(Some(w));
    }
    out.into_iter().flatten().collect()
}

/// Splits `writes` into consecutive groups within `limits`; a single write over the byte
/// limit gets a group of its own (the server then refuses it with its own error).
pub(crate) fn split<'w, 'a>(writes: &'w [Write<'a>], limits: Limits) -> Vec<&'w [Write<'a>]> {
    let mut groups = Vec::new();
    let (mut start, mut bytes) = (0usize, 0usize);
    for (i, w) in writes.iter().enumerate() {
        let b = w.request_bytes();
        let full = i - start >= limits.max_ops.max(1) || bytes + b > limits.payload_bytes();
        if full && i > start {
            groups.push(&writes[start..i]);
            start = i;
            bytes = 0;
        }
        bytes += b;
    }
    if start < writes.len() {
        groups.push(&writes[start..]);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_write_of_each_key_wins_and_empty_deletes_go() {
        let ops = [
            BatchOp::Put {
                key: b"a",
                value: b"1",
            },
            BatchOp::Put {
                key: b"b",
                value: b"2",
            },
            BatchOp::Delete { key: b"a" },
            BatchOp::Delete { key: b"" },
            BatchOp::Put {
                key: b"c",
                value: b"3",
            },
            BatchOp::Put {
                key: b"b",
                value: b"4",
            },
        ];
        assert_eq!(
            last_writes(&ops),
            vec![
                Write::Delete(b"a"),
                Write::Put(b"c", b"3"),
                Write::Put(b"b", b"4"),
            ]
        );
        assert!(last_writes(&[]).is_empty());
    }

    #[test]
    fn groups_stay_within_both_limits_and_keep_the_order() {
        let keys: Vec<Vec<u8>> = (0..10u8).map(|i| vec![b'k', i]).collect();
        let value = [7u8; 100];
        let writes: Vec<Write<'_>> = keys.iter().map(|k| Write::Put(k, &value)).collect();
        let by_ops = Limits {
            max_ops: 4,
            max_request_bytes: 1 << 20,
        };
        let sizes: Vec<usize> = split(&writes, by_ops).iter().map(|g| g.len()).collect();
        assert_eq!(sizes, vec![4, 4, 2]);
        // 134 bytes a write: three fit in 3 * 134 = 402 bytes of payload, four do not.
        let by_bytes = Limits {
            max_ops: 128,
            max_request_bytes: REQUEST_MARGIN + 402,
        };
        let groups = split(&writes, by_bytes);
        assert_eq!(
            groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
            vec![3, 3, 3, 1]
        );
        assert_eq!(groups.concat(), writes);
        // A write larger than the limit alone.
        let big = [0u8; 1000];
        let one = [Write::Put(b"x", &big), Write::Delete(b"y")];
        assert_eq!(split(&one, by_bytes).len(), 2);
        assert!(split(&[], by_ops).is_empty());
    }
}
