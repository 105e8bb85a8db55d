//! The interpreter's hot code and read-only data on huge pages, shared by
//! every child.
//!
//! Fork copies no page-table entries of the binary's code and read-only
//! data (file mappings no one wrote), so each child maps again, a few pages
//! at a time, what it runs and reads (the frozen stdlib's bytecode, the
//! Unicode tables), misses the TLB on each 4 KiB page of it, and drops
//! those entries again at exit. The zygote copies the 2 MiB blocks of both
//! that the probe touched (`hot_pages`) from the binary's file onto
//! anonymous memory with `MADV_HUGEPAGE` and, once the copy is on huge
//! pages and matches what is in memory, moves it over the original
//! (`mremap`): the same bytes at the same addresses, with the same
//! protection as before (read and execute for code, read for data). Fork
//! then copies the mapping itself, one entry per 2 MiB, and a child starts
//! with those blocks mapped. Where huge pages are not to be had (THP off,
//! memory too fragmented), nothing moves: on small pages the copy would
//! cost every fork its page-table entries. Measured on `hello` at the API
//! (dev build, six rounds alternating), code alone: back to back 0.378 →
//! 0.291 ms, 20 ms apart 0.494 → 0.412.

use std::collections::BTreeSet;

use super::hot_pages::HotPages;
use super::proc_maps::Mapping;

/// A huge page on x86_64 and on arm64 with 4 KiB pages (both Lambda's and
/// ours); elsewhere the copy is still one mapping fork copies, in smaller
/// pages.
pub(super) const HUGE: usize = 2 << 20;

/// What remapping did: bytes of code and read-only data now on anonymous
/// memory, and the first failure, if any (the rest stays as it was).
#[derive(Debug, Default)]
pub(super) struct Remapped {
    pub bytes: usize,
    pub error: Option<String>,
}

/// Moves the blocks of this binary's code and read-only data that hold
/// pages in `hot` onto anonymous huge pages, and drops those pages from
/// `hot` (the children have them mapped from the start). `maps` are this
/// process's (`proc_maps::read`). Call in the single-threaded zygote.
pub(super) fn remap_hot(maps: &[Mapping], hot: &mut HotPages) -> Remapped {
    let mut done = Remapped::default();
    if maps.is_empty() {
        done.error = Some("/proc/self/maps could not be read".into());
        return done;
    }
    let Some(code) = code_mapping(maps) else {
        done.error = Some("this binary's code is not in /proc/self/maps".into());
        return done;
    };
    let exe = match std::fs::File::open("/proc/self/exe") {
        Ok(f) => f,
        Err(e) => {
            done.error = Some(format!("/proc/self/exe: {e}"));
            return done;
        }
    };
    let limit = max_map_count();
    let mut moves = 0;
    for m in read_only_mappings(maps, code) {
        let blocks: BTreeSet<usize> = hot
            .read_pages()
            .map(|page| page & !(HUGE - 1))
            .filter(|&b| b >= m.start && b + HUGE <= m.end)
            .collect();
        let exec = m.perms[2] == b'x';
        let prot = if exec {
            libc::PROT_READ | libc::PROT_EXEC
        } else {
            libc::PROT_READ
        };
        for (a, len) in spans(&blocks) {
            // An estimate, not a count: the mappings read at start, and two
            // more per move (it splits a mapping in three at most).
            if !room_for_mappings(maps.len() + 2 * moves, limit) {
                done.error = Some("too close to vm.max_map_count".into());
                return done;
            }
            moves += 1;
            let at = m.offset + (a - m.start) as u64;
            match remap(a, len, &exe, at, prot) {
                Ok(()) => {
                    done.bytes += len;
                    hot.forget(a, a + len);
                }
                // Relocated data (`.data.rel.ro` is `r--p` too): expected,
                // and not worth a warning.
                Err(Stayed::Differs) if !exec => {}
                // A breakpoint in code, or data that cannot move: this span
                // stays, the rest still go.
                Err(e) if !exec || matches!(e, Stayed::Differs) => {
                    done.error.get_or_insert(e.message());
                }
                Err(e) => {
                    done.error = Some(e.message());
                    return done;
                }
            }
        }
    }
    done
}

