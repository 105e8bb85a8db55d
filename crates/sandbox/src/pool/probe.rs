//! The four walls the pool keeps itself (a process and an interpreter per
//! call, the in-VM stop and the kill at the deadline), checked by running
//! probe scripts down the calls' own path (`run_child`, `call::drive`), so
//! that `/healthz` reports what held rather than what was designed. The
//! zygote checks the other walls where they are set up.
//!
//! The probe runs inside the request that asks for the walls (never in the
//! background: a Lambda function is frozen between invocations, and a
//! probe left running would take the next call's CPU, its timers counting
//! the freeze). What it found is kept; a failure is tried again by the next
//! request.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;
use toolgate_core::files::Files;
use toolgate_core::walls::Walls;

use super::call::{Limits, Stop};
use super::{Ran, Sandbox, request_frame};
use crate::error::SandboxError;

/// The probe's own caller: its places come out of no caller's share.
const CALLER: &str = "toolgate:probe";
/// A deadline probe's timeout: short, as the deadline probes spend it whole.
const DEADLINE: Duration = Duration::from_millis(200);
/// Ample for a probe script that finishes at once.
const QUICK: Duration = Duration::from_secs(10);
/// How long a used child may take to be gone (it is killed by a task).
const GONE_WAIT: Duration = Duration::from_secs(3);
/// Tries of the in-VM stop: its answer has 20 ms (`call::STOP_GRACE`), and
/// a host busy for that long kills the script instead, which stops it too
/// (but is not the in-VM stop). Three kills in a row read false.
const STOP_TRIES: usize = 3;
/// Tries of one probe script whose child died with its zygote, as a call's.
const ZYGOTE_TRIES: usize = 3;

/// What the probe found; one probe at a time.
#[derive(Debug, Default)]
pub(super) struct Probe {
    run: tokio::sync::Mutex<()>,
    state: Mutex<State>,
}

#[derive(Debug, Default, Clone)]
enum State {
    #[default]
    NotRun,
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
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sets the four walls in `w` as the probe found them: false, with
    /// `probe_error` saying why, before a probe has finished or when the
    /// last one failed.
    pub(super) fn apply(&self, w: &mut Walls) {
        let (found, why) = match &*self.state() {
            State::Done(f) => (*f, None),
            State::NotRun => (
                Found::default(),
                Some("not checked yet: the sandbox was too busy to check within 5 s".to_owned()),
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
    /// The walls, the pool's four checked first when they have not been
    /// (about half a second, most of it the deadlines), waiting at most
    /// `within` for that; a check cut short is tried again next time.
    pub async fn probed_walls(&self, within: Duration) -> Option<Walls> {
        let _ = tokio::time::timeout(within, self.probe_walls()).await;
        self.walls()
    }

    /// Runs the walls' probe unless it has found them, and keeps what it
    /// found for [`Sandbox::walls`]; when one is running, waits for it.
    pub async fn probe_walls(&self) {
        let _one = self.probe.run.lock().await;
        if matches!(*self.probe.state(), State::Done(_)) {
            return;
        }
        let found = match self.run_probe().await {
            Ok(f) => State::Done(f),
            Err(e) => State::Failed(e.to_string()),
        };
        tracing::info!(walls = ?found, "sandbox walls probed");
        *self.probe.state() = found;
    }

    async fn run_probe(&self) -> Result<Found, SandboxError> {
        // An attribute set on a module in one call is gone in the next, which
        // runs in another process: no interpreter state outlives its call.
        let first = self
            .probe_call("import math\nmath.toolgate_probe = 1\nresult = 1", QUICK)
            .await?;
        let second = self
            .probe_call(
                "import math\nresult = hasattr(math, 'toolgate_probe')",
                QUICK,
            )
            .await?;
        let process_per_call =
            first.pid != second.pid && gone(first.pid).await && gone(second.pid).await;
        // A spare forked before the first call never saw its state: the
        // attribute's absence proves a fresh interpreter only in a fresh
        // process.
        let instance_per_call = process_per_call
            && first.out.result == Some(json!(1))
            && second.out.result == Some(json!(false));
        let mut stop_at_deadline = false;
        for _ in 0..STOP_TRIES {
            let stopped = self.probe_call("while True:\n    pass", DEADLINE).await?;
            stop_at_deadline = stopped.out.timed_out && stopped.stop == Some(Stop::InVm);
            if stopped.stop != Some(Stop::Killed) {
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

    /// One probe script down the calls' path, in a place of its own; a
    /// child that died with its zygote is replaced, as for a call.
    async fn probe_call(&self, code: &str, timeout: Duration) -> Result<Ran, SandboxError> {
        let _place = self
            .admission
            .enter(CALLER)
            .await
            .ok_or(SandboxError::ZygoteGone)?;
        let frame = request_frame(code, &Files::new(), None, false, None)?;
        let limits = Limits {
            state_cap: 0,
            ..self.limits
        };
        let mut last = SandboxError::ZygoteGone;
        for _ in 0..ZYGOTE_TRIES {
            let child = self.take_child().await?;
            match self
                .run_child(child, &frame, timeout, limits, self.lean(false), None)
                .await
            {
                Err(SandboxError::ZygoteGone) => last = SandboxError::ZygoteGone,
                done => return done,
            }
        }
        Err(last)
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
