//! The two log files, appends, group commit and the switch at checkpoints.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::record::{
    decode_header, encode_header, holds_record_of, nonzero_end, parse_record, seal_record,
    synced_record_after, HeaderReject, Parsed,
};
use super::{Record, WalError, FILE_HEADER_LEN, WAL_VERSION};
use crate::error::{Error, Result};
use crate::pool::lock;
use crate::storage::{Storage, StorageOpener};

/// Names of the two log files in the tree directory.
pub const WAL_FILES: [&str; 2] = ["wal-0.log", "wal-1.log"];

/// Bytes a log file grows by, as zeros, when an append would pass its end. A sync commit
/// is an append and an fdatasync; when the append extends the file, the fdatasync also
/// journals the file's new size. Measured here (engine/examples/fsync_probe.rs), a
/// 200-byte write and fdatasync took 166-180 us extending the file and 126-133 us
/// overwriting bytes already written: so the size changes once a chunk, not once a record.
const GROW_BYTES: u64 = 1 << 20;

/// The most a checkpoint fills the next file with zeros ahead of its epoch (the previous
/// epoch's size, rounded up to [`GROW_BYTES`]): enough for the sync commits between two
/// checkpoints, small beside a bulk load's epoch, which grows by chunks past it.
const PREPARE_MAX_BYTES: u64 = 8 * GROW_BYTES;

/// The OS page cache's page: synced log bytes are advised out of the cache in whole pages.
const PAGE_CACHE_BYTES: u64 = 4096;

/// Appends advise the OS out of its page cache behind them in chunks of this size, synced
/// or not (see [`Wal::chunks_behind`]).
const DROP_BEHIND_BYTES: u64 = 1 << 20;

/// Bytes of one write of zeros when a log file grows or is prepared (see `fill_zeros`).
const FILL_WRITE_BYTES: usize = 4096;

struct Files {
    files: [Arc<dyn Storage>; 2],
    epoch: [u64; 2],
    last_seq: [u64; 2],
    active: usize,
    end: u64,
    bytes: u64,
    /// Length of the active file. Every byte from `end` to it is zero: appends below it
    /// overwrite zeros without changing the file's size.
    capacity: u64,
    /// The inactive file was emptied, given the next epoch's header and filled with
    /// zeros by [`Wal::prepare_next`] after the checkpoint that let its records go: the
    /// switch to it writes nothing.
    prepared: Option<u64>,
    /// Bytes the previous epoch appended: how much the next file is filled ahead.
    last_epoch_bytes: u64,
    /// The active file's bytes below this were synced and advised out of the OS page
    /// cache (whole pages only: see [`Wal::wait_durable`]).
    dropped_to: u64,
    /// Whole chunks of [`DROP_BEHIND_BYTES`] of the active file advised out behind the
    /// appends (see [`Wal::chunks_behind`]).
    advised_chunks: u64,
    /// The file the last switch left, synced, and its length: advised out of the OS page
    /// cache by [`Wal::drop_switched_out`].
    switched_out: Option<(Arc<dyn Storage>, u64)>,
}

struct SyncState {
    synced: u64,
    in_progress: bool,
    failed: Option<String>,
}

/// The write-ahead log.
pub struct Wal {
    state: Mutex<Files>,
    sync: Mutex<SyncState>,
    synced_cv: Condvar,
    appended: AtomicU64,
    /// Records appended since open.
    pub records: AtomicU64,
    /// Bytes appended since open.
    pub bytes: AtomicU64,
    /// fdatasync calls made for commits (group commit shares them).
    pub syncs: AtomicU64,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal").finish_non_exhaustive()
    }
}

/// What opening the log found.
pub struct WalOpened {
    /// The log.
    pub wal: Wal,
    /// Every intact record, in commit order.
    pub records: Vec<Record>,
    /// Torn tails zeroed (0 or 1).
    pub torn_tails: u64,
    /// Damaged file headers rewritten from the epoch their records prove.
    pub repaired_headers: u64,
}

/// Parses one file: its records and where they end. Damage is a torn tail (zeroed)
/// unless a later record proves the damaged commit had already reached the disk, in which
/// case the log is corrupt before its tail.
fn scan_file(
    path: &Path,
    buf: &[u8],
    epoch: u64,
    prev_seq: u64,
    torn: &mut u64,
) -> Result<(Vec<Record>, u64)> {
    let mut out: Vec<Record> = Vec::new();
    let mut at = FILE_HEADER_LEN;
    loop {
        let bad = match parse_record(buf, at, epoch) {
            Parsed::Record(r, next) => {
                out.push(r);
                at = next;
                continue;
            }
            Parsed::End => None,
            Parsed::Bad(reason) => Some(reason),
        };
        let lost = out.last().map_or(prev_seq, |r| r.seq).max(prev_seq) + 1;
        if synced_record_after(buf, at, lost, epoch).is_some() {
            return Err(WalError::CorruptBeforeTail {
                file: path.to_path_buf(),
                offset: at as u64,
                reason: bad.map_or_else(|| "zeroed record header".to_string(), |r| r.to_string()),
            }
            .into());
        }
        if at < nonzero_end(buf) {
            *torn += 1;
        }
        return Ok((out, at as u64));
    }
}

