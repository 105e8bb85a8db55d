//! A warm child, as the zygote handed it over, and the signals the server
//! sends it.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use tokio::sync::watch;

use super::generation::{Claim, Generation};
use super::supervisor::Shared;

pub(super) struct Child {
    pub pid: i32,
    /// The per-call socket (`proto`'s frames).
    pub sock: OwnedFd,
    /// The output mapping the child writes (`outbuf`).
    pub out: File,
    pub pidfd: Option<OwnedFd>,
    /// Turns true when the zygote that forked this child is gone: the
    /// child then dies with it (PDEATHSIG), and nobody reports its exit.
    pub zygote_gone: watch::Receiver<bool>,
    /// The zygote that forked it.
    pub generation: Arc<Generation>,
}

impl Child {
    /// A call takes this spare from the queue. Not one whose zygote is
    /// known to be gone (the spare dies with it, PDEATHSIG, however late a
    /// loaded machine delivers that) or retired, or that has exited.
    pub fn claim(&self) -> Claim {
        if *self.zygote_gone.borrow() || !self.is_alive() {
            return if self.generation.is_retired() {
                Claim::Retired
            } else {
                Claim::Dead
            };
        }
        self.generation.claim(self.pid)
    }

    /// Asks for the child that takes this one's place: from its own zygote
    /// while that serves, from the current one if its zygote died, and
    /// none if its zygote is retired (its successor was stocked with a full
    /// set of spares before it took over). Whether it asked.
    pub fn replace(&self, shared: &Shared, warm_up: bool) -> bool {
        if self.generation.is_retired() {
            return false;
        }
        if *self.zygote_gone.borrow() {
            shared.request_spawn(warm_up);
        } else {
            self.generation.request_spawn(warm_up);
        }
        true
    }

    /// False once the process has exited, e.g. a spare killed with a zygote
    /// that died. A pidfd becomes readable when its process exits.
    pub fn is_alive(&self) -> bool {
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
    pub fn lower_priority(&self) {
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
    pub fn kill(&self) {
        super::generation::kill(self.pid, self.pidfd.as_ref());
    }
}
