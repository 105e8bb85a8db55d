//! The global allocator for binaries that host the sandbox.
//!
//! It is the system allocator, except that in a sandbox child an allocation
//! that fails under `RLIMIT_AS` reports "out of memory" on the child's socket
//! and exits, instead of aborting with nothing said.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI32, Ordering};

use super::proto::OOM_FRAME;

/// The child's report socket, set once the child starts; -1 elsewhere.
static REPORT_FD: AtomicI32 = AtomicI32::new(-1);

/// A child's exit status when an allocation failed, so the server can tell it
/// ran out of memory even when its report was lost.
pub const EXIT_OUT_OF_MEMORY: i32 = 86;

pub(super) fn arm(fd: i32) {
    REPORT_FD.store(fd, Ordering::SeqCst);
}

/// The allocator itself, for `#[global_allocator]`.
pub struct SandboxAlloc;

#[cold]
fn out_of_memory() {
    let fd = REPORT_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: OOM_FRAME is a static byte string valid for its length;
        // write and _exit are async-signal-safe and allocate nothing.
        unsafe {
            libc::write(fd, OOM_FRAME.as_ptr().cast(), OOM_FRAME.len());
            libc::_exit(EXIT_OUT_OF_MEMORY);
        }
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments, so
// System's guarantees hold; the only addition is a call that never returns
// into the allocator when an allocation failed.
unsafe impl GlobalAlloc for SandboxAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds alloc's contract.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds alloc_zeroed's contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. System.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds realloc's contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }
}
