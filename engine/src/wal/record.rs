//! Log file and record layouts.
//!
//! File header, `FILE_HEADER_LEN` = 32 bytes:
//!
//! | offset | size | field                                   |
//! |--------|------|-----------------------------------------|
//! | 0      | 8    | magic `AIMKVWAL`                        |
//! | 8      | 4    | log format version (1)                  |
//! | 12     | 4    | reserved, 0                             |
//! | 16     | 8    | epoch: +1 at each switch of files       |
//! | 24     | 4    | crc32c of bytes 0..24                   |
//! | 28     | 4    | reserved, 0                             |
//!
//! Records follow, each starting at a multiple of 8:
//!
//! | offset | size | field                                             |
//! |--------|------|---------------------------------------------------|
//! | 0      | 4    | crc32c of the file's epoch (8 bytes) then bytes 4..24+len: a record left from another use of the file fails it |
//! | 4      | 4    | payload length `len`                              |
//! | 8      | 8    | commit sequence                                   |
//! | 16     | 8    | synced: every commit up to this one was on disk when this record was written |
//! | 24     | len  | payload: op count u32, then per op: kind u8 (1 put, 2 delete), key length u32, [value length u32], key, [value] |
//! | ...    |      | zero padding to a multiple of 8                   |

use std::mem::size_of;

use crate::page::{read_u32, read_u64, write_u32, write_u64};

/// Magic number of a log file.
pub const WAL_MAGIC: [u8; 8] = *b"AIMKVWAL";
/// Log format version.
pub const WAL_VERSION: u32 = 1;
const EPOCH_AT: usize = 16;
const HEADER_CRC_AT: usize = 24;
/// Bytes of the file header.
pub const FILE_HEADER_LEN: usize = 32;
/// Bytes of a record header.
pub const RECORD_HEADER_LEN: usize = 2 * size_of::<u32>() + 2 * size_of::<u64>();
const SYNCED_AT: usize = 16;
const ALIGN: usize = 8;
const OP_PUT: u8 = 1;
const OP_DELETE: u8 = 2;

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
    h[..8].copy_from_slice(&WAL_MAGIC);
    write_u32(&mut h, 8, WAL_VERSION);
    write_u64(&mut h, EPOCH_AT, epoch);
    let crc = crc32c::crc32c(&h[..HEADER_CRC_AT]);
    write_u32(&mut h, HEADER_CRC_AT, crc);
    h
}

/// Decodes a file header: its epoch, or why it is not one.
pub fn decode_header(h: &[u8]) -> Result<u64, String> {
    if h.len() < FILE_HEADER_LEN {
        return Err("shorter than a header".into());
    }
    if h[..8] != WAL_MAGIC {
        return Err("bad magic".into());
    }
    if read_u32(h, HEADER_CRC_AT) != crc32c::crc32c(&h[..HEADER_CRC_AT]) {
        return Err("header checksum mismatch".into());
    }
    let v = read_u32(h, 8);
    if v > WAL_VERSION {
        return Err(format!(
            "log format version {v} is newer than this build's {WAL_VERSION}"
        ));
    }
    Ok(read_u64(h, EPOCH_AT))
}

/// Appends the payload encoding of one mutation to `payload` (after its op count).
pub fn encode_ops(payload: &mut Vec<u8>, key: &[u8], value: Option<&[u8]>) {
    match value {
        Some(v) => {
            payload.push(OP_PUT);
            payload.extend_from_slice(&(key.len() as u32).to_le_bytes());
            payload.extend_from_slice(&(v.len() as u32).to_le_bytes());
            payload.extend_from_slice(key);
            payload.extend_from_slice(v);
        }
        None => {
            payload.push(OP_DELETE);
            payload.extend_from_slice(&(key.len() as u32).to_le_bytes());
            payload.extend_from_slice(key);
        }
    }
}

