//! The zygote: a single-threaded process, warmed once, that forks a fresh
//! child for every call (docs/contracts.md#sandbox-isolation).
//!
//! The server starts it by re-executing its own binary with [`ZYGOTE_ARG`],
//! the control socket on fd 3 and an empty environment. Being single-threaded
//! is what makes `fork` safe here: no lock can be held by a thread that does
//! not exist in the child.

use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use serde::{Deserialize, Serialize};

use super::child::Ahead;
use super::control::{FromZygote, ToZygote};
use super::hot_pages::HotPages;
use super::proto::Walls;
use super::{child, outbuf, seccomp};
use super::{huge_heap, huge_text};
use toolgate_pyvm::vm::WarmVm;

/// `argv[1]` that turns a hosting binary into the zygote.
pub const ZYGOTE_ARG: &str = "__toolgate-sandbox-zygote";
/// The control socket's descriptor in the zygote.
pub const CONTROL_FD: RawFd = 3;

/// What the zygote is started with, as JSON in its arguments.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ZygoteConfig {
    /// The modules scripts may import, all imported before the first fork.
    pub allowed: Vec<String>,
    /// A script's memory cap, in MiB.
    pub memory_mb: u64,
    /// Fail to start rather than run without the seccomp filter.
    pub require_seccomp: bool,
    /// The files a script may return, in bytes in all.
    pub files_cap: u64,
    /// A session's saved state, in bytes at most.
    #[serde(default)]
    pub state_cap: u64,
    /// The host stops the process between calls (AWS Lambda freezes an
    /// instance once it has answered). Nothing a spare does while it waits
    /// is then off a call's path: a used child's replacement skips the
    /// warm-up run, and spares populate no learned pages and write no heap
    /// reserve (`child::run`), as the CPU would land on the next call, at
    /// the function's CPU share (`bench/lambda_shaped.py`).
    #[serde(default)]
    pub frozen_between_calls: bool,
}

/// The zygote's and its children's nice value (see `run`).
pub const NICE: i32 = 10;

/// Call first in `main` of every binary that hosts the sandbox: when the
/// binary was started as the zygote, this never returns.
pub fn maybe_run() {
    let mut args = std::env::args();
    if args.nth(1).as_deref() == Some(ZYGOTE_ARG) {
        run(&args.next().unwrap_or_default())
    }
}

/// What a child gets from the zygote: its report socket and the shared
/// output mapping (see `outbuf`).
pub struct ChildIo {
    /// The child's end of its socket to the server (`proto`'s frames).
    pub sock: RawFd,
    /// The shared output mapping (`outbuf::SIZE` bytes).
    pub out: *mut u8,
}

/// As [`maybe_run`], for a zygote whose children run `child` instead of a
/// script: the server's tests use it to play a child that lies (garbage,
/// cut or oversized reports). It speaks the real protocol, and runs no
/// interpreter.
#[doc(hidden)]
pub fn maybe_run_with(child: fn(ChildIo) -> !) {
    let mut args = std::env::args();
    if args.nth(1).as_deref() == Some(ZYGOTE_ARG) {
        // Else it outlives the test that started it, holding the test
        // run's output pipe open.
        die_with_server();
        let walls = Walls {
            capability_gap: false,
            scrub: false,
            // The pool's four are the pool's probe's (`pool::probe`).
            process_per_call: false,
            instance_per_call: false,
            rlimits: false,
            seccomp: false,
            seccomp_error: Some("a test zygote".into()),
            stop_at_deadline: false,
            kill_at_deadline: false,
            memory_mb: 0,
            probe_error: None,
            sandbox_error: None,
        };
        let _ = send(&FromZygote::Ready(walls), &[]);
        serve(&|io: ChildIo, _warm_up: bool| child(io))
    }
}

fn send(msg: &FromZygote, fds: &[RawFd]) -> nix::Result<usize> {
    msg.send(CONTROL_FD, fds)
}

fn fail(message: &str) -> ! {
    fail_with(FromZygote::Failed(message.into()))
}

fn fail_with(msg: FromZygote) -> ! {
    let _ = send(&msg, &[]);
    std::process::exit(1)
}

/// Dies with the parent: the zygote is killed when the server's thread that
/// spawned it exits (it lives as long as the sandbox), and a child when the
/// zygote exits.
fn die_with_server() {
    // SAFETY: prctl with constant arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
}

