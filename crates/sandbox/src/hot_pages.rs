//! The pages a call touches that fork does not hand a child ready, learned
//! once and mapped by each lean spare while it waits.
//!
//! Fork copies no page-table entries of code and read-only data (mappings
//! no one wrote), so a child faults in the code it runs; and each
//! page of the warm image a script writes is copied on its first write. A
//! spare that ran the warm-up took those faults before its call; a lean
//! spare (calls back to back, see `Shared::request_spawn`) takes them during
//! it. At start the zygote forks a probe that runs the warm-up and reads
//! from `/proc/self/pagemap` which pages it faulted in (present in a mapping
//! of code or read-only data) or copied (present and no longer shared, in a
//! private writable mapping). A lean spare then maps exactly those with
//! `MADV_POPULATE_READ`/`_WRITE` (Linux 5.14+): the same faults, a few
//! syscalls, and none of the warm-up's interpreting. The set is the fixed
//! warm-up's, learned before any script runs: no script can change it.
//! Lean spares on a host that freezes the process between calls map none
//! (`ZygoteConfig::frozen_between_calls`): no spare waits there.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use super::heap_reserve::request_waiting;
use super::proc_maps::Mapping;

/// The page size this module assumes; on another (arm64 kernels with 16 or
/// 64 KiB pages) nothing is learned.
pub(super) const PAGE: usize = 4096;

/// Pages populated between two looks for the request: ~10–30 µs of work
/// with the page cache warm, the longest a call waits for the spare to
/// notice it.
const PIECE: usize = 32;

/// pagemap: bit 63 is "present", bit 61 "a file's page (or shared)",
/// bit 56 "mapped by this process only".
const PRESENT: u64 = 1 << 63;
const FILE: u64 = 1 << 61;
const EXCLUSIVE: u64 = 1 << 56;

/// A mapping this large is a reservation (a stack's, an arena's), not warm
/// image: scanning its page map would cost the start-up for nothing.
const MAX_MAPPING: usize = 1 << 30;

/// How long the zygote waits for its probe: the warm-up takes milliseconds.
const PROBE_WAIT_MS: libc::c_int = 5_000;

/// A probe's report is 17 bytes a run; a warm-up that touched this many
/// runs is not one a spare should replay.
const MAX_RUNS: usize = 64 << 10;

/// A run of pages to map, and whether for writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    start: usize,
    pages: usize,
    write: bool,
}

/// What a lean spare maps while it waits.
#[derive(Debug, Default)]
pub(super) struct HotPages {
    runs: Vec<Run>,
}