/// The epoch of a file whose header did not decode. A file whose bytes after the header
/// are all zero (or absent) holds nothing: it was being reset when the power failed, and a
/// reset syncs the header before any record is written behind it (`Ok(None)`). Otherwise
/// the header is damaged; the records behind it were written in an epoch next to the
/// other file's, and the one whose records validate is the file's (`Ok(Some(epoch))`).
/// With no such epoch, `Err` carries the bytes that cannot be accounted for.
fn recover_epoch(buf: &[u8], other: Option<u64>) -> std::result::Result<Option<u64>, u64> {
    let body = buf.get(FILE_HEADER_LEN..).unwrap_or(&[]);
    if nonzero_end(body) == 0 {
        return Ok(None);
    }
    let candidates = other
        .into_iter()
        .flat_map(|e| [e.checked_add(1), e.checked_sub(1)])
        .flatten();
    let mut proven = candidates.filter(|&e| holds_record_of(buf, e));
    match (proven.next(), proven.next()) {
        (Some(e), None) => Ok(Some(e)),
        _ => Err(body.len() as u64),
    }
}

impl Wal {
    /// Opens (creating when missing) both log files in `dir` and reads every intact
    /// record. A torn tail of the newest file is zeroed; damage before it is an error.
    /// `checkpointed_seq` is the data file's durable checkpoint: commits up to it need no
    /// record, and the file that held them may already have been emptied for the next
    /// epoch, so damage proves a loss only where a later record's writer knew a commit
    /// after it to be synced.
    pub fn open(
        opener: &dyn StorageOpener,
        dir: &Path,
        checkpointed_seq: u64,
    ) -> Result<WalOpened> {
        let files = [
            opener.open(&dir.join(WAL_FILES[0]), true)?,
            opener.open(&dir.join(WAL_FILES[1]), true)?,
        ];
        let mut bufs = Vec::with_capacity(2);
        let mut epochs: [Option<u64>; 2] = [None, None];
        // What an earlier process wrote may still sit in the OS cache: make it durable
        // before treating it as the baseline ("synced") of this run.
        for f in &files {
            f.sync()?;
        }
        let mut headers = Vec::with_capacity(2);
        for f in &files {
            let len = f.len()? as usize;
            let mut buf = vec![0u8; len];
            f.read_at(&mut buf, 0)?;
            headers.push(decode_header(&buf));
            bufs.push(buf);
        }
        let mut repaired_headers = 0;
        for i in 0..2 {
            epochs[i] = match &headers[i] {
                Ok(epoch) => Some(*epoch),
                Err(HeaderReject::TooNew(v)) => {
                    return Err(WalError::TooNew {
                        file: files[i].path().to_path_buf(),
                        found: *v,
                        supported: WAL_VERSION,
                    }
                    .into())
                }
                Err(reject) => {
                    let epoch = recover_epoch(&bufs[i], headers[1 - i].as_ref().ok().copied())
                        .map_err(|bytes| WalError::DamagedHeader {
                            file: files[i].path().to_path_buf(),
                            reason: reject.to_string(),
                            bytes,
                        })?;
                    if let Some(e) = epoch {
                        // The records prove the epoch: put the header back as it was.
                        let header = encode_header(e);
                        files[i].write_at(&header, 0)?;
                        files[i].sync()?;
                        bufs[i][..FILE_HEADER_LEN].copy_from_slice(&header);
                        repaired_headers += 1;
                    }
                    epoch
                }
            };
        }
        let mut order: Vec<usize> = (0..2).filter(|&i| epochs[i].is_some()).collect();
        order.sort_by_key(|&i| epochs[i]);
        let mut records = Vec::new();
        let mut torn = 0;
        let mut last_seq = [0u64; 2];
        let mut end = FILE_HEADER_LEN as u64;
        let mut capacity = end;
        for (n, &i) in order.iter().enumerate() {
            let newest = n + 1 == order.len();
            let prev = records
                .last()
                .map_or(0, |r: &Record| r.seq)
                .max(checkpointed_seq);
            let epoch = epochs[i].unwrap_or(0);
            let (recs, stop) = scan_file(files[i].path(), &bufs[i], epoch, prev, &mut torn)?;
            last_seq[i] = recs.last().map_or(0, |r| r.seq);
            if newest {
                end = stop;
                // A torn tail is zeroed, not cut off: the file keeps its length (and the
                // zeros it was filled with), so the next appends overwrite in place, and
                // every byte past the end stays zero.
                let torn_until = nonzero_end(&bufs[i]) as u64;
                if torn_until > stop {
                    let zeros = vec![0u8; (torn_until - stop) as usize];
                    files[i].write_at(&zeros, stop)?;
                    files[i].sync()?;
                }
                capacity = (bufs[i].len() as u64).max(stop);
            }
            records.extend(recs);
        }
        // Records the durable checkpoint holds are not replayed, and their file may be in
        // any state of being emptied for the next epoch: a power loss while
        // `prepare_next` wrote its zeros can keep some of its writes and lose others, so
        // an old file can come back with a record zeroed between two it kept. Only the
        // records after the checkpoint must follow one another.
        records.retain(|r| r.seq > checkpointed_seq);
        for w in records.windows(2) {
            if w[1].seq != w[0].seq + 1 {
                return Err(WalError::Gap {
                    file: files[order[order.len() - 1]].path().to_path_buf(),
                    expected: w[0].seq + 1,
                    found: w[1].seq,
                }
                .into());
            }
        }
        let (active, epoch) = match order.last() {
            Some(&i) => (i, [epochs[0].unwrap_or(0), epochs[1].unwrap_or(0)]),
            None => {
                files[0].set_len(0)?;
                files[0].write_at(&encode_header(1), 0)?;
                files[0].sync()?;
                files[1].set_len(0)?;
                files[1].sync()?;
                capacity = FILE_HEADER_LEN as u64;
                (0, [1, 0])
            }
        };
        let appended = records.last().map_or(0, |r| r.seq);
        let wal = Wal {
            state: Mutex::new(Files {
                files,
                epoch,
                last_seq,
                active,
                end,
                bytes: 0,
                capacity,
                prepared: None,
                last_epoch_bytes: 0,
                dropped_to: 0,
                advised_chunks: 0,
                switched_out: None,
            }),
            sync: Mutex::new(SyncState {
                synced: appended,
                in_progress: false,
                failed: None,
            }),
            synced_cv: Condvar::new(),
            appended: AtomicU64::new(appended),
            records: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
        };
        Ok(WalOpened {
            wal,
            records,
            torn_tails: torn,
            repaired_headers,
        })
    }

