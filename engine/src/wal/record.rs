//! Log file and record layouts: the one place they are written down, with tests that
//! assert them; docs/durability.md explains them. Little-endian throughout.
//!
//! File header, `FILE_HEADER_LEN` = 32 bytes:
//!
//! | offset | size | field                                   | constant        |
//! |--------|------|-----------------------------------------|-----------------|
//! | 0      | 8    | magic `AIMKVWAL`                        | `WAL_MAGIC`     |
//! | 8      | 4    | log format version (`WAL_VERSION`, 1)   | `VERSION_AT`    |
//! | 12     | 4    | reserved, 0                             |                 |
//! | 16     | 8    | epoch: +1 at each switch of files       | `EPOCH_AT`      |
//! | 24     | 4    | crc32c of bytes 0..24                   | `HEADER_CRC_AT` |
//! | 28     | 4    | reserved, 0 (not checksummed)           |                 |
//!
//! Records follow, each starting at a multiple of 8 (`ALIGN`), with a header of
//! `RECORD_HEADER_LEN` = 24 bytes:
//!
//! | offset | size | field                                                  | constant          |
//! |--------|------|--------------------------------------------------------|-------------------|
//! | 0      | 4    | crc32c of the file's epoch (8 bytes), then bytes 4..24+len | `RECORD_CRC_AT` |
//! | 4      | 4    | payload length `len`                                   | `RECORD_LEN_AT`   |
//! | 8      | 8    | commit sequence                                        | `RECORD_SEQ_AT`   |
//! | 16     | 8    | synced: every commit up to this one was on disk when this record was written | `SYNCED_AT` |
//! | 24     | len  | payload                                                | `RECORD_HEADER_LEN` |
//! | ...    |      | zero padding to a multiple of 8                        |                   |
//!
//! The epoch in the checksum makes a record left from another use of the file fail it.
//! The payload is an op count u32, then the ops. Version 2 writes each op front-coded
//! against the key of the op before it in the same record (none for the first):
//!
//! | size | field                                                          |
//! |------|----------------------------------------------------------------|
//! | 1    | kind: `OP_PUT_SHARED` 3 or `OP_DELETE_SHARED` 4                |
//! | 4    | shared: leading bytes of the previous op's key this key repeats |
//! | 4    | suffix length                                                  |
//! | 4    | value length (puts only)                                       |
//! | n    | the key's bytes after the shared ones                          |
//! | n    | value (puts only)                                              |
//!
//! Path keys, whose batches insert a chain's keys parent first, repeat all but the last
//! segment of the key before them: written whole they made the trace replay's log 1.8 GB
//! (docs/performance.md). Version 1 wrote whole keys (kind `OP_PUT` 1 with key length,
//! value length, key, value; `OP_DELETE` 2 with key length, key); both kinds still decode,
//! so a log left by a version 1 build replays, and the version in the file header keeps a
//! version 1 build from reading a version 2 log's records as damage.

use std::mem::size_of;

use crate::page::{lcp, read_u32, read_u64, write_u32, write_u64};

