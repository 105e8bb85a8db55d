//! A forked child: it seals itself, waits warm for one script, runs it,
//! reports, and waits to be killed. Runs only in the process `zygote` forked.
//!
//! Two threads: the interpreter's, and a watchdog that, once the script
//! runs, waits for the server's [`proto::STOP`] at the deadline and stops
//! the interpreter at its next bytecode boundary. Both are started before
//! the seal, so the filter covers both.

use std::fs::File;
use std::io::{Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, RawFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};

use rustpython_vm::signal::UserSignalSender;

use super::heap_reserve::HeapReserve;
use super::hot_pages::HotPages;
use super::huge_heap::HugeHeap;
use super::outbuf::OutBuf;
use super::proto::{self, ChildReport, ChildRequest};
use super::seccomp::CHILD_FD;
use super::{alloc, rlimit, seccomp};
use toolgate_pyvm::vm::{Session, WarmVm};

fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no preconditions; skipping destructors is the point,
    // as the warm VM's state is shared copy-on-write and need not be freed.
    unsafe { libc::_exit(code) }
}

/// Closes every descriptor except the report socket, which becomes fd 3.
fn isolate_fds(sock: RawFd) {
    // SAFETY: dup2/close on integers; a wrong fd yields EBADF, never UB.
    // Nothing in this process holds Rust-owned handles to the fds closed here
    // (the zygote's handles are plain integers and the child never uses them).
    unsafe {
        if sock != CHILD_FD {
            libc::dup2(sock, CHILD_FD);
        }
        for fd in 0..CHILD_FD {
            libc::close(fd);
        }
        let rc = libc::syscall(libc::SYS_close_range, (CHILD_FD + 1) as u32, u32::MAX, 0u32);
        if rc != 0 {
            // Kernels before 5.9 lack close_range; 4096 covers any default NOFILE.
            for fd in (CHILD_FD + 1)..4096 {
                libc::close(fd);
            }
        }
    }
}

/// The report socket, as a `File` that never closes it.
fn report_socket() -> ManuallyDrop<File> {
    // SAFETY: CHILD_FD is open for the child's whole life (isolate_fds);
    // ManuallyDrop keeps File from closing a descriptor it does not own.
    ManuallyDrop::new(unsafe { File::from_raw_fd(CHILD_FD) })
}

