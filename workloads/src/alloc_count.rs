//! Allocations per operation, as BenchmarkDotNet's memory diagnoser reports them: a
//! global allocator that counts, per thread, the calls and bytes of every allocation, and
//! readings the runner takes around its timed calls.
//!
//! The binary and the bench install [`CountingAllocator`] as their `#[global_allocator]`;
//! the counts are per thread, so each of a parallel workload's threads reads its own
//! (no shared counter is written on the allocation path, so 8 threads do not contend on
//! one cache line), and an engine's background threads (checkpoints, compactions) are not
//! charged to the operations. Where another allocator is installed (the test harness),
//! [`installed`] is false and the runner records no allocation counts rather than zeros.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    // Const-initialised and without a destructor: reading them never allocates, so they
    // can be touched from inside the allocator itself.
    static CALLS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
    // What this thread's engine calls allocated (see `charged`).
    static ENGINE: Cell<AllocCount> = const { Cell::new(AllocCount { calls: 0, bytes: 0 }) };
}

/// The system allocator, counting every allocation of the calling thread.
#[derive(Debug, Default, Clone, Copy)]
pub struct CountingAllocator;

fn count(bytes: usize) {
    // try_with: during thread teardown the slots may already be gone; the allocation then
    // goes uncounted instead of aborting the process.
    let _ = CALLS.try_with(|c| c.set(c.get() + 1));
    let _ = BYTES.try_with(|b| b.set(b.get() + bytes as u64));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees are this allocator's; the counting touches only const-initialised
// thread-locals without destructors, which neither allocate nor unwind.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded as is; the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is; `ptr` came from this allocator, that is from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: forwarded as is; `ptr` came from `System` and the caller upholds
        // `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The calling thread's allocation counts so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AllocCount {
    /// Calls to alloc, alloc_zeroed and realloc.
    pub calls: u64,
    /// Bytes they asked for.
    pub bytes: u64,
}

impl AllocCount {
    /// The counts now.
    pub fn now() -> AllocCount {
        AllocCount {
            calls: CALLS.try_with(Cell::get).unwrap_or(0),
            bytes: BYTES.try_with(Cell::get).unwrap_or(0),
        }
    }

    /// What was counted since `earlier`.
    pub fn since(earlier: AllocCount) -> AllocCount {
        let now = AllocCount::now();
        AllocCount {
            calls: now.calls.saturating_sub(earlier.calls),
            bytes: now.bytes.saturating_sub(earlier.bytes),
        }
    }

    /// Adds `other`.
    pub fn add(&mut self, other: AllocCount) {
        self.calls += other.calls;
        self.bytes += other.bytes;
    }
}

/// Runs `engine_call` and charges what it allocated to this thread's engine total: the
/// runner wraps each call into an engine with it, so that its own key formatting and
/// answer checks are not counted as the engine's allocations.
pub fn charged<T>(engine_call: impl FnOnce() -> T) -> T {
    let before = AllocCount::now();
    let out = engine_call();
    let spent = AllocCount::since(before);
    let _ = ENGINE.try_with(|e| {
        let mut total = e.get();
        total.add(spent);
        e.set(total);
    });
    out
}

/// What this thread's engine calls (those wrapped in [`charged`]) allocated so far.
pub fn engine_total() -> AllocCount {
    ENGINE.try_with(Cell::get).unwrap_or_default()
}

/// What this thread's engine calls allocated since `earlier` (an `engine_total`).
pub fn engine_since(earlier: AllocCount) -> AllocCount {
    let now = engine_total();
    AllocCount {
        calls: now.calls.saturating_sub(earlier.calls),
        bytes: now.bytes.saturating_sub(earlier.bytes),
    }
}

/// True when [`CountingAllocator`] is the process's global allocator (an allocation moves
/// this thread's count).
pub fn installed() -> bool {
    let before = AllocCount::now();
    let probe = std::hint::black_box(vec![0u8; 16]);
    drop(probe);
    AllocCount::since(before).calls > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_allocator_installed_nothing_is_claimed() {
        // The test harness runs on the system allocator: the runner must see that and
        // record no counts, not zero allocations.
        assert!(!installed());
        let before = AllocCount::now();
        let v = std::hint::black_box(vec![1u8; 1000]);
        drop(v);
        assert_eq!(AllocCount::since(before), AllocCount::default());
    }

    #[test]
    fn counting_forwards_to_the_system_allocator() {
        let a = CountingAllocator;
        let layout = Layout::from_size_align(64, 8).expect("a valid layout");
        let before = AllocCount::now();
        // SAFETY: a non-zero-size layout; the block is written within its size and
        // freed with the same layout.
        unsafe {
            let p = a.alloc(layout);
            assert!(!p.is_null());
            p.write_bytes(7, 64);
            let q = a.realloc(p, layout, 128);
            assert!(!q.is_null());
            assert_eq!(*q.add(63), 7);
            a.dealloc(q, Layout::from_size_align(128, 8).expect("a valid layout"));
        }
        assert_eq!(
            AllocCount::since(before),
            AllocCount {
                calls: 2,
                bytes: 192
            }
        );
    }
}
