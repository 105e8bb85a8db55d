//! The interpreter's hot code on huge pages, shared by every child.
//!
//! Fork copies no page-table entries of the binary's code (a file mapping
//! no one wrote), so each child maps again, 4 KiB at a time, the code it
//! runs, and misses the TLB on each page of it. The zygote copies the 2 MiB
//! blocks of its code that the probe ran (`hot_pages`) onto anonymous
//! memory with `MADV_HUGEPAGE` and moves that copy over the original
//! (`mremap`): the same bytes at the same addresses, read-only and
//! executable as before. Fork then copies the mapping itself, one entry per
//! 2 MiB, and a child starts with that code mapped. Measured on `hello` at
//! the API (dev build, six rounds alternating): back to back 0.378 → 0.291
//! ms, 20 ms apart 0.494 → 0.412.

use std::collections::BTreeSet;

use super::hot_pages::HotPages;

/// A huge page on x86_64 and on arm64 with 4 KiB pages (both Lambda's and
/// ours); elsewhere the copy is still one mapping fork copies, in smaller
/// pages.
const HUGE: usize = 2 << 20;

/// What remapping did: bytes of code now on anonymous memory, and the
/// first failure, if any (the rest of the code stays as it was).
#[derive(Debug, Default)]
pub(super) struct Remapped {
    pub bytes: usize,
    pub error: Option<String>,
}

/// Moves the blocks of this binary's code that hold pages in `hot` onto
/// anonymous huge pages, and drops those pages from `hot` (the children
/// have them mapped from the start). Call in the single-threaded zygote.
pub(super) fn remap_hot(hot: &mut HotPages) -> Remapped {
    let mut done = Remapped::default();
    let Some((start, end)) = code_mapping() else {
        done.error = Some("this binary's code is not in /proc/self/maps".into());
        return done;
    };
    let blocks: BTreeSet<usize> = hot
        .read_pages()
        .map(|page| page & !(HUGE - 1))
        .filter(|&b| b >= start && b + HUGE <= end)
        .collect();
    for (a, len) in spans(&blocks) {
        match remap(a, len) {
            Ok(()) => {
                done.bytes += len;
                hot.forget(a, a + len);
            }
            Err(e) => {
                done.error = Some(e);
                break;
            }
        }
    }
    done
}

/// Consecutive blocks as (start, length) spans, one `mremap` each.
fn spans(blocks: &BTreeSet<usize>) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for &b in blocks {
        match out.last_mut() {
            Some((a, len)) if *a + *len == b => *len += HUGE,
            _ => out.push((b, HUGE)),
        }
    }
    out
}

/// The executable mapping that holds this function: the binary's code.
fn code_mapping() -> Option<(usize, usize)> {
    let here = code_mapping as fn() -> Option<(usize, usize)> as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let mut fields = line.split_ascii_whitespace();
        let (s, e) = fields.next()?.split_once('-')?;
        let (s, e) = (
            usize::from_str_radix(s, 16).ok()?,
            usize::from_str_radix(e, 16).ok()?,
        );
        let perms = fields.next()?;
        (perms == "r-xp" && s <= here && here < e).then_some((s, e))
    })
}

fn last_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Copies the code at [a, a + len) (2 MiB-aligned) onto anonymous memory
/// and moves the copy over it.
fn remap(a: usize, len: usize) -> Result<(), String> {
    // Room to align the copy: mremap keeps huge pages only between aligned
    // addresses.
    // SAFETY: a fresh private anonymous mapping; checked below.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return Err(last_error("mmap"));
    }
    let raw = raw as usize;
    let copy = raw.next_multiple_of(HUGE);
    // SAFETY: [copy, copy + len) lies inside the mapping just made (at most
    // HUGE - 1 bytes of it precede `copy`); the code at [a, a + len) is
    // mapped readable for the process's life. The advice only asks for huge
    // pages, which changes no contents.
    unsafe {
        libc::madvise(copy as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        std::ptr::copy_nonoverlapping(a as *const u8, copy as *mut u8, len);
    }
    sync_instruction_cache(copy, len);
    // SAFETY: the copy's own range, inside the mapping made above. Read and
    // execute, as the code's original mapping: never writable again.
    let protected = unsafe {
        libc::mprotect(
            copy as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_EXEC,
        )
    };
    let moved = protected == 0 && {
        // SAFETY: moves the copy (same bytes, same protection) over the
        // original code in one system call. The zygote is single-threaded,
        // so nothing runs that code during the move; this function's own
        // caller may lie in the range, and returns into identical bytes.
        let r = unsafe {
            libc::mremap(
                copy as *mut libc::c_void,
                len,
                len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                a as *mut libc::c_void,
            )
        };
        r != libc::MAP_FAILED
    };
    let err = (!moved).then(|| last_error(if protected == 0 { "mremap" } else { "mprotect" }));
    // What is left of the scratch mapping: the alignment's head and tail,
    // and, when the move failed, the copy too.
    let (keep_from, keep_to) = if moved {
        (copy, copy + len)
    } else {
        (copy, copy)
    };
    // SAFETY: unmapping parts of the scratch mapping made above, outside
    // the moved copy (which now lives at `a`).
    unsafe {
        libc::munmap(raw as *mut libc::c_void, keep_from - raw);
        libc::munmap(keep_to as *mut libc::c_void, raw + len + HUGE - keep_to);
    }
    err.map_or(Ok(()), Err)
}

