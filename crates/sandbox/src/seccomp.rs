//! The child's seccomp-bpf filter (compiled by [`super::seccomp_bpf`]).
//!
//! It allows what a running interpreter needs: memory, futex, clock reads,
//! sleep, randomness, reading its request from and writing its report to its
//! socket, and exit. Anything else kills the process. Executable mappings
//! are refused too, so a memory-safety bug in the VM cannot turn data into
//! code.

use super::error::SandboxError;
use super::seccomp_bpf::{Cmp, Cond, Program, Rules, compile};

/// The child's report socket is always this descriptor.
pub const CHILD_FD: i32 = 3;

/// `AUDIT_ARCH_*` of this build's target (linux/audit.h).
fn arch() -> Result<u32, SandboxError> {
    if cfg!(target_arch = "x86_64") {
        Ok(0xC000_003E)
    } else if cfg!(target_arch = "aarch64") {
        Ok(0xC000_00B7)
    } else {
        Err(SandboxError::SeccompBuild(
            "unsupported architecture".into(),
        ))
    }
}

fn on(arg: u8, cmp: Cmp) -> Cond {
    Cond { arg, cmp }
}

/// What the process `pid` may do.
pub fn rules(pid: i32) -> Rules {
    let mut rules = Rules::default();
    let mut allow = |nr: libc::c_long, conds: Vec<Vec<Cond>>| {
        let before = rules.0.insert(nr as u32, conds);
        debug_assert!(before.is_none(), "syscall {nr} listed twice");
    };
    let always = [
        libc::SYS_brk,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_madvise,
        libc::SYS_futex,
        libc::SYS_sched_yield,
        libc::SYS_getrandom,
        libc::SYS_gettimeofday,
        libc::SYS_nanosleep,
        libc::SYS_rt_sigreturn,
        libc::SYS_rt_sigprocmask,
        libc::SYS_sigaltstack,
        libc::SYS_restart_syscall,
        libc::SYS_rt_sigaction,
        libc::SYS_getpid,
        libc::SYS_gettid,
        libc::SYS_exit,
        libc::SYS_exit_group,
    ];
    for nr in always {
        allow(nr, vec![]);
    }
    let fd = CHILD_FD as u32;
    // Writes only to the report socket, and to fd 2, which is closed and can
    // never be reopened (no open, dup or socket): Rust's last-gasp messages
    // then fail with EBADF instead of killing the process with a misleading
    // SIGSYS.
    allow(
        libc::SYS_write,
        vec![vec![on(0, Cmp::Eq(fd))], vec![on(0, Cmp::Eq(2))]],
    );
    // The one request arrives on the report socket after the filter is in
    // place (spares wait sealed).
    allow(libc::SYS_read, vec![vec![on(0, Cmp::Eq(fd))]]);
    // A waiting spare peeks whether its request has come (`heap_reserve`):
    // on the report socket only, and only a peek that does not block.
    allow(
        libc::SYS_recvfrom,
        vec![vec![
            on(0, Cmp::Eq(fd)),
            on(3, Cmp::Eq(super::heap_reserve::PEEK_FLAGS as u32)),
        ]],
    );
    // abort() signals itself; no other process may be signalled.
    allow(libc::SYS_tgkill, vec![vec![on(0, Cmp::Eq(pid as u32))]]);
    // The system's clocks only (ids 0-11, MAX_CLOCKS is 16). A negative id
    // names another process's or thread's CPU clock by pid, which would list
    // the host's processes and let calls watch one another. Compared as an
    // unsigned 32-bit value, so every negative id is above the bound.
    let max_clock = toolgate_pyvm::host_facts::MAX_CLOCK_ID as u32;
    for nr in [
        libc::SYS_clock_gettime,
        libc::SYS_clock_getres,
        libc::SYS_clock_nanosleep,
    ] {
        allow(nr, vec![vec![on(0, Cmp::Le(max_clock))]]);
    }
    // Memory, but never executable.
    let no_exec = Cmp::MaskedEq {
        mask: libc::PROT_EXEC as u32,
        value: 0,
    };
    allow(libc::SYS_mmap, vec![vec![on(2, no_exec)]]);
    allow(libc::SYS_mprotect, vec![vec![on(2, no_exec)]]);
    rules
}