    /// Appends commit `seq` (`n_ops` mutations encoded in `ops`) and hands it to the OS:
    /// the tests' way in; the tree builds its records in place ([`Wal::append_started`]).
    #[cfg(test)]
    pub fn append(&self, seq: u64, n_ops: u32, ops: &[u8]) -> Result<()> {
        let mut record = Vec::new();
        super::start_record(&mut record);
        record.extend_from_slice(ops);
        self.append_started(seq, n_ops, &mut record)
    }

    /// Appends commit `seq`, built in place: `record` was begun with
    /// [`start_record`](super::start_record) and holds `n_ops` encoded mutations after
    /// it; this seals it (header and checksum) and appends it, without copying it.
    pub fn append_started(&self, seq: u64, n_ops: u32, record: &mut Vec<u8>) -> Result<()> {
        let mut st = lock(&self.state);
        let synced = lock(&self.sync).synced;
        let epoch = st.epoch[st.active];
        seal_record(epoch, seq, synced, n_ops, record);
        self.write_record(&mut st, seq, record)?;
        let behind = Self::chunks_behind(&mut st);
        drop(st);
        if let Some((file, from, len)) = behind {
            file.drop_cached(from, len);
        }
        Ok(())
    }

    /// The log's bytes to advise out of the OS page cache behind the appends, once they
    /// pass a chunk boundary: the chunks completed since the last advice, whose first
    /// advice starts their write to the device, and the chunk advised last time, written
    /// by now, which the second advice drops. Without a sync after every commit (`Wal {
    /// sync: false }`), nothing else would let the log's pages go before the next
    /// checkpoint, and under a memory cgroup tens of megabytes of them pushed out the data
    /// file's pages that readers miss on (docs/performance.md, sixteenth session). The
    /// chunk being appended to is never advised: a partial write to a page not cached
    /// would first read it from the device.
    fn chunks_behind(st: &mut Files) -> Option<(Arc<dyn Storage>, u64, u64)> {
        let chunks = st.end / DROP_BEHIND_BYTES;
        if chunks <= st.advised_chunks {
            return None;
        }
        let from = st.advised_chunks.saturating_sub(1) * DROP_BEHIND_BYTES;
        st.advised_chunks = chunks;
        let to = chunks * DROP_BEHIND_BYTES;
        if to <= st.dropped_to {
            // Synced and advised out already (`Wal::drop_synced`, a sync per commit).
            return None;
        }
        Some((st.files[st.active].clone(), from, to - from))
    }

