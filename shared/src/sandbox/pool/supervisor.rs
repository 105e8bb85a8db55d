//! The zygote's supervisor: starts it, relays its messages (children to
//! the pool, exit statuses to the calls that wait for them), and restarts
//! it should it die.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use tokio::sync::{mpsc, oneshot, watch};

use super::SandboxConfig;
use super::handle::Child;
use crate::sandbox::control::{FromZygote, ToZygote};
use crate::sandbox::error::SandboxError;
use crate::sandbox::proto::Walls;
use crate::sandbox::zygote::{CONTROL_FD, ZYGOTE_ARG};

/// What the pool and the supervisor thread share.
pub(super) struct Shared {
    control: Mutex<Option<OwnedFd>>,
    /// Calls waiting for their child's exit status, by pid.
    pub exits: Mutex<HashMap<i32, oneshot::Sender<i32>>>,
    pub walls: RwLock<Option<Walls>>,
    pub shutdown: AtomicBool,
    pub zygote_pid: Mutex<Option<i32>>,
}

impl Shared {
    pub fn new() -> Self {
        Self {
            control: Mutex::new(None),
            exits: Mutex::new(HashMap::new()),
            walls: RwLock::new(None),
            shutdown: AtomicBool::new(false),
            zygote_pid: Mutex::new(None),
        }
    }

    /// Asks the zygote for one more child. Calls that come back to back
    /// get spares without the warm-up run: it costs ~2 ms of CPU to save a
    /// call ~0.5 ms, and on a small machine that CPU is the next call's.
    pub fn request_spawn(&self, warm_up: bool) {
        let byte = ToZygote::Spawn { warm_up }.encode();
        if let Some(fd) = self.control.lock().expect("control lock").as_ref() {
            // SAFETY: sending one byte from a stack buffer on our socket.
            unsafe {
                libc::send(
                    fd.as_raw_fd(),
                    [byte].as_ptr().cast(),
                    1,
                    libc::MSG_NOSIGNAL,
                );
            }
        }
    }
}

pub(super) type ReadyTx = std::sync::mpsc::Sender<Result<(), SandboxError>>;

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

/// A child message's descriptors, in `FromZygote::Child`'s order.
fn child_from(pid: i32, fds: Vec<OwnedFd>, zygote_gone: &watch::Receiver<bool>) -> Option<Child> {
    let mut it = fds.into_iter();
    Some(Child {
        pid,
        sock: it.next()?,
        out: File::from(it.next()?),
        pidfd: it.next(),
        zygote_gone: zygote_gone.clone(),
    })
}

/// Runs on its own thread for the sandbox's lifetime: starts the zygote,
/// relays its messages, and restarts it should it die. `ready` hears once:
/// whether the first zygote warmed up.
pub(super) fn supervise(
    cfg: SandboxConfig,
    shared: Arc<Shared>,
    tx: mpsc::Sender<Child>,
    ready: ReadyTx,
) {
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
            let msg = match FromZygote::recv(fd) {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    // Dropping the sandbox kills the zygote: the reset that
                    // follows is the shutdown, not a failure.
                    if !shared.shutdown.load(Ordering::SeqCst) {
                        tracing::error!(error = %e, "sandbox control channel failed");
                    }
                    break;
                }
            };
            let failed = match msg {
                (FromZygote::Ready(walls), _) => {
                    tracing::info!(
                        warm_ms = started.elapsed().as_millis() as u64,
                        seccomp = walls.seccomp,
                        "sandbox zygote ready"
                    );
                    *shared.walls.write().expect("walls lock") = Some(walls);
                    for _ in 0..cfg.spare_children.max(1) {
                        shared.request_spawn(true);
                    }
                    if let Some(r) = ready.take() {
                        let _ = r.send(Ok(()));
                    }
                    backoff = Duration::from_millis(100);
                    None
                }
                (FromZygote::Failed(m), _) => Some(SandboxError::WarmUp(m)),
                (FromZygote::SeccompRefused(m), _) => Some(SandboxError::SeccompRequired(m)),
                (FromZygote::Child { pid }, fds) => {
                    match child_from(pid, fds, &gone_rx) {
                        Some(c) => {
                            if tx.blocking_send(c).is_err() {
                                break; // the Sandbox is gone
                            }
                        }
                        None => {
                            tracing::error!(pid, "a sandbox child came without its descriptors")
                        }
                    }
                    None
                }
                (FromZygote::Exited { pid, status }, _) => {
                    if let Some(w) = shared.exits.lock().expect("exits lock").remove(&pid) {
                        let _ = w.send(status);
                    }
                    None
                }
            };
            if let Some(err) = failed {
                if let Some(r) = ready.take() {
                    let _ = r.send(Err(err));
                    let _ = zygote.kill();
                    let _ = zygote.wait();
                    return;
                }
                tracing::error!(error = %err, "sandbox zygote failed");
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
