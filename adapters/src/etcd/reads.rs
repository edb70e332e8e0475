//! The ordered reads of the etcd adapter: point gets, ranges in pages, the descending seek
//! the predecessor-seek emulation needs, and the `keys_only` view the listing emulation
//! walks.

use super::{EtcdEngine, PAGE_MAX, PAGE_MIN};
use crate::emul::{self, OrderedRead};
use crate::error::Result;
use etcd_client::{GetOptions, SortOrder, SortTarget};

impl OrderedRead for EtcdEngine {
    fn engine_name(&self) -> &'static str {
        self.name
    }

    fn point_get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        out.clear();
        if key.is_empty() {
            return Ok(false);
        }
        let opts = self
            .serializable
            .then(|| GetOptions::new().with_serializable());
        let mut kv = self.kv.clone();
        let resp = self.call("get", kv.get(self.full(key), opts))?;
        match resp.kvs().first() {
            Some(p) => {
                out.extend_from_slice(p.value());
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Descending ranges with limit 1 whose lower bound drops 1, 2, 4, ... bytes of `key`,
    /// then the smallest key: etcd 3.4 sorts a whole range before it applies the limit.
    fn seek_le(&self, key: &[u8], key_out: &mut Vec<u8>, val_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        val_out.clear();
        let mut strip = 1usize;
        loop {
            let lo: &[u8] = key
                .get(..key.len().saturating_sub(strip))
                .unwrap_or_default();
            if let Some((k, v)) = self.last_in(lo, key, false)? {
                key_out.extend_from_slice(&k);
                val_out.extend_from_slice(&v);
                return Ok(true);
            }
            if lo.is_empty() {
                return Ok(false);
            }
            strip = strip.saturating_mul(2);
        }
    }

    /// A count first (an empty store needs no sort), then the whole space sorted descending.
    fn last_key(&self, key_out: &mut Vec<u8>) -> Result<bool> {
        key_out.clear();
        if self.count_from(&[])? == 0 {
            return Ok(false);
        }
        let opts = self
            .range_opts(self.space_end())
            .with_sort(SortTarget::Key, SortOrder::Descend)
            .with_limit(1)
            .with_keys_only();
        let mut kv = self.kv.clone();
        let resp = self.call("last key", kv.get(self.full(&[]), Some(opts)))?;
        match resp.kvs().first() {
            Some(p) => {
                key_out.extend_from_slice(self.strip(p.key()));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn walk(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        batch_hint: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        self.walk_ranges(start, end, batch_hint, false, visit)
    }
}

/// The engine as the listing emulation sees it: its walks are `keys_only` ranges (values
/// come back empty), since a listing returns keys and common prefixes only.
pub(super) struct KeysOnly<'e>(pub(super) &'e EtcdEngine);

impl OrderedRead for KeysOnly<'_> {
    fn engine_name(&self) -> &'static str {
        self.0.name
    }

    fn point_get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.0.point_get(key, out)
    }

    fn seek_le(&self, key: &[u8], key_out: &mut Vec<u8>, val_out: &mut Vec<u8>) -> Result<bool> {
        self.0.seek_le(key, key_out, val_out)
    }

    fn last_key(&self, key_out: &mut Vec<u8>) -> Result<bool> {
        self.0.last_key(key_out)
    }

    fn walk(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        batch_hint: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        self.0.walk_ranges(start, end, batch_hint, true, visit)
    }
}

impl EtcdEngine {
    /// The greatest stored key in `[lo, key]` with its value, by a range sorted descending.
    pub(super) fn last_in(
        &self,
        lo: &[u8],
        key: &[u8],
        keys_only: bool,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let end = emul::key_successor(&self.full(key));
        let mut opts = self
            .range_opts(Some(end))
            .with_sort(SortTarget::Key, SortOrder::Descend)
            .with_limit(1);
        if keys_only {
            opts = opts.with_keys_only();
        }
        let mut kv = self.kv.clone();
        let resp = self.call("seek_le", kv.get(self.full(lo), Some(opts)))?;
        Ok(resp
            .kvs()
            .first()
            .map(|p| (self.strip(p.key()).to_vec(), p.value().to_vec())))
    }

