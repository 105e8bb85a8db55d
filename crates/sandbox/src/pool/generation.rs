//! One zygote's life in the pool: its control socket, the children it has
//! forked that are not yet reaped, and whether it has been retired (a
//! younger zygote serves in its place, and it exits once its last running
//! call is done).

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::control::ToZygote;

/// A zygote as the pool sees it.
pub(super) struct Generation {
    /// 1 for a sandbox's first zygote, then one more for each; logged.
    pub id: u64,
    /// The zygote's process id.
    pub zygote_pid: i32,
    control: OwnedFd,
    state: Mutex<State>,
    calls: AtomicU64,
    /// The call count at which the supervisor hears `worn` (0: never).
    worn_at: u64,
    worn: Box<dyn Fn() + Send + Sync>,
}

#[derive(Default)]
struct State {
    retired: bool,
    /// Shut down for writing: the zygote reads EOF and exits.
    closed: bool,
    /// Children forked and not yet reaped, by pid.
    live: HashMap<i32, Live>,
}

/// A live child: a spare waiting in the pool's queue, with what kills it
/// (its pidfd; `None` where the kernel has none), or one a call has taken.
enum Live {
    Spare(Option<OwnedFd>),
    Taken,
}

/// What taking a spare from the queue found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Claim {
    /// The call's now.
    Taken,
    /// Its zygote is retired: the spare is dead or dying, and its
    /// successor was stocked in its place, so nothing replaces it.
    Retired,
    /// Reaped already (killed from outside, or its zygote died).
    Dead,
}

impl Generation {
    /// `worn` runs once, on the call that makes `worn_at` calls.
    pub fn new(
        id: u64,
        zygote_pid: i32,
        control: OwnedFd,
        worn_at: u64,
        worn: Box<dyn Fn() + Send + Sync>,
    ) -> Self {
        Self {
            id,
            zygote_pid,
            control,
            state: Mutex::new(State::default()),
            calls: AtomicU64::new(0),
            worn_at,
            worn,
        }
    }

    /// The server's end of the control socket, for the relay to read.
    pub fn control_fd(&self) -> RawFd {
        self.control.as_raw_fd()
    }

    /// Calls this zygote's children have taken.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    pub fn is_retired(&self) -> bool {
        self.lock().retired
    }

    /// Asks the zygote for one more child, unless it is retired.
    pub fn request_spawn(&self, warm_up: bool) {
        if self.is_retired() {
            return;
        }
        let byte = ToZygote::Spawn { warm_up }.encode();
        // SAFETY: sending one byte from a stack buffer on our socket; a
        // zygote that is gone yields an error, never a signal.
        unsafe {
            libc::send(
                self.control.as_raw_fd(),
                [byte].as_ptr().cast(),
                1,
                libc::MSG_NOSIGNAL,
            );
        }
    }

    /// A child the zygote sent, before it joins the queue. False when the
    /// zygote is retired: the caller kills the child instead (a spawn asked
    /// for before the switch, which the successor's stock replaces).
    pub fn offered(&self, pid: i32, pidfd: Option<&OwnedFd>) -> bool {
        let mut st = self.lock();
        if st.retired {
            return false;
        }
        let kill_by = pidfd.and_then(|p| p.try_clone().ok());
        st.live.insert(pid, Live::Spare(kill_by));
        true
    }

    /// A call takes the spare `pid`: from now on only its call ends it.
    /// Under the same lock as [`Self::retire`], so a spare is either taken
    /// or killed as its zygote retires, never both.
    pub fn claim(&self, pid: i32) -> Claim {
        let mut st = self.lock();
        if st.retired {
            return Claim::Retired;
        }
        match st.live.get_mut(&pid) {
            Some(live) => *live = Live::Taken,
            None => return Claim::Dead,
        }
        drop(st);
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if n == self.worn_at {
            (self.worn)();
        }
        Claim::Taken
    }

    /// The zygote reaped `pid`.
    pub fn exited(&self, pid: i32) {
        let mut st = self.lock();
        st.live.remove(&pid);
        self.close_if_done(&mut st);
    }

    /// A younger zygote serves now: kill the spares still waiting (no call
    /// will take them), and close once the children calls took are done.
    pub fn retire(&self) {
        let mut st = self.lock();
        st.retired = true;
        for (pid, live) in &st.live {
            if let Live::Spare(kill_by) = live {
                kill(*pid, kill_by.as_ref());
            }
        }
        self.close_if_done(&mut st);
    }

    /// Retired with no child left: shut the socket for writing, so that the
    /// zygote reads EOF and exits, and the relay then reads it gone.
    fn close_if_done(&self, st: &mut State) {
        if st.retired && st.live.is_empty() && !st.closed {
            st.closed = true;
            // SAFETY: shutdown on our own socket with a valid `how`.
            unsafe { libc::shutdown(self.control.as_raw_fd(), libc::SHUT_WR) };
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("generation lock")
    }
}