impl HotPages {
    /// Forks a probe that runs `touch` (the warm-up) and reports the pages
    /// it faulted in, within `maps` (this process's, `proc_maps::read`).
    /// None learned (an empty set) where the probe cannot run, read its
    /// page map or answer in time, or where the kernel cannot populate:
    /// spares then fault as before. Call in a single-threaded process (the
    /// zygote): the probe is a fork that runs `touch`.
    pub(super) fn learn(maps: &[Mapping], touch: impl FnOnce()) -> Self {
        if page_size() != PAGE || !populate_works() {
            return Self::default();
        }
        let maps: Vec<&Mapping> = maps.iter().filter(|m| scanned(m)).collect();
        if maps.is_empty() {
            return Self::default();
        }
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills the two-int array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Self::default();
        }
        // SAFETY: both descriptors are fresh from pipe2 and owned here only.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: getpid has no preconditions.
        let zygote = unsafe { libc::getpid() };
        // SAFETY: the zygote is single-threaded (see zygote's docs), so the
        // probe gets a consistent copy of every lock and allocator.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Self::default();
        }
        if pid == 0 {
            // SAFETY: prctl with constant arguments, getppid and _exit
            // have no preconditions. The probe dies with the zygote, and
            // goes if the zygote died before the line above took effect.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != zygote {
                    libc::_exit(1);
                }
            }
            drop(rd);
            // Opened and allocated before the warm-up runs, so that the
            // scan's own buffers are not among the pages it finds. Opened
            // here: `self` is the process that opens it.
            let pagemap = std::fs::File::open("/proc/self/pagemap");
            let mut runs = Vec::with_capacity(4096);
            let mut buf = vec![0u8; 8 * 512];
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(touch));
            let scanned = ran.is_ok()
                && pagemap.is_ok_and(|pm| scan(&pm, &maps, &mut buf, &mut runs).is_ok());
            let sent = scanned && std::fs::File::from(wr).write_all(&encode(&runs)).is_ok();
            // SAFETY: _exit has no preconditions; the probe's copy of the
            // zygote needs no teardown.
            unsafe { libc::_exit(if sent { 0 } else { 1 }) }
        }
        drop(wr);
        let bytes = read_report(rd);
        if bytes.is_none() {
            // SAFETY: signalling our own unreaped child by pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let clean = reap(pid);
        match bytes {
            Some(bytes) if clean => Self {
                runs: decode(&bytes),
            },
            _ => Self::default(),
        }
    }

    /// A set as if a probe had read `pages` (for `huge_text`'s tests).
    #[cfg(test)]
    pub(super) fn read_at(pages: &[usize]) -> Self {
        let mut runs = Vec::new();
        for &p in pages {
            push_page(&mut runs, p & !(PAGE - 1), false);
        }
        Self { runs }
    }

    /// Pages learned, for writing and for reading.
    #[cfg(test)]
    fn pages(&self) -> (usize, usize) {
        self.runs.iter().fold((0, 0), |(w, r), run| {
            if run.write {
                (w + run.pages, r)
            } else {
                (w, r + run.pages)
            }
        })
    }

    /// The learned pages that are read, not written, by address.
    pub(super) fn read_pages(&self) -> impl Iterator<Item = usize> + '_ {
        self.runs
            .iter()
            .filter(|r| !r.write)
            .flat_map(|r| (0..r.pages).map(move |i| r.start + i * PAGE))
    }

    /// Forgets every run that overlaps [start, end): a child has that range
    /// mapped already (`huge_text`).
    pub(super) fn forget(&mut self, start: usize, end: usize) {
        self.runs
            .retain(|r| r.start + r.pages * PAGE <= start || r.start >= end);
    }

    /// Maps the learned pages into this process (a sealed spare) a piece
    /// at a time, until the request is waiting on `sock` (the report
    /// socket): a call never waits for it, and what is left faults in as
    /// before. A run the kernel refuses (its mapping changed since) is
    /// skipped.
    pub(super) fn populate_until_request(&self, sock: RawFd) {
        for run in &self.runs {
            let advice = if run.write {
                libc::MADV_POPULATE_WRITE
            } else {
                libc::MADV_POPULATE_READ
            };
            let mut done = 0;
            while done < run.pages {
                if request_waiting(sock) {
                    return;
                }
                let pages = (run.pages - done).min(PIECE);
                // SAFETY: populating changes no contents: a read maps the
                // page the process would see anyway, a write copies a page
                // shared with the zygote (or zeroes one never written) as
                // the script's own first write would. The runs lie in
                // private mappings of the zygote, which every child
                // inherits at the same addresses; a range whose mapping
                // changed since fails (EFAULT, ENOMEM, EINVAL), harmlessly.
                let rc = unsafe {
                    libc::madvise(
                        (run.start + done * PAGE) as *mut libc::c_void,
                        pages * PAGE,
                        advice,
                    )
                };
                if rc != 0 {
                    break;
                }
                done += pages;
            }
        }
    }
}

/// The kernel's page size.
fn page_size() -> usize {
    // SAFETY: sysconf with a constant name has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(0)
}

/// Whether this kernel has `MADV_POPULATE_READ` (5.14+), tried on a page
/// of this function's own stack frame, which is mapped.
fn populate_works() -> bool {
    let probe = [0u8; 1];
    let page = (probe.as_ptr() as usize) & !(PAGE - 1);
    // SAFETY: populating the page that holds `probe`, a live stack byte;
    // it changes nothing.
    unsafe { libc::madvise(page as *mut libc::c_void, PAGE, libc::MADV_POPULATE_READ) == 0 }
}