/// Magic number of a log file.
pub const WAL_MAGIC: [u8; 8] = *b"AIMKVWAL";
/// Log format version: 2 since ops are front-coded (version 1 logs still replay).
pub const WAL_VERSION: u32 = 2;
/// Offset of the format version, after the magic.
const VERSION_AT: usize = WAL_MAGIC.len();
/// Offset of the epoch: a reserved u32 follows the version.
const EPOCH_AT: usize = VERSION_AT + 2 * size_of::<u32>();
/// Offset of the header's checksum, which covers everything before it.
const HEADER_CRC_AT: usize = EPOCH_AT + size_of::<u64>();
/// Bytes of the file header: the checksum and a reserved u32.
pub const FILE_HEADER_LEN: usize = HEADER_CRC_AT + 2 * size_of::<u32>();
/// Offset of a record's checksum.
const RECORD_CRC_AT: usize = 0;
/// Offset of a record's payload length.
const RECORD_LEN_AT: usize = RECORD_CRC_AT + size_of::<u32>();
/// Offset of a record's commit sequence.
const RECORD_SEQ_AT: usize = RECORD_LEN_AT + size_of::<u32>();
/// Offset of a record's synced watermark.
const SYNCED_AT: usize = RECORD_SEQ_AT + size_of::<u64>();
/// Bytes of a record header; the payload follows.
pub const RECORD_HEADER_LEN: usize = SYNCED_AT + size_of::<u64>();
/// Records start at multiples of this.
const ALIGN: usize = 8;
/// Op kind byte of a put.
const OP_PUT: u8 = 1;
/// Op kind byte of a delete.
const OP_DELETE: u8 = 2;
/// Op kind byte of a put whose key is front-coded against the previous op's.
const OP_PUT_SHARED: u8 = 3;
/// Op kind byte of a delete whose key is front-coded against the previous op's.
const OP_DELETE_SHARED: u8 = 4;

/// Mutations in order: a value to put, or None to delete.
pub type Ops = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// One decoded commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Commit sequence.
    pub seq: u64,
    /// Every commit up to this one was durable when the record was written.
    pub synced: u64,
    /// Mutations in order.
    pub ops: Ops,
}

/// Encodes the file header for `epoch`.
pub fn encode_header(epoch: u64) -> [u8; FILE_HEADER_LEN] {
    let mut h = [0u8; FILE_HEADER_LEN];
    h[..VERSION_AT].copy_from_slice(&WAL_MAGIC);
    write_u32(&mut h, VERSION_AT, WAL_VERSION);
    write_u64(&mut h, EPOCH_AT, epoch);
    let crc = crc32c::crc32c(&h[..HEADER_CRC_AT]);
    write_u32(&mut h, HEADER_CRC_AT, crc);
    h
}

/// Why a log file header was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderReject {
    /// The file is shorter than a header.
    Short(usize),
    /// The magic number is not the log's.
    BadMagic,
    /// The checksum does not match the header's bytes.
    Checksum {
        /// Stored checksum.
        stored: u32,
        /// Computed checksum.
        computed: u32,
    },
    /// Written by a newer log format version.
    TooNew(u32),
}

impl std::fmt::Display for HeaderReject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderReject::Short(n) => write!(f, "{n} bytes, shorter than a header"),
            HeaderReject::BadMagic => write!(f, "bad magic"),
            HeaderReject::Checksum { stored, computed } => write!(
                f,
                "header checksum {stored:#010x} stored, {computed:#010x} computed"
            ),
            HeaderReject::TooNew(v) => write!(f, "log format version {v}"),
        }
    }
}

/// Decodes a file header: its epoch, or why it is not one.
pub fn decode_header(h: &[u8]) -> Result<u64, HeaderReject> {
    if h.len() < FILE_HEADER_LEN {
        return Err(HeaderReject::Short(h.len()));
    }
    if h[..VERSION_AT] != WAL_MAGIC {
        return Err(HeaderReject::BadMagic);
    }
    let stored = read_u32(h, HEADER_CRC_AT);
    let computed = crc32c::crc32c(&h[..HEADER_CRC_AT]);
    if stored != computed {
        return Err(HeaderReject::Checksum { stored, computed });
    }
    let v = read_u32(h, VERSION_AT);
    if v > WAL_VERSION {
        return Err(HeaderReject::TooNew(v));
    }
    Ok(read_u64(h, EPOCH_AT))
}

/// True when some record of a file of `epoch` validates behind the header: proof that a
/// file whose header is damaged was written in that epoch.
pub fn holds_record_of(buf: &[u8], epoch: u64) -> bool {
    // Headers that start past the last non-zero byte are zeros (see synced_record_after).
    let starts_before = nonzero_end(buf).min(buf.len().saturating_sub(RECORD_HEADER_LEN - 1));
    (FILE_HEADER_LEN..starts_before)
        .step_by(ALIGN)
        .any(|at| matches!(parse_record(buf, at, epoch), Parsed::Record(..)))
}

