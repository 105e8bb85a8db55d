//! The warm image's heap on huge pages, shared by every child.
//!
//! Fork copies one page-table entry per 4 KiB page of the zygote's heap
//! (~16 MiB warm: ~4,000 entries, each with a reference taken), and a
//! child's exit drops them all again. On huge pages fork copies one entry
//! per 2 MiB, and exit drops as few. A child's first write to a block
//! splits that block's entry (a page table filled) and copies the 4 KiB
//! page it wrote, as before: the image stays shared, and no child sees
//! another's writes. Each spare splits every block while it waits
//! ([`HugeHeap::split_until_request`]), so that a call pays for no split.
//! A block the kernel cannot collapse stays on small pages, as does the
//! whole heap before Linux 6.1 or without THP built in.

use std::os::fd::RawFd;

use super::heap_reserve::request_waiting;
use super::hot_pages::PAGE;
use super::huge_text::{HUGE, last_error};
use super::proc_maps::Mapping;

/// `MADV_COLLAPSE` (Linux 6.1): make huge pages of a range now, whatever
/// the system's THP setting says (the libc crate has no name for it yet).
const MADV_COLLAPSE: libc::c_int = 25;

/// What collapsing did: the blocks collapsed, and the first failure, if
/// any (that part of the heap stays on small pages).
#[derive(Debug, Default)]
pub(super) struct Collapsed {
    pub heap: HugeHeap,
    pub error: Option<String>,
}

/// The heap's blocks on huge pages, by address.
#[derive(Debug, Default)]
pub(super) struct HugeHeap {
    blocks: Vec<usize>,
}

impl HugeHeap {
    /// Splits each block's entry in this process (a sealed spare) while it
    /// waits, until the request is waiting on `sock`: a child's first write
    /// to a block costs the split (a page table filled, ~5 µs) on top of
    /// the page's copy, and a call should pay neither. Writing one page of
    /// each does it; the rest of the block stays shared.
    pub(super) fn split_until_request(&self, sock: RawFd) {
        for &block in &self.blocks {
            if request_waiting(sock) {
                return;
            }
            // SAFETY: populating changes no contents: a write copies the
            // page shared with the zygote as the script's own first write
            // would. The block lies in the heap every child inherits at the
            // same address; one this child's allocator gave back since fails
            // (ENOMEM), harmlessly.
            unsafe { libc::madvise(block as *mut libc::c_void, PAGE, libc::MADV_POPULATE_WRITE) };
        }
    }
}

/// Puts the 2 MiB-aligned blocks of the heap in `maps` (this process's,
/// read after warm-up) on huge pages. Call in the zygote once its heap is
/// what children should share.
pub(super) fn collapse(maps: &[Mapping]) -> Collapsed {
    let mut done = Collapsed::default();
    let mut unsupported = false;
    for m in maps.iter().filter(|m| heap(m)) {
        let Some((start, len)) = aligned(m.start, m.end) else {
            continue;
        };
        // SAFETY: advice on whole pages of a mapping of this process (the
        // aligned part of its heap); marking a range changes no contents.
        if unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) } != 0 {
            done.error = Some(last_error("MADV_HUGEPAGE"));
            break;
        }
        let before = done.heap.blocks.len();
        // A block at a time: one the kernel cannot collapse (no huge page
        // free, EAGAIN) stays on small pages, and the others still go.
        for block in (start..start + len).step_by(HUGE) {
            // SAFETY: one 2 MiB block inside the range above. Collapsing
            // copies its pages onto a huge page in place (a page never
            // touched reads as zeroes, as before): no byte anyone reads
            // changes.
            if unsafe { libc::madvise(block as *mut libc::c_void, HUGE, MADV_COLLAPSE) } == 0 {
                done.heap.blocks.push(block);
                continue;
            }
            let err = std::io::Error::last_os_error();
            unsupported = err.raw_os_error() == Some(libc::EINVAL);
            done.error.get_or_insert_with(|| {
                let why = if unsupported {
                    " (needs Linux 6.1+)"
                } else {
                    ""
                };
                format!("MADV_COLLAPSE: {err}{why}")
            });
            if unsupported {
                break;
            }
        }
        if done.heap.blocks.len() == before {
            // SAFETY: as above; with nothing collapsed, the range goes back
            // to small pages, so that the kernel's background collapsing
            // leaves the zygote be.
            unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_NOHUGEPAGE) };
        }
        if unsupported {
            break;
        }
    }
    done
}

