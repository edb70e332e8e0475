//! The stored-key filter's file, `keys.filter` beside the data file, written at
//! checkpoints when the filter changed. It is derived data: a file that is missing, was
//! written for another checkpoint than the superblock's, or fails any check below is not
//! trusted, and the tree rebuilds the filter from its keys instead (nothing acknowledged
//! lives here, so nothing can be lost with it).
//!
//! | offset | size | field                                               | constant          |
//! |--------|------|-----------------------------------------------------|-------------------|
//! | 0      | 4    | crc32c of bytes 4..64                               | `HEADER_CRC_AT`   |
//! | 4      | 8    | magic `AIMKEYFL`                                    | `MAGIC_AT`        |
//! | 12     | 4    | format version (`FILE_VERSION`, 1)                  | `VERSION_AT`      |
//! | 16     | 8    | checkpoint sequence whose keys it holds (at least)  | `SEQ_AT`          |
//! | 24     | 4    | bits per key it was sized with                      | `BITS_AT`         |
//! | 28     | 4    | probes per key                                      | `PROBES_AT`       |
//! | 32     | 8    | keys it was sized for                               | `CAPACITY_AT`     |
//! | 40     | 8    | keys added                                          | `ADDED_AT`        |
//! | 48     | 8    | blocks of 512 bits                                  | `BLOCKS_AT`       |
//! | 56     | 4    | crc32c of the blocks                                | `BODY_CRC_AT`     |
//! | 60     | 4    | reserved, 0                                         |                   |
//! | 64     | 64 x blocks | the blocks, little-endian u64 words          | `HEADER_LEN`      |

use std::mem::size_of;

use super::bloom::{probes_for, KeyFilter, BLOCK_WORDS, MAX_BITS_PER_KEY};

/// The file's name in the tree's directory.
pub const FILTER_FILE: &str = "keys.filter";
/// The magic number at offset 4.
pub const MAGIC: [u8; 8] = *b"AIMKEYFL";
/// The version this build writes and reads; it pins `hash_key` and the probe layout.
pub const FILE_VERSION: u32 = 1;

const HEADER_CRC_AT: usize = 0;
const MAGIC_AT: usize = HEADER_CRC_AT + size_of::<u32>();
const VERSION_AT: usize = MAGIC_AT + MAGIC.len();
const SEQ_AT: usize = VERSION_AT + size_of::<u32>();
const BITS_AT: usize = SEQ_AT + size_of::<u64>();
const PROBES_AT: usize = BITS_AT + size_of::<u32>();
const CAPACITY_AT: usize = PROBES_AT + size_of::<u32>();
const ADDED_AT: usize = CAPACITY_AT + size_of::<u64>();
const BLOCKS_AT: usize = ADDED_AT + size_of::<u64>();
const BODY_CRC_AT: usize = BLOCKS_AT + size_of::<u64>();
/// Bytes before the blocks.
pub const HEADER_LEN: usize = 64;
const _: () = assert!(BODY_CRC_AT + 2 * size_of::<u32>() == HEADER_LEN);
const BLOCK_BYTES: usize = BLOCK_WORDS * size_of::<u64>();

/// Why a filter file was not used (the tree then rebuilds the filter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unusable {
    /// It holds the keys of checkpoint `found`, not of the one the tree opened at.
    Stale {
        /// The checkpoint it was written for.
        found: u64,
    },
    /// It fails a check (torn by a crash while it was written, or damaged).
    Invalid(String),
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The file's bytes for `filter` as of checkpoint `seq`.
pub fn encode(filter: &KeyFilter, seq: u64) -> Vec<u8> {
    let mut out = vec![0u8; HEADER_LEN];
    out.reserve(filter.bytes() as usize);
    for w in filter.words() {
        out.extend_from_slice(&w.to_le_bytes());
    }
    let body_crc = crc32c::crc32c(&out[HEADER_LEN..]);
    out[MAGIC_AT..VERSION_AT].copy_from_slice(&MAGIC);
    out[VERSION_AT..SEQ_AT].copy_from_slice(&FILE_VERSION.to_le_bytes());
    out[SEQ_AT..BITS_AT].copy_from_slice(&seq.to_le_bytes());
    out[BITS_AT..PROBES_AT].copy_from_slice(&filter.bits_per_key().to_le_bytes());
    out[PROBES_AT..CAPACITY_AT].copy_from_slice(&filter.probes().to_le_bytes());
    out[CAPACITY_AT..ADDED_AT].copy_from_slice(&filter.capacity_keys().to_le_bytes());
    out[ADDED_AT..BLOCKS_AT].copy_from_slice(&filter.added().to_le_bytes());
    out[BLOCKS_AT..BODY_CRC_AT].copy_from_slice(&filter.blocks().to_le_bytes());
    out[BODY_CRC_AT..BODY_CRC_AT + 4].copy_from_slice(&body_crc.to_le_bytes());
    let header_crc = crc32c::crc32c(&out[MAGIC_AT..HEADER_LEN]);
    out[HEADER_CRC_AT..MAGIC_AT].copy_from_slice(&header_crc.to_le_bytes());
    out
}