/// Why a span stayed where it was.
enum Stayed {
    /// Its memory is not the binary's file (relocated data, a breakpoint in
    /// code): only this span stays.
    Differs,
    /// Anything else, in words.
    Failed(String),
}

impl Stayed {
    fn message(self) -> String {
        match self {
            Stayed::Differs => "the memory differs from the binary's".into(),
            Stayed::Failed(e) => e,
        }
    }
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
fn code_mapping(maps: &[Mapping]) -> Option<&Mapping> {
    let here = code_mapping as fn(&[Mapping]) -> Option<&Mapping> as usize;
    maps.iter()
        .find(|m| &m.perms == b"r-xp" && m.contains(here))
}

/// The binary's mappings no one writes: its code first (a failure with
/// data must not keep code from moving), then its read-only data (the same
/// file, mapped `r--p`). That includes its relocated data (`.data.rel.ro`,
/// write-protected after relocation), whose memory differs from the file:
/// `remap` refuses it.
fn read_only_mappings<'a>(maps: &'a [Mapping], code: &'a Mapping) -> Vec<&'a Mapping> {
    let data = maps
        .iter()
        .filter(|m| &m.perms == b"r--p" && !code.name.is_empty() && m.name == code.name);
    std::iter::once(code).chain(data).collect()
}

/// Whether a move can split mappings (the original and the scratch copy,
/// a few more entries) without reaching `limit`, with about `used`
/// mappings now: the one limit on `mremap` that can be seen ahead. The
/// margin covers the scratch copy and the few mappings made since `used`
/// was counted.
fn room_for_mappings(used: usize, limit: usize) -> bool {
    used.saturating_add(64) < limit
}

/// `vm.max_map_count`, or the kernel's default where it cannot be read.
fn max_map_count() -> usize {
    std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(65530)
}

/// Bytes of the mapping that starts at `addr` backed by huge pages, from
/// `/proc/self/smaps`.
pub(super) fn huge_bytes_at(addr: usize) -> usize {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    let header = format!("{addr:x}-");
    let mut lines = smaps
        .lines()
        .skip_while(|l| !l.starts_with(&header))
        .skip(1);
    lines
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb << 10)
}

pub(super) fn last_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Copies the code or data at [a, a + len) (2 MiB-aligned), read from
/// the binary at file offset `at`, onto anonymous huge pages and moves the
/// copy over it, with protection `prot`.
fn remap(
    a: usize,
    len: usize,
    exe: &std::fs::File,
    at: u64,
    prot: libc::c_int,
) -> Result<(), Stayed> {
    use std::os::unix::fs::FileExt;
    // Room to align the copy: only an aligned copy gets huge pages, and
    // mremap keeps them only between aligned addresses.
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
        return Err(Stayed::Failed(last_error("mmap")));
    }
    let raw = raw as usize;
    let copy = raw.next_multiple_of(HUGE);
    // SAFETY: [copy, copy + len) lies inside the mapping just made (at most
    // HUGE - 1 bytes of it precede `copy`), writable, and only this
    // function refers to it. The advice only asks for huge pages, which
    // changes no contents.
    let scratch = unsafe {
        libc::madvise(copy as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        std::slice::from_raw_parts_mut(copy as *mut u8, len)
    };
    // From the file, not from memory: a debugger's or uprobe's breakpoint
    // in the code would otherwise be copied into memory no probe handles.
    // SAFETY: the code or data at [a, a + len) is mapped readable for the
    // process's life.
    let code = unsafe { std::slice::from_raw_parts(a as *const u8, len) };
    let err = match exe.read_exact_at(scratch, at) {
        Err(e) => Some(Stayed::Failed(format!("reading the binary: {e}"))),
        Ok(()) if scratch != code => Some(Stayed::Differs),
        Ok(()) if huge_bytes_at(copy) < len => {
            Some(Stayed::Failed("no huge pages to be had".into()))
        }
        Ok(()) => None,
    };
    let moved = err.is_none() && {
        if prot & libc::PROT_EXEC != 0 {
            sync_instruction_cache(copy, len);
        }
        // SAFETY: the copy's own range, inside the mapping made above. The
        // original's protection (`prot` is read, or read and execute):
        // never writable again.
        let rc = unsafe { libc::mprotect(copy as *mut libc::c_void, len, prot) };
        // SAFETY: moves the copy (the same bytes, the same protection)
        // over the original. The zygote is single-threaded, so nothing
        // else runs that code or reads that data meanwhile; this function's
        // caller may lie in the range, and returns into identical bytes.
        // The kernel unmaps the original before it moves the copy: should
        // the move itself then fail (its own memory exhausted; the map
        // count, the limit that can be seen, was estimated with a margin by
        // the caller), the original is gone and the zygote aborts (below).
        rc == 0
            && unsafe {
                libc::mremap(
                    copy as *mut libc::c_void,
                    len,
                    len,
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                    a as *mut libc::c_void,
                )
            } != libc::MAP_FAILED
    };
    if !moved && err.is_none() && !mapped(a, len) {
        // The kernel unmapped the original and could not move the copy:
        // every child would inherit the hole. The supervisor starts another
        // zygote.
        std::process::abort();
    }
    let err = err.or_else(|| (!moved).then(|| Stayed::Failed(last_error("mprotect or mremap"))));
    // What is left of the scratch mapping: the alignment's head and tail,
    // and, when nothing moved, the copy too.
    let (keep_from, keep_to) = if moved {
        (copy, copy + len)
    } else {
        (copy, copy)
    };
    // SAFETY: unmapping parts of the scratch mapping made above, outside
    // the moved copy (which now lives at `a`); `scratch` is not used again.
    unsafe {
        libc::munmap(raw as *mut libc::c_void, keep_from - raw);
        libc::munmap(keep_to as *mut libc::c_void, raw + len + HUGE - keep_to);
    }
    err.map_or(Ok(()), Err)
}

