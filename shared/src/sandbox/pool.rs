//! The server's side of the sandbox: it supervises the zygote, keeps warm
//! children forked ahead of calls, runs one script per child, and at the
//! deadline stops the script in the VM, then kills the child.

use std::collections::HashMap;
use std::fs::File;
use std::io::IoSliceMut;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use nix::sys::socket::{
    AddressFamily, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg, socketpair,
};

use crate::outcome::{ExecOutput, memory_note, parse_result, timeout_note};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

pub use super::admission::ANONYMOUS;
use super::admission::Admission;
use super::error::SandboxError;
use super::outbuf;
use super::proto::{self, ChildReport, ChildRequest, Walls};
use super::vm::Stream;
use super::zygote::{CONTROL_FD, ZYGOTE_ARG, ZygoteConfig};

/// How the server runs the sandbox.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// The binary to re-execute as the zygote (normally the current one).
    pub exe: PathBuf,
    pub zygote: ZygoteConfig,
    pub spare_children: usize,
    pub max_concurrency: usize,
    /// Scripts one caller may run at once (the rest stay open to others).
    pub max_per_caller: usize,
}

/// A warm child, as the zygote handed it over.
struct Child {
    pid: i32,
    sock: OwnedFd,
    out: File,
    pidfd: Option<OwnedFd>,
    /// Turns true when the zygote that forked this child is gone: the
    /// child then dies with it (PDEATHSIG), and nobody reports its exit.
    zygote_gone: watch::Receiver<bool>,
}

impl Child {
    /// False once the process has exited, e.g. a spare killed with a zygote
    /// that died. A pidfd becomes readable when its process exits.
    fn is_alive(&self) -> bool {
        match &self.pidfd {
            Some(p) => {
                let mut fds = [libc::pollfd {
                    fd: p.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                }];
                // SAFETY: polling one valid pollfd with a zero timeout.
                unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) == 0 }
            }
            // SAFETY: signal 0 only checks that the pid exists.
            None => unsafe { libc::kill(self.pid, 0) == 0 },
        }
    }

    /// Nice 19 before the kill: the dying child tears its copy of the warm
    /// image down (1–2 ms of CPU) in its own name, and that must not delay
    /// the answer or the next call on a small machine.
    fn lower_priority(&self) {
        if !self.is_alive() {
            return;
        }
        // SAFETY: setpriority on integers, never UB; it can only lower the
        // priority of a process of our own user. A child that already died
        // may have been reaped and its pid reused: the worst case is then a
        // lowered priority on some other process of ours, hence the alive
        // check (a live pidfd means the pid is still this child's).
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, self.pid as libc::id_t, 19);
        }
    }

    /// SIGKILL, through the pidfd when there is one so that a recycled pid
    /// can never be hit.
    fn kill(&self) {
        // SAFETY: signalling with valid integer arguments; a dead target
        // yields ESRCH, never UB.
        unsafe {
            match &self.pidfd {
                Some(p) => {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        p.as_raw_fd(),
                        libc::SIGKILL,
                        std::ptr::null::<libc::siginfo_t>(),
                        0,
                    );
                }
                None => {
                    libc::kill(self.pid, libc::SIGKILL);
                }
            }
        }
    }
}

struct Shared {
    control: Mutex<Option<OwnedFd>>,
    /// Calls waiting for their child's exit status, by pid.
    exits: Mutex<HashMap<i32, oneshot::Sender<i32>>>,
    walls: RwLock<Option<Walls>>,
    shutdown: AtomicBool,
    zygote_pid: Mutex<Option<i32>>,
    /// Whether calls come back to back (see [`Shared::call_started`]).
    calls: Mutex<CallClock>,
}

/// Calls running now, and when the last one ended.
#[derive(Default)]
struct CallClock {
    running: usize,
    last_end: Option<Instant>,
}

impl Shared {
    fn request_spawn(&self) {
        self.send_spawn(proto::SPAWN);
    }

