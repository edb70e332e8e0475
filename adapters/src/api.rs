//! The engine-neutral interface: the [`KvEngine`] trait and the small types it speaks.
//!
//! Keys and values are byte strings ordered bytewise (memcmp order, shorter first on a tie),
//! which is the order every engine here uses natively, so results are comparable across them.

use crate::error::Result;

/// One key-value pair as handed to [`KvEngine::bulk_load`].
pub type KvPair = (Vec<u8>, Vec<u8>);

/// How much memory an engine may use for caching data, in bytes.
///
/// Each adapter maps it to its engine's own knob (block cache, page cache, shared_buffers);
/// docs/fairness.md lists the exact mapping and what cannot be made equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CacheBudget(pub u64);

impl CacheBudget {
    /// A budget of `n` mebibytes.
    pub const fn mib(n: u64) -> Self {
        CacheBudget(n * 1024 * 1024)
    }

    /// The budget in bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

/// What a successful write promises about surviving a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Durability {
    /// No log and no fsync: data reaches disk at [`KvEngine::checkpoint`] (or whenever the engine
    /// or OS writes it back). A crash may lose any write since the last checkpoint.
    None,
    /// Logged (where the engine has a log) and handed to the OS, but not fsynced per commit:
    /// survives a process crash, may lose recent commits on an OS crash or power loss.
    Async,
    /// fsync (or the engine's equivalent) before each commit returns.
    Sync,
}

impl Durability {
    /// All three modes, weakest first.
    pub const ALL: [Durability; 3] = [Durability::None, Durability::Async, Durability::Sync];
}

/// How a replicated engine (etcd) serves reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ReadConsistency {
    /// Every read sees every write acknowledged before it began (etcd: a quorum read
    /// through the leader).
    #[default]
    Linearizable,
    /// Reads are served by the member asked, from its own state, which may lag the leader.
    Serializable,
}

/// Options common to every engine's `open`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenOptions {
    /// Memory the engine may use for caching.
    pub cache: CacheBudget,
    /// The durability of every write except [`KvEngine::bulk_load`] (always the fastest path).
    pub durability: Durability,
    /// How many bytes of keys and values the caller expects to store; LMDB sizes its map from it.
    pub expected_data_bytes: u64,
    /// PostgreSQL connection string; when `None` the `AI_META_PG_URL` environment variable is
    /// used, and when that is unset too a throwaway local cluster is started. A blank string
    /// forces the throwaway cluster whatever the environment says.
    pub pg_url: Option<String>,
    /// The page cache counts against the same budget as the engine's cache (the cgroup
    /// budget mode): each engine reads the way that suits it there. This engine keeps its
    /// clean pages in place in the page cache instead of copying them into its pool
    /// (`DataReads::Shared`: one copy of each page in the one budget; a copy per miss,
    /// through the map, with `pread` or with O_DIRECT, was measured slower); RocksDB stays
    /// buffered (its `use_direct_reads` was measured slower); LMDB, redb, SQLite and
    /// PostgreSQL read as they always do.
    /// docs/fairness.md lists each.
    pub direct_reads: bool,
    /// The memory everything the engine uses counts against, page cache included, when
    /// the caller knows it (the cgroup budget mode: the cache budget plus the runner's
    /// overhead); None otherwise. With `direct_reads`, this engine reads past the page
    /// cache (`DataReads::Direct`) instead of sharing it when the expected data is more
    /// than twice this: the page cache can then keep too little of it for its hits to pay
    /// for the page fault each miss costs (docs/fairness.md).
    pub memory_limit_bytes: Option<u64>,
    /// Most lookups will ask for keys that are not stored: longest-prefix lookups over a
    /// chain index, where most candidate prefixes of a query miss. An engine with an
    /// optional filter of stored keys builds one, out of the same `cache` budget (this
    /// engine: `TreeConfig::key_filter_bits(10)`); RocksDB keeps its Bloom filters on
    /// every store anyway; LMDB, redb, SQLite and PostgreSQL have no such filter.
    pub absent_key_lookups: bool,
    /// etcd client URLs (`http://127.0.0.1:2379`, ...) of a running cluster; `None` (or
    /// no non-blank URL) starts a throwaway cluster in the engine's directory.
    pub etcd_endpoints: Option<Vec<String>>,
    /// How etcd serves reads (the other engines have one way).
    pub read_consistency: ReadConsistency,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            cache: CacheBudget::mib(64),
            durability: Durability::Async,
            expected_data_bytes: 256 * 1024 * 1024,
            pg_url: None,
            direct_reads: false,
            memory_limit_bytes: None,
            absent_key_lookups: false,
            etcd_endpoints: None,
            read_consistency: ReadConsistency::Linearizable,
        }
    }
}

