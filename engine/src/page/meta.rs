//! The superblock: two copies, in pages 0 and 1, written alternately at checkpoints.
//! On open the valid copy with the higher checkpoint generation wins (the tree's open
//! compares `generation`), so a torn superblock write falls back to the previous
//! checkpoint, whose pages are still intact.
//!
//! | offset | size | field                                             | constant            |
//! |--------|------|---------------------------------------------------|---------------------|
//! | 0      | 4    | crc32c of bytes 4..384 (4..128 in version 2)      | `CHECKSUM_AT`       |
//! | 4      | 8    | magic `AIMETAKV`                                  | `MAGIC_AT`          |
//! | 12     | 4    | format version (`FORMAT_VERSION`, 3)              | `VERSION_AT`        |
//! | 16     | 4    | page size in bytes                                | `PAGE_SIZE_AT`      |
//! | 20     | 4    | frame size in bytes                               | `FRAME_SIZE_AT`     |
//! | 24     | 8    | checkpoint sequence (the commit it captured)      | `SEQ_AT`            |
//! | 32     | 8    | root page (0: empty tree)                         | `ROOT_AT`           |
//! | 40     | 4    | tree height (0: empty tree)                       | `HEIGHT_AT`         |
//! | 44     | 4    | reserved, 0                                       |                     |
//! | 48     | 8    | entry count                                       | `ENTRIES_AT`        |
//! | 56     | 8    | file length in pages (a whole number of frames)   | `PAGE_COUNT_AT`     |
//! | 64     | 8    | first free-list page (0: none)                    | `FREELIST_AT`       |
//! | 72     | 8    | free-list pages                                   | `FREELIST_PAGES_AT` |
//! | 80     | 8    | free pages recorded in the free list              | `FREE_PAGES_AT`     |
//! | 88     | 8    | first commit the log replays (sequence + 1)       | `LOG_START_AT`      |
//! | 96     | 8    | checkpoint generation (+1 at every checkpoint)    | `GENERATION_AT`     |
//! | 104    | 24   | reserved, 0                                       |                     |
//! | 128    | 256  | key-length set (`key_lengths`; not in version 2)  | `KEY_LENGTHS_AT`    |
//!
//! `META_LEN` = 384 bytes are checksummed; the rest of the page is zero. A version-2 copy
//! (128 bytes, no key-length set) is read as a tree whose key lengths are unknown, and
//! the next checkpoint writes version 3.

use std::mem::size_of;

use super::header::{read_u32, read_u64, write_u32, write_u64};
use super::key_lengths::{KeyLengths, KEY_LENGTHS_BYTES};
use super::PageId;

/// The magic number at offset 4.
pub const MAGIC: [u8; 8] = *b"AIMETAKV";
/// The format version this build writes. Version 3 adds the key-length set to the
/// superblock; version 2 files are read (their key lengths unknown). Version 2 front-codes
/// the keys of leaf pages (version 1 stored each key's whole suffix after the page
/// prefix), so a version-1 file is refused rather than misread.
pub const FORMAT_VERSION: u32 = 3;
/// The oldest format version this build reads.
pub const OLDEST_READ_VERSION: u32 = 2;