    fn send_spawn(&self, kind: u8) {
        if let Some(fd) = self.control.lock().expect("control lock").as_ref() {
            // SAFETY: sending one byte from a stack buffer on our socket.
            unsafe {
                libc::send(
                    fd.as_raw_fd(),
                    [kind].as_ptr().cast(),
                    1,
                    libc::MSG_NOSIGNAL,
                );
            }
        }
    }

    /// Replaces a used child. Calls that come back to back get spares
    /// without the warm-up run: it costs ~2 ms of CPU to save a call ~0.5 ms,
    /// and on a small machine that CPU is the next call's.
    fn replace_child(&self, back_to_back: bool) {
        self.send_spawn(if back_to_back {
            proto::SPAWN_LEAN
        } else {
            proto::SPAWN
        });
    }

    /// Marks a call's start until the guard drops (a cancelled call too).
    /// `back_to_back` is true when it came within [`BACK_TO_BACK`] of the
    /// previous call's end, or while another call runs.
    fn call_started(&self) -> CallGuard<'_> {
        let mut c = self.calls.lock().expect("calls lock");
        let back_to_back = c.running > 0 || c.last_end.is_some_and(|t| t.elapsed() < BACK_TO_BACK);
        c.running += 1;
        CallGuard {
            shared: self,
            back_to_back,
        }
    }
}

struct CallGuard<'a> {
    shared: &'a Shared,
    back_to_back: bool,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        let mut c = self.shared.calls.lock().expect("calls lock");
        c.running -= 1;
        c.last_end = Some(Instant::now());
    }
}

/// A handle on the running sandbox; dropping it stops the zygote and with it
/// every child.
pub struct Sandbox {
    shared: Arc<Shared>,
    spares: tokio::sync::Mutex<mpsc::Receiver<Child>>,
    admission: Admission,
    memory_mb: u64,
}

const CHILD_WAIT: Duration = Duration::from_secs(10);
/// While a call waits for a child this long, it asks the zygote for another.
const SPAWN_NUDGE: Duration = Duration::from_secs(1);
/// How long the in-VM stop may take before SIGKILL. A bytecode boundary
/// comes within microseconds and the answer is one write, so this bounds
/// only what a native built-in (regex, big-int arithmetic, `sum(range(…))`)
/// spends past the deadline; it also absorbs a busy host's scheduling delay.
const STOP_GRACE: Duration = Duration::from_millis(20);
/// A call that starts within this of the previous call's end is back to
/// back: its replacement spare skips the warm-up run. Measured on 2 cores,
/// `print(1)` back to back over HTTP: 2.7–3.3 ms with warm spares, 2.0–2.5
/// ms with lean ones; a lean spare costs a lone call ~0.45 ms, so calls
/// further apart keep warm spares.
const BACK_TO_BACK: Duration = Duration::from_millis(5);
/// After a kill, how long to wait for the exit status before giving up.
const REAP_WAIT: Duration = Duration::from_secs(2);

impl Sandbox {
    /// Starts the zygote and waits until it is warm. A configured module that
    /// cannot be imported, or seccomp required but refused, fails here.
    pub fn start(cfg: SandboxConfig) -> Result<Self, SandboxError> {
        let shared = Arc::new(Shared {
            control: Mutex::new(None),
            exits: Mutex::new(HashMap::new()),
            walls: RwLock::new(None),
            shutdown: AtomicBool::new(false),
            zygote_pid: Mutex::new(None),
            calls: Mutex::default(),
        });
        let (tx, rx) = mpsc::channel(256);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let s = shared.clone();
        let memory_mb = cfg.zygote.memory_mb;
        let admission = Admission::new(cfg.max_concurrency, cfg.max_per_caller);
        std::thread::Builder::new()
            .name("sandbox-supervisor".into())
            .spawn(move || supervise(cfg, s, tx, ready_tx))
            .map_err(|e| SandboxError::SpawnZygote {
                exe: "supervisor thread".into(),
                source: e,
            })?;
        ready_rx.recv().map_err(|_| SandboxError::ZygoteGone)??;
        Ok(Self {
            shared,
            spares: tokio::sync::Mutex::new(rx),
            admission,
            memory_mb,
        })
    }

