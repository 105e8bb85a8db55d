//! The four walls the pool keeps itself (a process and an interpreter per
//! call, the in-VM stop and the kill at the deadline), checked by running
//! probe scripts down the calls' own path (`run_child`, `call::drive`), so
//! that `/healthz` reports what held rather than what was designed. The
//! zygote checks the other walls where they are set up.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolgate_core::files::Files;
use toolgate_core::walls::Walls;

use super::call::Stop;
use super::{ANONYMOUS, Ran, Sandbox, request_frame};
use crate::error::SandboxError;

/// A deadline probe's timeout: short, as two probes spend it whole.
const DEADLINE: Duration = Duration::from_millis(200);
/// Ample for a probe script that finishes at once.
const QUICK: Duration = Duration::from_secs(10);
/// How long a used child may take to be gone (it is killed by a task).
const GONE_WAIT: Duration = Duration::from_secs(3);
/// Tries of the in-VM stop: its answer has 20 ms (`call::STOP_GRACE`), and
/// a host busy for that long kills the script instead, which stops it too.
const STOP_TRIES: usize = 3;

/// What the probe found, or why there is nothing yet.
#[derive(Debug, Default)]
pub(super) struct Probe(Mutex<State>);

#[derive(Debug, Default, Clone)]
enum State {
    #[default]
    NotRun,
    Running,
    Done(Found),
    Failed(String),
}

#[derive(Debug, Default, Clone, Copy)]
struct Found {
    process_per_call: bool,
    instance_per_call: bool,
    stop_at_deadline: bool,
    kill_at_deadline: bool,
}

impl Probe {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sets the four walls in `w` as the last probe found them: false, with
    /// `probe_error` saying why, before a probe has finished or when it
    /// failed.
    pub(super) fn apply(&self, w: &mut Walls) {
        let (found, why) = match &*self.state() {
            State::Done(f) => (*f, None),
            State::NotRun => (Found::default(), Some("not checked yet".to_owned())),
            State::Running => (
                Found::default(),
                Some("being checked: ask again in a second".to_owned()),
            ),
            State::Failed(e) => (Found::default(), Some(format!("the check failed: {e}"))),
        };
        w.process_per_call = found.process_per_call;
        w.instance_per_call = found.instance_per_call;
        w.stop_at_deadline = found.stop_at_deadline;
        w.kill_at_deadline = found.kill_at_deadline;
        w.probe_error = why;
    }
}

impl Sandbox {
    /// Starts the walls' probe in the background unless it has run or is
    /// running: the first request for the walls does, rather than the
    /// start, where it would add to a Lambda function's cold start.
    pub fn probe_walls_soon(self: &Arc<Self>) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        {
            let mut state = self.probe.state();
            if !matches!(*state, State::NotRun) {
                return;
            }
            *state = State::Running;
        }
        let sandbox = self.clone();
        rt.spawn(async move { sandbox.run_and_keep().await });
    }

    /// Runs the walls' probe (about half a second, most of it the two
    /// deadlines) and keeps what it found for [`Sandbox::walls`]; when one
    /// is already running, waits for that one instead.
    pub async fn probe_walls(&self) {
        loop {
            {
                let mut state = self.probe.state();
                if !matches!(*state, State::Running) {
                    *state = State::Running;
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.run_and_keep().await;
    }

    async fn run_and_keep(&self) {
        let found = match self.run_probe().await {
            Ok(f) => State::Done(f),
            Err(e) => State::Failed(e.to_string()),
        };
        tracing::info!(walls = ?found, "sandbox walls probed");
        *self.probe.state() = found;
    }

    async fn run_probe(&self) -> Result<Found, SandboxError> {
        // An attribute set on a module in one call is gone in the next: no
        // interpreter state outlives its call.
        let first = self
            .probe_call("import math\nmath.toolgate_probe = 1\nresult = 1", QUICK)
            .await?;
        let second = self
            .probe_call(
                "import math\nresult = hasattr(math, 'toolgate_probe')",
                QUICK,
            )
            .await?;
        let instance_per_call =
            first.out.result == Some(json!(1)) && second.out.result == Some(json!(false));
        let process_per_call =
            first.pid != second.pid && gone(first.pid).await && gone(second.pid).await;
        let mut stop_at_deadline = false;
        for _ in 0..STOP_TRIES {
            let stopped = self.probe_call("while True:\n    pass", DEADLINE).await?;
            stop_at_deadline = stopped.out.timed_out && stopped.stop == Some(Stop::InVm);
            if stop_at_deadline {
                break;
            }
        }
        // Native code reaches no bytecode boundary: only the kill ends it.
        let killed = self
            .probe_call("result = sum(range(10**14))", DEADLINE)
            .await?;
        let kill_at_deadline =
            killed.out.timed_out && killed.stop == Some(Stop::Killed) && gone(killed.pid).await;
        Ok(Found {
            process_per_call,
            instance_per_call,
            stop_at_deadline,
            kill_at_deadline,
        })
    }

    /// One probe script, in a place of its own, down the calls' path.
    async fn probe_call(&self, code: &str, timeout: Duration) -> Result<Ran, SandboxError> {
        let _place = self
            .admission
            .enter(ANONYMOUS)
            .await
            .ok_or(SandboxError::ZygoteGone)?;
        let frame = request_frame(code, &Files::new(), None)?;
        let child = self.take_child().await?;
        self.run_child(child, &frame, timeout, self.limits, false)
            .await
    }
}

/// Whether process `pid` has ended (and been reaped) within [`GONE_WAIT`].
async fn gone(pid: i32) -> bool {
    let deadline = tokio::time::Instant::now() + GONE_WAIT;
    loop {
        // SAFETY: signal 0 only asks whether the process exists.
        let exists = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
        if !exists {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
