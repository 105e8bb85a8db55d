//! A forked child: it waits warm for one script, seals itself, runs it,
//! reports, and exits. Runs only in the process `zygote` forked.

use std::fs::File;
use std::io::{Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, RawFd};
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::outbuf::OutBuf;
use super::proto::{self, ChildReport, ChildRequest};
use super::seccomp::CHILD_FD;
use super::vm::WarmVm;
use super::{alloc, rlimit, seccomp};

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

fn report(r: &ChildReport) -> ! {
    let body = serde_json::to_vec(r).unwrap_or_default();
    let mut frame = Vec::with_capacity(body.len() + 4);
    let _ = proto::write_frame(&mut frame, &body);
    // SAFETY: CHILD_FD is open (isolate_fds); ManuallyDrop keeps File from
    // closing a descriptor it does not own.
    let mut sock = ManuallyDrop::new(unsafe { File::from_raw_fd(CHILD_FD) });
    // One write: the parent wakes once.
    let _ = sock.write_all(&frame);
    // Then wait to be killed rather than exit: exiting tears down the
    // copy-on-write image at once (1–2 ms), on a CPU the server needs to
    // read this report. The server SIGKILLs the child once it has read
    // everything; EOF (the server gone) also ends the wait.
    let mut byte = [0u8; 1];
    while let Err(e) = sock.read(&mut byte) {
        if e.kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    exit_now(0)
}

/// Every wall but the CPU cap (see [`rlimit::limit_cpu`]): rlimits, then the
/// seccomp filter.
fn seal(seccomp_on: bool, memory_mb: u64) -> Result<(), String> {
    let base = rlimit::current_vm_bytes().unwrap_or(0);
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

/// The child's whole life. `out` is the shared output mapping.
pub(super) fn run(warm: &WarmVm, sock: RawFd, out: *mut u8, seccomp_on: bool, memory_mb: u64) -> ! {
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
    std::panic::set_hook(Box::new(|_| {}));
    warm.reseed();
    warm.prefault();
    // Seal now, while waiting, so that no call pays for it (the kernel
    // compiles the filter on install: ~0.2 ms). A failure is reported when
    // the request comes, as the server is waiting for an answer then.
    let sealed = seal(seccomp_on, memory_mb);

    // SAFETY: as in `report`.
    let mut sock = ManuallyDrop::new(unsafe { File::from_raw_fd(CHILD_FD) });
    if sock.write_all(&[proto::SEALED]).is_err() {
        // The server dropped this spare (shutdown): nothing to do.
        exit_now(0)
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

    // SAFETY: `out` is the zygote's MAP_SHARED mapping of outbuf::SIZE bytes,
    // inherited across fork and never unmapped in this process.
    let mut buf = unsafe { OutBuf::from_raw(out) };
    let ran = catch_unwind(AssertUnwindSafe(|| {
        warm.run(&req.code, move |stream, text| buf.push(stream, text))
    }));
    let r = match ran {
        Ok(o) => ChildReport::Done {
            exit_code: o.exit_code,
            result: o.result_json,
            child_us: received.elapsed().as_micros() as u64,
        },
        Err(payload) => ChildReport::Crashed {
            message: payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "interpreter panic".into()),
        },
    };
    report(&r)
}