/// The filter in `bytes`, if they are a whole valid file written for checkpoint `seq`.
pub fn decode(bytes: &[u8], seq: u64) -> Result<KeyFilter, Unusable> {
    let invalid = |why: String| Err(Unusable::Invalid(why));
    if bytes.len() < HEADER_LEN {
        return invalid(format!("{} bytes, shorter than its header", bytes.len()));
    }
    if u32_at(bytes, HEADER_CRC_AT) != crc32c::crc32c(&bytes[MAGIC_AT..HEADER_LEN]) {
        return invalid("header checksum mismatch".into());
    }
    if bytes[MAGIC_AT..VERSION_AT] != MAGIC {
        return invalid("not a key filter file (bad magic)".into());
    }
    let version = u32_at(bytes, VERSION_AT);
    if version != FILE_VERSION {
        return invalid(format!(
            "file version {version}, this build reads {FILE_VERSION}"
        ));
    }
    let found = u64_at(bytes, SEQ_AT);
    if found != seq {
        return Err(Unusable::Stale { found });
    }
    let bits = u32_at(bytes, BITS_AT);
    let probes = u32_at(bytes, PROBES_AT);
    if !(1..=MAX_BITS_PER_KEY).contains(&bits) || probes != probes_for(bits) {
        return invalid(format!("{bits} bits and {probes} probes a key"));
    }
    let blocks = u64_at(bytes, BLOCKS_AT);
    let body = &bytes[HEADER_LEN..];
    if blocks == 0 || Some(body.len() as u64) != blocks.checked_mul(BLOCK_BYTES as u64) {
        return invalid(format!("{blocks} blocks in {} bytes", body.len()));
    }
    if u32_at(bytes, BODY_CRC_AT) != crc32c::crc32c(body) {
        return invalid("blocks checksum mismatch".into());
    }
    let filter = KeyFilter::with_blocks(blocks, bits, u64_at(bytes, CAPACITY_AT));
    for (i, w) in body.chunks_exact(size_of::<u64>()).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        filter.set_word(i, u64::from_le_bytes(b));
    }
    filter.set_added(u64_at(bytes, ADDED_AT));
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_the_documented_ones() {
        assert_eq!(
            (MAGIC_AT, VERSION_AT, SEQ_AT, BITS_AT, PROBES_AT),
            (4, 12, 16, 24, 28)
        );
        assert_eq!(
            (CAPACITY_AT, ADDED_AT, BLOCKS_AT, BODY_CRC_AT),
            (32, 40, 48, 56)
        );
        assert_eq!(BLOCK_BYTES, 64);
    }

    fn sample() -> KeyFilter {
        let f = KeyFilter::new(3_000, 10);
        for i in 0..2_000u32 {
            f.insert(format!("key-{i}").as_bytes());
        }
        f
    }

    #[test]
    fn a_filter_round_trips() {
        let f = sample();
        let bytes = encode(&f, 42);
        assert_eq!(bytes.len(), HEADER_LEN + f.bytes() as usize);
        assert_eq!(&bytes[4..12], b"AIMKEYFL");
        assert_eq!(u64_at(&bytes, SEQ_AT), 42);
        let back = decode(&bytes, 42).expect("valid file");
        assert_eq!(
            back.words().collect::<Vec<_>>(),
            f.words().collect::<Vec<_>>()
        );
        assert_eq!(
            (
                back.blocks(),
                back.added(),
                back.capacity_keys(),
                back.bits_per_key()
            ),
            (f.blocks(), 2_000, 3_000, 10)
        );
        assert!((0..2_000u32).all(|i| back.may_contain(format!("key-{i}").as_bytes())));
    }

    #[test]
    fn another_checkpoint_s_file_is_stale() {
        let bytes = encode(&sample(), 41);
        assert_eq!(
            decode(&bytes, 42).err(),
            Some(Unusable::Stale { found: 41 })
        );
    }

    #[test]
    fn torn_or_damaged_files_are_refused() {
        let bytes = encode(&sample(), 7);
        let torn = &bytes[..bytes.len() - 100];
        assert!(matches!(decode(torn, 7), Err(Unusable::Invalid(w)) if w.contains("blocks in")));
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(
            matches!(decode(&flipped, 7), Err(Unusable::Invalid(w)) if w.contains("blocks checksum"))
        );
        let mut header = bytes.clone();
        header[SEQ_AT] ^= 1;
        assert!(
            matches!(decode(&header, 7), Err(Unusable::Invalid(w)) if w.contains("header checksum"))
        );
        assert!(matches!(decode(&bytes[..10], 7), Err(Unusable::Invalid(_))));
    }
}
