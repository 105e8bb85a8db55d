//! One call's protocol with its child: wait for the seal, cap the CPU, send
//! the script, then take the report, or stop the script at the deadline.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use nix::sys::socket::{MsgFlags, recv, send};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::oneshot;

use super::death::Death;
use super::handle::Child;
use crate::error::SandboxError;
use crate::outbuf;
use crate::proto::{self, ChildReport, FrameError};
use toolgate_core::code::ToolHost;
use toolgate_core::outcome::{ExecOutput, parse_result};
use toolgate_pyvm::vm::Stream;

/// How long a spare may take to say it is sealed.
const SEAL_WAIT: Duration = super::CHILD_WAIT;
/// How long the in-VM stop may take before SIGKILL. A bytecode boundary
/// comes within microseconds and the answer is one write, so this bounds
/// only what a native built-in (regex, big-int arithmetic, `sum(range(…))`)
/// spends past the deadline; it also absorbs a busy host's scheduling delay.
const STOP_GRACE: Duration = Duration::from_millis(20);
/// After a kill, how long to wait for the exit status before giving up.
const REAP_WAIT: Duration = Duration::from_secs(2);

/// What a call's child may use and send back.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// A script's memory cap, in MiB (named in the out-of-memory note).
    pub memory_mb: u64,
    /// The files it may return, in bytes in all.
    pub files_cap: u64,
    /// The session state it may return, in bytes; 0 outside a session,
    /// where a state is refused.
    pub state_cap: u64,
}

/// How a script that reached its deadline was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// Inside the VM, at its next bytecode boundary.
    InVm,
    /// It finished as the deadline passed.
    FinishedAtDeadline,
    /// By SIGKILL, after the grace (native code reaches no boundary).
    Killed,
}

impl Stop {
    fn as_str(self) -> &'static str {
        match self {
            Self::InVm => "in_vm",
            Self::FinishedAtDeadline => "finished_at_deadline",
            Self::Killed => "killed",
        }
    }
}