/// Sends one prebuilt frame, then waits to be killed rather than exit:
/// exiting tears down the copy-on-write image at once (1–2 ms), on a CPU the
/// server needs to read this report. The server SIGKILLs the child once it
/// has read everything; EOF (the server gone) also ends the wait.
fn send_and_wait(frame: &[u8]) -> ! {
    let mut sock = report_socket();
    // One write: the parent wakes once.
    let _ = sock.write_all(frame);
    let mut byte = [0u8; 1];
    loop {
        match sock.read(&mut byte) {
            Ok(0) => break,
            Ok(_) => {} // a STOP that crossed the report: keep waiting
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    exit_now(0)
}

fn report(r: &ChildReport) -> ! {
    report_with(r, None)
}

/// A report, and a session's state as the frame after it (the report says
/// one follows).
fn report_with(r: &ChildReport, state: Option<&[u8]>) -> ! {
    let body = serde_json::to_vec(r).unwrap_or_default();
    let tail = state.map_or(0, |s| s.len() + 4);
    let mut frame = Vec::with_capacity(body.len() + 4 + tail);
    let _ = proto::write_frame(&mut frame, &body);
    if let Some(s) = state {
        let _ = proto::write_frame(&mut frame, s);
    }
    send_and_wait(&frame)
}

/// The in-VM stop: runs on the interpreter's thread at a bytecode boundary
/// and never returns, so nothing of the script runs after it: no `except`,
/// no `finally`, no `__del__` (there is no unwinding). The frame is prebuilt
/// because the script may have used its whole memory.
fn stop_now() -> ! {
    send_and_wait(proto::STOPPED_FRAME)
}

/// Set once the request has been read: from then on the watchdog owns reads
/// of the socket (before, it would race the main thread for the request).
static SCRIPT_RUNNING: AtomicBool = AtomicBool::new(false);

/// What the watchdog passes the interpreter's thread while it waits on a
/// tool request (code mode).
enum Wake {
    /// The server's answer.
    Reply(Vec<u8>),
    /// The deadline: stop (the thread is in no bytecode to stop at).
    Stop,
    /// The server is gone.
    Gone,
}

/// The watchdog's side of the code-mode channel, and the interpreter's;
/// made before the seal (a channel is memory and futexes only).
static WAKE_TX: OnceLock<Mutex<mpsc::Sender<Wake>>> = OnceLock::new();
static WAKE_RX: OnceLock<Mutex<mpsc::Receiver<Wake>>> = OnceLock::new();

fn wake(w: Wake) {
    if let Some(tx) = WAKE_TX.get() {
        let _ = tx.lock().map(|tx| tx.send(w));
    }
}

/// Code mode's link: the request goes to the server as a
/// [`ChildReport::ToolRequest`] frame, the answer comes back through the
/// watchdog, which owns the socket's reads.
fn tool_link(request: &[u8]) -> Vec<u8> {
    let report = ChildReport::ToolRequest {
        request: String::from_utf8_lossy(request).into_owned(),
    };
    let body = serde_json::to_vec(&report).unwrap_or_default();
    let mut frame = Vec::with_capacity(body.len() + 4);
    let _ = proto::write_frame(&mut frame, &body);
    // One write, as a report's: the server reads it whole.
    if report_socket().write_all(&frame).is_err() {
        exit_now(0)
    }
    let got = WAKE_RX
        .get()
        .and_then(|rx| rx.lock().ok().map(|rx| rx.recv()));
    match got {
        Some(Ok(Wake::Reply(answer))) => answer,
        Some(Ok(Wake::Stop)) => stop_now(),
        _ => exit_now(0),
    }
}

/// The watchdog needs a few frames: a read and a channel send.
const WATCHDOG_STACK: usize = 64 << 10;

/// Starts the watchdog, parked until [`SCRIPT_RUNNING`]; None if the thread
/// cannot be made (the kill at the deadline still stops the script).
fn start_watchdog(stop: UserSignalSender) -> Option<std::thread::Thread> {
    static STARTED: AtomicBool = AtomicBool::new(false);
    let main = std::thread::current();
    let h = std::thread::Builder::new()
        .stack_size(WATCHDOG_STACK)
        .spawn(move || {
            STARTED.store(true, Ordering::Release);
            main.unpark();
            while !SCRIPT_RUNNING.load(Ordering::Acquire) {
                std::thread::park();
            }
            let mut sock = report_socket();
            let mut byte = [0u8; 1];
            loop {
                match sock.read(&mut byte) {
                    Ok(1) if byte[0] == proto::STOP => {
                        // Runs on the interpreter's thread at its next
                        // bytecode boundary; a native built-in reaches none
                        // until it returns, and is killed. A thread waiting
                        // on a tool's answer is woken to stop.
                        let _ = stop.send(Box::new(|_| stop_now()));
                        wake(Wake::Stop);
                        break;
                    }
                    Ok(1) if byte[0] == proto::REPLY => {
                        match proto::read_frame_within(&mut *sock, proto::MAX_REPLY) {
                            Ok(answer) => wake(Wake::Reply(answer)),
                            Err(_) => {
                                wake(Wake::Gone);
                                break;
                            }
                        }
                    }
                    Ok(1) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    _ => {
                        wake(Wake::Gone);
                        break;
                    }
                }
            }
            // Park rather than exit: SIGKILL ends the process anyway, and
            // thread exit would widen what the filter has to allow.
            loop {
                std::thread::park();
            }
        })
        .ok()?;
    // A new thread registers itself with the kernel (rseq, its signal stack)
    // as it starts; that must happen before the seal, or the filter kills it.
    while !STARTED.load(Ordering::Acquire) {
        std::thread::park();
    }
    Some(h.thread().clone())
}

/// A child's exit status after it reported its stack overflow.
const EXIT_STACK_OVERFLOW: i32 = 87;

/// A fault this close below the stack pointer (or just above it) is the
/// stack running out: a frame touching memory the stack cannot grow into.
/// RustPython's largest frames are well under 1 MiB; the heap and the
/// interpreter's data live far from the stack.
const STACK_FAULT_BELOW: usize = 1 << 20;
const STACK_FAULT_ABOVE: usize = 64 << 10;

/// The stack pointer at the fault, from the signal's saved context.
///
/// # Safety
/// `ctx` must be the `ucontext_t` the kernel passed to an SA_SIGINFO handler.
unsafe fn fault_stack_pointer(ctx: *mut libc::c_void) -> usize {
    // SAFETY: per the contract, ctx points to a live ucontext_t.
    let uc = unsafe { &*(ctx as *const libc::ucontext_t) };
    #[cfg(target_arch = "x86_64")]
    {
        uc.uc_mcontext.gregs[libc::REG_RSP as usize] as usize
    }
    #[cfg(target_arch = "aarch64")]
    {
        uc.uc_mcontext.sp as usize
    }
}

/// SIGSEGV/SIGBUS in a child. Native recursion (deeply nested iterators, a
/// parser fed thousands of nested brackets) ends when the stack cannot
/// grow: that is reported as RecursionError, as the Worker reports its own
/// stack running out, and the child exits. Any other fault is a crash: the
/// default action runs when the faulting instruction runs again.
extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t and ucontext_t to an
    // SA_SIGINFO handler; si_addr is valid for SIGSEGV and SIGBUS.
    let (addr, sp) = unsafe { ((*info).si_addr() as usize, fault_stack_pointer(ctx)) };
    if addr != 0
        && addr < sp.saturating_add(STACK_FAULT_ABOVE)
        && addr >= sp.saturating_sub(STACK_FAULT_BELOW)
    {
        // SAFETY: write and _exit are async-signal-safe; the frame is static.
        unsafe {
            libc::write(
                CHILD_FD,
                proto::STACK_OVERFLOW_FRAME.as_ptr().cast(),
                proto::STACK_OVERFLOW_FRAME.len(),
            );
            libc::_exit(EXIT_STACK_OVERFLOW);
        }
    }
    // SAFETY: restoring the default disposition of the signal being handled.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
    }
}