    /// The walls active around each call.
    pub fn walls(&self) -> Option<Walls> {
        self.shared.walls.read().expect("walls lock").clone()
    }

    async fn take_child(&self) -> Result<Child, SandboxError> {
        let mut rx = self.spares.lock().await;
        let deadline = tokio::time::Instant::now() + CHILD_WAIT;
        loop {
            // Wait in short slices and ask for a child at each: a spawn can be
            // lost (a fork that failed, a zygote that died), and the pool
            // must never shrink to nothing with no fork pending.
            let slice = (tokio::time::Instant::now() + SPAWN_NUDGE).min(deadline);
            match tokio::time::timeout_at(slice, rx.recv()).await {
                // A spare that died (with an earlier zygote, or killed from
                // outside) is skipped and replaced.
                Ok(Some(c)) if !c.is_alive() => self.shared.request_spawn(),
                Ok(Some(c)) => return Ok(c),
                Ok(None) => return Err(SandboxError::ZygoteGone),
                Err(_) if tokio::time::Instant::now() >= deadline => {
                    return Err(SandboxError::NoChild(CHILD_WAIT.as_secs()));
                }
                Err(_) => self.shared.request_spawn(),
            }
        }
    }

    /// Runs `code` in a fresh child, killed when `timeout` passes, for a
    /// caller nobody identified.
    pub async fn execute(&self, code: &str, timeout: Duration) -> Result<ExecOutput, SandboxError> {
        self.execute_for(ANONYMOUS, code, timeout).await
    }