/// What an engine can do natively, so callers can pick methods and label results honestly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// [`LpmMethod::Native`] works; otherwise it returns [`crate::Error::Unsupported`].
    pub native_longest_prefix: bool,
    /// [`KvEngine::list_delimited`] is answered by the engine itself rather than the shared
    /// seek-past-the-common-prefix emulation.
    pub native_delimiter_listing: bool,
    /// The [`Durability`] modes `open` accepts for this engine.
    pub durability: &'static [Durability],
    /// [`KvEngine::io_counters`] returns `Some`.
    pub io_counters: bool,
    /// The longest key `put`, `write_batch` and `bulk_load` accept, in bytes, as this
    /// engine is configured here (`None`: no limit a caller can reach). A longer key is
    /// refused with [`crate::Error::InvalidKey`]; docs/fairness.md lists each engine's.
    pub max_key_len: Option<usize>,
}

impl Capabilities {
    /// A compared engine's: every durability mode, longest-prefix lookup and delimiter
    /// listing through the shared emulations, its own I/O counters when it has them, and
    /// its key limit.
    pub const fn emulated(io_counters: bool, max_key_len: Option<usize>) -> Capabilities {
        Capabilities {
            native_longest_prefix: false,
            native_delimiter_listing: false,
            durability: &Durability::ALL,
            io_counters,
            max_key_len,
        }
    }
}

/// The result of [`KvEngine::compare_and_swap`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CasOutcome {
    /// The stored value matched `expected` and was replaced by `new`.
    Ok,
    /// The stored value did not match `expected`; nothing was written.
    Conflict {
        /// The value found instead (`None`: the key was absent).
        current: Option<Vec<u8>>,
    },
}

/// One entry of a delimiter listing, as in S3 ListObjectsV2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListItem<'a> {
    /// A key under the prefix whose remainder holds no delimiter.
    Key(&'a [u8]),
    /// `prefix` plus the remainder of one or more keys up to and including the first
    /// delimiter, emitted once for all the keys it rolls up.
    CommonPrefix(&'a [u8]),
}

/// How [`KvEngine::longest_prefix`] finds the longest stored key that is a prefix of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LpmMethod {
    /// The engine's own longest-prefix lookup; [`crate::Error::Unsupported`] where it has none.
    Native,
    /// The engine's own lookup restricted to prefixes that end where the query holds
    /// `delimiter` (or at its end): the deepest stored ancestor of a path. The same
    /// candidates as [`LpmMethod::Bisect`], but right on any key set.
    NativeAtBoundary {
        /// The byte that ends each candidate prefix.
        delimiter: u8,
    },
    /// Seek to the greatest key <= query; if it is a prefix of the query, done; otherwise shrink
    /// the query to the longest common prefix of the two and repeat. Correct on any key set.
    PredecessorSeek,
    /// The naive bisect: binary search over the candidate lengths (every position where the
    /// query holds `delimiter`, plus the whole query) with one `get` per probe.
    ///
    /// Only valid on key sets that are prefix-closed along the query: whenever a candidate
    /// prefix is stored, every shorter candidate prefix is stored too (a KV-cache chain store
    /// that keeps `kv`, `kv/model`, `kv/model/h1`, `kv/model/h1/h2`, ...). On other key sets it
    /// can miss the answer; use [`LpmMethod::PredecessorSeek`] there.
    Bisect {
        /// The byte that ends each candidate prefix (`b'/'` for the kv-chain keys).
        delimiter: u8,
    },
}

/// Engine-internal I/O and cache counters, cumulative since open. Counters an engine does not
/// track stay 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IoCounters {
    /// Block-cache lookups that found the block.
    pub cache_hits: u64,
    /// Block-cache lookups that had to read the block from a file.
    pub cache_misses: u64,
    /// Of the misses, index blocks (including index partitions).
    pub index_misses: u64,
    /// Of the misses, filter blocks (including filter partitions).
    pub filter_misses: u64,
    /// Of the misses, data blocks.
    pub data_misses: u64,
    /// Point lookups a bloom filter answered "absent" without reading a data block.
    pub bloom_useful: u64,
    /// Pages (or blocks) read from storage, readahead included.
    pub pages_read: u64,
    /// Bytes read from storage by the engine.
    pub bytes_read: u64,
    /// Whole-frame reads (aimeta's full-frame reproduction mode only).
    pub full_frame_reads: u64,
    /// Pages fetched by readahead before being asked for.
    pub readahead_pages: u64,
    /// Of `pages_read`, pages this engine read around a miss while its pool was filling
    /// with a store that fits it (aimeta's fill read-around).
    pub readaround_pages: u64,
}

/// One write of an atomic batch ([`KvEngine::write_batch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Insert or overwrite `key`.
    Put {
        /// The key.
        key: &'a [u8],
        /// Its new value.
        value: &'a [u8],
    },
    /// Remove `key` (absent is not an error).
    Delete {
        /// The key.
        key: &'a [u8],
    },
}

impl<'a> BatchOp<'a> {
    /// The key written.
    pub fn key(&self) -> &'a [u8] {
        match *self {
            BatchOp::Put { key, .. } | BatchOp::Delete { key } => key,
        }
    }
}