    /// Pages of `batch_hint` pairs (16..=4096), each continuing after the last key of the
    /// one before while the server says there are more, in the windows of [`Windows`]:
    /// etcd 3.4 collects every key of a range from its index before it applies the limit,
    /// so a walk with a far end first asks the start's neighbourhood. Without values when
    /// `keys_only`.
    pub(super) fn walk_ranges(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        batch_hint: usize,
        keys_only: bool,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<()> {
        if end.is_some_and(|e| e <= start) {
            return Ok(());
        }
        let page = batch_hint.clamp(PAGE_MIN, PAGE_MAX);
        let end_full = match end {
            Some(e) => Some(self.full(e)),
            None => self.space_end(),
        };
        let mut from = self.full(start);
        let mut windows = Windows::new(&from, end_full);
        loop {
            let bound = windows.bound().map(<[u8]>::to_vec);
            let mut seen = false;
            loop {
                let mut opts = self.range_opts(bound.clone()).with_limit(page as i64);
                if keys_only {
                    opts = opts.with_keys_only();
                }
                let mut kv = self.kv.clone();
                let resp = self.call("scan", kv.get(from.clone(), Some(opts)))?;
                for p in resp.kvs() {
                    seen = true;
                    if !visit(self.strip(p.key()), p.value()) {
                        return Ok(());
                    }
                }
                match resp.kvs().last() {
                    Some(p) if resp.more() => from = emul::key_successor(p.key()),
                    _ => break,
                }
            }
            match bound {
                Some(b) if !windows.is_last() => {
                    from = b;
                    windows.advance(seen);
                }
                _ => return Ok(()),
            }
        }
    }

    /// Keys at or above `start` in this engine's space, counted by the server.
    pub(super) fn count_from(&self, start: &[u8]) -> Result<u64> {
        let opts = self.range_opts(self.space_end()).with_count_only();
        let mut kv = self.kv.clone();
        let resp = self.call("count", kv.get(self.full(start), Some(opts)))?;
        Ok(u64::try_from(resp.count()).unwrap_or(0))
    }
}

/// The windows an ascending walk asks for in turn, each from where the one before ended:
/// first up to the successor of the start less its last byte (the start's siblings at its
/// last byte), then, after a window that held no key, the next sibling window of the same
/// width (a listing's re-seek past a common prefix lands just past it: the next key is
/// usually in the next sibling), and otherwise one a level wider (the successor of the
/// window's end less its last byte), until a window would reach the walk's own end, which
/// is the last. Each step either moves to a sibling or drops a byte, and no two sibling
/// steps come in a row, so a walk asks for at most twice as many windows as its start has
/// bytes, and one window when the start's neighbourhood already reaches its end (a prefix
/// scan).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Windows {
    /// The walk's exclusive end (`None`: the end of the key space).
    end: Option<Vec<u8>>,
    /// The current window's end while it is short of `end`; `None` once the window is the last.
    narrow: Option<Vec<u8>>,
    /// The current window is a sibling of the one before.
    sibling: bool,
}

impl Windows {
    /// The windows of a walk of `[start, end)`.
    pub(super) fn new(start: &[u8], end: Option<Vec<u8>>) -> Windows {
        let mut w = Windows {
            end,
            narrow: None,
            sibling: false,
        };
        w.narrow = start
            .split_last()
            .and_then(|(_, less)| w.short_of_end(emul::prefix_successor(less)));
        w
    }

    /// `bound` when it lies short of the walk's end.
    fn short_of_end(&self, bound: Option<Vec<u8>>) -> Option<Vec<u8>> {
        bound.filter(|b| self.end.as_ref().is_none_or(|e| b < e))
    }

    /// The current window's exclusive end (`None`: the end of the key space).
    pub(super) fn bound(&self) -> Option<&[u8]> {
        self.narrow.as_deref().or(self.end.as_deref())
    }

    /// The current window reaches the walk's end.
    pub(super) fn is_last(&self) -> bool {
        self.narrow.is_none()
    }

    /// Moves to the next window, after the current one was walked through; `seen`: it held
    /// a key.
    pub(super) fn advance(&mut self, seen: bool) {
        let Some(at) = self.narrow.take() else {
            return;
        };
        let sibling = !seen && !self.sibling;
        let next = if sibling {
            emul::prefix_successor(&at)
        } else {
            at.split_last()
                .and_then(|(_, less)| emul::prefix_successor(less))
        };
        self.narrow = self.short_of_end(next);
        self.sibling = sibling;
    }
}