    /// Runs `code` for `caller`, within that caller's share of the sandbox.
    pub async fn execute_for(
        &self,
        caller: &str,
        code: &str,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        let _place = self
            .admission
            .enter(caller)
            .await
            .ok_or(SandboxError::ZygoteGone)?;
        let body = serde_json::to_vec(&ChildRequest {
            code: code.to_owned(),
        })
        .map_err(|e| SandboxError::Child(e.into()))?;
        let mut frame = Vec::with_capacity(body.len() + 4);
        proto::write_frame(&mut frame, &body).map_err(SandboxError::Child)?;

        let call = self.shared.call_started();
        // A spare may have died with an earlier zygote; try a few.
        let mut last_err = None;
        for _ in 0..3 {
            let child = self.take_child().await?;
            match self
                .run_child(child, &frame, timeout, call.back_to_back)
                .await
            {
                Ok(out) => return Ok(out),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or(SandboxError::ZygoteGone))
    }

    async fn run_child(
        &self,
        child: Child,
        frame: &[u8],
        timeout: Duration,
        back_to_back: bool,
    ) -> Result<ExecOutput, SandboxError> {
        let (exit_tx, exit_rx) = oneshot::channel();
        self.shared
            .exits
            .lock()
            .expect("exits lock")
            .insert(child.pid, exit_tx);
        let result = self.drive(&child, frame, timeout, exit_rx).await;
        child.lower_priority();
        child.kill();
        self.shared
            .exits
            .lock()
            .expect("exits lock")
            .remove(&child.pid);
        // Replace the child only now: forking while the script runs would
        // compete with it for the CPU. Other spares cover concurrent calls.
        self.shared.replace_child(back_to_back);
        result
    }

    async fn drive(
        &self,
        child: &Child,
        frame: &[u8],
        timeout: Duration,
        exit_rx: oneshot::Receiver<i32>,
    ) -> Result<ExecOutput, SandboxError> {
        let dup = child.sock.try_clone().map_err(SandboxError::Child)?;
        let std_sock = std::os::unix::net::UnixStream::from(dup);
        std_sock
            .set_nonblocking(true)
            .map_err(SandboxError::Child)?;
        let mut sock = tokio::net::UnixStream::from_std(std_sock).map_err(SandboxError::Child)?;
        // The spare says when it is sealed (a fresh one may still be warming
        // up); only then does it get the call's CPU cap and the script. A
        // spare that died fails here, and the caller takes another.
        let mut sealed = [0u8; 1];
        match tokio::time::timeout(CHILD_WAIT, sock.read_exact(&mut sealed)).await {
            Ok(Ok(_)) if sealed[0] == proto::SEALED => {}
            _ => return Err(SandboxError::NotSealed),
        }
        super::rlimit::limit_cpu(child.pid, timeout.as_secs().max(1))?;
        if let Err(e) = sock.write_all(frame).await {
            // Never started: a dead spare. The caller takes another.
            return Err(SandboxError::Child(e));
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let report = tokio::select! {
            r = read_report(&mut sock) => Some(r),
            _ = tokio::time::sleep_until(deadline) => None,
        };
        // The child is not trusted: a report it sends must be well formed,
        // and its result must be the contract's JSON; anything else is the
        // script's failure, never the server's.
        let report = match report {
            Some(Ok(ChildReport::Done {
                exit_code,
                result: Some(r),
                child_us,
            })) => match parse_result(&r) {
                Ok(v) => Some(Ok((exit_code, Some(v), child_us))),
                Err(why) => Some(Err(NoReport::Invalid(format!("its result {why}")))),
            },
            Some(Ok(ChildReport::Done {
                exit_code,
                result: None,
                child_us,
            })) => Some(Ok((exit_code, None, child_us))),
            Some(Ok(other)) => Some(Err(NoReport::Other(other))),
            Some(Err(e)) => Some(Err(e)),
            None => None,
        };

        let mut out = ExecOutput {
            stdout: String::new(),
            stderr: String::new(),
            exit_code: 0,
            timed_out: false,
            result: None,
            child_us: 0,
        };
        let mut note = String::new();
        match report {
            Some(Ok((exit_code, result, child_us))) => {
                tracing::debug!(child_us, "child finished");
                out.child_us = child_us;
                out.exit_code = exit_code;
                out.result = result;
            }
            Some(Err(NoReport::Other(ChildReport::OutOfMemory))) => {
                out.exit_code = 1;
                note = self.memory_error();
            }
            Some(Err(NoReport::Other(ChildReport::Stopped))) => {
                // Only the server's STOP, sent after this select, stops a child.
                tracing::error!("sandbox child stopped before its deadline");
                out.exit_code = 1;
                note = "InternalError: the sandbox stopped the script unasked\n".into();
            }
            Some(Err(NoReport::Other(ChildReport::Crashed { message }))) => {
                let message = first_chars(&message, CRASH_MESSAGE_CHARS);
                tracing::error!(%message, "sandbox child crashed");
                out.exit_code = 1;
                note = format!("InternalError: the interpreter failed: {message}\n");
            }
            Some(Err(NoReport::Other(ChildReport::StackOverflow))) => {
                out.exit_code = 1;
                note = STACK_NOTE.into();
            }
            Some(Err(NoReport::Other(ChildReport::Done { .. }))) => unreachable!("handled above"),
            Some(Err(NoReport::Invalid(why))) => {
                let why = first_chars(&why, CRASH_MESSAGE_CHARS);
                tracing::error!(reason = %why, "sandbox child sent an invalid report");
                out.exit_code = 1;
                note = format!(
                    "[the sandbox process sent an invalid report ({why}); what the script printed is kept]\n"
                );
            }
            None => {
                stop_at_deadline(&mut sock, timeout).await;
                child.kill();
                out.exit_code = -1;
                out.timed_out = true;
                note = timeout_note(timeout);
                let _ = tokio::time::timeout(REAP_WAIT, exit_rx).await;
            }
            Some(Err(NoReport::Closed)) => {
                // The child died without a report: ask the zygote why.
                let mut gone = child.zygote_gone.clone();
                let status = tokio::select! {
                    s = tokio::time::timeout(REAP_WAIT, exit_rx) => s.ok().and_then(Result::ok),
                    _ = gone.wait_for(|g| *g) => None,
                };
                if status.is_none() && *child.zygote_gone.borrow() {
                    // Killed with its zygote, not by the script: the caller
                    // runs the script again in a child of the new zygote (a
                    // script reaches nothing outside, so running it twice
                    // changes nothing but the time).
                    return Err(SandboxError::ZygoteGone);
                }
                let (code, timed_out, text) = self.classify_death(status, timeout);
                out.exit_code = code;
                out.timed_out = timed_out;
                note = text;
            }
        }
        out.stdout = outbuf::read(&child.out, Stream::Stdout).map_err(SandboxError::Child)?;
        out.stderr = outbuf::read(&child.out, Stream::Stderr).map_err(SandboxError::Child)?;
        out.add_note(&note);
        Ok(out)
    }

    fn memory_error(&self) -> String {
        memory_note(self.memory_mb)
    }

    fn classify_death(&self, status: Option<i32>, timeout: Duration) -> (i64, bool, String) {
        let Some(st) = status else {
            return (
                1,
                false,
                "[the sandbox process died without a report]\n".into(),
            );
        };
        if libc::WIFEXITED(st) {
            if libc::WEXITSTATUS(st) == super::alloc::EXIT_OUT_OF_MEMORY {
                return (1, false, self.memory_error());
            }
            return (
                1,
                false,
                format!(
                    "[the sandbox process exited without a report (status {})]\n",
                    libc::WEXITSTATUS(st)
                ),
            );
        }
        let sig = libc::WTERMSIG(st);
        match sig {
            libc::SIGXCPU | libc::SIGKILL => (-1, true, timeout_note(timeout)),
            libc::SIGSYS => (
                1,
                false,
                "[the sandbox blocked a forbidden system call and stopped the script]\n".into(),
            ),
            _ => (
                1,
                false,
                format!(
                    "[the interpreter crashed (signal {sig}, {}); what the script printed is kept]\n",
                    signal_name(sig)
                ),
            ),
        }
    }
}

/// What a child whose native stack ran out answers, as the Worker does.
const STACK_NOTE: &str =
    "RecursionError: maximum recursion depth exceeded (the interpreter's stack ran out)\n";

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTRAP => "SIGTRAP",
        _ => "a signal",
    }
}