fn run(config_json: &str) -> ! {
    die_with_server();
    // Ctrl-C at a terminal signals the whole foreground group, the zygote
    // and its children with the server: the server alone decides when the
    // sandbox ends (it drains calls first, then drops it), so the zygote
    // must not die, and be restarted, under it. Children inherit this.
    // SAFETY: setting a disposition to SIG_IGN, before any other thread.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    // Nice 10, inherited by every child: forking and warming a replacement
    // spare must not delay the server's answer (measured: HTTP p50 for
    // print(1) 2.5–3.8 ms at nice 0, 1.3 ms at nice 10). A script still has
    // a whole CPU when nothing else wants it.
    // SAFETY: setpriority on our own process with integer arguments.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, NICE) };
    // One malloc arena: a child's watchdog thread would otherwise reserve an
    // arena of its own (64 MB of address space) inside the script's memory cap.
    // SAFETY: mallopt with a valid parameter, before any other thread exists.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) };
    let cfg: ZygoteConfig = match serde_json::from_str(config_json) {
        Ok(c) => c,
        Err(e) => fail(&format!("bad zygote config: {e}")),
    };
    let warm = match WarmVm::new(&cfg.allowed) {
        Ok(w) => w,
        Err(e) => fail(&e),
    };
    let (seccomp_on, seccomp_error) = match probe_seccomp() {
        Ok(()) => (true, None),
        Err(e) => (false, Some(e)),
    };
    if cfg.require_seccomp
        && let Some(e) = &seccomp_error
    {
        fail_with(FromZygote::SeccompRefused(e.clone()));
    }
    // Each wall as checked now, not as designed: a build or host where one
    // does not hold says so in /healthz.
    let (capability_gap, scrub) = warm.check_walls();
    let walls = Walls {
        capability_gap,
        scrub,
        // The pool keeps these four, and checks them by running probe
        // scripts (`pool::probe`), which set them.
        process_per_call: false,
        instance_per_call: false,
        rlimits: super::rlimit::probe().is_ok(),
        seccomp: seccomp_on,
        seccomp_error,
        stop_at_deadline: false,
        kill_at_deadline: false,
        memory_mb: cfg.memory_mb,
        probe_error: None,
        sandbox_error: None,
    };
    let hot = {
        // Read before the drain, which then leaves no hole for the probe's
        // first allocations (they land where a child's would), and dropped
        // at the end of this block, for the second drain to take.
        let maps = super::proc_maps::read().unwrap_or_default();
        // Last: what warm-up and the checks above freed must not be where a
        // child's first allocations land (see `heap_drain`).
        super::heap_drain::drain();
        let mut hot = HotPages::learn(&maps, || warm.prefault());
        if let Some(e) = huge_text::remap_hot(&maps, &mut hot).error {
            eprintln!("toolgate zygote: some code or read-only data stays on small pages: {e}");
        }
        hot
    };
    // After warm-up and the probe, the heap is what children share; the
    // maps read here are freed for the drain to take.
    let maps = super::proc_maps::read().unwrap_or_default();
    let collapsed = huge_heap::collapse(&maps);
    if let Some(e) = &collapsed.error {
        eprintln!("toolgate zygote: the heap stays on small pages: {e}");
    }
    drop(maps);
    let ahead = Ahead {
        hot,
        heap: collapsed.heap,
    };
    super::heap_drain::drain();
    let _ = send(&FromZygote::Ready(walls), &[]);
    serve(&|io: ChildIo, warm_up: bool| {
        child::run(&warm, &ahead, io.sock, io.out, seccomp_on, &cfg, warm_up)
    })
}

/// What a forked child does, given its channels and whether to warm up.
/// It never returns (the type cannot say so on stable Rust).
type ChildMain<'a> = dyn Fn(ChildIo, bool) + 'a;

/// Installs the filter in a throwaway child: some hosts refuse seccomp.
fn probe_seccomp() -> Result<(), String> {
    // SAFETY: getpid has no preconditions.
    let prog = seccomp::build(unsafe { libc::getpid() }).map_err(|e| e.to_string())?;
    // SAFETY: the zygote is single-threaded, so fork is safe; the child only
    // calls apply (no allocation: the program is built) and _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        let code = if seccomp::apply(&prog).is_ok() { 0 } else { 1 };
        // SAFETY: _exit has no preconditions.
        unsafe { libc::_exit(code) }
    }
    let mut status = 0;
    // SAFETY: waiting on our own child with a valid status pointer.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err("the kernel refused the seccomp filter (prctl or seccomp not permitted)".into())
    }
}

