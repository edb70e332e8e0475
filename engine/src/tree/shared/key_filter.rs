//! The stored-key filter's life in a tree: loaded from its file or rebuilt from the keys
//! when the tree opens, replaced by a filter sized to the data at a bulk load, written at
//! checkpoints when it changed, and charged to the pool's budget.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Shared;
use crate::btree::Version;
use crate::error::{Result, StorageError};
use crate::filter::{self, KeyFilter, FILTER_FILE};
use crate::pool::lock;
use crate::tree::config::MIN_CACHE_PAGES;

/// Largest filter file read back (2^31 keys at 32 bits a key); a longer one is damaged.
const MAX_FILE_BYTES: u64 = 1 << 33;

impl Shared {
    /// Gives the current version (the durable checkpoint's, before the log is replayed)
    /// its stored-key filter: the one in the filter file when that file holds this
    /// checkpoint's keys at the configured bits a key, otherwise a new one that `rebuild`
    /// fills with every key of the version (the replay then adds what the log holds).
    pub fn open_key_filter(&self, rebuild: impl FnOnce(&KeyFilter) -> Result<()>) -> Result<()> {
        if self.key_filter_bits == 0 {
            return Ok(());
        }
        let v = self.current.load_full();
        let path = self.dir.join(FILTER_FILE);
        let filter = match self.read_key_filter(&path, v.seq) {
            // Past half again the keys it was sized for, its false positives have more than
            // tripled (about 1 % to 4 % at 10 bits a key): rebuilt at the size the tree needs.
            Some(f)
                if f.bits_per_key() == self.key_filter_bits
                    && v.entries <= f.capacity_keys() + f.capacity_keys() / 2 =>
            {
                self.key_filter_written.store(f.added(), Ordering::Relaxed);
                f
            }
            _ => {
                // A quarter of headroom for the keys put before the next open resizes it.
                let f = KeyFilter::new(v.entries + v.entries / 4, self.key_filter_bits);
                rebuild(&f)?;
                self.stats
                    .key_filter_rebuilds
                    .fetch_add(1, Ordering::Relaxed);
                self.write_key_filter(&f, v.seq);
                f
            }
        };
        self.charge(&filter);
        let mut w = lock(&self.writer);
        let cur = self.current.load_full();
        self.publish(
            &mut w,
            Version::new(cur.seq, cur.root.clone(), cur.height, cur.entries)
                .with_key_lengths(cur.key_lengths)
                .with_key_filter(Some(Arc::new(filter))),
        );
        Ok(())
    }

    /// Takes the filter's memory out of the pool's budget.
    pub(super) fn charge(&self, filter: &KeyFilter) {
        let page = self.pool.geometry().page_bytes() as u64;
        let pages = filter.bytes().div_ceil(page) as usize;
        let min = MIN_CACHE_PAGES as usize;
        self.pool
            .set_capacity_pages(self.budget_pages.saturating_sub(pages).max(min));
    }

    /// The filter in the file at `path`, when it is whole and holds checkpoint `seq`'s
    /// keys; `None` otherwise (the caller rebuilds: the file is derived data).
    fn read_key_filter(&self, path: &Path, seq: u64) -> Option<KeyFilter> {
        if !self.opener.exists(path) {
            return None;
        }
        let file = self.opener.open(path, false).ok()?;
        let len = file.len().ok()?;
        if len > MAX_FILE_BYTES {
            return None;
        }
        let mut bytes = vec![0u8; len as usize];
        file.read_at(&mut bytes, 0).ok()?;
        filter::decode(&bytes, seq).ok()
    }

    /// Writes `filter` as checkpoint `seq`'s, unless it gained no key since it was last
    /// written. A failure is counted, not raised: the file is derived, and the next open
    /// rebuilds the filter when the file does not match the checkpoint.
    pub(super) fn write_key_filter(&self, filter: &KeyFilter, seq: u64) {
        let added = filter.added();
        if self.key_filter_written.load(Ordering::Relaxed) == added {
            return;
        }
        let bytes = filter::encode(filter, seq);
        let path = self.dir.join(FILTER_FILE);
        let written = (|| -> Result<(), StorageError> {
            let file = self.opener.open(&path, true)?;
            file.set_len(0)?;
            file.write_at(&bytes, 0)?;
            file.sync()
        })();
        match written {
            Ok(()) => self.key_filter_written.store(added, Ordering::Relaxed),
            Err(_) => {
                self.stats
                    .key_filter_write_failures
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
