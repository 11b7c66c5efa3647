//! Host memory that a call makes the host allocate: resources it creates,
//! strings and buffers it hands over, anything the host keeps for it.
//!
//! Linear memory is bounded by the memory limit, but a guest can also make
//! the *host* allocate, outside that limit: every `wasi:http` `fields`
//! resource, every byte it writes, every string it passes. This module
//! counts those bytes per call, wherever the host frees them:
//!
//! - [`HostMemoryAllocator`] wraps the global allocator and appends an
//!   8-byte owner tag to every allocation: the account (slot and
//!   generation) that was current on the allocating thread, or none. A free
//!   on any thread — a write buffer freed by a blocking-pool thread, say —
//!   is credited back to the account that made it.
//! - A call opens a [`HostMemory`] account and polls its future through
//!   [`HostMemory::meter`], so allocations while it runs are its own.
//! - The sandbox's call hook compares [`HostMemory::held`] against the
//!   call's host-memory limit every time the guest returns from the host,
//!   and charges fuel for [`HostMemory::allocated`], the bytes the host
//!   allocated on the guest's behalf.
//!
//! The library installs no allocator: a program opts in with one line in
//! its binary, `toolhost::count_host_memory!()` (the `toolhost` command
//! does), or `toolhost::count_host_memory!(MyAllocator, MyAllocator::new())`
//! to count over an allocator of its own.
//!
//! Without it, calls still run, but host memory is not counted (the
//! resource-count and open-file limits still apply) and
//! [`accounting_active`] returns false.
//!
//! The owner is kept in a `const` thread-local with no destructor, which
//! never allocates on platforms with native thread-local storage (every
//! platform wasmtime runs on).

#![allow(unsafe_code, reason = "a global allocator is unsafe by contract")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

/// Accounts that can be open at once: every call in flight holds one.
/// More than [`super::MAX_CONCURRENT_CALLS`], so every call gets one.
pub(crate) const SLOTS: usize = 4096;

/// One account's counters. A slot is reused by later calls; the generation
/// tells a late free of an earlier call's memory apart. Every allocation
/// of a call updates its slot, so each slot has cache lines of its own:
/// calls running on two cores must not share one (false sharing cost 30%
/// of parallel throughput on trivial calls).
#[repr(align(128))]
struct Slot {
    in_use: AtomicBool,
    generation: AtomicU32,
    held: AtomicI64,
    allocated: AtomicU64,
}

impl Slot {
    const fn new() -> Self {
        Slot {
            in_use: AtomicBool::new(false),
            generation: AtomicU32::new(0),
            held: AtomicI64::new(0),
            allocated: AtomicU64::new(0),
        }
    }
}

static SLOTS_TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];
/// Where each thread's search for a free slot starts, so threads use
/// slots of their own without touching a shared counter per call.
static NEXT_THREAD_START: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// The tag of the account allocations on this thread belong to, or 0.
    static CURRENT: Cell<u64> = const { Cell::new(0) };
    /// Where this thread's next search for a free slot starts; 0 until
    /// first used.
    static NEXT_SLOT: Cell<usize> = const { Cell::new(0) };
}

/// Slot 0 is never handed out, so a tag of 0 means "no owner".
fn tag(slot: usize, generation: u32) -> u64 {
    ((slot as u64) << 32) | u64::from(generation)
}

fn untag(tag: u64) -> Option<&'static Slot> {
    let slot = SLOTS_TABLE.get((tag >> 32) as usize).filter(|_| tag != 0)?;
    (slot.generation.load(Ordering::Relaxed) == tag as u32).then_some(slot)
}

fn current_tag() -> u64 {
    CURRENT.try_with(Cell::get).unwrap_or(0)
}

/// A global allocator that counts each call's host memory; see the module
/// documentation.
pub struct HostMemoryAllocator<A = System> {
    inner: A,
}

impl<A> HostMemoryAllocator<A> {
    /// Wrap `inner`.
    pub const fn new(inner: A) -> Self {
        HostMemoryAllocator { inner }
    }
}

/// The layout with room for the owner tag after the caller's bytes.
fn tagged(layout: Layout) -> Option<(Layout, usize)> {
    let (layout, offset) = layout.extend(Layout::new::<u64>()).ok()?;
    Some((layout, offset))
}

