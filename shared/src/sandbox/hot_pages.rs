//! The pages a call touches that fork does not hand a child ready, learned
//! once and mapped by each lean spare while it waits.
//!
//! Fork copies no page-table entries of code and read-only data (mappings
//! no one wrote), so a child faults in every page of code it runs; and each
//! page of the warm image a script writes is copied on its first write. A
//! spare that ran the warm-up took those faults before its call; a lean
//! spare (calls back to back, see `Shared::request_spawn`) takes them during
//! it. At start the zygote forks a probe that runs the warm-up and reads
//! from `/proc/self/pagemap` which pages it faulted in (present in a mapping
//! of code or read-only data) or copied (present and no longer shared, in a
//! private writable mapping). A lean spare then maps exactly those with
//! `MADV_POPULATE_READ`/`_WRITE` (Linux 5.14+): the same faults, a few
//! syscalls, and none of the warm-up's interpreting.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use super::heap_reserve::request_waiting;

const PAGE: usize = 4096;

/// Pages populated between two looks for the request: ~10–30 µs of work,
/// the longest a call waits for the spare to notice it.
const PIECE: usize = 32;

/// pagemap: bit 63 is "present", bit 56 "mapped by this process only".
const PRESENT: u64 = 1 << 63;
const EXCLUSIVE: u64 = 1 << 56;

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

/// One line of `/proc/self/maps`, as far as the scan needs it.
#[derive(Debug, Clone, Copy)]
struct Mapping {
    start: usize,
    end: usize,
    /// Private and writable: copied on a write after fork.
    copied_on_write: bool,
}

impl HotPages {
    /// Forks a probe that runs `touch` (the warm-up) and reports the pages
    /// it faulted in. None learned (an empty set) where the probe cannot
    /// run or read its page map: spares then fault as before.
    pub(super) fn learn(touch: impl FnOnce()) -> Self {
        let Some(maps) = mappings() else {
            return Self::default();
        };
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills the two-int array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Self::default();
        }
        // SAFETY: both descriptors are fresh from pipe2 and owned here only.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the zygote is single-threaded (see zygote's docs), so the
        // probe gets a consistent copy of every lock and allocator.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Self::default();
        }
        if pid == 0 {
            drop(rd);
            touch();
            let runs = scan(&maps).unwrap_or_default();
            let _ = std::fs::File::from(wr).write_all(&encode(&runs));
            // SAFETY: _exit has no preconditions; the probe's copy of the
            // zygote needs no teardown.
            unsafe { libc::_exit(0) }
        }
        drop(wr);
        let mut bytes = Vec::new();
        let read = std::fs::File::from(rd)
            .take((MAX_RUNS * 17) as u64 + 1)
            .read_to_end(&mut bytes);
        let mut status = 0;
        // SAFETY: waiting on our own child with a valid status pointer.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        let clean = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
        match (read, clean) {
            (Ok(_), true) => Self {
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

    /// Forgets the runs inside [start, end): a child has them mapped
    /// already (`huge_text`).
    pub(super) fn forget(&mut self, start: usize, end: usize) {
        self.runs
            .retain(|r| r.start + r.pages * PAGE <= start || r.start >= end);
    }

    /// Maps the learned pages into this process (a sealed spare) a piece
    /// at a time, until the request is waiting on `sock` (the report
    /// socket): a call never waits for it, and what is left faults in as
    /// before. Stops too where the kernel refuses populating outright
    /// (before 5.14); a run whose mapping changed since is skipped.
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
                // inherits at the same addresses; one since unmapped or
                // changed fails with ENOMEM or EFAULT, harmless.
                let rc = unsafe {
                    libc::madvise(
                        (run.start + done * PAGE) as *mut libc::c_void,
                        pages * PAGE,
                        advice,
                    )
                };
                if rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                    return;
                }
                done += pages;
            }
        }
    }
}

/// The private mappings a probe's faults can land in, from
/// `/proc/self/maps`: not shared ones (the output mapping), not the
/// kernel's (`[vvar]`, `[vdso]`), not inaccessible guards.
fn mappings() -> Option<Vec<Mapping>> {
    let text = std::fs::read_to_string("/proc/self/maps").ok()?;
    Some(text.lines().filter_map(parse_mapping).collect())
}

