//! `sandbox::heap_drain`, tested on a main thread as the zygote runs it:
//! glibc gives every other thread an arena of its own, and libtest runs
//! each test on a thread of its own, so this binary has no harness (it
//! prints libtest's summary line, which `scripts/test` counts).

use toolgate_sandbox::heap_drain;

/// Minor page faults of this process so far.
fn faults() -> i64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru.ru_minflt
    }
}

/// Forks `f` (the child runs on its main thread, as this one) and returns
/// its exit code.
fn in_child(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: this process is single-threaded; the child only allocates,
    // counts and exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // A panic must not unwind into a copy of the test runner.
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(255);
        // SAFETY: _exit has no preconditions.
        unsafe { libc::_exit(code) }
    }
    let mut status = 0;
    // SAFETY: reaping our own child with a valid status pointer.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status), "status {status:#x}");
    libc::WEXITSTATUS(status)
}

/// The page size: a live object of a page less a little keeps each small
/// free chunk on a page of its own, whatever the page size.
fn page() -> usize {
    // SAFETY: sysconf takes a plain name.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// As a zygote: leaves 600 small free chunks, one per page among live
/// objects, drains them or not, then forks a child that allocates 600
/// objects of that size. Returns that child's page faults over 4, or 254
/// when the drain took fewer chunks than were freed.
fn child_faults(drained: bool) -> i32 {
    in_child(move || {
        let mut live = Vec::with_capacity(600);
        let mut small = Vec::with_capacity(600);
        let page = page();
        for _ in 0..600 {
            small.push(Box::new([1u8; 40]));
            live.push(vec![2u8; page - 96]);
        }
        drop(small);
        if drained && heap_drain::drain().chunks < 600 {
            return 254;
        }
        let code = in_child(|| {
            let before = faults();
            let objects: Vec<Box<[u8; 40]>> = (0..600).map(|_| Box::new([3u8; 40])).collect();
            let taken = faults() - before;
            std::hint::black_box(objects);
            (taken / 4).min(253) as i32
        });
        std::hint::black_box(live);
        code
    })
}

fn a_drained_heap_leaves_no_free_chunk_for_a_child_to_copy() -> Result<(), String> {
    let undrained = child_faults(false);
    let drained = child_faults(true);
    if drained == 254 {
        return Err("the drain took fewer chunks than were freed".into());
    }
    // Undrained, each object lands in a freed chunk on a page shared with
    // the parent (600 copies); drained, 600 × 48 bytes of fresh heap is
    // ~8 pages.
    if undrained * 4 < 400 {
        return Err(format!(
            "{} faults undrained: the test no longer fragments the heap",
            undrained * 4
        ));
    }
    if drained * 4 > 60 {
        return Err(format!("{} faults drained", drained * 4));
    }
    Ok(())
}

fn after_a_drain_nothing_is_binned() -> Result<(), String> {
    let code = in_child(|| {
        // Chunks of many sizes, small and large, freed between live ones.
        let mut keep = Vec::new();
        let mut freed = Vec::new();
        for i in 0..300 {
            keep.push(vec![0u8; 16 + i * 8]);
            freed.push(vec![0u8; 16 + i * 40]);
        }
        drop(freed);
        std::hint::black_box(&keep);
        let before = heap_drain::binned().0;
        let d = heap_drain::drain();
        let after = heap_drain::binned().0;
        if before < 100_000 {
            1
        } else if after != 0 {
            2
        } else if d.bytes == 0 || d.bytes > before {
            3
        } else {
            0
        }
    });
    match code {
        0 => Ok(()),
        1 => Err("the test freed too little to drain".into()),
        2 => Err("free chunks left in the bins".into()),
        3 => Err("the drain miscounted what it took".into()),
        c => Err(format!("the child exited {c}")),
    }
}

fn a_large_hole_is_taken_whole() -> Result<(), String> {
    let code = in_child(|| {
        // 64 neighbours of 16 KiB (under the mapping threshold), freed
        // together: one hole of 1 MiB with a live object after it.
        let first = Box::new([1u8; 64]);
        let hole: Vec<Vec<u8>> = (0..64).map(|_| vec![1u8; 16 << 10]).collect();
        let last = Box::new([1u8; 64]);
        drop(hole);
        std::hint::black_box((&first, &last));
        let before = faults();
        let d = heap_drain::drain();
        let taken = faults() - before;
        if d.bytes < 1 << 20 {
            1
        } else if heap_drain::binned().0 != 0 {
            2
        } else {
            // In pieces of 32 bytes the drain would write each of the
            // hole's 256 pages (which the trim gave back).
            (taken / 4).min(250) as i32 + 3
        }
    });
    match code {
        1 => Err("the test left no hole of 1 MiB".into()),
        2 => Err("free chunks left in the bins".into()),
        c if c > 250 => Err(format!("the child exited {c}")),
        c if (c - 3) * 4 > 40 => Err(format!("{} faults to drain the hole", (c - 3) * 4)),
        _ => Ok(()),
    }
}

/// A test: its name and its body.
type Test = (&'static str, fn() -> Result<(), String>);

fn main() {
    let tests: [Test; 3] = [
        (
            "a_drained_heap_leaves_no_free_chunk_for_a_child_to_copy",
            a_drained_heap_leaves_no_free_chunk_for_a_child_to_copy,
        ),
        (
            "after_a_drain_nothing_is_binned",
            after_a_drain_nothing_is_binned,
        ),
        ("a_large_hole_is_taken_whole", a_large_hole_is_taken_whole),
    ];
    println!("\nrunning {} tests", tests.len());
    let mut failed = 0;
    for (name, test) in tests {
        match test() {
            Ok(()) => println!("test {name} ... ok"),
            Err(why) => {
                failed += 1;
                println!("test {name} ... FAILED\n  {why}");
            }
        }
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out\n",
        tests.len() - failed
    );
    std::process::exit(i32::from(failed > 0));
}