/// glibc's heap (the zygote's only arena: it is single-threaded).
fn heap(m: &Mapping) -> bool {
    m.name == "[heap]" && m.private() && m.writable()
}

/// The 2 MiB-aligned part of [start, end), as (start, length); None when
/// it holds no whole block.
fn aligned(start: usize, end: usize) -> Option<(usize, usize)> {
    let a = start.checked_next_multiple_of(HUGE)?;
    let b = end & !(HUGE - 1);
    (b > a).then(|| (a, b - a))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The huge bytes of every mapping that overlaps [start, end): other
    /// tests in this process may have split the heap into several (its
    /// flags changed over part of it), so one mapping's count can miss
    /// some of the blocks.
    fn huge_bytes_in(start: usize, end: usize) -> usize {
        let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
            return 0;
        };
        let mut total = 0;
        let mut inside = false;
        for l in smaps.lines() {
            let range = l.split_once(' ').map_or("", |(r, _)| r);
            if let Some((a, b)) = range.split_once('-')
                && let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
            {
                inside = a < end && b > start;
            } else if inside && let Some(v) = l.strip_prefix("AnonHugePages:") {
                total += v
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<usize>()
                    .unwrap_or(0)
                    << 10;
            }
        }
        total
    }
    use crate::proc_maps;

    #[test]
    fn only_whole_aligned_blocks_are_collapsed() {
        assert_eq!(aligned(0, HUGE), Some((0, HUGE)));
        assert_eq!(aligned(1, 3 * HUGE + 5), Some((HUGE, 2 * HUGE)));
        assert_eq!(aligned(1, 2 * HUGE - 1), None);
        assert_eq!(aligned(HUGE, HUGE), None);
        assert_eq!(aligned(usize::MAX - 10, usize::MAX), None);
    }

    #[test]
    fn only_the_private_writable_heap_is_taken() {
        let line = |l: &str| proc_maps::parse(l).unwrap();
        assert!(heap(&line("5000-9000 rw-p 00000000 00:00 0  [heap]")));
        assert!(!heap(&line("5000-9000 rw-p 00000000 00:00 0  [stack]")));
        assert!(!heap(&line("5000-9000 rw-p 00000000 00:00 0 ")));
        assert!(!heap(&line("5000-9000 r--p 00000000 00:00 0  [heap]")));
        assert!(!heap(&line("5000-9000 rw-s 00000000 00:00 0  [heap]")));
    }

    /// Whether THP is built in and on. Collapsing ignores the setting, but
    /// a host that turned THP off is not one to hold to it.
    fn collapse_possible() -> bool {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|s| !s.contains("[never]"))
    }

    /// In a forked child (collapsing changes the whole process's heap):
    /// grows the heap by 12 MiB, fills it, collapses it, and checks that
    /// the contents held, that the heap is on huge pages, that a
    /// grandchild's split ahead changes nothing and splits every block, and
    /// that its writes and splits stay its own. Exits 0 on success, with a
    /// code naming the failed check otherwise.
    fn collapse_in_a_child() -> i32 {
        crate::in_a_fork::exit_code_of(|| {
            // The heap's own pages (brk), as glibc's main arena grows
            // it: a test thread's allocations come from an arena of
            // its own, elsewhere.
            const WORDS: usize = (12 << 20) / 8;
            // SAFETY: sbrk grows this process's heap; the new range is
            // ours alone and is only used below, as u64 words.
            let blocks = unsafe {
                let p = libc::sbrk((WORDS * 8) as libc::intptr_t);
                if p as isize == -1 {
                    return 9;
                }
                std::slice::from_raw_parts_mut(p.cast::<u64>(), WORDS)
            };
            for (i, w) in blocks.iter_mut().enumerate() {
                *w = i as u64;
            }
            let Some(maps) = proc_maps::read() else {
                return 10;
            };
            // A busy machine may have no huge page free this moment (EAGAIN,
            // ENOMEM), which production takes as "stay small": the test
            // waits for the kernel to free some, a few times.
            let mut done = collapse(&maps);
            for _ in 0..10 {
                if done.error.as_deref().is_none_or(|e| e.contains("6.1+")) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(300));
                done = collapse(&maps);
            }
            if done.error.as_deref().is_some_and(|e| e.contains("6.1+")) {
                return 20;
            }
            // The blocks lie in one mapping (the grown heap's aligned
            // part), which starts at the first.
            let span = (
                done.heap.blocks.iter().copied().min().unwrap_or(0),
                done.heap
                    .blocks
                    .iter()
                    .copied()
                    .max()
                    .map_or(0, |b| b + HUGE),
            );
            let heap_huge = || huge_bytes_in(span.0, span.1);
            let huge = heap_huge();
            if done.error.is_some() || done.heap.blocks.len() < 4 || huge < 4 * HUGE {
                // The why, past the harness's capture (this is a fork).
                let why = format!(
                    "collapse: {:?}, {} blocks, {huge} huge bytes\n",
                    done.error,
                    done.heap.blocks.len()
                );
                // SAFETY: writes a buffer we own to stderr.
                unsafe { libc::write(2, why.as_ptr().cast(), why.len()) };
                return 11;
            }
            if blocks.iter().enumerate().any(|(i, &w)| w != i as u64) {
                return 12;
            }
            let mut fds = [0; 2];
            // SAFETY: socketpair fills the two-int array it is given.
            let rc =
                unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) };
            if rc != 0 {
                return 15;
            }
            // SAFETY: fork of a single-threaded test child.
            let grandchild = unsafe { libc::fork() };
            if grandchild < 0 {
                return 16;
            }
            if grandchild == 0 {
                // As a spare does: split every block (no request is
                // waiting), check that nothing changed, then write.
                done.heap.split_until_request(fds[0]);
                let split =
                    blocks.iter().enumerate().all(|(i, &w)| w == i as u64) && heap_huge() == 0;
                for w in blocks.iter_mut().step_by(512) {
                    *w = u64::MAX;
                }
                // SAFETY: _exit has no preconditions.
                unsafe { libc::_exit(if split { 0 } else { 17 }) }
            }
            let mut status = 0;
            // SAFETY: reaping our own child.
            unsafe { libc::waitpid(grandchild, &mut status, 0) };
            if !libc::WIFEXITED(status) {
                return 13;
            }
            if libc::WEXITSTATUS(status) != 0 {
                return libc::WEXITSTATUS(status);
            }
            if heap_huge() != huge {
                return 18;
            }
            if blocks.iter().enumerate().any(|(i, &w)| w != i as u64) {
                return 14;
            }
            0
        })
    }

    #[test]
    fn a_collapsed_heap_keeps_its_contents_and_children_their_own_writes() {
        if !collapse_possible() {
            // A skip in CI would report `ok` for nothing checked.
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
            assert!(
                !ci,
                "cannot check in CI: THP is off here, nothing to collapse"
            );
            eprintln!("not checked here: THP is off, nothing to collapse");
            return;
        }
        let code = collapse_in_a_child();
        let what = match code {
            0 => return,
            20 => {
                eprintln!("this kernel cannot collapse (before 6.1): nothing to check");
                return;
            }
            9 => "sbrk refused to grow the heap",
            10 => "/proc/self/maps could not be read",
            11 => "the heap was not collapsed onto huge pages",
            12 => "collapsing changed the heap's contents",
            13 => "the grandchild failed",
            15 | 16 => "no socket pair or no fork for the grandchild",
            14 => "a child's write reached its parent through a huge page",
            17 => "splitting ahead changed the heap, or left a block whole",
            18 => "a child's split reached its parent's huge pages",
            _ => "unknown",
        };
        panic!("{what} (code {code})");
    }
}