fn parse_mapping(line: &str) -> Option<Mapping> {
    let mut fields = line.split_ascii_whitespace();
    let (start, end) = fields.next()?.split_once('-')?;
    let perms = fields.next()?.as_bytes();
    let name = fields.nth(3).unwrap_or("");
    let special = name.starts_with('[') && name != "[heap]" && name != "[stack]";
    if perms.len() < 4 || perms[3] != b'p' || perms[0] != b'r' || special {
        return None;
    }
    Some(Mapping {
        start: usize::from_str_radix(start, 16).ok()?,
        end: usize::from_str_radix(end, 16).ok()?,
        copied_on_write: perms[1] == b'w',
    })
}

/// The probe's hot pages: in a writable mapping, those it copied or made
/// (present and its own); elsewhere, those it faulted in (present: fork
/// maps none of them).
fn scan(maps: &[Mapping]) -> std::io::Result<Vec<Run>> {
    use std::os::unix::fs::FileExt;
    let pagemap = std::fs::File::open("/proc/self/pagemap")?;
    let mut runs: Vec<Run> = Vec::new();
    let mut buf = vec![0u8; 8 * 512];
    for m in maps {
        let mut page = m.start / PAGE;
        while page < m.end / PAGE {
            let count = (m.end / PAGE - page).min(512);
            let bytes = &mut buf[..count * 8];
            pagemap.read_exact_at(bytes, (page * 8) as u64)?;
            for (i, entry) in bytes.chunks_exact(8).enumerate() {
                let e = u64::from_le_bytes(entry.try_into().expect("8 bytes"));
                let hot = e & PRESENT != 0 && (!m.copied_on_write || e & EXCLUSIVE != 0);
                if hot {
                    push_page(&mut runs, (page + i) * PAGE, m.copied_on_write);
                }
            }
            page += count;
        }
        if runs.len() > MAX_RUNS {
            return Ok(Vec::new());
        }
    }
    Ok(runs)
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
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// Whether this process has the page at `addr` mapped now.
    fn present(addr: usize) -> bool {
        use std::os::unix::fs::FileExt;
        let pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
        let mut entry = [0u8; 8];
        pagemap
            .read_exact_at(&mut entry, (addr / PAGE * 8) as u64)
            .unwrap();
        u64::from_le_bytes(entry) & PRESENT != 0
    }

    /// A fresh private mapping of `pages` pages: anonymous and writable, or
    /// of a file and read-only. Never unmapped (the test process ends).
    fn mapping(pages: usize, file: Option<&std::fs::File>) -> usize {
        let (prot, flags, fd) = match file {
            None => (
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
            ),
            Some(f) => (libc::PROT_READ, libc::MAP_PRIVATE, f.as_raw_fd()),
        };
        // SAFETY: a fresh mapping at an address the kernel picks; checked.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), pages * PAGE, prot, flags, fd, 0) };
        assert_ne!(p, libc::MAP_FAILED);
        p as usize
    }

    /// The report socket's two ends; a request is waiting on the first when
    /// `waiting`.
    fn socket(waiting: bool) -> [RawFd; 2] {
        let mut fds = [0; 2];
        // SAFETY: socketpair fills the two-int array it is given.
        let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) };
        assert_eq!(rc, 0);
        if waiting {
            // SAFETY: write from a static byte to our own socket.
            unsafe { libc::write(fds[1], b"{".as_ptr().cast(), 1) };
        }
        fds
    }

    #[test]
    fn the_pages_a_probe_writes_and_reads_are_learned_and_mapped() {
        let anon = mapping(64, None);
        let path = std::env::temp_dir().join(format!("toolgate-hot-{}", std::process::id()));
        std::fs::write(&path, vec![1u8; 1024 * PAGE]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let text = mapping(1024, Some(&file));
        // The probe writes 3 pages of the first and reads one of the
        // second; nothing of either was ever touched here.
        let hot = HotPages::learn(|| {
            for page in [3, 4, 9] {
                // SAFETY: inside the probe's copy of the writable mapping.
                unsafe { std::ptr::write_volatile((anon + page * PAGE) as *mut u8, 7) };
            }
            // SAFETY: inside the probe's copy of the readable mapping.
            unsafe { std::ptr::read_volatile((text + 700 * PAGE) as *const u8) };
        });
        let in_anon = |r: &&Run| r.start >= anon && r.start < anon + 64 * PAGE;
        let written: Vec<_> = hot.runs.iter().filter(in_anon).copied().collect();
        assert_eq!(
            written,
            [
                Run {
                    start: anon + 3 * PAGE,
                    pages: 2,
                    write: true
                },
                Run {
                    start: anon + 9 * PAGE,
                    pages: 1,
                    write: true
                },
            ]
        );
        let read = hot
            .runs
            .iter()
            .find(|r| r.start <= text + 700 * PAGE && text + 700 * PAGE < r.start + r.pages * PAGE)
            .expect("the page the probe read is learned");
        assert!(!read.write);
        assert!((0..64).all(|p| !present(anon + p * PAGE)));
        assert!(!present(text + 700 * PAGE));

        // A request already waiting: the spare maps nothing.
        let [sock, _peer] = socket(true);
        hot.populate_until_request(sock);
        assert!(!present(anon + 3 * PAGE) && !present(text + 700 * PAGE));

        let [sock, _peer] = socket(false);
        hot.populate_until_request(sock);
        for page in [3, 4, 9] {
            assert!(present(anon + page * PAGE), "page {page} is not mapped");
        }
        assert!(!present(anon + 5 * PAGE), "a page the probe never touched");
        assert!(present(text + 700 * PAGE));
        // SAFETY: inside the writable mapping, which this process never wrote.
        let first = unsafe { std::ptr::read_volatile((anon + 3 * PAGE) as *const u8) };
        assert_eq!(first, 0, "populating kept the page's contents");
        let (w, r) = hot.pages();
        assert!(w >= 3 && r >= 1, "{w} written, {r} read");
    }

    #[test]
    fn a_probe_that_fails_teaches_nothing() {
        let hot = HotPages::learn(|| {
            // SAFETY: _exit has no preconditions; the probe dies early.
            unsafe { libc::_exit(3) }
        });
        assert!(hot.runs.is_empty());
    }

    #[test]
    fn maps_lines_and_reports_are_read_strictly() {
        let m = parse_mapping("7f00aa000-7f00ab000 rw-p 00000000 00:00 0 ").unwrap();
        assert_eq!(
            (m.start, m.end, m.copied_on_write),
            (0x7f00aa000, 0x7f00ab000, true)
        );
        let text = "5600000-5601000 r-xp 00001000 08:01 123 /usr/bin/toolgate";
        assert!(!parse_mapping(text).unwrap().copied_on_write);
        for skipped in [
            "7f00aa000-7f00ab000 rw-s 00000000 00:01 9 /memfd:toolgate-out (deleted)",
            "7ffd1000-7ffd3000 r--p 00000000 00:00 0 [vvar]",
            "7ffd3000-7ffd5000 r-xp 00000000 00:00 0 [vdso]",
            "7f00aa000-7f00ab000 ---p 00000000 00:00 0 ",
            "garbage",
        ] {
            assert!(parse_mapping(skipped).is_none(), "{skipped}");
        }
        assert!(parse_mapping("55d000-55e000 rw-p 00000000 00:00 0 [heap]").is_some());

        let runs = vec![
            Run {
                start: 0x1000,
                pages: 2,
                write: true,
            },
            Run {
                start: 0x9000,
                pages: 1,
                write: false,
            },
        ];
        assert_eq!(decode(&encode(&runs)), runs);
        let mut cut = encode(&runs);
        cut.pop();
        assert!(decode(&cut).is_empty(), "a cut report");
        let mut pages = Vec::new();
        for addr in [0x1000, 0x2000, 0x4000] {
            push_page(&mut pages, addr, true);
        }
        push_page(&mut pages, 0x5000, false);
        assert_eq!(pages.len(), 3, "{pages:?}");
        assert_eq!(pages[0].pages, 2);
    }
}