/// Appends the payload encoding of one mutation to `payload` (after its op count), its key
/// front-coded against `prev_key`: the key of the op before it in the same record, empty
/// for the first.
pub fn encode_ops(payload: &mut Vec<u8>, prev_key: &[u8], key: &[u8], value: Option<&[u8]>) {
    let shared = lcp(prev_key, key);
    let suffix = &key[shared..];
    payload.push(if value.is_some() {
        OP_PUT_SHARED
    } else {
        OP_DELETE_SHARED
    });
    payload.extend_from_slice(&(shared as u32).to_le_bytes());
    payload.extend_from_slice(&(suffix.len() as u32).to_le_bytes());
    if let Some(v) = value {
        payload.extend_from_slice(&(v.len() as u32).to_le_bytes());
    }
    payload.extend_from_slice(suffix);
    if let Some(v) = value {
        payload.extend_from_slice(v);
    }
}

/// Frames `n_ops` encoded mutations as record `seq`, padded to 8 bytes; `synced` is the
/// newest commit known to be on disk. The tests' way to build a record; the log builds
/// its records in place ([`start_record`], [`seal_record`]).
#[cfg(test)]
pub fn frame_record(epoch: u64, seq: u64, synced: u64, n_ops: u32, ops: &[u8], out: &mut Vec<u8>) {
    start_record(out);
    out.extend_from_slice(ops);
    seal_record(epoch, seq, synced, n_ops, out);
}

/// Offset of the encoded mutations in a record: after its header and the op count.
pub const OPS_AT: usize = RECORD_HEADER_LEN + size_of::<u32>();

/// Clears `out` to a record with room for its header and op count: the mutations are
/// encoded after it with [`encode_ops`], and [`seal_record`] fills the header in place,
/// so that a commit's mutations are written into their record once, not copied into it.
pub fn start_record(out: &mut Vec<u8>) {
    out.clear();
    out.resize(OPS_AT, 0);
}

/// Completes the record [`start_record`] began in `out` (holding `n_ops` mutations after
/// [`OPS_AT`]) as record `seq`: header, checksum, zero padding to 8 bytes.
pub fn seal_record(epoch: u64, seq: u64, synced: u64, n_ops: u32, out: &mut Vec<u8>) {
    debug_assert!(
        out.len() >= OPS_AT,
        "a record is started before it is sealed"
    );
    let len = out.len() - RECORD_HEADER_LEN;
    write_u32(out, RECORD_LEN_AT, len as u32);
    write_u64(out, RECORD_SEQ_AT, seq);
    write_u64(out, SYNCED_AT, synced);
    write_u32(out, RECORD_HEADER_LEN, n_ops);
    let crc = record_crc(epoch, &out[RECORD_LEN_AT..]);
    write_u32(out, RECORD_CRC_AT, crc);
    out.resize(out.len().div_ceil(ALIGN) * ALIGN, 0);
}

/// Bytes [`encode_ops`] appends for a mutation of `key` and `value` (None: a delete) at
/// most: the length when `key` shares nothing with the key before it.
pub fn encoded_op_len(key: &[u8], value: Option<&[u8]>) -> usize {
    let lengths = size_of::<u8>() + 2 * size_of::<u32>();
    match value {
        Some(v) => lengths + size_of::<u32>() + key.len() + v.len(),
        None => lengths + key.len(),
    }
}

fn record_crc(epoch: u64, body: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&epoch.to_le_bytes()), body)
}

/// Why the bytes at an offset are not a record. A plain value, not a message: the scan
/// for records behind a tail tries every 8-byte offset of what is left of a file, and
/// formatting a message for each of them cost more than the open itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadRecord {
    /// Fewer bytes than a record header are left in the file.
    HeaderCutShort,
    /// The header's length runs past the end of the file.
    RunsPastEnd {
        /// The payload length the header gives.
        len: usize,
    },
    /// The stored checksum does not match the record's bytes.
    Checksum {
        /// The checksum in the header.
        stored: u32,
        /// The checksum of the bytes.
        computed: u32,
    },
    /// The checksum matched but the payload's mutations do not decode.
    Payload,
}