/// Frames `n_ops` encoded mutations as record `seq`, padded to 8 bytes; `synced` is the
/// newest commit known to be on disk.
pub fn frame_record(epoch: u64, seq: u64, synced: u64, n_ops: u32, ops: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let len = size_of::<u32>() + ops.len();
    out.resize(RECORD_HEADER_LEN, 0);
    write_u32(out, 4, len as u32);
    write_u64(out, 8, seq);
    write_u64(out, SYNCED_AT, synced);
    out.extend_from_slice(&n_ops.to_le_bytes());
    out.extend_from_slice(ops);
    let crc = record_crc(epoch, &out[4..]);
    write_u32(out, 0, crc);
    out.resize(out.len().div_ceil(ALIGN) * ALIGN, 0);
}

fn record_crc(epoch: u64, body: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&epoch.to_le_bytes()), body)
}

/// What lies at an offset of a log file.
#[derive(Debug)]
pub enum Parsed {
    /// A valid record and the offset after it.
    Record(Record, usize),
    /// Nothing more: the end of the file or a zeroed header.
    End,
    /// A damaged or torn record.
    Bad(String),
}

fn take<'a>(buf: &'a [u8], at: &mut usize, n: usize) -> Option<&'a [u8]> {
    let s = buf.get(*at..*at + n)?;
    *at += n;
    Some(s)
}

fn decode_payload(p: &[u8]) -> Option<Ops> {
    let mut at = 0;
    let n = u32::from_le_bytes(take(p, &mut at, 4)?.try_into().ok()?);
    let mut ops = Vec::with_capacity(n.min(1 << 16) as usize);
    for _ in 0..n {
        let kind = *take(p, &mut at, 1)?.first()?;
        let klen = u32::from_le_bytes(take(p, &mut at, 4)?.try_into().ok()?) as usize;
        match kind {
            OP_PUT => {
                let vlen = u32::from_le_bytes(take(p, &mut at, 4)?.try_into().ok()?) as usize;
                let k = take(p, &mut at, klen)?.to_vec();
                let v = take(p, &mut at, vlen)?.to_vec();
                ops.push((k, Some(v)));
            }
            OP_DELETE => ops.push((take(p, &mut at, klen)?.to_vec(), None)),
            _ => return None,
        }
    }
    (at == p.len()).then_some(ops)
}

/// Parses the record at `at` of a file of `epoch`.
pub fn parse_record(buf: &[u8], at: usize, epoch: u64) -> Parsed {
    if at >= buf.len() {
        return Parsed::End;
    }
    let Some(h) = buf.get(at..at + RECORD_HEADER_LEN) else {
        return Parsed::Bad("record header cut short".into());
    };
    if h.iter().all(|&b| b == 0) {
        return Parsed::End;
    }
    let len = read_u32(h, 4) as usize;
    let end = at + RECORD_HEADER_LEN + len;
    let Some(body) = buf.get(at + 4..end) else {
        return Parsed::Bad(format!(
            "record of {len} bytes runs past the end of the file"
        ));
    };
    let stored = read_u32(h, 0);
    let computed = record_crc(epoch, body);
    if stored != computed {
        return Parsed::Bad(format!(
            "checksum {stored:#010x} stored, {computed:#010x} computed"
        ));
    }
    let seq = read_u64(h, 8);
    let synced = read_u64(h, SYNCED_AT);
    match decode_payload(&buf[at + RECORD_HEADER_LEN..end]) {
        Some(ops) => Parsed::Record(Record { seq, synced, ops }, end.div_ceil(ALIGN) * ALIGN),
        None => Parsed::Bad("payload does not decode".into()),
    }
}

/// The first valid record after `from` (at an 8-byte boundary) whose writer knew that
/// commit `lost` was already on disk: proof that damage at `from` is not a torn tail.
/// With `lost` = 0, any valid record counts.
pub fn synced_record_after(buf: &[u8], from: usize, lost: u64, epoch: u64) -> Option<Record> {
    let mut at = from.div_ceil(ALIGN) * ALIGN + ALIGN;
    while at + RECORD_HEADER_LEN <= buf.len() {
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
    fn records_round_trip_and_damage_is_detected() {
        let mut ops = Vec::new();
        encode_ops(&mut ops, b"k1", Some(b"v1"));
        encode_ops(&mut ops, b"k2", None);
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
}