/// Routes SIGSEGV and SIGBUS to [`on_fault`], on the alternate signal stack
/// that std gives the main thread (fork keeps it).
fn catch_stack_overflow() {
    for sig in [libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: a zeroed sigaction is valid; the handler is an
        // async-signal-safe extern "C" fn with the SA_SIGINFO signature,
        // and sigemptyset initializes the mask before use.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_fault as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
}

/// Fresh heap addresses each call. Fork hands every child the zygote's heap,
/// so without this the objects a script makes land at the same addresses in
/// every call, which helps anyone exploiting a memory bug. The allocator
/// hands out the free chunks it holds for a size first, then carves from the
/// top of the heap: taking a random number (0–15) of chunks in each of the
/// 32 size classes up to 512 bytes (where Python objects live), and one
/// block of random size up to 64 KiB from the top, and keeping them, moves
/// where the next object of each size lands. Done while the spare waits;
/// the cost is in docs/sandbox.md's walls table.
fn vary_heap() {
    let mut r = [0u8; 20];
    if getrandom::fill(&mut r).is_err() {
        return;
    }
    for (class, count) in r[..16].iter().flat_map(|b| [b & 15, b >> 4]).enumerate() {
        for _ in 0..count {
            std::mem::forget(Vec::<u8>::with_capacity(16 * (class + 1)));
        }
    }
    // Under glibc's 128 KiB mmap threshold, so it comes from the heap's top.
    let top = 16 * (usize::from(u16::from_le_bytes([r[16], r[17]])) % 4096);
    std::mem::forget(Vec::<u8>::with_capacity(top.max(1)));
}

/// Every wall but the call's own CPU cap (see [`rlimit::limit_cpu`]):
/// rlimits, then the seccomp filter. `base` is the process size the memory
/// cap starts from.
fn seal(seccomp_on: bool, memory_mb: u64, base: u64) -> Result<(), String> {
    if base == 0 {
        return Err("cannot measure the process size for the memory cap".into());
    }
    // Built per child: tgkill is allowed only towards this process, so that
    // abort() still works and no other process can be signalled.
    // SAFETY: getpid has no preconditions.
    let filter = seccomp_on.then(|| seccomp::build(unsafe { libc::getpid() }));
    rlimit::apply(base, memory_mb).map_err(|e| e.to_string())?;
    if let Some(f) = filter {
        f.and_then(|f| seccomp::apply(&f))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// What a sealed spare maps while it waits, learned by the zygote.
pub(super) struct Ahead {
    /// The pages a call faults in (lean spares only: a warm one ran the
    /// warm-up).
    pub hot: HotPages,
    /// The heap's blocks on huge pages, split ahead by every spare.
    pub heap: HugeHeap,
}

/// The child's whole life. `out` is the shared output mapping; `warm_up`
/// runs the throwaway script first (see [`WarmVm::prefault`]).
pub(super) fn run(
    warm: &WarmVm,
    ahead: &Ahead,
    sock: RawFd,
    out: *mut u8,
    seccomp_on: bool,
    cfg: &super::zygote::ZygoteConfig,
    warm_up: bool,
) -> ! {
    let (memory_mb, files_cap, state_cap) = (cfg.memory_mb, cfg.files_cap, cfg.state_cap);
    // SAFETY: prctl/sigprocmask/chdir with valid arguments; the empty set is
    // initialized by sigemptyset before use.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        libc::chdir(c"/".as_ptr());
    }
    isolate_fds(sock);
    alloc::arm(CHILD_FD);
    catch_stack_overflow();
    std::panic::set_hook(Box::new(|_| {}));
    warm.reseed();
    vary_heap();
    warm.vary_layout();
    if warm_up {
        warm.prefault();
    }
    let (tx, rx) = mpsc::channel();
    let _ = WAKE_TX.set(Mutex::new(tx));
    let _ = WAKE_RX.set(Mutex::new(rx));
    let watchdog = start_watchdog(warm.stopper());
    // Seal now, while waiting, so that no call pays for it (the kernel
    // compiles the filter on install: ~40 µs). A failure is reported when
    // the request comes, as the server is waiting for an answer then.
    let base = rlimit::current_vm_bytes().unwrap_or(0);
    // Carved after the measure, so it counts against the script's memory.
    // Ahead of a call only where a spare waits (below).
    let ahead_of_call = !cfg.frozen_between_calls;
    super::heap_reserve::keep_freed_heap();
    let reserve = ahead_of_call.then(|| HeapReserve::carve(memory_mb));
    let sealed = seal(seccomp_on, memory_mb, base);

    let mut sock = report_socket();
    if sock.write_all(&[proto::SEALED]).is_err() {
        // The server dropped this spare (shutdown): nothing to do.
        exit_now(0)
    }
    // A lean spare maps, while it waits, what its call would fault in. On a
    // host that freezes the process between calls no spare waits: that
    // work, and the heap reserve's, would land on the next call, and cost
    // it more CPU than the faults it saves (docs/benchmarks.md).
    if !warm_up && ahead_of_call {
        ahead.hot.populate_until_request(CHILD_FD);
    }
    ahead.heap.split_until_request(CHILD_FD);
    if let Some(reserve) = reserve {
        reserve.write_until_request(CHILD_FD);
    }
    let frame = proto::read_frame(&mut *sock);
    let received = std::time::Instant::now();
    let Ok(frame) = frame else {
        // The server dropped this spare (shutdown): nothing to do.
        exit_now(0)
    };
    let req: ChildRequest = match serde_json::from_slice(&frame) {
        Ok(r) => r,
        Err(e) => report(&ChildReport::Crashed {
            message: format!("bad request: {e}"),
        }),
    };
    if let Err(message) = sealed {
        report(&ChildReport::Crashed { message });
    }
    // A session's state is the next frame, raw.
    let saved = match req.session.then(|| proto::read_frame(&mut *sock)) {
        None => None,
        Some(Ok(state)) => Some(state),
        Some(Err(e)) => report(&ChildReport::Crashed {
            message: format!("bad session state: {e}"),
        }),
    };
    toolgate_pyvm::vm::when_settled(Some(alloc::skip_frees));
    if req.tools {
        toolgate_pyvm::code_mode::set_link(Some(Box::new(tool_link)));
    }
    if let Some(seed) = req
        .seed
        .as_deref()
        .and_then(|s| u128::from_str_radix(s, 16).ok())
    {
        warm.seed_random(seed);
    }
    SCRIPT_RUNNING.store(true, Ordering::Release);
    if let Some(w) = &watchdog {
        w.unpark();
    }

    // SAFETY: `out` is the zygote's MAP_SHARED mapping of outbuf::SIZE bytes,
    // inherited across fork and never unmapped in this process.
    let mut buf = unsafe { OutBuf::from_raw(out) };
    let ran = catch_unwind(AssertUnwindSafe(|| {
        // Decoded only: the server checked them (a session's stored under
        // older name rules still open); a set that does not decode is a
        // failed call, never a script that sees no files.
        let files = match toolgate_core::files::decode_wire(req.files) {
            Ok(files) => files,
            Err(why) => report(&ChildReport::Crashed {
                message: format!("bad request: its files: {why}"),
            }),
        };
        let session = saved.as_deref().map(|state| Session {
            state,
            cap: state_cap,
        });
        warm.run(
            &req.code,
            &files,
            files_cap,
            session,
            move |stream, text| buf.push(stream, text),
        )
    }));
    let r = match ran {
        Ok(o) => report_with(
            &ChildReport::Done {
                exit_code: o.exit_code,
                result: o.result_json,
                files: toolgate_core::files::to_wire(&o.files),
                child_us: received.elapsed().as_micros() as u64,
                state: o.state.is_some(),
            },
            o.state.as_deref(),
        ),
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "interpreter panic".into());
            // The parser grows its stack with `stacker`, which panics when
            // the memory limit refuses the next segment: deeply nested
            // source ran the call out of memory.
            if message.contains("failed to allocate stack") {
                ChildReport::OutOfMemory
            } else {
                ChildReport::Crashed { message }
            }
        }
    };
    report(&r)
}