// SAFETY: every block handed out is `inner`'s block for the tagged layout;
// the tag sits past the caller's bytes and is read back from the same
// offset, which depends only on the layout the caller passes back.
unsafe impl<A: GlobalAlloc> GlobalAlloc for HostMemoryAllocator<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with a non-zero-sized layout.
        unsafe { self.allocate(layout, |l| self.inner.alloc(l)) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe { self.allocate(layout, |l| self.inner.alloc_zeroed(l)) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some((full, offset)) = tagged(layout) else { return };
        // SAFETY: `ptr` came from `alloc` with this layout, so the tag is
        // initialised at `offset`, inside the block.
        let owner = unsafe { ptr.add(offset).cast::<u64>().read_unaligned() };
        // SAFETY: the block was allocated by `inner` with `full`.
        unsafe { self.inner.dealloc(ptr, full) };
        if let Some(slot) = untag(owner) {
            credit(slot, owner, -(layout.size() as i64));
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some((full, offset)) = tagged(layout) else { return std::ptr::null_mut() };
        // SAFETY: as in `dealloc`.
        let owner = unsafe { ptr.add(offset).cast::<u64>().read_unaligned() };
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return std::ptr::null_mut();
        };
        let Some((new_full, new_offset)) = tagged(new_layout) else { return std::ptr::null_mut() };
        // SAFETY: `ptr` is `inner`'s block for `full`; `new_full` has the
        // same alignment and a non-zero size.
        let grown = unsafe { self.inner.realloc(ptr, full, new_full.size()) };
        if grown.is_null() {
            return grown;
        }
        // A block made outside any call but grown inside one becomes the
        // call's: the growth was done on its behalf.
        let current = current_tag();
        let (owner, charge) = match (untag(owner), untag(current)) {
            (Some(slot), _) => (owner, Some((slot, new_size as i64 - layout.size() as i64))),
            (None, Some(slot)) => (current, Some((slot, new_size as i64))),
            (None, None) => (0, None),
        };
        // SAFETY: `new_offset + TAG <= new_full.size()`.
        unsafe { grown.add(new_offset).cast::<u64>().write_unaligned(owner) };
        if let Some((slot, delta)) = charge {
            credit(slot, owner, delta);
        }
        if new_size > layout.size()
            && let Some(slot) = untag(current)
        {
            slot.allocated.fetch_add((new_size - layout.size()) as u64, Ordering::Relaxed);
        }
        grown
    }
}

impl<A: GlobalAlloc> HostMemoryAllocator<A> {
    /// # Safety
    /// `raw` must allocate a block for the layout it is given.
    unsafe fn allocate(&self, layout: Layout, raw: impl FnOnce(Layout) -> *mut u8) -> *mut u8 {
        let Some((full, offset)) = tagged(layout) else { return std::ptr::null_mut() };
        let block = raw(full);
        if block.is_null() {
            return block;
        }
        let owner = current_tag();
        // SAFETY: `offset + TAG <= full.size()`.
        unsafe { block.add(offset).cast::<u64>().write_unaligned(owner) };
        if let Some(slot) = untag(owner) {
            credit(slot, owner, layout.size() as i64);
            slot.allocated.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        block
    }
}

/// Add `delta` to the bytes `slot` holds for the account `owner`. The
/// generation is checked again afterwards: a late free of a finished call's
/// memory that raced with the slot being reopened is taken back, so a new
/// call's count is off by at most that one free, and only for a moment.
fn credit(slot: &Slot, owner: u64, delta: i64) {
    slot.held.fetch_add(delta, Ordering::Relaxed);
    if slot.generation.load(Ordering::Acquire) != owner as u32 {
        slot.held.fetch_sub(delta, Ordering::Relaxed);
    }
}

/// One call's account of host memory. Closing it (on drop) ends the
/// counting; memory the call left behind is no longer attributed to it.
pub(crate) struct HostMemory {
    tag: u64,
}

impl HostMemory {
    /// Open an account, or `None` when every slot is taken (more than
    /// [`SLOTS`] calls at once: never within the host's own cap).
    pub(crate) fn open() -> Option<Self> {
        let start = NEXT_SLOT.with(|next| {
            if next.get() == 0 {
                next.set(NEXT_THREAD_START.fetch_add(SLOTS / 64, Ordering::Relaxed));
            }
            next.replace(next.get() + 1)
        });
        for i in 0..SLOTS {
            let index = 1 + (start + i) % (SLOTS - 1);
            let slot = &SLOTS_TABLE[index];
            if slot.in_use.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                let generation = slot.generation.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
                slot.held.store(0, Ordering::Relaxed);
                slot.allocated.store(0, Ordering::Relaxed);
                return Some(HostMemory { tag: tag(index, generation) });
            }
        }
        None
    }

