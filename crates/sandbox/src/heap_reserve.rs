//! Heap a spare writes while it waits, so that a call's allocations land on
//! pages that are already there.
//!
//! A page the process has never written costs a fault on first write: ~2 µs
//! in a VM, ~450 of them (0.9 ms) for the bench's `reshape_json` and ~700
//! for `regex_clean`. The spare carves [`SIZE`] from glibc's heap before the
//! seal (so it counts against the script's memory cap), writes it a chunk at
//! a time once sealed, stopping as soon as the call's request is waiting
//! (so a call never waits on it), then frees it into the allocator, which
//! keeps it for the script. Not on a host that freezes the process between
//! calls, where no spare waits (`ZygoteConfig::frozen_between_calls`).

use std::os::fd::RawFd;

/// Most calls allocate less than this; each MiB costs a waiting spare
/// ~0.25 ms of CPU to write (measured: 2 MiB took most of the gain 8 MiB
/// did, and cost back-to-back calls less).
const SIZE: usize = 2 << 20;

/// Under glibc's smallest mmap threshold (128 KiB), so each chunk comes from
/// the heap, where a free keeps it; ~16 µs to write, the longest a request
/// waits for the spare to notice it.
const CHUNK: usize = 64 << 10;

/// Above [`SIZE`], so freeing the reserve does not shrink the heap again.
const TRIM_THRESHOLD: libc::c_int = 32 << 20;

const PAGE: usize = 4096;

/// glibc keeps the heap a script frees instead of giving it back (and
/// faulting it in again as the script grows it): a one-shot child loses
/// nothing by keeping it. Every child, with a reserve or not.
pub(super) fn keep_freed_heap() {
    // SAFETY: mallopt takes plain integers and changes only when glibc
    // gives freed memory back.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}

/// The reserve's chunks, allocated and not yet freed.
pub(super) struct HeapReserve {
    chunks: Vec<Vec<u8>>,
}

impl HeapReserve {
    /// Carves the reserve: at most a quarter of the script's `memory_mb`.
    pub(super) fn carve(memory_mb: u64) -> Self {
        let size = SIZE.min(usize::try_from(memory_mb << 20).unwrap_or(usize::MAX) / 4);
        let chunks = (0..size / CHUNK)
            .map(|_| Vec::with_capacity(CHUNK))
            .collect();
        Self { chunks }
    }

    /// Writes the chunks until the request is waiting on `sock` (the report
    /// socket), or the kernel refuses (MADV_POPULATE_WRITE is Linux 5.14+: before,
    /// the reserve is still kept, and faults in as the script uses it).
    /// Returns how many chunks were written.
    pub(super) fn write_until_request(&self, sock: RawFd) -> usize {
        let mut written = 0;
        for chunk in &self.chunks {
            if request_waiting(sock) {
                break;
            }
            let start = (chunk.as_ptr() as usize).next_multiple_of(PAGE);
            let end = (chunk.as_ptr() as usize + chunk.capacity()) & !(PAGE - 1);
            // SAFETY: [start, end) lies inside `chunk`'s allocation, which
            // this struct owns and keeps alive. Populating writes zeroes only
            // to pages not yet present and keeps the contents of the rest
            // (copying a page shared with the zygote), so no value anyone
            // reads changes.
            let rc = unsafe {
                libc::madvise(
                    start as *mut libc::c_void,
                    end.saturating_sub(start),
                    libc::MADV_POPULATE_WRITE,
                )
            };
            if rc != 0 {
                break;
            }
            written += 1;
        }
        written
    }
}

/// Whether `sock` has something to read (the request, or the server's end
/// closed). The filter allows exactly this peek, on the report socket.
pub(super) fn request_waiting(sock: RawFd) -> bool {
    match receive_one(sock, PEEK_FLAGS) {
        Ok(_) => true,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

/// recvfrom of one byte from `fd` with `flags`, as recv makes it.
pub(super) fn receive_one(fd: RawFd, flags: libc::c_int) -> std::io::Result<usize> {
    let mut byte = 0u8;
    // SAFETY: a one-byte receive into a stack byte that outlives the call;
    // the address arguments are null, as for recv.
    let n = unsafe {
        libc::recvfrom(
            fd,
            (&mut byte as *mut u8).cast(),
            1,
            flags,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
}

/// The one way the child may call recvfrom: a peek that does not block.
pub(super) const PEEK_FLAGS: libc::c_int = libc::MSG_PEEK | libc::MSG_DONTWAIT;

#[cfg(test)]
mod tests {
    use super::*;

    /// Minor page faults of this process so far.
    fn faults() -> i64 {
        // SAFETY: getrusage fills the zeroed struct it is given.
        unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut ru);
            ru.ru_minflt
        }
    }

    /// In a forked child (mallopt changes the whole process): keeps freed
    /// heap as a child does, carves a reserve, writes it unless `request`
    /// is already waiting, frees it, then allocates and writes 1 MiB in
    /// 1 KiB objects. Exits with the faults that took, over 4 (255 at most).
    fn faults_after(request: bool) -> i32 {
        let mut fds = [0; 2];
        // SAFETY: socketpair fills the two-int array it is given.
        let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) };
        assert_eq!(rc, 0);
        crate::in_a_fork::exit_code_of(|| {
            if request {
                // SAFETY: write from a static byte to our own socket.
                unsafe { libc::write(fds[1], b"{".as_ptr().cast(), 1) };
            }
            keep_freed_heap();
            let reserve = HeapReserve::carve(256);
            let written = reserve.write_until_request(fds[0]);
            drop(reserve);
            let before = faults();
            let objects: Vec<Vec<u8>> = (0..1024).map(|_| vec![1u8; 1024]).collect();
            let taken = faults() - before;
            std::hint::black_box(objects);
            let expected = if request { 0 } else { SIZE / CHUNK };
            if written == expected {
                (taken / 4).min(255) as i32
            } else {
                255
            }
        })
    }

    #[test]
    fn a_written_reserve_takes_the_faults_off_the_next_allocations() {
        // 1 MiB is 256 pages: each faults once where the heap is new.
        let unwritten = faults_after(true);
        let written = faults_after(false);
        assert!(
            unwritten < 255 && written < 255,
            "the reserve wrote the wrong chunks"
        );
        assert!(
            unwritten * 4 >= 200,
            "{} faults without the reserve written",
            unwritten * 4
        );
        // A quarter of the pages: unwritten, all 256 fault; what else the
        // test process does meanwhile adds a few.
        assert!(
            written * 4 <= 64,
            "{} faults after the reserve was written",
            written * 4
        );
    }
}