/// SIGKILL through the pidfd when there is one, so that a recycled pid can
/// never be hit; else by pid (the zygote has not reaped a live spare, so
/// the pid is still the spare's).
pub(super) fn kill(pid: i32, pidfd: Option<&OwnedFd>) {
    // SAFETY: signalling with valid integer arguments; a dead target yields
    // ESRCH, never UB.
    unsafe {
        match pidfd {
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
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};

    /// A generation on one end of a socket pair; the other end plays the
    /// zygote. Pids here name no process: with no pidfd a kill would go to
    /// them, so the tests only retire with no spare, or with pids that
    /// cannot exist (above `pid_max`'s ceiling of 2^22).
    fn generation(worn_at: u64) -> (Generation, OwnedFd, Arc<AtomicUsize>) {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .unwrap();
        let worn = Arc::new(AtomicUsize::new(0));
        let w = worn.clone();
        let g = Generation::new(
            1,
            0,
            ours,
            worn_at,
            Box::new(move || {
                w.fetch_add(1, Ordering::SeqCst);
            }),
        );
        (g, theirs, worn)
    }

    const NO_PID: i32 = 1 << 30;

    /// What the zygote's end reads without blocking: `Some(n)` bytes, `Some(0)` EOF, `None` nothing yet.
    fn peek(fd: &OwnedFd) -> Option<isize> {
        let mut buf = [0u8; 4];
        // SAFETY: a non-blocking read into a stack buffer of its length.
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        (n >= 0).then_some(n)
    }

    #[test]
    fn a_spare_is_taken_or_retired_never_both() {
        let (g, _zygote, _) = generation(0);
        assert!(g.offered(NO_PID, None));
        assert!(g.offered(NO_PID + 1, None));
        assert_eq!(g.claim(NO_PID), Claim::Taken);
        assert_eq!(g.claim(NO_PID + 7), Claim::Dead, "never offered");
        g.retire();
        assert_eq!(g.claim(NO_PID + 1), Claim::Retired);
        assert!(!g.offered(NO_PID + 2, None), "a late child is refused");
        assert_eq!(g.calls(), 1);
    }

    #[test]
    fn a_retired_zygote_is_closed_once_its_last_child_is_reaped() {
        let (g, zygote, _) = generation(0);
        assert!(g.offered(NO_PID, None));
        assert!(g.offered(NO_PID + 1, None));
        assert_eq!(g.claim(NO_PID), Claim::Taken);
        g.retire();
        assert_eq!(peek(&zygote), None, "a call still runs");
        g.exited(NO_PID + 1);
        assert_eq!(peek(&zygote), None, "a call still runs");
        g.exited(NO_PID);
        assert_eq!(peek(&zygote), Some(0), "EOF: the zygote exits");
    }

    #[test]
    fn a_retired_zygote_gets_no_spawn_requests() {
        let (g, zygote, _) = generation(0);
        g.request_spawn(true);
        assert_eq!(peek(&zygote), Some(1));
        g.retire();
        g.request_spawn(true);
        assert_eq!(peek(&zygote), Some(0), "EOF, and no request before it");
    }

    #[test]
    fn worn_is_heard_once_at_the_count() {
        let (g, _zygote, worn) = generation(3);
        for pid in 0..5 {
            assert!(g.offered(NO_PID + pid, None));
            assert_eq!(g.claim(NO_PID + pid), Claim::Taken);
            assert_eq!(worn.load(Ordering::SeqCst), usize::from(pid >= 2));
        }
        let (g, _zygote, worn) = generation(0);
        assert!(g.offered(NO_PID, None));
        g.claim(NO_PID);
        assert_eq!(worn.load(Ordering::SeqCst), 0, "0 is never");
    }
}