/// The deadline's first stage: the in-VM stop. The child's watchdog stops
/// the interpreter at its next bytecode boundary, which answers at once; a
/// native built-in reaches no boundary, and the caller's SIGKILL follows
/// after [`STOP_GRACE`]. Logs how the script ended.
async fn stop_at_deadline(sock: &mut tokio::net::UnixStream, timeout: Duration) {
    let sent = Instant::now();
    let stop = if sock.write_all(&[proto::STOP]).await.is_err() {
        "killed"
    } else {
        match tokio::time::timeout(STOP_GRACE, read_report(sock)).await {
            Ok(Ok(ChildReport::Stopped)) => "in_vm",
            // It finished as the deadline passed; still a timeout.
            Ok(Ok(_)) => "finished_at_deadline",
            Ok(Err(_)) | Err(_) => "killed",
        }
    };
    tracing::info!(
        stop,
        stop_us = sent.elapsed().as_micros() as u64,
        timeout_s = timeout.as_secs(),
        "script stopped at its deadline"
    );
}

/// What a child sent instead of a good report.
enum NoReport {
    /// The socket closed before a report began: the child died.
    Closed,
    /// Bytes that are not a report: too long, cut short, not JSON, not UTF-8,
    /// not one of the kinds, or a result that is not the contract's JSON.
    Invalid(String),
    /// A report other than a finished run's.
    Other(ChildReport),
}

/// A crash message or an invalid report's reason is cut to this for the
/// answer and the log: both are the child's words.
const CRASH_MESSAGE_CHARS: usize = 2_000;

fn first_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