impl std::fmt::Display for BadRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::HeaderCutShort => write!(f, "record header cut short"),
            Self::RunsPastEnd { len } => {
                write!(f, "record of {len} bytes runs past the end of the file")
            }
            Self::Checksum { stored, computed } => {
                write!(
                    f,
                    "checksum {stored:#010x} stored, {computed:#010x} computed"
                )
            }
            Self::Payload => write!(f, "payload does not decode"),
        }
    }
}

/// The offset after the last non-zero byte of `buf` (0 when it is all zeros). Compares
/// 4 KiB blocks against zeros first (a memcmp), so a file grown by zeroed chunks is
/// skipped at memory speed, in debug builds too.
pub fn nonzero_end(buf: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    static ZEROS: [u8; BLOCK] = [0; BLOCK];
    let mut end = buf.len();
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        if buf[start..end] != ZEROS[..end - start] {
            let last = buf[start..end].iter().rposition(|&b| b != 0).unwrap_or(0);
            return start + last + 1;
        }
        end = start;
    }
    0
}

/// What lies at an offset of a log file.
#[derive(Debug)]
pub enum Parsed {
    /// A valid record and the offset after it.
    Record(Record, usize),
    /// Nothing more: the end of the file or a zeroed header.
    End,
    /// A damaged or torn record.
    Bad(BadRecord),
}

fn take<'a>(buf: &'a [u8], at: &mut usize, n: usize) -> Option<&'a [u8]> {
    let s = buf.get(*at..*at + n)?;
    *at += n;
    Some(s)
}

/// The u32 at `*at`, moving `at` past it.
fn take_u32(buf: &[u8], at: &mut usize) -> Option<u32> {
    take(buf, at, size_of::<u32>()).map(|bytes| read_u32(bytes, 0))
}

/// The ops of a payload, either version's kinds; None when they do not decode.
fn decode_payload(payload: &[u8]) -> Option<Ops> {
    let mut at = 0;
    let count = take_u32(payload, &mut at)?;
    let mut ops: Ops = Vec::with_capacity(count.min(1 << 16) as usize);
    for _ in 0..count {
        let kind = *take(payload, &mut at, 1)?.first()?;
        let (shared, suffix_len) = match kind {
            OP_PUT | OP_DELETE => (0, take_u32(payload, &mut at)? as usize),
            OP_PUT_SHARED | OP_DELETE_SHARED => (
                take_u32(payload, &mut at)? as usize,
                take_u32(payload, &mut at)? as usize,
            ),
            _ => return None,
        };
        let value_len = match kind {
            OP_PUT | OP_PUT_SHARED => Some(take_u32(payload, &mut at)? as usize),
            _ => None,
        };
        let prev = ops.last().map_or(&[][..], |(k, _)| k.as_slice());
        let mut key = Vec::with_capacity(shared + suffix_len);
        key.extend_from_slice(prev.get(..shared)?);
        key.extend_from_slice(take(payload, &mut at, suffix_len)?);
        let value = match value_len {
            Some(n) => Some(take(payload, &mut at, n)?.to_vec()),
            None => None,
        };
        ops.push((key, value));
    }
    (at == payload.len()).then_some(ops)
}