/// One interface over every compared engine.
///
/// Every adapter in this crate is `Send + Sync`, so one engine can be shared across benchmark
/// threads behind an `Arc`; engines whose handles are not `Sync` (SQLite, PostgreSQL) guard each
/// with a mutex, which each adapter documents. Callbacks passed to the scan methods must not call
/// back into the same engine: adapters hold a transaction, iterator or lock while visiting.
///
/// Keys are non-empty (LMDB cannot store an empty key); `put` and `bulk_load` reject an empty
/// key with [`crate::Error::InvalidKey`], and reads treat it as absent.
pub trait KvEngine: Send + Sync {
    /// The engine's name as accepted by [`crate::EngineKind`]'s `FromStr`.
    fn name(&self) -> &'static str;

    /// What this engine does natively.
    fn capabilities(&self) -> Capabilities;

    /// Loads strictly ascending, unique pairs through the engine's fastest load path; every key
    /// must also be greater than every key already stored (an empty store always qualifies), so
    /// loads can be split into several calls. Returns how many pairs were loaded.
    ///
    /// Not atomic as a whole and not meant to run concurrently with other writes. Input that is
    /// out of order fails with [`crate::Error::UnsortedInput`]; pairs before it may be stored.
    fn bulk_load(&self, pairs: &mut dyn Iterator<Item = KvPair>) -> Result<u64>;

    /// Copies the value of `key` into `out` (cleared first) and returns whether it was found.
    /// Reuses `out`'s allocation; `out` is left empty on a miss.
    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;

    /// Inserts or overwrites one key.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;

    /// Removes one key; removing an absent key is not an error.
    fn delete(&self, key: &[u8]) -> Result<()>;

    /// Applies `ops` in order as one atomic commit, through the engine's own batch or
    /// transaction (one durability sync for the batch): after a crash either every write
    /// of it is stored or none. A put with an invalid key refuses the whole batch before
    /// anything is written; deleting an empty or absent key is a no-op, as in `delete`.
    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()>;

    /// Atomically: if the stored value equals `expected` (`None` = absent), store `new`
    /// (`None` = delete) and return [`CasOutcome::Ok`]; otherwise return the current value.
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome>;

    /// Visits up to `limit` keys starting with `prefix`, ascending, with their values; returns
    /// how many were visited.
    fn scan_prefix(
        &self,
        prefix: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize>;

    /// Visits up to `limit` keys >= `start_inclusive`, ascending, with their values.
    fn scan_range(
        &self,
        start_inclusive: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize>;

    /// Lists the keys under `prefix` S3-style: a key whose remainder after `prefix` holds
    /// `delimiter` is rolled up into one [`ListItem::CommonPrefix`] (prefix + remainder up to
    /// and including the delimiter). Items come ascending; only items strictly greater than
    /// `start_after` are emitted, so passing the last item of one page continues the listing.
    /// Returns how many items were visited (at most `limit`).
    fn list_delimited(
        &self,
        prefix: &[u8],
        start_after: Option<&[u8]>,
        delimiter: u8,
        limit: usize,
        visit: &mut dyn FnMut(ListItem<'_>),
    ) -> Result<usize>;

    /// Finds the longest stored key that is a prefix of `query` (the query itself included),
    /// copies its value into `out` and returns its length; `None` when no stored key is a
    /// prefix of `query`.
    fn longest_prefix(
        &self,
        query: &[u8],
        method: LpmMethod,
        out: &mut Vec<u8>,
    ) -> Result<Option<usize>>;

    /// Counts keys in `[start_inclusive, end_exclusive)`; 0 when the range is empty.
    fn count_range(&self, start_inclusive: &[u8], end_exclusive: &[u8]) -> Result<u64>;

    /// Brings the engine to a settled on-disk state (flush, checkpoint, sync) so that sizes and
    /// cold reads measured afterwards do not depend on pending background work.
    fn checkpoint(&self) -> Result<()>;

    /// Bytes the engine's data occupies on disk (see each adapter for what is counted).
    fn size_on_disk(&self) -> Result<u64>;

    /// Cumulative cache and I/O counters where the engine exposes them.
    fn io_counters(&self) -> Option<IoCounters>;

    /// Switches the durability of every later write to `durability` without reopening, where
    /// the engine can: returns `Ok(true)` once every write that starts after the call returns
    /// runs under the new mode (writes in flight finish under the old one), and `Ok(false)`
    /// when this engine, or this particular change, needs the engine reopened with
    /// [`OpenOptions::durability`] instead; then nothing changed. Writes acknowledged before
    /// the call keep the promise they were made under.
    ///
    /// The default returns `Ok(false)`: an engine must be reopened to change its durability
    /// unless its adapter implements this (and documents which changes it accepts).
    fn set_durability(&self, durability: Durability) -> Result<bool> {
        let _ = durability;
        Ok(false)
    }
}