async fn read_report(sock: &mut tokio::net::UnixStream) -> Result<ChildReport, NoReport> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < len.len() {
        match sock.read(&mut len[got..]).await {
            Ok(0) if got == 0 => return Err(NoReport::Closed),
            Ok(0) => return Err(NoReport::Invalid("a report cut short".into())),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) if got == 0 => return Err(NoReport::Closed),
            Err(e) => return Err(NoReport::Invalid(format!("a report cut short: {e}"))),
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > proto::MAX_REPORT {
        return Err(NoReport::Invalid(format!(
            "a report of {len} bytes, over the limit of {}",
            proto::MAX_REPORT
        )));
    }
    let mut body = vec![0u8; len];
    if sock.read_exact(&mut body).await.is_err() {
        return Err(NoReport::Invalid("a report cut short".into()));
    }
    serde_json::from_slice(&body).map_err(|e| NoReport::Invalid(format!("not a report: {e}")))
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        // Killing the zygote ends its children through PDEATHSIG, and ends
        // the supervisor's read with EOF, after which it reaps and exits.
        if let Some(pid) = *self.shared.zygote_pid.lock().expect("pid lock") {
            // SAFETY: signalling our own child process by pid; it is reaped
            // only by the supervisor thread, which sees the shutdown flag.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

fn spawn_zygote(cfg: &SandboxConfig) -> Result<(std::process::Child, OwnedFd), SandboxError> {
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| SandboxError::Control(e.into()))?;
    let cfg_json = serde_json::to_string(&cfg.zygote).expect("config serializes");
    let theirs_fd: RawFd = theirs.as_raw_fd();
    let mut cmd = Command::new(&cfg.exe);
    cmd.arg(ZYGOTE_ARG)
        .arg(cfg_json)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    // SAFETY: the closure runs between fork and exec and calls only dup2,
    // which is async-signal-safe. dup2 clears CLOEXEC on the new descriptor.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(theirs_fd, CONTROL_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| SandboxError::SpawnZygote {
        exe: cfg.exe.display().to_string(),
        source: e,
    })?;
    drop(theirs);
    Ok((child, ours))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

enum Msg {
    Ready(Walls),
    /// The zygote cannot start; the error as the server reports it.
    Failed(SandboxError),
    Child(Child),
    Exited(i32, i32),
    Closed,
}

fn recv(fd: RawFd, zygote_gone: &watch::Receiver<bool>) -> Result<Msg, SandboxError> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut cmsg = nix::cmsg_space!([RawFd; 3]);
    let mut iov = [IoSliceMut::new(&mut buf)];
    let msg = recvmsg::<()>(fd, &mut iov, Some(&mut cmsg), MsgFlags::MSG_CMSG_CLOEXEC)
        .map_err(|e| SandboxError::Control(e.into()))?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for c in msg.cmsgs().map_err(|e| SandboxError::Control(e.into()))? {
        if let ControlMessageOwned::ScmRights(raw) = c {
            // SAFETY: descriptors received through SCM_RIGHTS are new in this
            // process and owned by nobody else.
            fds.extend(raw.into_iter().map(|f| unsafe { OwnedFd::from_raw_fd(f) }));
        }
    }
    let n = msg.bytes;
    if n == 0 {
        return Ok(Msg::Closed);
    }
    let data = &buf[..n];
    let i32_at = |i: usize| -> i32 {
        data.get(i..i + 4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .unwrap_or(0)
    };
    Ok(match data[0] {
        proto::READY => Msg::Ready(
            serde_json::from_slice(&data[1..]).map_err(|e| SandboxError::WarmUp(e.to_string()))?,
        ),
        proto::FAILED => Msg::Failed(SandboxError::WarmUp(text(&data[1..]))),
        proto::SECCOMP_REFUSED => Msg::Failed(SandboxError::SeccompRequired(text(&data[1..]))),
        proto::CHILD if fds.len() >= 2 => {
            let mut it = fds.into_iter();
            let sock = it.next().expect("two fds");
            let out = File::from(it.next().expect("two fds"));
            Msg::Child(Child {
                pid: i32_at(1),
                sock,
                out,
                pidfd: it.next(),
                zygote_gone: zygote_gone.clone(),
            })
        }
        proto::EXITED => Msg::Exited(i32_at(1), i32_at(5)),
        other => {
            return Err(SandboxError::Control(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("unknown zygote message {other}"),
            )));
        }
    })
}

