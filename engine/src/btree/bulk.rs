//! Bulk load of sorted input into an empty tree: leaves are packed full and written in key
//! order to adjacent pages at the end of the file (so a key range sits on adjacent pages
//! and scans can read it with few, large requests), then the inner levels above them.
//! Pages go straight to the file, bypassing the pool; the caller ends with a checkpoint.

use super::limits::{check_key, check_value};
use super::split::shortest_separator;
use crate::error::{Error, Result};
use crate::frame::Allocator;
use crate::page::{encode_overflow_run, KeyLengths};
use crate::page::{
    lcp, overflow_pages_for, seal, value_fits_inline, InnerNode, LeafEntry, LeafNode, LeafSizer,
    PageId, Value, INNER_FIXED,
};
use crate::pool::BufferPool;

/// The result of a bulk load.
#[derive(Debug, Clone, Copy)]
pub struct Loaded {
    /// Root page, None when the input was empty.
    pub root: Option<PageId>,
    /// Tree height.
    pub height: u32,
    /// Entries loaded.
    pub entries: u64,
    /// The lengths of the keys loaded.
    pub key_lengths: KeyLengths,
}

/// Buffers adjacent page images and writes them in frame-sized requests.
struct RunWriter<'a> {
    pool: &'a BufferPool,
    start: PageId,
    buf: Vec<u8>,
    limit: usize,
}

impl RunWriter<'_> {
    fn push(&mut self, id: PageId, mut page: Vec<u8>) -> Result<()> {
        seal(&mut page);
        let ps = page.len();
        let contiguous = self.start + (self.buf.len() / ps) as u64 == id;
        if !self.buf.is_empty() && (!contiguous || self.buf.len() + ps > self.limit) {
            self.flush()?;
        }
        if self.buf.is_empty() {
            self.start = id;
        }
        self.buf.extend_from_slice(&page);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            self.pool.write_run(self.start, &self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// A child reference collected while building a level.
struct ChildRef {
    sep: Vec<u8>,
    id: PageId,
    count: u64,
}

/// Loads `items` (strictly ascending keys) into an empty tree; commit `seq` writes it.
pub fn bulk_load<I, K, V>(
    pool: &BufferPool,
    alloc: &mut Allocator,
    seq: u64,
    items: I,
) -> Result<Loaded>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let ps = pool.geometry().page_bytes();
    let mut w = RunWriter {
        pool,
        start: 0,
        buf: Vec::new(),
        limit: pool.geometry().frame_size as usize,
    };
    let mut level: Vec<ChildRef> = Vec::new();
    let mut entries: Vec<LeafEntry<'static>> = Vec::new();
    let mut run = LeafSizer::default();
    let mut total = 0u64;
    let mut key_lengths = KeyLengths::empty();
    let mut prev_last: Option<Vec<u8>> = None;

    let flush_leaf = |entries: &mut Vec<LeafEntry<'static>>,
                      w: &mut RunWriter<'_>,
                      alloc: &mut Allocator,
                      prev_last: &mut Option<Vec<u8>>,
                      level: &mut Vec<ChildRef>|
     -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let id = alloc.alloc_at_end(1);
        let mut page = vec![0u8; ps];
        LeafNode::encode(entries, id, seq, &mut page);
        w.push(id, page)?;
        let first = &entries[0].key;
        let sep = match prev_last {
            Some(p) => shortest_separator(p, first),
            None => Vec::new(),
        };
        level.push(ChildRef {
            sep,
            id,
            count: entries.len() as u64,
        });
        *prev_last = entries.last().map(|e| e.key.to_vec());
        entries.clear();
        Ok(())
    };

    for (index, (k, v)) in items.into_iter().enumerate() {
        let (k, v) = (k.as_ref(), v.as_ref());
        check_key(k)?;
        check_value(v)?;
        let last = entries.last().map(|e| &e.key[..]).or(prev_last.as_deref());
        if last.is_some_and(|l| l >= k) {
            return Err(Error::BulkLoadUnsorted {
                index: index as u64,
            });
        }
        let value = if value_fits_inline(ps, k.len(), v.len()) {
            Value::Inline(v.to_vec().into())
        } else {
            w.flush()?;
            write_overflow(pool, alloc, seq, v)?
        };
        let stored = value.stored_len();
        let next = match (entries.first(), entries.last()) {
            (Some(f), Some(p)) => run.with(k.len(), lcp(&p.key, k), lcp(&f.key, k), stored),
            _ => run.with(k.len(), 0, k.len(), stored),
        };
        if !entries.is_empty() && next.size() > ps {
            flush_leaf(&mut entries, &mut w, alloc, &mut prev_last, &mut level)?;
            run = LeafSizer::default().with(k.len(), 0, k.len(), stored);
        } else {
            run = next;
        }
        entries.push(LeafEntry {
            key: k.to_vec().into(),
            value,
        });
        key_lengths.insert(k.len());
        total += 1;
    }
    flush_leaf(&mut entries, &mut w, alloc, &mut prev_last, &mut level)?;
    if level.is_empty() {
        w.flush()?;
        return Ok(Loaded {
            root: None,
            height: 0,
            entries: 0,
            key_lengths,
        });
    }
    let mut height = 1;
    while level.len() > 1 {
        level = build_inner_level(level, &mut w, alloc, seq, ps)?;
        height += 1;
    }
    w.flush()?;
    pool.ensure_len(alloc.page_count())?;
    Ok(Loaded {
        root: Some(level[0].id),
        height,
        entries: total,
        key_lengths,
    })
}

