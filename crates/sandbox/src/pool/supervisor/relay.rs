//! One zygote process: how it is started (its control socket on
//! `CONTROL_FD`, an empty environment) and the relay that reads its
//! messages until it is gone.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use tokio::sync::{mpsc, watch};

use super::super::SandboxConfig;
use super::super::generation::Generation;
use super::super::handle::Child;
use super::super::recycle;
use super::{Event, SEAL_WAIT, Shared};
use crate::control::FromZygote;
use crate::error::SandboxError;
use crate::zygote::{CONTROL_FD, ZYGOTE_ARG};

pub(super) fn spawn_zygote(
    cfg: &SandboxConfig,
) -> Result<(std::process::Child, OwnedFd), SandboxError> {
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
fn child_from(
    pid: i32,
    fds: Vec<OwnedFd>,
    zygote_gone: &watch::Receiver<bool>,
    generation: &Arc<Generation>,
) -> Option<Child> {
    let mut it = fds.into_iter();
    Some(Child {
        pid,
        sock: it.next()?,
        out: File::from(it.next()?),
        pidfd: it.next(),
        zygote_gone: zygote_gone.clone(),
        generation: generation.clone(),
    })
}

/// Waits until a spare has said it is sealed (its first byte is readable;
/// the call reads it), it died, or `within` passed.
fn wait_sealed(sock: &OwnedFd, within: Duration) {
    let mut fds = [libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    let ms = i32::try_from(within.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: polling one valid pollfd for the call's duration.
    unsafe { libc::poll(fds.as_mut_ptr(), 1, ms) };
}

/// One zygote's messages, read on a thread of their own until it is gone.
pub(super) struct Relay {
    pub(super) generation: Arc<Generation>,
    pub(super) process: std::process::Child,
    pub(super) shared: Arc<Shared>,
    pub(super) spares: mpsc::Sender<Child>,
    pub(super) events: std::sync::mpsc::Sender<Event>,
    pub(super) stock: usize,
    /// Started to replace a zygote that serves.
    pub(super) successor: bool,
}

impl Relay {
    pub(super) fn run(mut self) {
        let id = self.generation.id;
        let pid = self.generation.zygote_pid;
        let fd = self.generation.control_fd();
        let (gone_tx, gone_rx) = watch::channel(false);
        let mut sent = 0;
        loop {
            let msg = match FromZygote::recv(fd) {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    // Dropping the sandbox kills the zygote: the reset that
                    // follows is the shutdown, not a failure.
                    if !self.shared.shutdown.load(Ordering::SeqCst) {
                        tracing::error!(generation = id, error = %e, "sandbox control channel failed");
                    }
                    break;
                }
            };
            let event = match msg {
                (FromZygote::Ready(walls), _) => Some(Event::Ready {
                    id,
                    walls,
                    cpu_ms: recycle::cpu_ms(pid),
                }),
                (FromZygote::Failed(m), _) => Some(Event::Failed {
                    id,
                    error: SandboxError::WarmUp(m),
                }),
                (FromZygote::SeccompRefused(m), _) => Some(Event::Failed {
                    id,
                    error: SandboxError::SeccompRequired(m),
                }),
                (FromZygote::Child { pid }, fds) => {
                    let Some(c) = child_from(pid, fds, &gone_rx, &self.generation) else {
                        tracing::error!(pid, "a sandbox child came without its descriptors");
                        continue;
                    };
                    if !self.generation.offered(pid, c.pidfd.as_ref()) {
                        // Asked of a zygote since retired: its successor's
                        // stock stands in for it.
                        c.kill();
                        continue;
                    }
                    if self.successor && sent < self.stock {
                        // A successor's stock is sealed before it takes
                        // over, so that no call waits on a spare's warm-up
                        // at the switch. Nothing else waits on this relay
                        // yet. (A first zygote's calls wait for the seal
                        // themselves: held here, they would ask for more.)
                        wait_sealed(&c.sock, SEAL_WAIT);
                    }
                    if self.spares.blocking_send(c).is_err() {
                        break; // the Sandbox is gone
                    }
                    sent += 1;
                    (sent == self.stock).then_some(Event::Stocked { id })
                }
                (FromZygote::Exited { pid, status }, _) => {
                    self.generation.exited(pid);
                    if let Some(w) = self.shared.exits.lock().expect("exits lock").remove(&pid) {
                        let _ = w.send(status);
                    }
                    None
                }
            };
            if let Some(e) = event {
                let _ = self.events.send(e);
            }
        }
        gone_tx.send_replace(true);
        self.shared.forget_zygote(pid);
        let _ = self.process.kill();
        let _ = self.process.wait();
        let _ = self.events.send(Event::Ended { id });
    }
}