type ReadyTx = std::sync::mpsc::Sender<Result<(), SandboxError>>;

/// Runs on its own thread for the sandbox's lifetime: starts the zygote,
/// relays its messages, and restarts it should it die.
fn supervise(cfg: SandboxConfig, shared: Arc<Shared>, tx: mpsc::Sender<Child>, ready: ReadyTx) {
    let mut ready = Some(ready);
    let mut backoff = Duration::from_millis(100);
    while !shared.shutdown.load(Ordering::SeqCst) {
        let started = Instant::now();
        let (mut zygote, ctl) = match spawn_zygote(&cfg) {
            Ok(z) => z,
            Err(e) => {
                if let Some(r) = ready.take() {
                    let _ = r.send(Err(e));
                    return;
                }
                tracing::error!(error = %e, "cannot restart the sandbox zygote");
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(10));
                continue;
            }
        };
        let fd = ctl.as_raw_fd();
        let (gone_tx, gone_rx) = watch::channel(false);
        *shared.zygote_pid.lock().expect("pid lock") = Some(zygote.id() as i32);
        *shared.control.lock().expect("control lock") = Some(ctl);
        loop {
            match recv(fd, &gone_rx) {
                Ok(Msg::Ready(walls)) => {
                    tracing::info!(
                        warm_ms = started.elapsed().as_millis() as u64,
                        seccomp = walls.seccomp,
                        "sandbox zygote ready"
                    );
                    *shared.walls.write().expect("walls lock") = Some(walls);
                    for _ in 0..cfg.spare_children.max(1) {
                        shared.request_spawn();
                    }
                    if let Some(r) = ready.take() {
                        let _ = r.send(Ok(()));
                    }
                    backoff = Duration::from_millis(100);
                }
                Ok(Msg::Failed(err)) => {
                    if let Some(r) = ready.take() {
                        let _ = r.send(Err(err));
                        let _ = zygote.kill();
                        let _ = zygote.wait();
                        return;
                    }
                    tracing::error!(error = %err, "sandbox zygote failed");
                }
                Ok(Msg::Child(c)) => {
                    if tx.blocking_send(c).is_err() {
                        break; // the Sandbox is gone
                    }
                }
                Ok(Msg::Exited(pid, status)) => {
                    if let Some(w) = shared.exits.lock().expect("exits lock").remove(&pid) {
                        let _ = w.send(status);
                    }
                }
                Ok(Msg::Closed) | Err(_) => break,
            }
        }
        shared.control.lock().expect("control lock").take();
        gone_tx.send_replace(true);
        let _ = zygote.kill();
        let _ = zygote.wait();
        if let Some(r) = ready.take() {
            let _ = r.send(Err(SandboxError::ZygoteGone));
            return;
        }
        if !shared.shutdown.load(Ordering::SeqCst) {
            tracing::error!("sandbox zygote exited; restarting");
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(10));
        }
    }
}

impl SandboxConfig {
    /// The sandbox for `python.execute`, re-executing the current binary.
    pub fn for_python(cfg: &crate::config::PythonConfig) -> Result<Self, SandboxError> {
        let exe = std::env::current_exe().map_err(|e| SandboxError::SpawnZygote {
            exe: "current executable".into(),
            source: e,
        })?;
        Ok(Self {
            exe,
            zygote: ZygoteConfig {
                allowed: cfg.allowed_modules(),
                memory_mb: cfg.memory_mb,
                require_seccomp: cfg.require_seccomp,
            },
            spare_children: cfg.spare_children,
            max_concurrency: cfg.max_concurrency,
            max_per_caller: cfg.per_caller(),
        })
    }
}