/// Parses the record at `at` of a file of `epoch`.
pub fn parse_record(buf: &[u8], at: usize, epoch: u64) -> Parsed {
    if at >= buf.len() {
        return Parsed::End;
    }
    let Some(h) = buf.get(at..at + RECORD_HEADER_LEN) else {
        return Parsed::Bad(BadRecord::HeaderCutShort);
    };
    if h == [0; RECORD_HEADER_LEN] {
        return Parsed::End;
    }
    let len = read_u32(h, RECORD_LEN_AT) as usize;
    let end = at + RECORD_HEADER_LEN + len;
    let Some(body) = buf.get(at + RECORD_LEN_AT..end) else {
        return Parsed::Bad(BadRecord::RunsPastEnd { len });
    };
    let stored = read_u32(h, RECORD_CRC_AT);
    let computed = record_crc(epoch, body);
    if stored != computed {
        return Parsed::Bad(BadRecord::Checksum { stored, computed });
    }
    let seq = read_u64(h, RECORD_SEQ_AT);
    let synced = read_u64(h, SYNCED_AT);
    match decode_payload(&buf[at + RECORD_HEADER_LEN..end]) {
        Some(ops) => Parsed::Record(Record { seq, synced, ops }, end.div_ceil(ALIGN) * ALIGN),
        None => Parsed::Bad(BadRecord::Payload),
    }
}