/// The filter for the process `pid`.
pub fn build(pid: i32) -> Result<Program, SandboxError> {
    compile(arch()?, &rules(pid)).map_err(SandboxError::SeccompBuild)
}

/// Installs the filter on every thread of the process (TSYNC): a child's
/// watchdog thread exists before the seal, and must not escape it.
pub fn apply(prog: &Program) -> Result<(), SandboxError> {
    let fail = |what: &str| {
        SandboxError::SeccompApply(format!("{what}: {}", std::io::Error::last_os_error()))
    };
    let len = u16::try_from(prog.len())
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            SandboxError::SeccompApply(format!("a program of {} instructions", prog.len()))
        })?;
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(fail("PR_SET_NO_NEW_PRIVS"));
    }
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: the kernel copies the program in; `fprog` and `prog` outlive
    // the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_TSYNC,
            &fprog as *const libc::sock_fprog,
        )
    };
    match rc {
        0 => Ok(()),
        // TSYNC names the thread that could not be synchronised.
        tid if tid > 0 => Err(SandboxError::SeccompApply(format!(
            "thread {tid} could not take the filter"
        ))),
        _ => Err(fail("seccomp")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forks; the child installs the filter, then runs `probe` (raw
    /// syscalls only, no allocation) and exits with its return value.
    fn run(probe: fn() -> i32) -> i32 {
        // SAFETY: getpid has no preconditions.
        let prog = build(unsafe { libc::getpid() }).unwrap();
        // SAFETY: fork in a test; `prog` is built before fork and
        // only read by the child.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // The filter allows tgkill only towards the pid it was built for,
            // which is the parent here; that is irrelevant to these probes.
            let code = if apply(&prog).is_ok() { probe() } else { 99 };
            // SAFETY: _exit has no preconditions.
            unsafe { libc::_exit(code) }
        }
        let mut status = 0;
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        status
    }

    fn killed_by_sigsys(status: i32) -> bool {
        libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSYS
    }

    #[test]
    fn allowed_calls_still_work() {
        let st = run(|| {
            // SAFETY: raw syscalls with valid arguments.
            unsafe {
                let mut ts: libc::timespec = std::mem::zeroed();
                libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    1 << 20,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if p == libc::MAP_FAILED {
                    return 1;
                }
                *(p as *mut u8) = 1;
                7
            }
        });
        assert!(libc::WIFEXITED(st), "status {st:#x}");
        assert_eq!(libc::WEXITSTATUS(st), 7);
    }

    #[test]
    fn opening_a_file_kills_the_process() {
        // SAFETY: open with a static C string.
        let st = run(|| unsafe { libc::open(c"/etc/passwd".as_ptr(), libc::O_RDONLY) });
        assert!(killed_by_sigsys(st), "status {st:#x}");
    }

    #[test]
    fn sockets_processes_and_clock_setting_kill_the_process() {
        // SAFETY: raw syscalls; each is expected to be refused by the filter.
        let probes: [fn() -> i32; 6] = [
            || unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) },
            || unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0) as i32 },
            || unsafe {
                let ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                libc::clock_settime(libc::CLOCK_REALTIME, &ts)
            },
            || unsafe { libc::kill(1, 0) },
            || unsafe { libc::syscall(libc::SYS_execve, c"/bin/sh".as_ptr(), 0, 0) as i32 },
            // The CPU clock of pid 1: ((~pid) << 3) | CPUCLOCK_SCHED.
            || unsafe {
                let mut ts: libc::timespec = std::mem::zeroed();
                libc::syscall(libc::SYS_clock_gettime, (!1i32 << 3) | 2, &mut ts) as i32
            },
        ];
        for (i, p) in probes.into_iter().enumerate() {
            let st = run(p);
            assert!(killed_by_sigsys(st), "probe {i}: status {st:#x}");
        }
    }

    #[test]
    fn writes_only_reach_the_report_socket() {
        // fd 1 is the test's stdout: a write there must kill, not print.
        // SAFETY: write from a static buffer.
        let st = run(|| unsafe { libc::write(1, b"leak\n".as_ptr().cast(), 5) as i32 });
        assert!(killed_by_sigsys(st), "status {st:#x}");
    }

    #[test]
    fn reads_only_come_from_the_report_socket() {
        // fd 0 is the test's stdin: the request arrives on fd 3 only.
        // SAFETY: read into a stack buffer; expected to be refused.
        let st = run(|| unsafe {
            let mut b = [0u8; 1];
            libc::read(0, b.as_mut_ptr().cast(), 1) as i32
        });
        assert!(killed_by_sigsys(st), "status {st:#x}");
    }

    /// recvfrom of one byte from `fd` with `flags`; -errno on failure.
    fn receive(fd: i32, flags: i32) -> i32 {
        match super::super::heap_reserve::receive_one(fd, flags) {
            Ok(n) => n as i32,
            Err(e) => -e.raw_os_error().unwrap_or(1),
        }
    }

    #[test]
    fn the_report_socket_may_be_peeked_at_and_nothing_else_received() {
        use super::super::heap_reserve::PEEK_FLAGS;
        // Whatever the probe's fd 3 is (another test's socket, a pipe,
        // nothing), the spare's peek is let through: the kernel answers and
        // the probe lives. Every flag here keeps a wrongly allowed receive
        // from blocking.
        let st = run(|| {
            let _ = receive(CHILD_FD, PEEK_FLAGS);
            7
        });
        assert!(libc::WIFEXITED(st), "status {st:#x}");
        assert_eq!(libc::WEXITSTATUS(st), 7);
        type Probe = (&'static str, fn() -> i32);
        let refused: [Probe; 3] = [
            ("a receive that consumes", || {
                receive(CHILD_FD, libc::MSG_DONTWAIT)
            }),
            ("other flags", || {
                receive(CHILD_FD, PEEK_FLAGS | libc::MSG_TRUNC)
            }),
            ("another descriptor", || receive(0, PEEK_FLAGS)),
        ];
        for (what, probe) in refused {
            let st = run(probe);
            assert!(killed_by_sigsys(st), "{what}: status {st:#x}");
        }
    }

    #[test]
    fn threads_started_before_the_filter_are_filtered_too() {
        use std::sync::atomic::{AtomicBool, Ordering};
        static GO: AtomicBool = AtomicBool::new(false);
        // SAFETY: getpid has no preconditions.
        let prog = build(unsafe { libc::getpid() }).unwrap();
        // SAFETY: fork in a test; the child starts one thread (glibc resets
        // the allocator's locks at fork), then installs the filter.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let t = std::thread::spawn(|| {
                while !GO.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
                // SAFETY: open with a static C string; expected to be refused.
                unsafe { libc::open(c"/etc/passwd".as_ptr(), libc::O_RDONLY) }
            });
            let code = if apply(&prog).is_ok() { 0 } else { 99 };
            GO.store(true, Ordering::Release);
            let _ = t.join();
            // SAFETY: _exit has no preconditions.
            unsafe { libc::_exit(code) }
        }
        let mut status = 0;
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(killed_by_sigsys(status), "status {status:#x}");
    }

    #[test]
    fn executable_memory_is_refused() {
        // SAFETY: mmap with valid arguments; expected to be refused.
        let st = run(|| unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_EXEC,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED { 3 } else { 4 }
        });
        assert!(killed_by_sigsys(st), "status {st:#x}");
    }
}
