use super::*;
use crate::proc_maps;
use std::os::fd::AsRawFd;

/// This process's page-map entry for the page at `addr`.
fn entry(addr: usize) -> u64 {
    use std::os::unix::fs::FileExt;
    let pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
    let mut entry = [0u8; 8];
    pagemap
        .read_exact_at(&mut entry, (addr / PAGE * 8) as u64)
        .unwrap();
    u64::from_le_bytes(entry)
}

/// Whether this process has the page at `addr` mapped now.
fn present(addr: usize) -> bool {
    entry(addr) & PRESENT != 0
}

/// Whether the page at `addr` is this process's own (not shared).
fn exclusive(addr: usize) -> bool {
    entry(addr) & EXCLUSIVE != 0
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
    // Small pages only, whatever the host's THP setting: the test
    // counts pages.
    // SAFETY: advice on the mapping just made.
    unsafe { libc::madvise(p, pages * PAGE, libc::MADV_NOHUGEPAGE) };
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

fn poke(addr: usize, value: u8) {
    // SAFETY: the tests poke only inside their own writable mappings.
    unsafe { std::ptr::write_volatile(addr as *mut u8, value) };
}

fn peek(addr: usize) -> u8 {
    // SAFETY: the tests peek only inside their own readable mappings.
    unsafe { std::ptr::read_volatile(addr as *const u8) }
}

#[test]
fn the_pages_a_probe_writes_and_reads_are_learned_and_mapped() {
    let anon = mapping(64, None);
    let path = std::env::temp_dir().join(format!("toolgate-hot-{}", std::process::id()));
    std::fs::write(&path, vec![1u8; 1024 * PAGE]).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let text = mapping(1024, Some(&file));
    // This process (the zygote's part) wrote pages 10 and 12.
    poke(anon + 10 * PAGE, 42);
    poke(anon + 12 * PAGE, 5);
    // The probe writes pages 3, 4, 9 and 12, reads page 10 of the
    // first mapping and page 700 of the second.
    let maps = proc_maps::read().unwrap();
    let hot = HotPages::learn(&maps, || {
        for page in [3, 4, 9, 12] {
            poke(anon + page * PAGE, 7);
        }
        std::hint::black_box(peek(anon + 10 * PAGE));
        std::hint::black_box(peek(text + 700 * PAGE));
    });
    let in_anon = |r: &&Run| r.start >= anon && r.start < anon + 64 * PAGE;
    let written: Vec<_> = hot.runs.iter().filter(in_anon).copied().collect();
    let run = |page, pages| Run {
        start: anon + page * PAGE,
        pages,
        write: true,
    };
    // Page 10, only read, is still the zygote's: not learned.
    assert_eq!(written, [run(3, 2), run(9, 1), run(12, 1)]);
    let read = hot
        .runs
        .iter()
        .find(|r| r.start <= text + 700 * PAGE && text + 700 * PAGE < r.start + r.pages * PAGE)
        .expect("the page the probe read is learned");
    assert!(!read.write);
    assert!(!present(anon + 3 * PAGE) && !present(text + 700 * PAGE));
    let (w, r) = hot.pages();
    assert!(w >= 4 && r >= 1, "{w} written, {r} read");

    // A request already waiting: the spare maps nothing.
    let [sock, _peer] = socket(true);
    hot.populate_until_request(sock);
    assert!(!present(anon + 3 * PAGE) && !present(text + 700 * PAGE));

    // A spare, forked from this process, maps the pages while it waits:
    // page 12, shared with this process, becomes its own copy, with
    // this process's value.
    // SAFETY: fork in a test; the child only populates, checks pages
    // and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let [sock, _peer] = socket(false);
        let shared_before = !exclusive(anon + 12 * PAGE);
        hot.populate_until_request(sock);
        let checks = [
            shared_before,
            [3, 4, 9].iter().all(|p| present(anon + p * PAGE)),
            !present(anon + 5 * PAGE),
            present(text + 700 * PAGE),
            exclusive(anon + 12 * PAGE),
            peek(anon + 12 * PAGE) == 5,
            peek(anon + 10 * PAGE) == 42 && !exclusive(anon + 10 * PAGE),
            peek(anon + 3 * PAGE) == 0,
        ];
        let failed = checks.iter().position(|ok| !ok).map_or(0, |i| i as i32 + 1);
        // SAFETY: _exit has no preconditions.
        unsafe { libc::_exit(failed) }
    }
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status), "the spare died: {status:#x}");
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "the spare's check {} failed",
        libc::WEXITSTATUS(status)
    );
}

#[test]
fn a_probe_that_fails_teaches_nothing() {
    let hot = HotPages::learn(&proc_maps::read().unwrap(), || {
        // SAFETY: _exit has no preconditions; the probe dies early.
        unsafe { libc::_exit(3) }
    });
    assert!(hot.runs.is_empty());
}

#[test]
fn mappings_and_reports_are_read_strictly() {
    let scans = |line: &str| scanned(&proc_maps::parse(line).unwrap());
    for kept in [
        "7f00aa000-7f00ab000 rw-p 00000000 00:00 0 ",
        "5600000-5601000 r-xp 00001000 08:01 123 /usr/bin/toolgate",
        "55d000-55e000 rw-p 00000000 00:00 0 [heap]",
        "7ffd0000-7ffd2000 rw-p 00000000 00:00 0 [stack]",
        "40000000-80000000 rw-p 00000000 00:00 0",
    ] {
        assert!(scans(kept), "{kept}");
    }
    for skipped in [
        "7f00aa000-7f00ab000 rw-s 00000000 00:01 9 /memfd:toolgate-out (deleted)",
        "7f00aa000-7f00ab000 r--s 00000000 08:01 9 /usr/share/zoneinfo.db",
        "7ffd1000-7ffd3000 r--p 00000000 00:00 0 [vvar]",
        "7ffd3000-7ffd5000 r-xp 00000000 00:00 0 [vdso]",
        "7f00aa000-7f00ab000 ---p 00000000 00:00 0 ",
        "100000000-200000000 rw-p 00000000 00:00 0 ",
    ] {
        assert!(!scans(skipped), "{skipped}");
    }

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