const CHECKSUM_AT: usize = 0;
const MAGIC_AT: usize = CHECKSUM_AT + size_of::<u32>();
const VERSION_AT: usize = MAGIC_AT + MAGIC.len();
const PAGE_SIZE_AT: usize = VERSION_AT + size_of::<u32>();
const FRAME_SIZE_AT: usize = PAGE_SIZE_AT + size_of::<u32>();
const SEQ_AT: usize = FRAME_SIZE_AT + size_of::<u32>();
const ROOT_AT: usize = SEQ_AT + size_of::<u64>();
const HEIGHT_AT: usize = ROOT_AT + size_of::<u64>();
/// A reserved u32 pads the height to the next u64.
const ENTRIES_AT: usize = HEIGHT_AT + 2 * size_of::<u32>();
const PAGE_COUNT_AT: usize = ENTRIES_AT + size_of::<u64>();
const FREELIST_AT: usize = PAGE_COUNT_AT + size_of::<u64>();
const FREELIST_PAGES_AT: usize = FREELIST_AT + size_of::<u64>();
const FREE_PAGES_AT: usize = FREELIST_PAGES_AT + size_of::<u64>();
const LOG_START_AT: usize = FREE_PAGES_AT + size_of::<u64>();
const GENERATION_AT: usize = LOG_START_AT + size_of::<u64>();
/// Bytes of a version-2 copy's fields (its checksum covers `CHECKSUM_AT + 4..` this).
const V2_LEN: usize = 128;
const _: () = assert!(GENERATION_AT + size_of::<u64>() <= V2_LEN);
const KEY_LENGTHS_AT: usize = V2_LEN;
/// Bytes of a superblock copy covered by its checksum: the fields, then reserved zeros.
pub const META_LEN: usize = KEY_LENGTHS_AT + KEY_LENGTHS_BYTES;

/// One decoded superblock copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    /// Format version that wrote it.
    pub version: u32,
    /// Page size in bytes.
    pub page_size: u32,
    /// Frame size in bytes.
    pub frame_size: u32,
    /// Checkpoint sequence: the last commit included.
    pub seq: u64,
    /// Root page, 0 for an empty tree.
    pub root: PageId,
    /// Height, 0 for an empty tree, 1 for a single leaf.
    pub height: u32,
    /// Entries in the tree.
    pub entries: u64,
    /// File length in pages.
    pub page_count: u64,
    /// First free-list page, 0 when there is none.
    pub freelist: PageId,
    /// Number of free-list pages.
    pub freelist_pages: u64,
    /// Free pages the free list records.
    pub free_pages: u64,
    /// The first commit the log replays: the checkpoint sequence + 1, 0 in a new file.
    /// Recovery replays every logged commit after `seq`; this word records where that
    /// starts and is not read back.
    pub log_start: u64,
    /// Checkpoint generation: the copy with the higher one is the newer.
    pub generation: u64,
    /// Every key length the checkpointed tree may hold (all, for a version-2 copy).
    pub key_lengths: KeyLengths,
}

/// Why a superblock copy was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaReject {
    /// Not this engine's file.
    BadMagic([u8; 8]),
    /// The checksum does not match (a torn or damaged copy).
    Checksum {
        /// Stored checksum.
        stored: u32,
        /// Computed checksum.
        computed: u32,
    },
    /// Written by a newer format version.
    TooNew(u32),
    /// Written by an older format version that this build no longer reads.
    TooOld(u32),
}

impl std::fmt::Display for MetaReject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetaReject::BadMagic(magic) => write!(f, "bad magic {magic:02x?}"),
            MetaReject::Checksum { stored, computed } => {
                write!(
                    f,
                    "checksum {stored:#010x} stored, {computed:#010x} computed"
                )
            }
            MetaReject::TooNew(version) | MetaReject::TooOld(version) => {
                write!(f, "format version {version}")
            }
        }
    }
}

impl Superblock {
    /// Encodes the copy into the first `META_LEN` bytes of `out`, checksum included (a
    /// copy whose `version` is 2 in that version's layout, for tests of the upgrade).
    pub fn encode(&self, out: &mut [u8]) {
        out[..META_LEN].fill(0);
        out[MAGIC_AT..MAGIC_AT + MAGIC.len()].copy_from_slice(&MAGIC);
        write_u32(out, VERSION_AT, self.version);
        write_u32(out, PAGE_SIZE_AT, self.page_size);
        write_u32(out, FRAME_SIZE_AT, self.frame_size);
        self.encode_checkpoint(out);
        let len = if self.version == 2 {
            V2_LEN
        } else {
            self.key_lengths.encode(&mut out[KEY_LENGTHS_AT..]);
            META_LEN
        };
        let sum = crc32c::crc32c(&out[MAGIC_AT..len]);
        write_u32(out, CHECKSUM_AT, sum);
    }

