//! The memory limit: an allocator that counts live bytes and refuses past
//! the call's budget. A refusal sets `OOM` before Rust aborts (a trap), so
//! the Worker can answer with the contract's MemoryError instead of a 500.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
pub static OOM: AtomicBool = AtomicBool::new(false);

/// Lets the call allocate `mb` MiB beyond what the warm interpreter holds.
pub fn limit_growth(mb: u64) {
    let extra = usize::try_from(mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX);
    LIMIT.store(
        LIVE.load(Ordering::Relaxed).saturating_add(extra),
        Ordering::Relaxed,
    );
}

/// After a trap: the report must be able to allocate.
pub fn lift() {
    LIMIT.store(usize::MAX, Ordering::Relaxed);
}

pub struct Budget;

impl Budget {
    fn admit(&self, size: usize) -> bool {
        let live = LIVE.load(Ordering::Relaxed);
        if live.saturating_add(size) > LIMIT.load(Ordering::Relaxed) {
            OOM.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }
}

// SAFETY: every method forwards to `System` with the caller's layout and
// only adds bookkeeping; a refusal returns null, which GlobalAlloc allows.
unsafe impl GlobalAlloc for Budget {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !self.admit(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout contract is passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !self.admit(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as in `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if crate::host::WARMING.load(Ordering::Relaxed) {
            // Freed memory is zeroed while Wizer's snapshot is made: the
            // snapshot keeps only non-zero bytes, and warm-up's garbage
            // would otherwise ship in the bundle.
            // SAFETY: `ptr` is a live block of `layout.size()` bytes from
            // this allocator, not yet freed.
            unsafe { std::ptr::write_bytes(ptr, 0, layout.size()) };
        }
        // SAFETY: `ptr` came from this allocator with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() && !self.admit(new_size - layout.size()) {
            return std::ptr::null_mut();
        }
        let p = if crate::host::WARMING.load(Ordering::Relaxed) {
            // Moved by hand so that the old block is zeroed (`dealloc`).
            // SAFETY: the caller guarantees `new_size` is valid for the
            // layout's alignment; the copy is of the smaller of the two
            // sizes, within both blocks; `ptr` is freed once, afterwards.
            unsafe {
                let new = Layout::from_size_align_unchecked(new_size, layout.align());
                let p = System.alloc(new);
                if !p.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                    std::ptr::write_bytes(ptr, 0, layout.size());
                    System.dealloc(ptr, layout);
                }
                p
            }
        } else {
            // SAFETY: `ptr` and `layout` came from this allocator; the
            // caller guarantees `new_size` is valid for the alignment.
            unsafe { System.realloc(ptr, layout, new_size) }
        };
        if !p.is_null() {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Budget = Budget;