/// The first valid record after `from` (at an 8-byte boundary) whose writer knew that
/// commit `lost` was already on disk: proof that damage at `from` is not a torn tail.
/// With `lost` = 0, any valid record counts.
pub fn synced_record_after(buf: &[u8], from: usize, lost: u64, epoch: u64) -> Option<Record> {
    // A header that starts past the last non-zero byte is all zeros, not a record: stop
    // there (a file grown by zeroed chunks is mostly zeros). Records themselves may end
    // in zero bytes, so the buffer is not cut.
    let starts_before = nonzero_end(buf);
    let mut at = from.div_ceil(ALIGN) * ALIGN + ALIGN;
    while at < starts_before && at + RECORD_HEADER_LEN <= buf.len() {
        if let Parsed::Record(r, _) = parse_record(buf, at, epoch) {
            if r.synced >= lost {
                return Some(r);
            }
        }
        at += ALIGN;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_offsets_are_the_documented_ones() {
        assert_eq!((VERSION_AT, EPOCH_AT, HEADER_CRC_AT), (8, 16, 24));
        assert_eq!(
            (FILE_HEADER_LEN, RECORD_HEADER_LEN, SYNCED_AT),
            (32, 24, 16)
        );
        let h = encode_header(0x0102_0304_0506_0708);
        assert_eq!(&h[..8], b"AIMKVWAL");
        assert_eq!(read_u32(&h, 8), WAL_VERSION);
        assert_eq!(read_u64(&h, 16), 0x0102_0304_0506_0708);
        assert_eq!(read_u32(&h, 24), crc32c::crc32c(&h[..24]));
        assert_eq!(decode_header(&h), Ok(0x0102_0304_0506_0708));
        assert_eq!(&h[12..16], &[0; 4], "reserved");
        assert_eq!(&h[28..32], &[0; 4], "reserved");
    }

    #[test]
    fn nonzero_end_finds_the_last_non_zero_byte_across_blocks() {
        assert_eq!(nonzero_end(&[]), 0);
        assert_eq!(nonzero_end(&[0; 10_000]), 0);
        for at in [0, 1, 4095, 4096, 4097, 9_999] {
            let mut buf = vec![0u8; 10_000];
            buf[at] = 7;
            assert_eq!(nonzero_end(&buf), at + 1, "byte at {at}");
            buf[0] = 1;
            assert_eq!(nonzero_end(&buf), at + 1, "and one at 0");
        }
    }

    #[test]
    fn record_offsets_are_the_documented_ones() {
        assert_eq!(
            (RECORD_CRC_AT, RECORD_LEN_AT, RECORD_SEQ_AT, SYNCED_AT),
            (0, 4, 8, 16)
        );
        assert_eq!((RECORD_HEADER_LEN, ALIGN), (24, 8));
        assert_eq!(
            (OP_PUT, OP_DELETE, OP_PUT_SHARED, OP_DELETE_SHARED),
            (1, 2, 3, 4)
        );
        let mut ops = Vec::new();
        encode_ops(&mut ops, b"", b"key", Some(b"value"));
        encode_ops(&mut ops, b"key", b"kegs", None);
        assert_eq!(
            ops,
            [
                &[3u8][..],
                &0u32.to_le_bytes(),
                &3u32.to_le_bytes(),
                &5u32.to_le_bytes(),
                b"key",
                b"value",
                &[4u8],
                &2u32.to_le_bytes(),
                &2u32.to_le_bytes(),
                b"gs",
            ]
            .concat()
        );
        let mut rec = Vec::new();
        frame_record(9, 0x11, 0x10, 2, &ops, &mut rec);
        let len = size_of::<u32>() + ops.len();
        assert_eq!(read_u32(&rec, 4) as usize, len);
        assert_eq!(read_u64(&rec, 8), 0x11);
        assert_eq!(read_u64(&rec, 16), 0x10);
        assert_eq!(read_u32(&rec, 24), 2, "op count");
        assert_eq!(&rec[28..28 + ops.len()], ops.as_slice());
        assert_eq!(rec.len(), (24 + len).div_ceil(8) * 8);
        assert!(rec[24 + len..].iter().all(|&b| b == 0), "padding");
        let crc = crc32c::crc32c_append(crc32c::crc32c(&9u64.to_le_bytes()), &rec[4..24 + len]);
        assert_eq!(read_u32(&rec, 0), crc);
        assert_eq!(OPS_AT, 28);
        assert_eq!(
            encoded_op_len(b"key", Some(b"value")) + encoded_op_len(b"kegs", None),
            ops.len() + 2,
            "the bound: nothing shared"
        );

        // Built in place (a buffer reused from a longer record), the same bytes.
        let mut in_place = vec![0xAB; 200];
        start_record(&mut in_place);
        encode_ops(&mut in_place, b"", b"key", Some(b"value"));
        encode_ops(&mut in_place, b"key", b"kegs", None);
        seal_record(9, 0x11, 0x10, 2, &mut in_place);
        assert_eq!(in_place, rec);
    }

    #[test]
    fn every_flipped_header_bit_under_the_checksum_is_rejected() {
        let h = encode_header(7);
        for bit in 0..HEADER_CRC_AT * 8 + 32 {
            let mut d = h;
            d[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_header(&d).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn a_file_of_an_epoch_is_recognised_by_its_records() {
        let mut ops = Vec::new();
        encode_ops(&mut ops, b"", b"k", Some(b"v"));
        let mut rec = Vec::new();
        frame_record(5, 1, 0, 1, &ops, &mut rec);
        let mut file = vec![0xAB; FILE_HEADER_LEN];
        file.extend_from_slice(&rec);
        assert!(holds_record_of(&file, 5));
        assert!(!holds_record_of(&file, 4) && !holds_record_of(&file, 6));
        assert!(!holds_record_of(&file[..FILE_HEADER_LEN + 8], 5));
    }

    #[test]
    fn records_round_trip_and_damage_is_detected() {
        let mut ops = Vec::new();
        encode_ops(&mut ops, b"", b"k1", Some(b"v1"));
        encode_ops(&mut ops, b"k1", b"k2", None);
        let mut rec = Vec::new();
        frame_record(3, 7, 6, 2, &ops, &mut rec);
        assert_eq!(rec.len() % 8, 0);
        let mut file = encode_header(3).to_vec();
        assert_eq!(decode_header(&file), Ok(3));
        file.extend_from_slice(&rec);
        match parse_record(&file, FILE_HEADER_LEN, 3) {
            Parsed::Record(r, next) => {
                assert_eq!(r.seq, 7);
                assert_eq!(
                    r.ops,
                    vec![
                        (b"k1".to_vec(), Some(b"v1".to_vec())),
                        (b"k2".to_vec(), None)
                    ]
                );
                assert_eq!(next, file.len());
            }
            other => panic!("expected a record, got {other:?}"),
        }
        let mut torn = file.clone();
        torn.truncate(file.len() - 5);
        assert!(matches!(
            parse_record(&torn, FILE_HEADER_LEN, 3),
            Parsed::Bad(_)
        ));
        assert!(matches!(
            parse_record(&file, FILE_HEADER_LEN, 4),
            Parsed::Bad(_)
        ));
        let mut flipped = file.clone();
        flipped[FILE_HEADER_LEN + 20] ^= 1;
        assert!(matches!(
            parse_record(&flipped, FILE_HEADER_LEN, 3),
            Parsed::Bad(_)
        ));
        flipped.extend_from_slice(&rec);
        assert!(synced_record_after(&flipped, FILE_HEADER_LEN, 0, 3).is_some());
        assert!(synced_record_after(&flipped, FILE_HEADER_LEN, 7, 3).is_none());
    }

    /// The payload of `ops` as a version 1 build wrote it: whole keys, kinds 1 and 2.
    fn version_1_payload(ops: &[(&[u8], Option<&[u8]>)]) -> Vec<u8> {
        let mut p = (ops.len() as u32).to_le_bytes().to_vec();
        for (k, v) in ops {
            p.push(if v.is_some() { OP_PUT } else { OP_DELETE });
            p.extend_from_slice(&(k.len() as u32).to_le_bytes());
            if let Some(v) = v {
                p.extend_from_slice(&(v.len() as u32).to_le_bytes());
            }
            p.extend_from_slice(k);
            if let Some(v) = v {
                p.extend_from_slice(v);
            }
        }
        p
    }

    #[test]
    fn a_version_1_log_still_decodes() {
        let mut h = encode_header(4);
        write_u32(&mut h, VERSION_AT, 1);
        let crc = crc32c::crc32c(&h[..HEADER_CRC_AT]);
        write_u32(&mut h, HEADER_CRC_AT, crc);
        assert_eq!(decode_header(&h), Ok(4), "a version 1 header");
        write_u32(&mut h, VERSION_AT, WAL_VERSION + 1);
        let crc = crc32c::crc32c(&h[..HEADER_CRC_AT]);
        write_u32(&mut h, HEADER_CRC_AT, crc);
        assert_eq!(
            decode_header(&h),
            Err(HeaderReject::TooNew(WAL_VERSION + 1))
        );
        let p = version_1_payload(&[(b"kv/a", Some(b"1")), (b"kv/a/b", None)]);
        assert_eq!(
            decode_payload(&p),
            Some(vec![
                (b"kv/a".to_vec(), Some(b"1".to_vec())),
                (b"kv/a/b".to_vec(), None)
            ])
        );
    }

    #[test]
    fn front_coded_keys_decode_whole_and_a_share_past_the_previous_key_is_refused() {
        let keys: [&[u8]; 5] = [b"kv/m/h0", b"kv/m/h0/h1", b"kv/m/h0/h1/h2", b"kv/m/h9", b""];
        let mut p = (keys.len() as u32).to_le_bytes().to_vec();
        let mut prev: &[u8] = b"";
        for (i, k) in keys.iter().enumerate() {
            let value = (i % 2 == 0).then_some(&b"loc"[..]);
            encode_ops(&mut p, prev, k, value);
            prev = k;
        }
        let v1: Vec<(&[u8], Option<&[u8]>)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, (i % 2 == 0).then_some(&b"loc"[..])))
            .collect();
        let whole = version_1_payload(&v1).len();
        assert!(
            p.len() < whole,
            "{} bytes, {whole} with whole keys",
            p.len()
        );
        let ops = decode_payload(&p).expect("decodes");
        for (i, (k, v)) in ops.iter().enumerate() {
            assert_eq!(k.as_slice(), keys[i]);
            assert_eq!(v.as_deref(), (i % 2 == 0).then_some(&b"loc"[..]));
        }
        // The first op claims a byte of a previous key that does not exist.
        let mut bad = 1u32.to_le_bytes().to_vec();
        encode_ops(&mut bad, b"k", b"kv", None);
        assert_eq!(decode_payload(&bad), None);
    }
}
