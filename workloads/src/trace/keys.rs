//! The two key designs a KV-cache index is built with, both measured on every engine.
//!
//! - Path keys, `kv/<model>/<b0>/<b1>/...`: a block's key is its whole chain, one
//!   fixed-width segment a block (`/` and 8 lowercase hex digits of the block id: ids stay
//!   below 2^32 even with 64 tenants of this trace, whose ids reach 182,790, and a fixed
//!   width makes every ancestor a prefix that ends at a `/`). The cache's longest prefix is
//!   then one longest-prefix lookup; keys grow to 9 bytes a block, 2.2 KiB at 247 blocks.
//! - Chained keys (vLLM's scheme): a fixed 32-byte key a block, SHA-256 of the parent's key
//!   and the block id, so a lookup probes the chain's blocks with point gets until the
//!   first miss (or bisects, since the cached set is prefix-closed).

use sha2::{Digest, Sha256};

/// Bytes one block adds to a path key: `/` and 8 hex digits.
pub const PATH_SEGMENT_LEN: usize = 9;

/// The path key of the chain `blocks` (root first) under `model`.
pub fn path_key(model: &str, blocks: &[u64]) -> Vec<u8> {
    let mut key = Vec::with_capacity(3 + model.len() + PATH_SEGMENT_LEN * blocks.len());
    key.extend_from_slice(b"kv/");
    key.extend_from_slice(model.as_bytes());
    for &block in blocks {
        // Block ids of the trace fit 32 bits (checked by the replay before it builds keys);
        // the low 32 bits keep the width fixed regardless.
        key.extend_from_slice(format!("/{:08x}", block as u32).as_bytes());
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
        let chain = [0u64, 0x1f, 182_790];
        let keys: Vec<Vec<u8>> = (1..=chain.len())
            .map(|n| path_key("llama70b", &chain[..n]))
            .collect();
        assert_eq!(keys[0], b"kv/llama70b/00000000");
        assert_eq!(keys[2], b"kv/llama70b/00000000/0000001f/0002ca06");
        for pair in keys.windows(2) {
            assert!(pair[1].starts_with(&pair[0]));
            assert_eq!(pair[1][pair[0].len()], b'/');
            assert_eq!(pair[1].len() - pair[0].len(), PATH_SEGMENT_LEN);
        }
    }

    #[test]
    fn chained_keys_are_distinct_over_the_committed_trace() {
        let trace = read_trace(&committed_trace_path()).expect("the committed trace parses");
        let mut keys: HashMap<u64, ChainedKey> = HashMap::new();
        let mut longest = 0;
        for r in &trace.requests {
            assert!(r.blocks.iter().all(|&b| b < 1 << 32));
            longest = longest.max(path_key("llama70b", &r.blocks).len());
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
        // The longest chain's path key: "kv/llama70b" and 247 segments.
        assert_eq!(longest, 11 + 247 * PATH_SEGMENT_LEN);
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
