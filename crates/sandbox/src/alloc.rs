//! The global allocator for binaries that host the sandbox.
//!
//! It is the system allocator, except that in a sandbox child an allocation
//! that fails under `RLIMIT_AS` reports "out of memory" on the child's socket
//! and exits, instead of aborting with nothing said; and that once the
//! child's call has its outcome, small blocks are kept rather than freed
//! ([`skip_frees`]), unless memory runs short.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicUsize, Ordering};

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
/// The blocks kept, chained through their first word: freed after all
/// should an allocation fail, so that keeping them never runs a call that
/// fit out of memory.
static KEPT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
/// Blocks this size and over are still freed: the largest come from their
/// own mappings, and keeping one would only raise the peak.
const SMALL: usize = 64 << 10;
/// Past this much new small memory while skipping, frees resume: a
/// `__del__` allocating in a loop must not grow the process unbounded.
const BUDGET: usize = 16 << 20;

/// Called once a child's call has its outcome (its output, result and
/// state are taken): what is left is dropping the script's objects,
/// collecting the files it wrote, reporting and exiting, so giving the
/// objects' memory back to malloc is work for nothing (a session call that
/// read 2,200 rows spent 0.4 ms of its 2.4 on it). The drops still run
/// (`__del__`, a file's last flush); only the memory stays.
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

/// Keeps `ptr`, a block of at least one word, on the chain.
fn keep(ptr: *mut u8) {
    let mut head = KEPT.load(Ordering::Relaxed);
    loop {
        // SAFETY: `ptr` is a live block of at least a word's size that its
        // owner gave up; nothing else reads or writes it from now on.
        unsafe { ptr.cast::<*mut u8>().write_unaligned(head) };
        match KEPT.compare_exchange_weak(head, ptr, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => head = now,
        }
    }
}

/// Ends the skipping and frees every kept block; false when none was kept.
fn release_kept() -> bool {
    SKIPPING.store(false, Ordering::Relaxed);
    let mut p = KEPT.swap(std::ptr::null_mut(), Ordering::Acquire);
    let any = !p.is_null();
    while !p.is_null() {
        // SAFETY: every block on the chain came from `System` and was kept
        // instead of freed, with the next one in its first word; `System`
        // frees any block with `free`, whatever its layout.
        unsafe {
            let next = p.cast::<*mut u8>().read_unaligned();
            libc::free(p.cast());
            p = next;
        }
    }
    any
}

/// `alloc`'s block; when it fails while blocks are kept, `alloc` again
/// after freeing them; when that fails too, the child's out of memory.
#[inline]
fn or_released(alloc: impl Fn() -> *mut u8) -> *mut u8 {
    let mut p = alloc();
    if p.is_null() && release_kept() {
        p = alloc();
    }
    if p.is_null() {
        out_of_memory();
    }
    p
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
// into the allocator when an allocation failed, a second try after freeing
// kept blocks, and a `dealloc` that may keep a block (not handed out again
// until it is freed).
unsafe impl GlobalAlloc for SandboxAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds alloc's contract.
        or_released(|| unsafe { System.alloc(layout) })
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds alloc_zeroed's contract.
        or_released(|| unsafe { System.alloc_zeroed(layout) })
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let size = layout.size();
        if (size_of::<usize>()..SMALL).contains(&size) && SKIPPING.load(Ordering::Relaxed) {
            keep(ptr);
            return;
        }
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. System.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: forwarded unchanged; the caller upholds realloc's contract,
        // and a failed realloc leaves `ptr` as it was for the second try.
        or_released(|| unsafe { System.realloc(ptr, layout, new_size) })
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
    fn after_the_outcome_small_blocks_are_kept_until_memory_or_the_budget_runs_out() {
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
            // An allocation that fails frees the kept blocks and tries
            // again: the blocks go back to malloc, and frees resume.
            let small = Layout::from_size_align(64, 8).unwrap();
            // SAFETY: non-zero layouts; each block freed (kept) once.
            let kept: Vec<*mut u8> = unsafe {
                let kept: Vec<*mut u8> = (0..16).map(|_| SandboxAlloc.alloc(small)).collect();
                for &p in &kept {
                    SandboxAlloc.dealloc(p, small);
                }
                kept
            };
            let size = std::hint::black_box(1usize << 62);
            let past_the_address_space = Layout::from_size_align(size, 8).unwrap();
            // SAFETY: a non-zero layout; the allocation fails (null).
            let failed =
                std::hint::black_box(unsafe { SandboxAlloc.alloc(past_the_address_space) });
            if !failed.is_null() {
                return 14;
            }
            // SAFETY: a non-zero layout; the blocks stay allocated until exit.
            let again: Vec<*mut u8> = (0..64)
                .map(|_| unsafe { SandboxAlloc.alloc(small) })
                .collect();
            if !again.iter().any(|p| kept.contains(p)) {
                return 15;
            }
            if !reused(64) {
                return 16;
            }
            // Past the budget of new small memory, frees resume.
            skip_frees();
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
