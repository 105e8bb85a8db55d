//! The global allocator for binaries that host the sandbox.
//!
//! It is the system allocator, except that in a sandbox child an allocation
//! that fails under `RLIMIT_AS` reports "out of memory" on the child's socket
//! and exits, instead of aborting with nothing said; and that once the
//! child's call has its outcome, small blocks are no longer given back
//! ([`skip_frees`]).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

use super::proto::OOM_FRAME;

/// The child's report socket, set once the child starts; -1 elsewhere.
static REPORT_FD: AtomicI32 = AtomicI32::new(-1);

/// A child's exit status when an allocation failed, so the server can tell it
/// ran out of memory even when its report was lost.
pub const EXIT_OUT_OF_MEMORY: i32 = 86;

pub(super) fn arm(fd: i32) {
    REPORT_FD.store(fd, Ordering::SeqCst);
}

/// Frees of small blocks are skipped: the process is about to exit.
static SKIPPING: AtomicBool = AtomicBool::new(false);
/// Bytes of small blocks allocated while skipping.
static SINCE: AtomicUsize = AtomicUsize::new(0);
/// Blocks this size and over are still freed: they are unmapped, not
/// reused (glibc's mmap threshold, fixed by `heap_reserve`'s mallopt, is
/// 128 KiB), and keeping one would only raise the peak.
const SMALL: usize = 64 << 10;
/// Past this much new small memory while skipping, frees resume: a
/// `__del__` allocating in a loop must not run the call out of memory.
const BUDGET: usize = 16 << 20;

/// Called once a child's call has its outcome (its result and state are
/// taken): what is left is dropping the script's objects, reporting and
/// exiting, so giving their memory back to malloc is work for nothing (a
/// session call that read 2,200 rows spent 0.4 ms of its 2.4 on it). The
/// drops still run (`__del__`, a file's last flush); only the memory stays.
pub(super) fn skip_frees() {
    SINCE.store(0, Ordering::Relaxed);
    SKIPPING.store(true, Ordering::Relaxed);
}

/// Counts a small allocation made while skipping frees, and ends the
/// skipping past the budget.
#[inline]
fn count(size: usize) {
    if SKIPPING.load(Ordering::Relaxed)
        && size < SMALL
        && SINCE.fetch_add(size, Ordering::Relaxed) + size > BUDGET
    {
        SKIPPING.store(false, Ordering::Relaxed);
    }
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
// System's guarantees hold; the additions are a call that never returns
// into the allocator when an allocation failed, and a `dealloc` that may
// keep a block (never reused, so never handed out twice).
unsafe impl GlobalAlloc for SandboxAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds alloc's contract.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds alloc_zeroed's contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() < SMALL && SKIPPING.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. System.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: forwarded unchanged; the caller upholds realloc's contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            out_of_memory();
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of `size` freed and asked for again: whether malloc handed
    /// any back (glibc's caches do, at once: sixteen, for a full cache).
    fn reused(size: usize) -> bool {
        let layout = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: a non-zero layout; each block is freed once, with the
        // layout it was allocated with.
        unsafe {
            let freed: Vec<*mut u8> = (0..16).map(|_| SandboxAlloc.alloc(layout)).collect();
            for &p in &freed {
                SandboxAlloc.dealloc(p, layout);
            }
            let again: Vec<*mut u8> = (0..16).map(|_| SandboxAlloc.alloc(layout)).collect();
            for &p in &again {
                SandboxAlloc.dealloc(p, layout);
            }
            again.iter().any(|p| freed.contains(p))
        }
    }

    /// The process's mapped pages (`/proc/self/statm`'s first field).
    fn mapped_pages() -> usize {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        statm.split(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn after_the_outcome_small_blocks_are_kept_until_the_budget() {
        // In a fork: the switch is the whole process's.
        let code = crate::in_a_fork::exit_code_of(|| {
            if !reused(64) {
                return 10; // the premise: malloc reuses a freed block
            }
            skip_frees();
            if reused(64) {
                return 11; // a small free went back to malloc
            }
            // A large block is still unmapped (over glibc's largest mmap threshold).
            let layout = Layout::from_size_align(64 << 20, 8).unwrap();
            // SAFETY: a non-zero layout, freed with the layout it was allocated with.
            let big = std::hint::black_box(unsafe { SandboxAlloc.alloc(layout) });
            let mapped = mapped_pages();
            // SAFETY: as above.
            unsafe { SandboxAlloc.dealloc(big, layout) };
            if mapped_pages() + (64 << 20) / 4096 > mapped {
                return 12;
            }
            // Past the budget of new small memory, frees resume.
            let layout = Layout::from_size_align(SMALL - 1, 8).unwrap();
            for _ in 0..=BUDGET / (SMALL - 1) {
                // SAFETY: a non-zero layout; the block is freed (kept) at once.
                unsafe {
                    SandboxAlloc.dealloc(std::hint::black_box(SandboxAlloc.alloc(layout)), layout)
                };
            }
            if !reused(64) {
                return 13;
            }
            0
        });
        assert_eq!(code, 0, "see the test's return codes");
    }
}