    /// Bytes the call's allocations still hold.
    pub(crate) fn held(&self) -> usize {
        untag(self.tag).map_or(0, |slot| slot.held.load(Ordering::Relaxed).max(0) as usize)
    }

    /// Bytes allocated on the call's behalf so far, freed or not.
    pub(crate) fn allocated(&self) -> u64 {
        untag(self.tag).map_or(0, |slot| slot.allocated.load(Ordering::Relaxed))
    }

    /// A handle that counts futures' allocations in this account.
    pub(crate) fn meter(&self) -> Meter {
        Meter { tag: self.tag }
    }
}

/// Counts futures' allocations in one account; see [`HostMemory::meter`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meter {
    tag: u64,
}

impl Meter {
    /// `future`, with every poll's allocations counted in the account.
    pub(crate) fn around<F: Future>(self, future: F) -> Metered<F> {
        Metered { tag: self.tag, inner: Box::pin(future) }
    }
}

impl Drop for HostMemory {
    fn drop(&mut self) {
        if let Some(slot) = untag(self.tag) {
            // A new generation orphans the call's leftovers.
            slot.generation.fetch_add(1, Ordering::AcqRel);
            slot.in_use.store(false, Ordering::Release);
        }
    }
}

/// A future whose polls run inside an account; see [`HostMemory::meter`].
pub(crate) struct Metered<F> {
    tag: u64,
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for Metered<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let previous = CURRENT.with(|c| c.replace(self.tag));
        let _restore = Restore(previous);
        self.inner.as_mut().poll(cx)
    }
}

struct Restore(u64);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|c| c.set(self.0));
    }
}

/// Whether the process's global allocator counts host memory, checked by
/// allocating inside a probe account.
pub fn accounting_active() -> bool {
    let Some(account) = HostMemory::open() else { return false };
    let probe = {
        let previous = CURRENT.with(|c| c.replace(account.tag));
        let probe = std::hint::black_box(Box::new([0u8; 64]));
        CURRENT.with(|c| c.set(previous));
        probe
    };
    let active = account.held() >= 64;
    drop(probe);
    active
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_start_after_the_callers_bytes() {
        let (full, offset) = tagged(Layout::from_size_align(13, 1).unwrap()).unwrap();
        assert_eq!(offset, 16, "an 8-aligned tag after 13 bytes");
        assert!(full.size() >= offset + std::mem::size_of::<u64>());
    }

    #[test]
    fn memory_is_charged_to_the_allocating_call_and_credited_from_any_thread() {
        if !accounting_active() {
            return; // the test binary runs without the feature's allocator
        }
        let account = HostMemory::open().unwrap();
        let kept: Vec<u8> = poll_once(account.meter().around(async { vec![7u8; 1 << 20] }));
        assert!(account.held() >= 1 << 20, "held {}", account.held());
        assert!(account.allocated() >= 1 << 20);
        std::thread::spawn(move || drop(kept)).join().unwrap();
        assert!(account.held() < 1 << 20, "a free on another thread is credited back: {}", account.held());
    }

    #[test]
    fn a_closed_account_ignores_late_frees_and_its_slot_is_reused() {
        if !accounting_active() {
            return;
        }
        let account = HostMemory::open().unwrap();
        let kept: Vec<u8> = poll_once(account.meter().around(async { vec![1u8; 4096] }));
        let slot = account.tag >> 32;
        drop(account);
        drop(kept);
        for _ in 0..SLOTS {
            let next = HostMemory::open().unwrap();
            if next.tag >> 32 == slot {
                assert_eq!(next.held(), 0, "a new generation starts at zero");
                return;
            }
        }
        panic!("slot {slot} was never reused");
    }

    /// Poll a future that never waits to completion.
    fn poll_once<F: Future>(future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(value) => value,
            Poll::Pending => panic!("the future waited"),
        }
    }
}