    /// Writes a sealed record at the end of the active file, growing the file by a chunk
    /// of zeros first when the record would pass its end.
    fn write_record(&self, st: &mut Files, seq: u64, frame: &[u8]) -> Result<()> {
        let active = st.active;
        let len = frame.len() as u64;
        if st.end + len > st.capacity {
            let grown = (st.end + len).div_ceil(GROW_BYTES) * GROW_BYTES;
            let from = st.capacity.max(st.end);
            fill_zeros(st.files[active].as_ref(), from, grown)?;
            st.capacity = grown;
        }
        st.files[active].write_at(frame, st.end)?;
        st.end += len;
        st.bytes += len;
        st.last_seq[active] = seq;
        self.appended.store(seq, Ordering::Release);
        self.records.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(len, Ordering::Relaxed);
        Ok(())
    }

    /// Returns once commit `seq` is on disk. Concurrent callers share one fdatasync: the
    /// first becomes the leader and syncs everything appended so far; the others wait.
    pub fn wait_durable(&self, seq: u64) -> Result<()> {
        let mut s = lock(&self.sync);
        loop {
            if let Some(reason) = &s.failed {
                return Err(Error::WritesRefused {
                    reason: reason.clone(),
                });
            }
            if s.synced >= seq {
                return Ok(());
            }
            if s.in_progress {
                s = self.synced_cv.wait(s).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            s.in_progress = true;
            drop(s);
            let (file, target, epoch, end) = {
                let st = lock(&self.state);
                (
                    st.files[st.active].clone(),
                    self.appended.load(Ordering::Acquire),
                    st.epoch[st.active],
                    st.end,
                )
            };
            let r = file.sync();
            let synced = r.is_ok();
            s = lock(&self.sync);
            s.in_progress = false;
            match r {
                Ok(()) => {
                    s.synced = s.synced.max(target);
                    self.syncs.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => s.failed = Some(format!("fsync of the log failed: {e}")),
            }
            self.synced_cv.notify_all();
            if synced {
                // After the waiters are woken: the advice is off their path.
                drop(s);
                self.drop_synced(&file, epoch, end);
                s = lock(&self.sync);
            }
        }
    }

    /// Advises the OS to drop the log's synced whole pages below `end` (of the file that
    /// was active in `epoch`) from its page cache: a log is read only by recovery, and
    /// under a memory cgroup its pages would push out the pages readers miss on. The page
    /// holding `end` stays: the next append writes into it, and a partial write to a page
    /// not cached would first read it from the device.
    fn drop_synced(&self, file: &Arc<dyn Storage>, epoch: u64, end: u64) {
        let (from, to) = {
            let mut st = lock(&self.state);
            if st.epoch[st.active] != epoch {
                // Switched since: the switch advised the whole file out.
                return;
            }
            let to = end / PAGE_CACHE_BYTES * PAGE_CACHE_BYTES;
            let from = st.dropped_to;
            if to <= from {
                return;
            }
            st.dropped_to = to;
            (from, to)
        };
        file.drop_cached(from, to - from);
    }

    /// Marks the log as failed: every waiting and later commit is refused.
    pub fn fail(&self, reason: String) {
        let mut s = lock(&self.sync);
        s.failed.get_or_insert(reason);
        self.synced_cv.notify_all();
    }

    /// Syncs every record appended so far, sharing a sync in progress as commits do. A
    /// checkpoint calls it before its switch and outside the writer's lock: the switch
    /// syncs the active file while every commit waits, and with asynchronous commits that
    /// file may hold tens of megabytes not yet on disk (and on ext4 a sync also writes
    /// the data file's newly allocated blocks), so the switch's own sync is left only the
    /// records appended in between.
    pub fn sync_appended(&self) -> Result<()> {
        self.wait_durable(self.appended.load(Ordering::Acquire))
    }

    /// Advises the file the last switch left out of the OS page cache: its records are on
    /// disk and only recovery reads them. Called after the switch, off the commit path.
    pub fn drop_switched_out(&self) {
        let switched = lock(&self.state).switched_out.take();
        if let Some((file, end)) = switched {
            file.drop_cached(0, end);
        }
    }

    /// At a checkpoint's start: syncs the active file and switches appends to the other,
    /// which [`Wal::prepare_next`] made ready (or which is emptied here). Skipped (false) when the other still holds commits newer than the
    /// durable checkpoint `durable_seq` (an earlier checkpoint failed).
    pub fn rotate(&self, durable_seq: u64) -> Result<bool> {
        let mut st = lock(&self.state);
        let other = 1 - st.active;
        if st.last_seq[other] > durable_seq {
            return Ok(false);
        }
        let active = st.active;
        if let Err(e) = st.files[active].sync() {
            self.fail(format!("fsync of the log failed: {e}"));
            return Err(e.into());
        }
        {
            let mut s = lock(&self.sync);
            s.synced = s.synced.max(st.last_seq[active]);
        }
        // Every record of the file is on disk and only recovery would read them: the file
        // leaves the OS page cache in `drop_switched_out`, after the caller's lock.
        st.switched_out = Some((st.files[active].clone(), st.end));
        let epoch = st.epoch[active] + 1;
        let capacity = match st.prepared.take() {
            Some(capacity) => capacity,
            None => {
                // The emptied file and its new header reach the disk before any record of
                // the new epoch is written, so a power loss can never revive the file's
                // old records.
                if let Err(e) = reset(st.files[other].as_ref(), epoch, FILE_HEADER_LEN as u64) {
                    self.fail(format!("resetting the log file failed: {e}"));
                    return Err(e);
                }
                FILE_HEADER_LEN as u64
            }
        };
        st.last_epoch_bytes = st.bytes;
        st.epoch[other] = epoch;
        st.last_seq[other] = 0;
        st.active = other;
        st.end = FILE_HEADER_LEN as u64;
        st.bytes = 0;
        st.capacity = capacity;
        st.dropped_to = 0;
        st.advised_chunks = 0;
        Ok(true)
    }

    /// After a checkpoint made commits up to `durable_seq` durable, off the commit path:
    /// empties the inactive file, writes the next epoch's header and fills it with as
    /// many zeros as the last epoch appended (up to [`PREPARE_MAX_BYTES`]), and syncs it,
    /// so that the next switch writes nothing and the next epoch's appends overwrite
    /// zeros. Does nothing while the file still holds commits newer than `durable_seq`.
    /// Checkpoints call it one at a time, so the file is not switched to meanwhile.
    ///
    /// A power loss during it or after it leaves a newest file with no records: opening
    /// takes it as the active file and replays the other's records first, which is the
    /// state right after a switch.
    pub fn prepare_next(&self, durable_seq: u64) -> Result<()> {
        let (file, epoch, capacity) = {
            let st = lock(&self.state);
            let other = 1 - st.active;
            if st.prepared.is_some() || st.last_seq[other] > durable_seq {
                return Ok(());
            }
            let wanted = st.last_epoch_bytes.max(st.bytes) + FILE_HEADER_LEN as u64;
            let capacity = wanted
                .div_ceil(GROW_BYTES)
                .clamp(1, PREPARE_MAX_BYTES / GROW_BYTES);
            (
                st.files[other].clone(),
                st.epoch[st.active] + 1,
                capacity * GROW_BYTES,
            )
        };
        reset(file.as_ref(), epoch, capacity)?;
        let mut st = lock(&self.state);
        // Only a switch changes the active file's epoch, and only a checkpoint switches.
        if st.epoch[st.active] + 1 == epoch {
            st.prepared = Some(capacity);
        }
        Ok(())
    }

    /// Bytes appended since the last switch: what the next checkpoint lets go of.
    pub fn pending_bytes(&self) -> u64 {
        lock(&self.state).bytes
    }
}

/// Empties `file`, writes `epoch`'s header and zeros up to `capacity`, and syncs it.
fn reset(file: &dyn Storage, epoch: u64, capacity: u64) -> Result<()> {
    file.set_len(0)?;
    file.write_at(&encode_header(epoch), 0)?;
    fill_zeros(file, FILE_HEADER_LEN as u64, capacity)?;
    file.sync()?;
    Ok(())
}

/// Writes zeros to `file` from `from` up to `until`, a chunk at a time.
fn fill_zeros(file: &dyn Storage, from: u64, until: u64) -> Result<()> {
    // One page a write, not one write for the whole chunk: the OS cache keeps the pages a
    // write creates in units of that write's size (large folios), and every later append
    // of a few hundred bytes into such a unit walked all of its blocks in the file
    // system's write path (perf: `ext4_block_write_begin`, a fifth of a compare-and-swap's
    // time on data that fits, with a 1 MiB unit).
    let zeros = [0u8; FILL_WRITE_BYTES];
    let mut at = from;
    while at < until {
        // Up to the next page boundary, so that every later write lands page-aligned.
        let n = (FILL_WRITE_BYTES as u64 - at % FILL_WRITE_BYTES as u64).min(until - at);
        file.write_at(&zeros[..n as usize], at)?;
        at += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::SimDisk;
    use crate::wal::encode_ops;

    fn dir() -> &'static Path {
        Path::new("/sim/tree")
    }

    fn open(disk: &SimDisk) -> WalOpened {
        Wal::open(disk, dir(), 0).expect("open the log")
    }

    /// The ops of commit `seq`: one put of a key and value named after it.
    fn ops_of(seq: u64) -> (Vec<u8>, Vec<u8>) {
        (
            format!("key-{seq}").into_bytes(),
            vec![seq as u8; seq as usize * 3],
        )
    }

    fn append(wal: &Wal, seq: u64) {
        let (k, v) = ops_of(seq);
        let mut ops = Vec::new();
        encode_ops(&mut ops, b"", &k, Some(&v));
        wal.append(seq, 1, &ops).expect("append");
    }

    /// A new log on a new simulated disk, holding commits 1..=`commits`.
    fn log_with(commits: u64) -> (SimDisk, Wal) {
        let disk = SimDisk::new();
        let wal = open(&disk).wal;
        for seq in 1..=commits {
            append(&wal, seq);
        }
        (disk, wal)
    }

    fn seqs(records: &[Record]) -> Vec<u64> {
        records.iter().map(|r| r.seq).collect()
    }

    fn raw(disk: &SimDisk, file: usize) -> Vec<u8> {
        disk.read_raw(&dir().join(WAL_FILES[file]))
            .expect("a log file")
    }

    #[test]
    fn a_new_log_starts_in_epoch_one_with_nothing_to_replay() {
        let disk = SimDisk::new();
        let opened = open(&disk);
        assert!(opened.records.is_empty());
        assert_eq!((opened.torn_tails, opened.repaired_headers), (0, 0));
        assert_eq!(raw(&disk, 0), encode_header(1));
        assert!(raw(&disk, 1).is_empty());
        assert_eq!(opened.wal.pending_bytes(), 0);
    }

    #[test]
    fn synced_whole_pages_of_the_log_leave_the_os_cache_and_nothing_unsynced_does() {
        let disk = SimDisk::new();
        let wal = open(&disk).wal;
        let path = |i: usize| dir().join(WAL_FILES[i]);
        // Commits of 3,000-odd bytes: each sync passes at least one page boundary.
        let mut seq = 0;
        let mut ends = Vec::new();
        for _ in 0..4 {
            seq += 1;
            let mut ops = Vec::new();
            encode_ops(&mut ops, b"", b"k", Some(&[seq as u8; 3000]));
            wal.append(seq, 1, &ops).expect("append");
            wal.wait_durable(seq).expect("sync");
            ends.push(lock(&wal.state).end);
        }
        let dropped = disk.dropped_ranges(&path(0));
        assert!(
            dropped.iter().all(|d| !d.2),
            "only synced bytes are advised out"
        );
        // Contiguous whole pages from the start, ending at the page holding the last end.
        let mut at = 0;
        for &(offset, len, _) in &dropped {
            assert_eq!((offset, len % PAGE_CACHE_BYTES), (at, 0));
            at += len;
        }
        let last = *ends.last().expect("four ends");
        assert_eq!(at, last / PAGE_CACHE_BYTES * PAGE_CACHE_BYTES);
        assert!(at > 0 && at <= last);

        // An appended record not yet synced is not advised out.
        seq += 1;
        append(&wal, seq);
        assert_eq!(disk.dropped_ranges(&path(0)), dropped);

        // A switch syncs the whole file, which then leaves the cache all of it (after the
        // caller's lock); the next file starts from its beginning again.
        let end = lock(&wal.state).end;
        assert!(wal.rotate(0).expect("rotate"));
        assert_eq!(disk.dropped_ranges(&path(0)), dropped);
        wal.drop_switched_out();
        let after = disk.dropped_ranges(&path(0));
        assert_eq!(after.last(), Some(&(0, end, false)));
        assert_eq!(lock(&wal.state).dropped_to, 0);
    }

    #[test]
    fn syncing_what_is_appended_leaves_the_switch_nothing_unsynced() {
        let (_disk, wal) = log_with(5);
        let syncs = wal.syncs.load(Ordering::Relaxed);
        wal.sync_appended().expect("sync");
        assert_eq!(lock(&wal.sync).synced, 5);
        assert_eq!(wal.syncs.load(Ordering::Relaxed), syncs + 1);
        // Nothing appended since: no second sync.
        wal.sync_appended().expect("sync");
        assert_eq!(wal.syncs.load(Ordering::Relaxed), syncs + 1);
    }

    #[test]
    fn appended_records_are_replayed_in_order_after_a_reopen() {
        let (disk, wal) = log_with(5);
        assert_eq!(wal.records.load(Ordering::Relaxed), 5);
        let bytes = wal.bytes.load(Ordering::Relaxed);
        assert_eq!(wal.pending_bytes(), bytes);
        // The file grew by one chunk of zeros: the records, then zeros.
        let file = raw(&disk, 0);
        assert_eq!(file.len() as u64, GROW_BYTES);
        let end = FILE_HEADER_LEN + bytes as usize;
        assert!(nonzero_end(&file) <= end && nonzero_end(&file) > end - 8);
        drop(wal);
        let opened = open(&disk);
        assert_eq!(seqs(&opened.records), vec![1, 2, 3, 4, 5]);
        for r in &opened.records {
            let (k, v) = ops_of(r.seq);
            assert_eq!(r.ops, vec![(k, Some(v))]);
        }
        assert_eq!(opened.torn_tails, 0);
        // Appends go on behind the replayed records.
        append(&opened.wal, 6);
        drop(opened);
        assert_eq!(seqs(&open(&disk).records), (1..=6).collect::<Vec<_>>());
    }

    #[test]
    fn a_torn_tail_stops_replay_at_the_last_whole_record_and_is_zeroed() {
        let (disk, wal) = log_with(2);
        let whole = nonzero_end(&raw(&disk, 0));
        append(&wal, 3);
        drop(wal);
        let full = raw(&disk, 0);
        let end = nonzero_end(&full);
        // Inside the record header, just past it, and inside the payload (the last eight
        // bytes may be padding alone); the file cut there, and torn inside its length.
        for (cut, keep_length) in [
            (whole + 5, false),
            (whole + 24, false),
            (end - 8, false),
            (whole + 24, true),
        ] {
            let path = dir().join(WAL_FILES[0]);
            let mut torn = full[..cut].to_vec();
            if keep_length {
                torn.resize(full.len(), 0);
            }
            disk.write_raw(&path, torn);
            let opened = open(&disk);
            assert_eq!(seqs(&opened.records), vec![1, 2], "cut at {cut}");
            assert_eq!(opened.torn_tails, 1);
            let after = raw(&disk, 0);
            assert!(nonzero_end(&after) <= whole, "the torn bytes are zeroed");
            assert_eq!(after[..whole], full[..whole]);
            assert_eq!(after.len(), if keep_length { full.len() } else { cut });
            // The next commit takes the torn one's place.
            append(&opened.wal, 3);
            drop(opened);
            let again = open(&disk);
            assert_eq!(seqs(&again.records), vec![1, 2, 3]);
            assert_eq!(again.torn_tails, 0);
        }
    }

    /// Flips bits of byte `at` of log file `file`, as a bad sector would.
    fn flip(disk: &SimDisk, file: usize, at: usize) {
        let mut bytes = raw(disk, file);
        bytes[at] ^= 0x41;
        disk.write_raw(&dir().join(WAL_FILES[file]), bytes);
    }

    /// Appends commits 1 and 2 (the second after a sync of the first when
    /// `synced_between`), damages record 1 and reopens the log.
    fn reopen_with_record_one_damaged(synced_between: bool) -> Result<WalOpened> {
        let (disk, wal) = log_with(1);
        assert!(
            raw(&disk, 0).len() > FILE_HEADER_LEN + 30,
            "inside record 1"
        );
        if synced_between {
            wal.wait_durable(1).expect("sync");
        }
        append(&wal, 2);
        drop(wal);
        flip(&disk, 0, FILE_HEADER_LEN + 30);
        Wal::open(&disk, dir(), 0)
    }

    #[test]
    fn damage_followed_by_a_record_that_saw_it_synced_is_not_a_torn_tail() {
        assert!(matches!(
            reopen_with_record_one_damaged(true),
            Err(Error::Wal(WalError::CorruptBeforeTail { .. }))
        ));
    }

    #[test]
    fn damage_that_no_later_record_vouches_for_is_a_torn_tail() {
        // Record 2 was written before commit 1 was known to be synced: both may have
        // been in flight together, so damage to record 1 loses both, as a torn tail.
        let opened = reopen_with_record_one_damaged(false).expect("open");
        assert!(opened.records.is_empty());
        assert_eq!(opened.torn_tails, 1);
    }

    #[test]
    fn one_sync_covers_everything_appended_and_only_synced_records_survive_a_crash() {
        let (disk, wal) = log_with(2);
        wal.wait_durable(1).expect("sync");
        assert_eq!(wal.syncs.load(Ordering::Relaxed), 1);
        wal.wait_durable(2).expect("already synced");
        assert_eq!(
            wal.syncs.load(Ordering::Relaxed),
            1,
            "the first sync covered 2"
        );
        append(&wal, 3);
        drop(wal);
        disk.crash();
        assert_eq!(seqs(&open(&disk).records), vec![1, 2]);
    }

    #[test]
    fn a_failed_log_refuses_every_later_commit() {
        let (_disk, wal) = log_with(1);
        wal.fail("a test said so".into());
        match wal.wait_durable(1) {
            Err(Error::WritesRefused { reason }) => assert_eq!(reason, "a test said so"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn rotation_switches_files_in_a_new_epoch_and_replay_reads_both_in_order() {
        let (disk, wal) = log_with(2);
        assert!(wal.rotate(0).expect("rotate"));
        assert_eq!(wal.pending_bytes(), 0);
        assert_eq!(raw(&disk, 1), encode_header(2), "the other file, emptied");
        append(&wal, 3);
        append(&wal, 4);
        assert!(wal.pending_bytes() > 0);
        let end = FILE_HEADER_LEN + wal.pending_bytes() as usize;
        assert!(raw(&disk, 1)[end..].iter().all(|&b| b == 0));
        // The other file holds commits 1 and 2: a switch back needs a checkpoint of 2.
        assert!(!wal.rotate(1).expect("refused"));
        drop(wal);
        let opened = open(&disk);
        assert_eq!(seqs(&opened.records), vec![1, 2, 3, 4]);
        // Back to the first file, in epoch 3: commits 1 and 2 are let go.
        assert!(opened.wal.rotate(2).expect("rotate"));
        assert_eq!(raw(&disk, 0), encode_header(3));
        append(&opened.wal, 5);
        drop(opened);
        assert_eq!(seqs(&open(&disk).records), vec![3, 4, 5]);
    }

    #[test]
    fn a_prepared_file_is_switched_to_without_a_write_and_keeps_its_length() -> Result<()> {
        let (disk, wal) = log_with(2);
        // Commits 1 and 2 are in file 0, the active one: nothing to prepare yet
        // until the switch, and the switch resets file 1 itself.
        assert!(wal.rotate(2)?);
        append(&wal, 3);
        wal.wait_durable(3)?;
        // File 0's records (up to 2) are durable in a checkpoint: it is prepared for the
        // next epoch, 3, filled with zeros.
        wal.prepare_next(2)?;
        let prepared = raw(&disk, 0);
        assert_eq!(prepared.len() as u64, GROW_BYTES);
        assert_eq!(prepared[..FILE_HEADER_LEN], encode_header(3));
        assert!(nonzero_end(&prepared) <= FILE_HEADER_LEN);
        // A power loss now: file 0 is the newest and empty; commit 3 is replayed from
        // file 1, and the appends go to file 0.
        let lost_power = disk.fork();
        lost_power.crash();
        let opened = Wal::open(&lost_power, dir(), 2)?;
        assert_eq!(seqs(&opened.records), vec![3]);
        drop(opened);
        // The switch to the prepared file writes nothing, and appends overwrite its zeros.
        assert!(wal.rotate(3)?);
        assert_eq!(raw(&disk, 0), prepared, "no write at the switch");
        append(&wal, 4);
        assert_eq!(raw(&disk, 0).len() as u64, GROW_BYTES, "appended in place");
        // File 1 holds commit 3: not prepared until a checkpoint covers it.
        let file_1 = raw(&disk, 1);
        wal.prepare_next(2)?;
        assert_eq!(raw(&disk, 1), file_1);
        drop(wal);
        let opened = Wal::open(&disk, dir(), 0)?;
        assert_eq!(seqs(&opened.records), vec![3, 4]);
        assert_eq!(opened.torn_tails, 0);
        Ok(())
    }

    #[test]
    fn a_checkpointed_file_half_emptied_by_a_power_loss_is_not_a_gap() {
        // Commits 1 to 3 in file 0, a checkpoint of 3, commit 4 in file 1.
        let (disk, wal) = log_with(1);
        let start_2 = nonzero_end(&raw(&disk, 0));
        append(&wal, 2);
        let end_2 = nonzero_end(&raw(&disk, 0));
        append(&wal, 3);
        assert!(wal.rotate(3).expect("rotate"));
        append(&wal, 4);
        drop(wal);
        // `prepare_next` was filling file 0 with zeros, a page a write, when the power
        // failed: the write over commit 2 reached the disk, the header's did not.
        let mut half = raw(&disk, 0);
        half[start_2..end_2].fill(0);
        disk.write_raw(&dir().join(WAL_FILES[0]), half);
        let opened = Wal::open(&disk, dir(), 3).expect("open after the checkpoint of 3");
        assert_eq!(seqs(&opened.records), vec![4]);
        // Without that checkpoint, commit 2 is lost, and opening says so.
        let err = Wal::open(&disk, dir(), 0).err().expect("a gap");
        assert!(
            err.to_string().contains("gap") || format!("{err:?}").contains("Gap"),
            "{err}"
        );
    }

    #[test]
    fn a_damaged_header_is_rebuilt_from_the_epoch_its_records_prove() {
        let (disk, wal) = log_with(2);
        wal.rotate(0).expect("rotate");
        append(&wal, 3);
        drop(wal);
        flip(&disk, 0, 3);
        let opened = open(&disk);
        assert_eq!(opened.repaired_headers, 1);
        assert_eq!(seqs(&opened.records), vec![1, 2, 3]);
        assert_eq!(raw(&disk, 0)[..FILE_HEADER_LEN], encode_header(1));
    }
}