/// Runs the script framed in `frame` in `child`; with how it was stopped,
/// when its deadline stopped it. `Err(ZygoteGone)` when the child was
/// killed with its zygote rather than by the script: the caller runs it
/// again elsewhere. Other errors mean the script never started.
pub(super) async fn drive(
    child: &Child,
    frame: &[u8],
    timeout: Duration,
    exit_rx: oneshot::Receiver<i32>,
    limits: Limits,
    tools: Option<&dyn ToolHost>,
) -> Result<(ExecOutput, Option<Stop>), SandboxError> {
    let memory_mb = limits.memory_mb;
    let dup = child.sock.try_clone().map_err(SandboxError::Child)?;
    let std_sock = std::os::unix::net::UnixStream::from(dup);
    std_sock
        .set_nonblocking(true)
        .map_err(SandboxError::Child)?;
    let mut sock = UnixStream::from_std(std_sock).map_err(SandboxError::Child)?;
    // The spare says when it is sealed (a fresh one may still be warming
    // up); only then does it get the call's CPU cap and the script. A spare
    // that died fails here, and the caller takes another. A spare that
    // waited said so long ago, and its socket takes the frame whole: both
    // are tried at once, without waiting on the reactor (a thread wake-up
    // each).
    let fd = child.sock.as_raw_fd();
    let mut sealed = [0u8; 1];
    if recv(fd, &mut sealed, MsgFlags::MSG_DONTWAIT) != Ok(1) {
        match tokio::time::timeout(SEAL_WAIT, sock.read_exact(&mut sealed)).await {
            Ok(Ok(_)) => {}
            _ => return Err(SandboxError::NotSealed),
        }
    }
    if sealed[0] != proto::SEALED {
        return Err(SandboxError::NotSealed);
    }
    crate::rlimit::limit_cpu(child.pid, timeout.as_secs().max(1))?;
    let sent = send(fd, frame, MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL).unwrap_or(0);
    if let Err(e) = sock.write_all(&frame[sent..]).await {
        // Never started: a dead spare. The caller takes another.
        return Err(SandboxError::Child(e));
    }
    let deadline = tokio::time::Instant::now() + timeout;
    // Code mode: the script's tool requests are answered until it reports.
    // The deadline counts the time tools take.
    let mut requests = 0u32;
    let mut torn = false;
    // The host stopped the script (it waits for a person): no timeout.
    let mut halted = false;
    let report = loop {
        let got = tokio::select! {
            r = read_report(&mut sock, proto::max_report(limits.files_cap), limits.state_cap) => Some(r),
            _ = tokio::time::sleep_until(deadline) => None,
        };
        let Some(Ok((ChildReport::ToolRequest { request }, _))) = got else {
            break got;
        };
        let Some(host) = tools else {
            break Some(Err(NoReport::Invalid(
                "a tool request from a script without code mode".into(),
            )));
        };
        requests += 1;
        let answer = tokio::select! {
            a = host.serve(request.as_bytes(), deadline.saturating_duration_since(tokio::time::Instant::now())) => a,
            _ = tokio::time::sleep_until(deadline) => break None,
        };
        let Some(answer) = answer else {
            halted = true;
            break None;
        };
        let frame = answer_frame(answer);
        // A child that stops reading mid-answer is killed at the deadline
        // without a STOP, which would land inside the answer.
        tokio::select! {
            w = sock.write_all(&frame) => if w.is_err() {
                break Some(Err(NoReport::Closed));
            },
            _ = tokio::time::sleep_until(deadline) => {
                torn = true;
                break None;
            }
        }
    };

    let mut out = ExecOutput {
        exit_code: 0,
        ..ExecOutput::failed()
    };
    let mut stopped = None;
    let mut killed_outside = false;
    // The child is not trusted: a report it sends must be well formed, and
    // its result must be the contract's JSON; anything else is the script's
    // failure, never the server's.
    let death = match report {
        Some(Ok((
            ChildReport::Done {
                exit_code,
                result,
                files,
                child_us,
                state: _,
            },
            state,
        ))) => match (
            result.as_deref().map(parse_result).transpose(),
            toolgate_core::files::from_wire(files, limits.files_cap),
        ) {
            (Ok(result), Ok(files)) => {
                tracing::debug!(child_us, "child finished");
                out.child_us = child_us;
                out.exit_code = exit_code;
                out.result = result;
                out.files = (!files.is_empty()).then(|| toolgate_core::files::to_json(&files));
                out.state = state;
                out.finished = true;
                None
            }
            (Err(why), _) => Some(Death::invalid_report(&format!("its result {why}"))),
            (_, Err(why)) => Some(Death::invalid_report(&format!("its files: {why}"))),
        },
        Some(Ok((other, _))) => Some(Death::from_report(other, memory_mb)),
        Some(Err(NoReport::Invalid(why))) => Some(Death::invalid_report(&why)),
        None => {
            // A halted script waits in its request, where nothing of it
            // runs: its output so far is in the shared buffer, and the
            // kill ends it.
            if !halted {
                stopped = Some(if torn {
                    Stop::Killed
                } else {
                    stop_at_deadline(&mut sock, timeout).await
                });
            }
            child.kill();
            let _ = tokio::time::timeout(REAP_WAIT, exit_rx).await;
            Some(if halted {
                Death::halted()
            } else {
                Death::timed_out(timeout)
            })
        }
        Some(Err(NoReport::Closed)) => {
            // The child died without a report: ask the zygote why.
            let mut gone = child.zygote_gone.clone();
            let status = tokio::select! {
                s = tokio::time::timeout(REAP_WAIT, exit_rx) => s.ok().and_then(Result::ok),
                _ = gone.wait_for(|g| *g) => None,
            };
            // A script that called tools is never run again: they would
            // run twice.
            if status.is_none() && *child.zygote_gone.borrow() && requests == 0 {
                // Killed with its zygote, not by the script: the caller runs
                // the script again in a child of the new zygote (a script
                // reaches nothing outside, so running it twice changes
                // nothing but the time).
                return Err(SandboxError::ZygoteGone);
            }
            // The server kills only at the deadline (above) or after the
            // call (`Used`): a SIGKILL here came from outside, before the
            // deadline. Most often a spare killed while it waited and taken
            // while its last thread still exited (its pidfd not yet
            // readable, its socket still open, so the script went in).
            killed_outside = requests == 0
                && status
                    .is_some_and(|s| libc::WIFSIGNALED(s) && libc::WTERMSIG(s) == libc::SIGKILL);
            Some(Death::from_status(status, timeout, memory_mb))
        }
    };
    out.stdout = outbuf::read(&child.out, Stream::Stdout).map_err(SandboxError::Child)?;
    out.stderr = outbuf::read(&child.out, Stream::Stderr).map_err(SandboxError::Child)?;
    if let Some(d) = death {
        out.exit_code = d.exit_code;
        out.timed_out = d.timed_out;
        out.add_note(&d.note);
    }
    if killed_outside {
        // Not the script's doing: the caller runs it again elsewhere, and
        // answers this only when no try is left.
        return Err(SandboxError::KilledFromOutside(Box::new(out)));
    }
    Ok((out, stopped))
}