/// Code written as data must reach the instruction cache before it runs:
/// x86_64 keeps the two coherent; arm64 needs each line cleaned to the
/// point of unification and invalidated in the instruction cache.
#[cfg(target_arch = "aarch64")]
fn sync_instruction_cache(start: usize, len: usize) {
    let ctr: u64;
    // SAFETY: reading CTR_EL0, which Linux lets user space read.
    unsafe { std::arch::asm!("mrs {0}, ctr_el0", out(reg) ctr) };
    let dline = 4usize << ((ctr >> 16) & 0xf);
    let iline = 4usize << (ctr & 0xf);
    // SAFETY: cache maintenance by address over a range mapped readable
    // in this process; it changes no contents.
    unsafe {
        let mut p = start & !(dline - 1);
        while p < start + len {
            std::arch::asm!("dc cvau, {0}", in(reg) p);
            p += dline;
        }
        std::arch::asm!("dsb ish");
        let mut p = start & !(iline - 1);
        while p < start + len {
            std::arch::asm!("ic ivau, {0}", in(reg) p);
            p += iline;
        }
        std::arch::asm!("dsb ish", "isb");
    }
}

#[cfg(not(target_arch = "aarch64"))]
fn sync_instruction_cache(_start: usize, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn code_to_move(x: u64) -> u64 {
        std::hint::black_box(x).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555
    }

    /// The `/proc/self/maps` line of the mapping holding `addr`.
    fn mapping_of(addr: usize) -> String {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .find(|l| {
                let (s, e) = l
                    .split_ascii_whitespace()
                    .next()
                    .unwrap()
                    .split_once('-')
                    .unwrap();
                let (s, e) = (
                    usize::from_str_radix(s, 16).unwrap(),
                    usize::from_str_radix(e, 16).unwrap(),
                );
                s <= addr && addr < e
            })
            .unwrap()
            .to_string()
    }

    /// In a forked child (a single thread, as the zygote): moves the block
    /// in the middle of the test binary's code, and the one holding
    /// `code_to_move` where it is whole, and checks them. Exits 0, or with
    /// the number of the check that failed.
    fn move_and_check() -> i32 {
        let (start, end) = code_mapping().expect("the test binary's code");
        let block = ((start + end) / 2) & !(HUGE - 1);
        if block < start || block + HUGE > end {
            return 100; // Under 4 MiB of code: no whole block to move.
        }
        let f = code_to_move as fn(u64) -> u64 as usize;
        let before = code_to_move(7);
        // SAFETY: the whole block lies inside the code mapping (checked).
        let bytes = unsafe { std::slice::from_raw_parts(block as *const u8, HUGE) }.to_vec();
        let mut hot = HotPages::read_at(&[block + 8192, f]);
        let done = remap_hot(&mut hot);
        let anonymous = |addr| {
            let line = mapping_of(addr);
            // No inode and no path: five fields.
            line.split_ascii_whitespace().count() == 5 && line.contains(" r-xp ")
        };
        let checks = [
            done.error.is_none() && done.bytes >= HUGE,
            hot.read_pages().all(|p| p & !(HUGE - 1) != block),
            anonymous(block),
            // SAFETY: the block is mapped readable (checked just above).
            unsafe { std::slice::from_raw_parts(block as *const u8, HUGE) } == &bytes[..],
            code_to_move(7) == before,
        ];
        checks.iter().position(|ok| !ok).map_or(0, |i| i as i32 + 1)
    }

    #[test]
    fn hot_code_moves_onto_anonymous_memory_and_runs_the_same() {
        // SAFETY: fork in a test; the child only reads its maps, moves its
        // own code, checks it and exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let code = move_and_check();
            // SAFETY: _exit has no preconditions.
            unsafe { libc::_exit(code) }
        }
        let mut status = 0;
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status),
            "the child died: status {status:#x}"
        );
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "check {} failed",
            libc::WEXITSTATUS(status)
        );
    }

    #[test]
    fn neighbouring_blocks_move_together() {
        let blocks: BTreeSet<usize> = [0, HUGE, 3 * HUGE].into();
        assert_eq!(spans(&blocks), [(0, 2 * HUGE), (3 * HUGE, HUGE)]);
        assert!(spans(&BTreeSet::new()).is_empty());
    }
}
