//! The warm image's free heap chunks, taken before the first fork.
//!
//! Warm-up leaves a few hundred small free chunks scattered over glibc's
//! heap (and in its per-thread cache), most on pages full of live objects.
//! A child's first allocations would take exactly those: each write to one
//! copies a page shared with the zygote (a copy-on-write fault, ~3 µs), for
//! a few dozen bytes. Taken here, and never freed, they stay in the image;
//! a child allocates from the top of the heap instead, on fresh pages that
//! the spare's `heap_reserve` writes ahead (where spares wait: not on
//! Lambda). Measured on `print("hello
//! world")` back to back over HTTP: ~550 → ~360 page faults per call on
//! the whole machine. Tested by `crates/sandbox/tests/heap_drain.rs`, on a main
//! thread as the zygote's.

/// What [`drain`] took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drained {
    /// Chunks taken.
    pub chunks: usize,
    /// Bytes in the binned chunks taken (the thread cache's are not counted
    /// by glibc).
    pub bytes: usize,
}

/// glibc's per-thread cache: size classes of 16 bytes from 32, and at most
/// seven chunks per class unless tuned (`glibc.malloc.tcache_count`, which
/// nothing here sets; a larger count only leaves some cached).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TCACHE_CLASSES: usize = 64;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TCACHE_COUNT: usize = 7;
/// Requests for large free holes, largest first: taken whole, a hole's
/// pages stay untouched (one header written), where 32-byte pieces would
/// write every page of it. Each is taken while it comes from the bins.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const HOLES: [usize; 5] = [1 << 20, 1 << 18, 1 << 16, 1 << 14, 1 << 12];
/// The smallest request, a 32-byte chunk: it fits in any free chunk, so
/// glibc serves it from the bins (splitting a larger chunk if need be)
/// before it touches the top of the heap.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const SMALLEST: usize = 24;

/// Takes every free chunk glibc's heap holds, in bins and in the calling
/// thread's cache, and leaks them. Call on the main thread of a
/// single-threaded process (the zygote), whose allocations come from the
/// main arena, after its last allocation that children should not reuse.
/// Elsewhere than glibc, does nothing.
pub fn drain() -> Drained {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let mut drained = drain_bins();
        drained.chunks += drain_thread_cache();
        drained
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    Drained::default()
}

/// Free bytes in glibc's bins (fast bins too), and the top chunk's size,
/// for the main arena (the zygote's only one: it is single-threaded).
/// `mallinfo` rather than `mallinfo2` (glibc 2.33): the Lambda build links
/// against an older glibc; its `int` fields hold a warm image's sizes.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn binned() -> (usize, usize) {
    // SAFETY: mallinfo takes no pointer; it locks each arena while it
    // walks its bins, and the zygote is single-threaded.
    #[allow(deprecated)]
    let info = unsafe { libc::mallinfo() };
    let total = usize::try_from(info.fordblks).unwrap_or(0);
    let top = usize::try_from(info.keepcost).unwrap_or(0);
    (total.saturating_sub(top), top)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn drain_bins() -> Drained {
    // Merges the fast bins' chunks into the regular bins (and gives whole
    // free pages back to the kernel: fewer pages for fork to copy).
    // SAFETY: malloc_trim takes a plain size and only reorganizes the heap.
    unsafe { libc::malloc_trim(0) };
    let (start, _) = binned();
    let mut drained = Drained {
        chunks: 0,
        bytes: start,
    };
    take_holes(&mut drained);
    let mut left = binned().0;
    // A call takes a binned chunk, or one of the at most TCACHE_COUNT that
    // taking a binned one moved into the thread cache's smallest class: so
    // a round of n + TCACHE_COUNT calls reaches the bins while anything is
    // binned, and a round that takes nothing ends the loop (it cannot
    // spin).
    while left > 0 {
        for _ in 0..left.div_ceil(32).min(256) + TCACHE_COUNT {
            // SAFETY: a plain allocation, kept for the process's lifetime.
            std::hint::black_box(unsafe { libc::malloc(SMALLEST) });
            drained.chunks += 1;
        }
        let (now, _) = binned();
        if now >= left {
            break;
        }
        left = now;
    }
    drained.bytes -= left;
    drained
}

/// Takes the large free holes whole, each size while the bins serve it: a
/// request the top of the heap (or a mapping) served instead is freed back,
/// and the next smaller size is tried. Every kept request lowers what is
/// binned, so the loop ends.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn take_holes(drained: &mut Drained) {
    for size in HOLES {
        loop {
            let (before, _) = binned();
            if before < size {
                break;
            }
            // glibc makes a request of n bytes a chunk of n + 8 rounded
            // up to 16 (on 64-bit): `size - 16` is a chunk of exactly `size`.
            // SAFETY: a plain allocation; kept for the process's lifetime
            // or freed at once below.
            let p = unsafe { libc::malloc(size - 16) };
            if p.is_null() {
                return;
            }
            if binned().0 < before {
                drained.chunks += 1;
                std::hint::black_box(p);
            } else {
                // SAFETY: p came from malloc just above and is freed once.
                unsafe { libc::free(p) };
                break;
            }
        }
    }
}

/// Empties the calling thread's cache class by class; stops a class at the
/// first chunk that comes from the top of the heap (the cache had no more).
/// Runs after the bins are empty, since taking a binned chunk refills the
/// cache with its siblings.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn drain_thread_cache() -> usize {
    let mut taken = 0;
    for class in 0..TCACHE_CLASSES {
        let request = SMALLEST + 16 * class;
        for _ in 0..TCACHE_COUNT {
            let (_, top) = binned();
            // SAFETY: sbrk(0) only reads the program break.
            let brk = unsafe { libc::sbrk(0) } as usize;
            // The main arena's top chunk ends at the break.
            let top_start = brk.saturating_sub(top);
            // SAFETY: a plain allocation, kept for the process's lifetime.
            let p = std::hint::black_box(unsafe { libc::malloc(request) }) as usize;
            taken += 1;
            if p >= top_start {
                break;
            }
        }
    }
    taken
}