/// Packs a level of child references into full inner pages.
fn build_inner_level(
    children: Vec<ChildRef>,
    w: &mut RunWriter<'_>,
    alloc: &mut Allocator,
    seq: u64,
    ps: usize,
) -> Result<Vec<ChildRef>> {
    let mut out = Vec::new();
    let mut node = InnerNode::default();
    let mut node_sep: Vec<u8> = Vec::new();
    let mut prefix = 0usize;
    let mut sum = 0usize;
    let mut emit = |node: &mut InnerNode,
                    node_sep: &mut Vec<u8>,
                    w: &mut RunWriter<'_>,
                    out: &mut Vec<ChildRef>|
     -> Result<()> {
        let id = alloc.alloc_at_end(1);
        let mut page = vec![0u8; ps];
        node.encode(id, seq, &mut page);
        w.push(id, page)?;
        out.push(ChildRef {
            sep: std::mem::take(node_sep),
            id,
            count: node.total(),
        });
        *node = InnerNode::default();
        Ok(())
    };
    for child in children {
        if !node.is_empty() {
            let new_prefix = if node.len() == 1 {
                child.sep.len()
            } else {
                lcp(&node.seps[1], &child.sep).min(prefix)
            };
            let new_sum = sum + InnerNode::child_size(&child.sep, 1, 0);
            let new_size = INNER_FIXED + new_prefix + new_sum - node.len() * new_prefix;
            if new_size <= ps {
                prefix = new_prefix;
                sum = new_sum;
                node.seps.push(child.sep);
                node.children.push(child.id);
                node.counts.push(child.count);
                continue;
            }
            emit(&mut node, &mut node_sep, w, &mut out)?;
        }
        // The child starts a node: its separator bounds the node, and its own is empty.
        node_sep = child.sep;
        node.seps.push(Vec::new());
        node.children.push(child.id);
        node.counts.push(child.count);
        prefix = usize::MAX;
        sum = InnerNode::child_size(&[], 0, 0);
    }
    if !node.is_empty() {
        emit(&mut node, &mut node_sep, w, &mut out)?;
    }
    Ok(out)
}

/// Writes a large value to a run of overflow pages at the end of the file.
fn write_overflow(
    pool: &BufferPool,
    alloc: &mut Allocator,
    seq: u64,
    v: &[u8],
) -> Result<Value<'static>> {
    let ps = pool.geometry().page_bytes();
    let first = alloc.alloc_at_end(overflow_pages_for(v.len(), ps) as u64);
    pool.write_run(first, &encode_overflow_run(v, first, seq, ps))?;
    Ok(Value::Overflow {
        first,
        len: v.len() as u32,
    })
}
