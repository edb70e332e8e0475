//! The read path allocates nothing once the pool is full: a point get and a
//! longest-prefix lookup that miss the pool reuse an evicted page whole (its buffer and
//! its `Arc`), and hits touch no allocator at all. Counted by this test binary's own
//! global allocator, per thread, so the test harness's threads do not count.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use aimeta_engine::{Readable, Tree, TreeConfig};
use common::{manifest_key, manifest_value, seeded, TestResult};
use rand::RngExt as _;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counter is a
// const-initialised thread-local Cell, which allocates nothing.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

const SHARDS: u32 = 40;
const PER_SHARD: u32 = 2_500;

/// Loads the manifest shards into `dir`, then opens them again with a 64-page pool, many
/// times smaller than the store, so that reads miss and evict.
fn load_and_reopen_small(dir: &std::path::Path) -> Result<Tree, Box<dyn std::error::Error>> {
    {
        let tree = Tree::open(TreeConfig::new(dir).cache_bytes(64 << 20))?;
        let items = (0..SHARDS)
            .flat_map(|s| (0..PER_SHARD).map(move |i| (manifest_key(s, i), manifest_value(s, i))));
        tree.bulk_load(items)?;
    }
    Ok(Tree::open(TreeConfig::new(dir).cache_bytes(64 * 4096))?)
}

#[test]
fn gets_and_lookups_on_a_full_pool_allocate_nothing() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = load_and_reopen_small(dir.path())?;
    let mut rng = seeded(5);
    let keys: Vec<Vec<u8>> = (0..6000)
        .map(|_| manifest_key(rng.random_range(0..SHARDS), rng.random_range(0..PER_SHARD)))
        .collect();
    let queries: Vec<Vec<u8>> = keys[..3000]
        .iter()
        .map(|k| {
            let mut q = k.clone();
            q.extend_from_slice(b"/part-0001");
            q
        })
        .collect();
    let mut sum = 0usize;
    // Fill the pool (and its spare pages) first.
    for k in &keys[3000..] {
        sum += tree.get_with(k, |v| v.len())?.ok_or("missing key")?;
    }
    let before = tree.metrics();
    let allocs = allocations();
    for k in &keys[..3000] {
        sum += tree.get_with(k, |v| v.len())?.ok_or("missing key")?;
    }
    for q in &queries {
        sum += tree
            .longest_prefix_with(q, None, |k, v| k.len() + v.len())?
            .ok_or("no prefix")?;
    }
    let allocated = allocations() - allocs;
    let used = tree.metrics().since(&before);
    assert!(sum > 0);
    assert!(
        used.bm_read_page_misses > 1000,
        "only {} misses: the test must miss the pool",
        used.bm_read_page_misses
    );
    assert_eq!(
        allocated, 0,
        "{allocated} allocations over 6,000 reads with {} misses",
        used.bm_read_page_misses
    );
    Ok(())
}

#[test]
fn a_scan_on_a_full_pool_allocates_nothing_but_for_pages_it_holds() -> TestResult {
    let dir = tempfile::tempdir()?;
    let tree = load_and_reopen_small(dir.path())?;
    let scan = |shard: u32, limit: usize| -> Result<(u64, u64), Box<dyn std::error::Error>> {
        let prefix = format!("ds/laion/shard-{shard:05}/");
        let before = allocations();
        let mut it = tree.range().prefix(prefix.as_bytes()).limit(limit).iter();
        let mut n = 0u64;
        // Half by stepping, half by the visitor: both forms reuse the same buffers.
        let mut stepped = 0;
        while stepped < limit / 2 {
            let Some((_, v)) = it.next_entry()? else {
                break;
            };
            n += v.len() as u64;
            stepped += 1;
        }
        it.for_each_entry(&mut |_, v| {
            n += v.len() as u64;
            true
        })?;
        drop(it);
        Ok((allocations() - before, n))
    };
    // Fill the pool with long scans of other shards.
    for shard in 0..SHARDS / 2 {
        scan(shard, 2_500)?;
    }
    let (short, _) = scan(SHARDS / 2, 10)?;
    // The scan's own buffers (bounds, cursor path and key) come from the scans before it.
    assert_eq!(
        short, 0,
        "a 10-entry scan after others made {short} allocations"
    );
    let before = tree.metrics();
    let (long, bytes) = scan(SHARDS / 2 + 1, 2_500)?;
    let used = tree.metrics().since(&before);
    assert_eq!(bytes, 2_500 * 24);
    assert!(used.bm_readahead_pages > 0, "the long scan read ahead");
    // A few pages the scan evicts while it still holds them (its current leaf) cannot
    // be reused whole; that is a handful per scan, not one per entry or per page read.
    assert!(
        long <= short + 8,
        "a 2,500-entry scan made {long} allocations, a 10-entry one {short}"
    );
    Ok(())
}
