//! `Tree`: the shared handle. One writer at a time (a mutex), any number of readers that
//! never wait: each read takes the current version (an atomic pointer load) and walks
//! immutable pages. Commits copy the pages they change, publish a new version, and free
//! replaced pages once no snapshot and no recoverable checkpoint can reach them.

use std::sync::Arc;

use super::background::{Background, Signal};
use super::batch::WriteBatch;
use super::config::TreeConfig;
use super::open::open;
use super::readable::{ReadView, Readable};
use super::shared::Shared;
use super::snapshot::Snapshot;
use crate::btree::{check_delete_key, check_key, check_value, CheckReport, Mutation, WriteTxn};
use crate::error::{OpenError, Result};
use crate::pool::Metrics;

/// A compare-and-swap found another value than the one expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CasConflict {
    /// The value stored now (None: the key is absent).
    pub current: Option<Vec<u8>>,
}

/// An embedded ordered key-value store: a copy-on-write B+tree of 4 KiB pages in 512 KiB
/// frames under a page-granular buffer pool. Cheap to clone; `Send + Sync`. Its reads
/// are those of [`Readable`], each on the latest commit; writes are its own methods.
#[derive(Clone)]
pub struct Tree {
    pub(crate) shared: Arc<Shared>,
    _background: Arc<Background>,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree")
            .field("dir", &self.shared.dir())
            .finish_non_exhaustive()
    }
}

impl Readable for Tree {
    /// Each read sees the latest commit at the moment it starts.
    #[inline]
    fn read_view(&self) -> ReadView<'_> {
        ReadView::current(&self.shared)
    }
}

impl Tree {
    /// Opens the tree in `config`'s directory, creating it when the directory is new or
    /// empty, and replays what its log holds beyond the last checkpoint. The errors are
    /// those of opening ([`OpenError`]), which `?` converts into [`crate::Error`].
    pub fn open(config: TreeConfig) -> Result<Tree, OpenError> {
        let signal = Arc::new(Signal::default());
        let (shared, log) = Shared::new(&config, open(&config)?, signal.clone());
        let shared = Arc::new(shared);
        if config.key_filter_bits > 0 {
            // Before the replay: the filter must hold the checkpoint's keys, and the
            // replayed commits add theirs.
            let snapshot = Snapshot::new(shared.clone());
            shared.open_key_filter(|filter| {
                for item in snapshot.scan_keys().iter() {
                    filter.insert(item?.as_bytes());
                }
                Ok(())
            })?;
        }
        shared.recover(log)?;
        if config.warm_inner_levels {
            shared.warm();
        }
        let weak = Arc::downgrade(&shared);
        let checkpoint = move || match weak.upgrade() {
            Some(shared) => {
                // A failure poisons the tree and is reported to its writers.
                let _ = shared.checkpoint();
                true
            }
            None => false,
        };
        let background = Background::start(
            checkpoint,
            signal,
            config.checkpoint_interval,
            config.background_checkpoints,
        );
        Ok(Tree {
            shared,
            _background: Arc::new(background),
        })
    }

    /// A consistent read view of the tree as of the latest commit.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.shared.clone())
    }

    /// Inserts or replaces `key`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        self.write(|txn| txn.apply(Mutation::Put(key, value)).map(|_| ()))
    }

    /// Removes `key`; returns whether it was present.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        if !check_delete_key(key)? {
            return Ok(false);
        }
        self.write(|txn| txn.apply(Mutation::Delete(key)))
    }

    /// Sets `key` to `new` (None deletes it) only if its current value is `expected`
    /// (None: absent). On a mismatch nothing changes and the current value comes back.
    pub fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), CasConflict>> {
        check_key(key)?;
        if let Some(v) = new {
            check_value(v)?;
        }
        let m = match new {
            Some(v) => Mutation::Put(key, v),
            None => Mutation::Delete(key),
        };
        self.write(|txn| {
            Ok(txn
                .compare_and_apply(m, expected)?
                .map(|_| ())
                .map_err(|current| CasConflict { current }))
        })
    }

    /// Applies every operation of `batch` in order, atomically: the tree ends as if they
    /// ran one after another (for a repeated key the last one wins), and the log records
    /// them in that order. They reach the pages sorted by key, each page changed once.
    pub fn apply_batch(&self, batch: &WriteBatch) -> Result<()> {
        self.apply(&Mutation::all_of(&batch.ops))
    }

    /// [`Tree::apply_batch`] on operations that borrow their keys and values: for a
    /// caller that already holds them, it saves copying each into a [`WriteBatch`].
    pub fn apply(&self, mutations: &[Mutation<'_>]) -> Result<()> {
        for m in mutations {
            match *m {
                Mutation::Put(k, v) => {
                    check_key(k)?;
                    check_value(v)?;
                }
                // An over-long key is absent: its delete is a no-op mutation.
                Mutation::Delete(k) => {
                    check_delete_key(k)?;
                }
            }
        }
        self.write(|txn| txn.apply_all(mutations).map(|_| ()))
    }

    /// Runs `f` in a write transaction and commits what it changed.
    fn write<R>(&self, f: impl FnOnce(&mut WriteTxn<'_>) -> Result<R>) -> Result<R> {
        self.shared.write(f)
    }

    /// Loads sorted, duplicate-free pairs into an empty tree: full leaves written to
    /// adjacent pages, then a checkpoint. Returns the number of entries loaded.
    pub fn bulk_load<I, K, V>(&self, items: I) -> Result<u64>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        self.shared.bulk_load(items)
    }

    /// Writes every change to the data file and makes it durable: dirty pages, the free
    /// list, fsync, then the next superblock copy, fsync. After it returns, a reopen
    /// finds exactly the current contents.
    pub fn checkpoint(&self) -> Result<()> {
        self.shared.checkpoint()
    }

    /// Walks every page of the current version and checks the tree's invariants.
    pub fn check_integrity(&self) -> Result<CheckReport> {
        self.shared.check_integrity()
    }

    /// Counters and sizes, readable at any moment.
    pub fn metrics(&self) -> Metrics {
        self.shared.metrics()
    }

    /// Bytes of the data file on disk.
    pub fn size_on_disk(&self) -> Result<u64> {
        self.shared.size_on_disk()
    }

    /// The tree's directory.
    pub fn dir(&self) -> &std::path::Path {
        self.shared.dir()
    }
}
