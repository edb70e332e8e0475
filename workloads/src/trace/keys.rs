//! The two key designs a KV-cache index is built with, both measured on every engine.
//!
//! - Path keys, `kv/<model>/<b0>/<b1>/...`: a block's key is its whole chain, one
//!   fixed-width segment a block, `/` and 6 lowercase hex digits of the block's dense id
//!   (ids are renumbered densely per trace, so 24 bits hold 16.7 M distinct blocks; the
//!   committed trace has 182,790, and tenants are told apart by `<model>`, not by the
//!   ids). A fixed width makes every ancestor a prefix that ends at a `/`, and hex digits
//!   never hold a `/`, so the delimiter-bisect lookup is valid. Six digits rather than
//!   the eight of a u32 keep the trace's longest key (247 blocks) at 1,740 bytes, within
//!   the key limit of every engine measured here (LMDB's is about 2 KiB in its
//!   longer-keys build): 7 bytes a block instead of 9. The index also stores `kv` and
//!   `kv/<model>` (the model's entry), so that every query's '/'-prefixes are
//!   prefix-closed, as the bisect lookup needs.
//! - Chained keys (vLLM's scheme): a fixed 32-byte key a block, SHA-256 of the parent's
//!   key and the block id (salted by tenant), so a lookup probes the chain's blocks with
//!   point gets until the first miss (or bisects, since the cached set is prefix-closed).

use sha2::{Digest, Sha256};

/// Bytes one block adds to a path key: `/` and 6 hex digits.
pub const PATH_SEGMENT_LEN: usize = 7;

/// Dense block ids a path segment can hold (24 bits).
pub const PATH_BLOCK_LIMIT: u64 = 1 << 24;

/// The model entry of a path key: `kv/<model>`, which every block key of the model
/// extends.
pub fn path_root(model: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(3 + model.len());
    key.extend_from_slice(b"kv/");
    key.extend_from_slice(model.as_bytes());
    key
}

/// Appends the path segment of `block` (a dense id below [`PATH_BLOCK_LIMIT`]; higher
/// bits are dropped, which the schedule rules out before any key is built).
pub fn push_path_segment(key: &mut Vec<u8>, block: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    key.push(b'/');
    for shift in (0..6).rev() {
        key.push(HEX[((block >> (4 * shift)) & 0xf) as usize]);
    }
}

/// The path key of the chain `blocks` (dense ids, root first) under `model`.
pub fn path_key(model: &str, blocks: &[u32]) -> Vec<u8> {
    let mut key = path_root(model);
    key.reserve(PATH_SEGMENT_LEN * blocks.len());
    for &block in blocks {
        push_path_segment(&mut key, block);
    }
    key
}

/// A chained key: 32 bytes.
pub type ChainedKey = [u8; 32];

/// The chained key of `block` below the block whose key is `parent` (None: a root).
pub fn chained_key(parent: Option<&ChainedKey>, block: u64) -> ChainedKey {
    let mut hash = Sha256::new();
    hash.update(parent.map_or(&[0u8; 32][..], |p| &p[..]));
    hash.update(block.to_le_bytes());
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{committed_trace_path, read_trace};
    use std::collections::HashMap;

    #[test]
    fn path_keys_of_a_chain_are_prefixes_ending_at_a_slash() {
        let chain = [0u32, 0x1f, 182_790];
        let keys: Vec<Vec<u8>> = (1..=chain.len())
            .map(|n| path_key("llama70b", &chain[..n]))
            .collect();
        assert_eq!(keys[0], b"kv/llama70b/000000");
        assert_eq!(keys[2], b"kv/llama70b/000000/00001f/02ca06");
        assert!(keys[0].starts_with(&path_root("llama70b")));
        for pair in keys.windows(2) {
            assert!(pair[1].starts_with(&pair[0]));
            assert_eq!(pair[1][pair[0].len()], b'/');
            assert_eq!(pair[1].len() - pair[0].len(), PATH_SEGMENT_LEN);
        }
        assert_eq!(
            path_key("m", &[(PATH_BLOCK_LIMIT - 1) as u32]),
            b"kv/m/ffffff"
        );
    }

    #[test]
    fn chained_keys_are_distinct_over_the_committed_trace() {
        let trace = read_trace(&committed_trace_path()).expect("the committed trace parses");
        let mut keys: HashMap<u64, ChainedKey> = HashMap::new();
        let mut longest = 0;
        for r in &trace.requests {
            assert!(r.blocks.iter().all(|&b| b < PATH_BLOCK_LIMIT));
            longest = longest.max(r.blocks.len());
            let mut parent = None;
            for &b in &r.blocks {
                let k = *keys
                    .entry(b)
                    .or_insert_with(|| chained_key(parent.as_ref(), b));
                parent = Some(k);
            }
        }
        let mut distinct: Vec<ChainedKey> = keys.values().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 182_790);
        // The longest chain's path key: "kv/llama70b" and 247 segments, 1,740 bytes.
        assert_eq!(longest, 247);
        assert_eq!(path_root("llama70b").len() + 247 * PATH_SEGMENT_LEN, 1_740);
    }

    #[test]
    fn a_chained_key_depends_on_its_parent() {
        let a = chained_key(None, 7);
        assert_ne!(chained_key(Some(&a), 8), chained_key(None, 8));
        assert_eq!(
            chained_key(Some(&a), 8),
            chained_key(Some(&chained_key(None, 7)), 8)
        );
    }
}