fn serve(child: &ChildMain<'_>) -> ! {
    // SIGCHLD arrives on a signalfd so one poll loop handles both sources.
    // SAFETY: sigset operations on a zeroed, then initialized set; signalfd
    // with a valid set. SIGCHLD is blocked first so it is never lost.
    let sfd = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK)
    };
    if sfd < 0 {
        fail("signalfd failed");
    }
    loop {
        let mut fds = [
            libc::pollfd {
                fd: CONTROL_FD,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a valid array of two pollfds for the call's duration.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            continue; // EINTR
        }
        if fds[1].revents != 0 {
            reap(sfd);
        }
        if fds[0].revents != 0 {
            let mut buf = [0u8; 16];
            // SAFETY: reading into a stack buffer of the given length.
            let got = unsafe { libc::recv(CONTROL_FD, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if got <= 0 {
                // The server closed the channel: exit; children die with us.
                std::process::exit(0);
            }
            let Some(ToZygote::Spawn { warm_up }) = ToZygote::decode(buf[0]) else {
                continue;
            };
            if let Err(e) = spawn(child, warm_up) {
                eprintln!("toolgate zygote: cannot fork a child: {e}");
            }
        }
    }
}

fn reap(sfd: RawFd) {
    let mut info = [0u8; 128];
    // SAFETY: draining the signalfd into a buffer of signalfd_siginfo size.
    while unsafe { libc::read(sfd, info.as_mut_ptr().cast(), info.len()) } > 0 {}
    loop {
        let mut status = 0;
        // SAFETY: reaping any of our children without blocking.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            break;
        }
        let _ = send(&FromZygote::Exited { pid, status }, &[]);
    }
}

fn spawn(child: &ChildMain<'_>, warm_up: bool) -> std::io::Result<()> {
    let err = std::io::Error::last_os_error;
    // SAFETY: memfd_create with a static C string; the result is checked and
    // immediately owned.
    let memfd = unsafe { libc::memfd_create(c"toolgate-out".as_ptr(), libc::MFD_CLOEXEC) };
    if memfd < 0 {
        return Err(err());
    }
    // SAFETY: memfd is a fresh descriptor we own.
    let memfd = unsafe { OwnedFd::from_raw_fd(memfd) };
    // SAFETY: ftruncate on our own memfd.
    if unsafe { libc::ftruncate(memfd.as_raw_fd(), outbuf::SIZE as libc::off_t) } != 0 {
        return Err(err());
    }
    // SAFETY: a fresh shared mapping of the memfd's full length; checked below.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            outbuf::SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            memfd.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(err());
    }
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(std::io::Error::from)?;

    // SAFETY: getpid has no preconditions.
    let zygote = unsafe { libc::getpid() };
    // SAFETY: the zygote is single-threaded (see module docs), so the child
    // gets a consistent copy of every lock and allocator.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        // SAFETY: unmapping the mapping made above.
        unsafe { libc::munmap(ptr, outbuf::SIZE) };
        return Err(err());
    }
    if pid == 0 {
        // Every child dies with the zygote, whatever it runs (a test's
        // stand-in child too, which would otherwise hold the test run's
        // output open).
        die_with_server();
        // A zygote that died before the line above sent no signal: the
        // child has a new parent already, and goes.
        // SAFETY: getppid has no preconditions.
        if unsafe { libc::getppid() } != zygote {
            // SAFETY: _exit has no preconditions.
            unsafe { libc::_exit(0) }
        }
        child(
            ChildIo {
                sock: theirs.into_raw_fd(),
                out: ptr.cast(),
            },
            warm_up,
        );
        // SAFETY: _exit has no preconditions; a child never returns here.
        unsafe { libc::_exit(1) }
    }
    drop(theirs);
    // SAFETY: the parent no longer needs its view; the child keeps its own.
    unsafe { libc::munmap(ptr, outbuf::SIZE) };
    // SAFETY: pidfd_open on our own live child; -1 (old kernel) is handled.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    let pidfd = (pidfd >= 0).then(|| {
        // SAFETY: a fresh descriptor from pidfd_open that we now own.
        unsafe { OwnedFd::from_raw_fd(pidfd) }
    });
    let mut fds = vec![ours.as_raw_fd(), memfd.as_raw_fd()];
    if let Some(p) = &pidfd {
        fds.push(p.as_raw_fd());
    }
    send(&FromZygote::Child { pid }, &fds).map_err(std::io::Error::from)?;
    Ok(())
}