/// Whether [a, a + len) is still mapped (`mincore` fails with ENOMEM on a
/// hole).
fn mapped(a: usize, len: usize) -> bool {
    let mut vec = vec![0u8; len.div_ceil(4096)];
    // SAFETY: `vec` holds one byte per 4 KiB page of the range (the
    // smallest page size), as mincore writes; the range is only queried.
    unsafe { libc::mincore(a as *mut libc::c_void, len, vec.as_mut_ptr()) == 0 }
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
    use crate::{in_a_fork, proc_maps};

    #[inline(never)]
    fn code_to_move(x: u64) -> u64 {
        std::hint::black_box(x).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555
    }

    /// The mapping holding `addr`, now.
    fn mapping_of(addr: usize) -> Mapping {
        let maps = proc_maps::read().unwrap();
        maps.into_iter().find(|m| m.contains(addr)).unwrap()
    }

    /// Whether the host gives huge pages to a mapping that asks for them.
    fn thp_on() -> bool {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|s| !s.contains("[never]"))
    }

    /// In a forked child (a single thread, as the zygote): moves the block
    /// in the middle of the test binary's code, and the one holding
    /// `code_to_move` where it is whole, and checks them. Where the host
    /// gives no huge pages, checks that nothing moved. Exits 0, or with the
    /// number of the check that failed.
    fn move_and_check() -> i32 {
        let maps = proc_maps::read().expect("procfs");
        let &Mapping { start, end, .. } = code_mapping(&maps).expect("the test binary's code");
        let block = ((start + end) / 2) & !(HUGE - 1);
        if block < start || block + HUGE > end {
            return 100; // Under 4 MiB of code: no whole block to move.
        }
        let f = code_to_move as fn(u64) -> u64 as usize;
        let before = code_to_move(7);
        // SAFETY: the whole block lies inside the code mapping (checked).
        let bytes = unsafe { std::slice::from_raw_parts(block as *const u8, HUGE) }.to_vec();
        let mut hot = HotPages::read_at(&[block + 8192, f]);
        let done = remap_hot(&maps, &mut hot);
        if !thp_on() {
            let nothing = done.bytes == 0
                && done.error.as_deref() == Some("no huge pages to be had")
                && !anonymous(block);
            return if nothing { 0 } else { 50 };
        }
        let checks = [
            done.error.is_none() && done.bytes >= HUGE,
            hot.read_pages().all(|p| p & !(HUGE - 1) != block),
            anonymous(block),
            huge_bytes_at(mapping_of(block).start) >= HUGE,
            // SAFETY: the block is mapped readable (checked just above).
            unsafe { std::slice::from_raw_parts(block as *const u8, HUGE) } == &bytes[..],
            code_to_move(7) == before,
        ];
        checks.iter().position(|ok| !ok).map_or(0, |i| i as i32 + 1)
    }

    /// As [`move_and_check`], for the block in the middle of the test
    /// binary's largest mapping of read-only data. Exits 0, or with the
    /// number of the check that failed (from 61).
    fn move_data_and_check() -> i32 {
        let maps = proc_maps::read().expect("procfs");
        let code = code_mapping(&maps).expect("the test binary's code");
        let Some(data) = read_only_mappings(&maps, code)
            .into_iter()
            .filter(|m| &m.perms == b"r--p")
            .max_by_key(|m| m.end - m.start)
        else {
            return 60; // No read-only data named as the code's file.
        };
        let block = ((data.start + data.end) / 2) & !(HUGE - 1);
        if block < data.start || block + HUGE > data.end {
            return 100; // Under 4 MiB of read-only data: no whole block.
        }
        // SAFETY: the whole block lies inside the data mapping (checked).
        let bytes = unsafe { std::slice::from_raw_parts(block as *const u8, HUGE) }.to_vec();
        let mut hot = HotPages::read_at(&[block + 4096]);
        let done = remap_hot(&maps, &mut hot);
        if !thp_on() {
            let nothing = done.bytes == 0
                && done.error.as_deref() == Some("no huge pages to be had")
                && mapping_of(block).name == data.name;
            return if nothing { 0 } else { 50 };
        }
        let m = mapping_of(block);
        let checks = [
            done.error.is_none() && done.bytes == HUGE,
            hot.read_pages().all(|p| p & !(HUGE - 1) != block),
            m.name.is_empty() && &m.perms == b"r--p",
            huge_bytes_at(m.start) >= HUGE,
            // SAFETY: the block is mapped readable (checked just above).
            unsafe { std::slice::from_raw_parts(block as *const u8, HUGE) } == &bytes[..],
        ];
        checks
            .iter()
            .position(|ok| !ok)
            .map_or(0, |i| i as i32 + 61)
    }

    #[test]
    fn hot_read_only_data_moves_onto_anonymous_memory_unchanged() {
        assert_eq!(
            in_a_fork::exit_code_of(move_data_and_check),
            0,
            "a check failed (see move_data_and_check)"
        );
    }

    /// Whether the mapping holding `addr` is anonymous and executable.
    fn anonymous(addr: usize) -> bool {
        let m = mapping_of(addr);
        m.name.is_empty() && &m.perms == b"r-xp"
    }

    #[test]
    fn hot_code_moves_onto_anonymous_memory_and_runs_the_same() {
        let code = in_a_fork::exit_code_of(move_and_check);
        assert_eq!(code, 0, "check {code} failed");
    }

    #[test]
    fn nothing_moves_without_maps_or_room() {
        let mut hot = HotPages::read_at(&[code_to_move as fn(u64) -> u64 as usize]);
        let done = remap_hot(&[], &mut hot);
        assert_eq!(done.bytes, 0);
        assert_eq!(
            done.error.as_deref(),
            Some("/proc/self/maps could not be read")
        );
        assert!(code_mapping(&[]).is_none());
        assert!(room_for_mappings(100, 65530));
        assert!(!room_for_mappings(65530 - 64, 65530));
        assert!(!room_for_mappings(usize::MAX, 65530));
    }

    #[test]
    fn neighbouring_blocks_move_together() {
        let blocks: BTreeSet<usize> = [0, HUGE, 3 * HUGE].into();
        assert_eq!(spans(&blocks), [(0, 2 * HUGE), (3 * HUGE, HUGE)]);
        assert!(spans(&BTreeSet::new()).is_empty());
    }
}