/// The deadline's first stage: the in-VM stop. The child's watchdog stops
/// the interpreter at its next bytecode boundary, which answers at once; a
/// native built-in reaches no boundary, and the caller's SIGKILL follows
/// after [`STOP_GRACE`]. Logs how the script ended.
async fn stop_at_deadline(sock: &mut UnixStream, timeout: Duration) -> Stop {
    let sent = Instant::now();
    let stop = if sock.write_all(&[proto::STOP]).await.is_err() {
        Stop::Killed
    } else {
        let report = async {
            loop {
                // A tool request sent as the STOP crossed it goes unanswered.
                match read_report(sock, proto::max_report(0), 0).await {
                    Ok((ChildReport::ToolRequest { .. }, _)) => continue,
                    r => return r,
                }
            }
        };
        match tokio::time::timeout(STOP_GRACE, report).await {
            Ok(Ok((ChildReport::Stopped, _))) => Stop::InVm,
            // It finished as the deadline passed; still a timeout.
            Ok(Ok(_)) => Stop::FinishedAtDeadline,
            Ok(Err(_)) | Err(_) => Stop::Killed,
        }
    };
    tracing::info!(
        stop = stop.as_str(),
        stop_us = sent.elapsed().as_micros() as u64,
        timeout_s = timeout.as_secs(),
        "script stopped at its deadline"
    );
    stop
}

/// The [`proto::REPLY`] frame of a tool request's answer; one past
/// [`proto::MAX_REPLY`] is answered `too_large` instead.
fn answer_frame(answer: Vec<u8>) -> Vec<u8> {
    let answer = if answer.len() > proto::MAX_REPLY {
        format!(
            r#"{{"error": {{"code": "too_large", "message": "The tool's answer is {} bytes, over the {} a script may take"}}}}"#,
            answer.len(),
            proto::MAX_REPLY
        )
        .into_bytes()
    } else {
        answer
    };
    let mut frame = Vec::with_capacity(answer.len() + 5);
    frame.push(proto::REPLY);
    // A Vec takes every write; the length fits (MAX_REPLY).
    let _ = proto::write_frame(&mut frame, &answer);
    frame
}

/// What a child sent instead of a report.
enum NoReport {
    /// The socket closed before a report began: the child died.
    Closed,
    /// Bytes that are not a report: too long, cut short, not JSON, not UTF-8,
    /// not one of the kinds.
    Invalid(String),
}

/// `proto::read_frame`'s format, read without blocking the runtime and
/// bounded by `max` (`proto::max_report`) instead of the request's limit;
/// with a session's state after it when the report says one follows, at
/// most `state_cap` bytes.
async fn read_report(
    sock: &mut UnixStream,
    max: usize,
    state_cap: u64,
) -> Result<(ChildReport, Option<Vec<u8>>), NoReport> {
    let body = read_frame(sock, max).await.map_err(|e| match e {
        FrameError::Closed => NoReport::Closed,
        e => NoReport::Invalid(format!("a report {e}")),
    })?;
    let report: ChildReport = serde_json::from_slice(&body)
        .map_err(|e| NoReport::Invalid(format!("not a report: {e}")))?;
    let state = match report {
        ChildReport::Done { state: true, .. } if state_cap == 0 => {
            return Err(NoReport::Invalid(
                "a session state for a call outside a session".into(),
            ));
        }
        ChildReport::Done { state: true, .. } => {
            let cap = usize::try_from(state_cap).unwrap_or(usize::MAX);
            // The report promised it: a socket closed before it is a report
            // cut short, not a child that died.
            let state = read_frame(sock, cap).await.map_err(|e| {
                let e = if e == FrameError::Closed {
                    FrameError::Truncated
                } else {
                    e
                };
                NoReport::Invalid(format!("its session state: a report {e}"))
            })?;
            Some(state)
        }
        _ => None,
    };
    Ok((report, state))
}

/// One frame of at most `max` bytes, async: `proto`'s codec and errors.
async fn read_frame(sock: &mut UnixStream, max: usize) -> Result<Vec<u8>, FrameError> {
    async fn fill(sock: &mut UnixStream, buf: &mut [u8], at: usize) -> Result<(), FrameError> {
        let mut got = 0;
        while got < buf.len() {
            if let Some(n) = proto::more(sock.read(&mut buf[got..]).await, at + got)? {
                got += n;
            }
        }
        Ok(())
    }
    let mut header = [0u8; 4];
    fill(sock, &mut header, 0).await?;
    let mut body = vec![0u8; proto::body_len(header, max)?];
    fill(sock, &mut body, header.len()).await?;
    Ok(body)
}
