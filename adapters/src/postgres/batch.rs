//! Write batches in as few round trips as the server allows: each run of consecutive puts
//! becomes one `INSERT ... SELECT * FROM unnest($1, $2) ON CONFLICT DO UPDATE`, each run
//! of deletes one `DELETE ... WHERE k = ANY($1)`, as PostgreSQL's own documentation and
//! drivers recommend for bulk writes, instead of one statement (one round trip) per
//! key. One `INSERT ... ON CONFLICT` may not touch a row twice, so a run's repeated keys
//! keep only their last value, which is what applying the run in order would leave.

use std::collections::HashMap;

use crate::api::BatchOp;

/// One statement's worth of a batch.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Run<'a> {
    /// Keys and their values, each key once (its last value in the run).
    Put {
        /// The keys.
        keys: Vec<&'a [u8]>,
        /// Their values, in the same order.
        values: Vec<&'a [u8]>,
    },
    /// Keys to delete (repeats are harmless in `= ANY`).
    Delete {
        /// The keys.
        keys: Vec<&'a [u8]>,
    },
}

/// Splits `ops` into runs of one kind, in order; empty delete keys are dropped (a no-op,
/// as in `delete`).
pub(super) fn runs<'a>(ops: &[BatchOp<'a>]) -> Vec<Run<'a>> {
    let mut out: Vec<Run<'a>> = Vec::new();
    // Where each key of the current put run sits, to keep its last value only.
    let mut at: HashMap<&'a [u8], usize> = HashMap::new();
    for op in ops {
        match *op {
            BatchOp::Put { key, value } => {
                if !matches!(out.last(), Some(Run::Put { .. })) {
                    at.clear();
                    out.push(Run::Put {
                        keys: Vec::new(),
                        values: Vec::new(),
                    });
                }
                if let Some(Run::Put { keys, values }) = out.last_mut() {
                    match at.get(key) {
                        Some(&i) => values[i] = value,
                        None => {
                            at.insert(key, keys.len());
                            keys.push(key);
                            values.push(value);
                        }
                    }
                }
            }
            BatchOp::Delete { key: [] } => {}
            BatchOp::Delete { key } => {
                if !matches!(out.last(), Some(Run::Delete { .. })) {
                    out.push(Run::Delete { keys: Vec::new() });
                }
                if let Some(Run::Delete { keys }) = out.last_mut() {
                    keys.push(key);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_keep_order_and_a_repeated_put_keeps_its_last_value() {
        let ops = [
            BatchOp::Put {
                key: b"a",
                value: b"1",
            },
            BatchOp::Put {
                key: b"b",
                value: b"2",
            },
            BatchOp::Put {
                key: b"a",
                value: b"3",
            },
            BatchOp::Delete { key: b"b" },
            BatchOp::Delete { key: b"" },
            BatchOp::Delete { key: b"c" },
            BatchOp::Put {
                key: b"b",
                value: b"4",
            },
        ];
        assert_eq!(
            runs(&ops),
            vec![
                Run::Put {
                    keys: vec![b"a", b"b"],
                    values: vec![b"3", b"2"],
                },
                Run::Delete {
                    keys: vec![b"b", b"c"],
                },
                Run::Put {
                    keys: vec![b"b"],
                    values: vec![b"4"],
                },
            ]
        );
        assert!(runs(&[]).is_empty());
    }
}