/// The probe's report from the pipe's read end, or None if it is not all
/// there within [`PROBE_WAIT_MS`] (or is too long).
fn read_report(rd: OwnedFd) -> Option<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let deadline =
        std::time::Instant::now() + std::time::Duration::from_millis(PROBE_WAIT_MS as u64);
    let mut file = std::fs::File::from(rd);
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut pfd = libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the call's duration.
        let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis() as libc::c_int) };
        if n == 0 {
            return None;
        }
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        match file.read(&mut chunk) {
            Ok(0) => return Some(bytes),
            Ok(got) if bytes.len() + got <= MAX_RUNS * 17 => bytes.extend_from_slice(&chunk[..got]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            _ => return None,
        }
    }
}

/// Waits for the probe; whether it exited cleanly.
fn reap(pid: libc::pid_t) -> bool {
    let mut status = -1;
    loop {
        // SAFETY: waiting on our own child with a valid status pointer.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got == pid {
            return libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
        }
        if got < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
}

/// Whether a probe's faults can land in `m` and be replayed: a private
/// mapping, not the kernel's (`[vvar]`, `[vdso]`), not an inaccessible
/// guard, and not a reservation too large to scan.
fn scanned(m: &Mapping) -> bool {
    let special = m.name.starts_with('[') && m.name != "[heap]" && m.name != "[stack]";
    m.private() && m.readable() && !special && m.end - m.start <= MAX_MAPPING
}

/// The probe's hot pages into `runs`: in a writable mapping, those it
/// copied or made (present, anonymous and its own); elsewhere, those it
/// faulted in (present: fork maps none of a mapping no one wrote; in one
/// that was written, such as relocated data, fork mapped them all, and
/// populating them later costs next to nothing).
fn scan(
    pagemap: &std::fs::File,
    maps: &[&Mapping],
    buf: &mut [u8],
    runs: &mut Vec<Run>,
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    for m in maps {
        let mut page = m.start / PAGE;
        while page < m.end / PAGE {
            let count = (m.end / PAGE - page).min(buf.len() / 8);
            let bytes = &mut buf[..count * 8];
            pagemap.read_exact_at(bytes, (page * 8) as u64)?;
            for (i, entry) in bytes.chunks_exact(8).enumerate() {
                let e = u64::from_le_bytes(entry.try_into().expect("8 bytes"));
                let hot =
                    e & PRESENT != 0 && (!m.writable() || (e & EXCLUSIVE != 0 && e & FILE == 0));
                if hot {
                    push_page(runs, (page + i) * PAGE, m.writable());
                }
            }
            page += count;
        }
        if runs.len() > MAX_RUNS {
            runs.clear();
            return Ok(());
        }
    }
    Ok(())
}

/// Adds a page, extending the last run when it follows on.
fn push_page(runs: &mut Vec<Run>, addr: usize, write: bool) {
    if let Some(last) = runs.last_mut()
        && last.write == write
        && last.start + last.pages * PAGE == addr
    {
        last.pages += 1;
        return;
    }
    runs.push(Run {
        start: addr,
        pages: 1,
        write,
    });
}

fn encode(runs: &[Run]) -> Vec<u8> {
    let mut out = Vec::with_capacity(runs.len() * 17);
    for r in runs {
        out.extend_from_slice(&(r.start as u64).to_le_bytes());
        out.extend_from_slice(&(r.pages as u64).to_le_bytes());
        out.push(u8::from(r.write));
    }
    out
}

/// The probe's runs; a short or oversized report learns nothing.
fn decode(bytes: &[u8]) -> Vec<Run> {
    if !bytes.len().is_multiple_of(17) || bytes.len() > MAX_RUNS * 17 {
        return Vec::new();
    }
    bytes
        .chunks_exact(17)
        .map(|c| Run {
            start: u64::from_le_bytes(c[..8].try_into().expect("8 bytes")) as usize,
            pages: u64::from_le_bytes(c[8..16].try_into().expect("8 bytes")) as usize,
            write: c[16] != 0,
        })
        .collect()
}

#[cfg(test)]
mod tests;