    /// Writes what the checkpoint captured, from `SEQ_AT` on: its commit and tree, the
    /// file's space and where the log resumes.
    fn encode_checkpoint(&self, out: &mut [u8]) {
        write_u64(out, SEQ_AT, self.seq);
        write_u64(out, ROOT_AT, self.root);
        write_u32(out, HEIGHT_AT, self.height);
        write_u64(out, ENTRIES_AT, self.entries);
        write_u64(out, PAGE_COUNT_AT, self.page_count);
        write_u64(out, FREELIST_AT, self.freelist);
        write_u64(out, FREELIST_PAGES_AT, self.freelist_pages);
        write_u64(out, FREE_PAGES_AT, self.free_pages);
        write_u64(out, LOG_START_AT, self.log_start);
        write_u64(out, GENERATION_AT, self.generation);
    }

    /// Decodes a copy, checking magic, checksum and version (in that order, so that a
    /// foreign file is reported as foreign rather than as corrupt).
    pub fn decode(buf: &[u8]) -> Result<Self, MetaReject> {
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&buf[MAGIC_AT..MAGIC_AT + MAGIC.len()]);
        if magic != MAGIC {
            return Err(MetaReject::BadMagic(magic));
        }
        // The checksummed length depends on the version, read before it is verified: a
        // damaged version word then fails the checksum of either length.
        let claimed = read_u32(buf, VERSION_AT);
        let len = if claimed == 2 { V2_LEN } else { META_LEN };
        let stored = read_u32(buf, CHECKSUM_AT);
        let computed = crc32c::crc32c(&buf[MAGIC_AT..len]);
        if stored != computed {
            return Err(MetaReject::Checksum { stored, computed });
        }
        let version = claimed;
        if version > FORMAT_VERSION {
            return Err(MetaReject::TooNew(version));
        }
        if version < OLDEST_READ_VERSION {
            return Err(MetaReject::TooOld(version));
        }
        let key_lengths = if version == 2 {
            KeyLengths::all()
        } else {
            KeyLengths::decode(&buf[KEY_LENGTHS_AT..])
        };
        Ok(Superblock {
            version,
            page_size: read_u32(buf, PAGE_SIZE_AT),
            frame_size: read_u32(buf, FRAME_SIZE_AT),
            seq: read_u64(buf, SEQ_AT),
            root: read_u64(buf, ROOT_AT),
            height: read_u32(buf, HEIGHT_AT),
            entries: read_u64(buf, ENTRIES_AT),
            page_count: read_u64(buf, PAGE_COUNT_AT),
            freelist: read_u64(buf, FREELIST_AT),
            freelist_pages: read_u64(buf, FREELIST_PAGES_AT),
            free_pages: read_u64(buf, FREE_PAGES_AT),
            log_start: read_u64(buf, LOG_START_AT),
            generation: read_u64(buf, GENERATION_AT),
            key_lengths,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn superblock_offsets_are_the_documented_ones() {
        assert_eq!(
            (
                CHECKSUM_AT,
                MAGIC_AT,
                VERSION_AT,
                PAGE_SIZE_AT,
                FRAME_SIZE_AT
            ),
            (0, 4, 12, 16, 20)
        );
        assert_eq!((SEQ_AT, ROOT_AT, HEIGHT_AT, ENTRIES_AT), (24, 32, 40, 48));
        assert_eq!(
            (PAGE_COUNT_AT, FREELIST_AT, FREELIST_PAGES_AT, FREE_PAGES_AT),
            (56, 64, 72, 80)
        );
        assert_eq!((LOG_START_AT, GENERATION_AT, V2_LEN), (88, 96, 128));
        assert_eq!((KEY_LENGTHS_AT, META_LEN), (128, 384));
        assert_eq!(MAGIC_AT - CHECKSUM_AT, size_of::<u32>());
        assert_eq!(
            ENTRIES_AT - HEIGHT_AT,
            2 * size_of::<u32>(),
            "height and reserved"
        );
        // A copy built by hand at the documented offsets decodes to the documented fields
        // and encodes back to the same bytes.
        let mut copy = vec![0u8; 4096];
        copy[4..12].copy_from_slice(b"AIMETAKV");
        copy[12..16].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        copy[16..20].copy_from_slice(&4096u32.to_le_bytes());
        copy[20..24].copy_from_slice(&(1u32 << 19).to_le_bytes());
        copy[40..44].copy_from_slice(&0x13u32.to_le_bytes());
        for (index, at) in [24, 32, 48, 56, 64, 72, 80, 88, 96].into_iter().enumerate() {
            copy[at..at + 8].copy_from_slice(&(0x11 + index as u64).to_le_bytes());
        }
        copy[128] = 1 << 3; // length 3
        copy[128 + 255] = 0x80; // length 2047
        let crc = crc32c::crc32c(&copy[4..384]);
        copy[0..4].copy_from_slice(&crc.to_le_bytes());
        let decoded = Superblock::decode(&copy).expect("valid copy");
        assert_eq!(
            (decoded.version, decoded.page_size, decoded.frame_size),
            (FORMAT_VERSION, 4096, 1 << 19)
        );
        assert_eq!(
            (decoded.seq, decoded.root, decoded.height),
            (0x11, 0x12, 0x13)
        );
        assert_eq!(
            [
                decoded.entries,
                decoded.page_count,
                decoded.freelist,
                decoded.freelist_pages,
                decoded.free_pages,
                decoded.log_start,
                decoded.generation
            ],
            [0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19]
        );
        assert_eq!(decoded.key_lengths.floor(2046), Some(3));
        assert_eq!(decoded.key_lengths.floor(2047), Some(2047));
        let mut encoded = vec![0xEEu8; 4096];
        decoded.encode(&mut encoded);
        assert_eq!(&encoded[..META_LEN], &copy[..META_LEN]);
        assert_eq!(encoded[META_LEN], 0xEE, "only META_LEN bytes are written");
    }

    #[test]
    fn round_trip_and_rejections() {
        let sb = Superblock {
            version: FORMAT_VERSION,
            page_size: 4096,
            frame_size: 512 * 1024,
            seq: 3,
            root: 9,
            height: 2,
            entries: 100,
            page_count: 256,
            freelist: 0,
            freelist_pages: 0,
            free_pages: 0,
            log_start: 0,
            generation: 4,
            key_lengths: {
                let mut k = KeyLengths::empty();
                k.insert(29);
                k
            },
        };
        let mut buf = vec![0u8; 4096];
        sb.encode(&mut buf);
        assert_eq!(Superblock::decode(&buf), Ok(sb));
        // A version-2 copy: 128 bytes checksummed, key lengths unknown.
        let v2 = Superblock { version: 2, ..sb };
        let mut old = vec![0u8; 4096];
        v2.encode(&mut old);
        assert!(old[128..384].iter().all(|&b| b == 0));
        assert_eq!(
            Superblock::decode(&old),
            Ok(Superblock {
                key_lengths: KeyLengths::all(),
                ..v2
            })
        );
        buf[40] ^= 1;
        assert!(matches!(
            Superblock::decode(&buf),
            Err(MetaReject::Checksum { .. })
        ));
        let newer = Superblock {
            version: FORMAT_VERSION + 1,
            ..sb
        };
        newer.encode(&mut buf);
        assert_eq!(
            Superblock::decode(&buf),
            Err(MetaReject::TooNew(FORMAT_VERSION + 1))
        );
        let older = Superblock { version: 1, ..sb };
        older.encode(&mut buf);
        assert_eq!(Superblock::decode(&buf), Err(MetaReject::TooOld(1)));
        buf[4] = b'X';
        assert!(matches!(
            Superblock::decode(&buf),
            Err(MetaReject::BadMagic(_))
        ));
    }
}
