//! The server's side of the sandbox: it keeps warm children forked ahead
//! of calls (the `supervisor` relays them from the zygote, and replaces the
//! zygote when it is due: `recycle`, `generation`), runs one script per
//! child (`call`), and says how a call that did not finish ended (`death`).

mod call;
mod clock;
mod death;
mod generation;
mod handle;
mod probe;
mod recycle;
mod supervisor;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

pub use super::admission::ANONYMOUS;
use super::admission::Admission;
use super::error::SandboxError;
use super::proto::{self, ChildRequest, Walls};
use super::zygote::ZygoteConfig;
use clock::CallClock;
use generation::Claim;
use handle::Child;
pub use recycle::Recycle;
use supervisor::Shared;
use toolgate_core::code::ToolHost;
use toolgate_core::files::Files;
use toolgate_core::outcome::ExecOutput;

/// How the server runs the sandbox.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// The binary to re-execute as the zygote (normally the current one).
    pub exe: PathBuf,
    /// What the zygote is started with.
    pub zygote: ZygoteConfig,
    /// Warm children kept forked ahead of calls (at least one).
    pub spare_children: usize,
    /// Scripts that may run at once; more wait their turn.
    pub max_concurrency: usize,
    /// Scripts one caller may run at once (the rest stay open to others).
    pub max_per_caller: usize,
    /// When the zygote is replaced by a fresh one.
    pub recycle: Recycle,
}

/// A handle on the running sandbox; dropping it stops the zygote and with it
/// every child.
pub struct Sandbox {
    shared: Arc<Shared>,
    spares: tokio::sync::Mutex<mpsc::Receiver<Child>>,
    admission: Admission,
    calls: CallClock,
    limits: call::Limits,
    probe: probe::Probe,
    frozen_between_calls: bool,
}

/// How long a call waits for a warm child (and a child to seal itself).
const CHILD_WAIT: Duration = Duration::from_secs(10);
/// Children a call tries: a spare may have died with an earlier zygote, or
/// been killed from outside while it waited.
const CHILD_TRIES: usize = 3;
/// While a call waits for a child this long, it asks the zygote for another.
const SPAWN_NUDGE: Duration = Duration::from_secs(1);

impl Sandbox {
    /// Starts the zygote and waits until it is warm. A configured module that
    /// cannot be imported, or seccomp required but refused, fails here.
    pub fn start(cfg: SandboxConfig) -> Result<Self, SandboxError> {
        let shared = Arc::new(Shared::new());
        let (tx, rx) = mpsc::channel(256);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let s = shared.clone();
        let limits = call::Limits {
            memory_mb: cfg.zygote.memory_mb,
            files_cap: cfg.zygote.files_cap,
            state_cap: cfg.zygote.state_cap,
        };
        let admission = Admission::new(cfg.max_concurrency, cfg.max_per_caller);
        let frozen_between_calls = cfg.zygote.frozen_between_calls;
        std::thread::Builder::new()
            .name("sandbox-supervisor".into())
            .spawn(move || supervisor::supervise(cfg, s, tx, ready_tx))
            .map_err(|e| SandboxError::SpawnZygote {
                exe: "supervisor thread".into(),
                source: e,
            })?;
        ready_rx.recv().map_err(|_| SandboxError::ZygoteGone)??;
        Ok(Self {
            shared,
            spares: tokio::sync::Mutex::new(rx),
            admission,
            calls: CallClock::default(),
            limits,
            probe: probe::Probe::default(),
            frozen_between_calls,
        })
    }

    /// Warm children ready for a call now (0 while a call waits for
    /// one), and zygotes started so far (restarts and recycles included).
    pub fn stats(&self) -> (usize, u64) {
        let spares = self.spares.try_lock().map_or(0, |rx| rx.len());
        let started = self
            .shared
            .zygotes_started
            .load(std::sync::atomic::Ordering::Relaxed);
        (spares, started)
    }

    /// Whether a replacement skips the warm-up run: when calls come back
    /// to back, and always on a host that freezes the process before the
    /// warm-up could run (its CPU would land on the next call).
    fn lean(&self, back_to_back: bool) -> bool {
        back_to_back || self.frozen_between_calls
    }

    /// Used children replaced so far: lean (no warm-up run), and warm.
    pub fn replacements(&self) -> (u64, u64) {
        let [lean, warm] = &self.shared.replaced;
        let read = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        (read(lean), read(warm))
    }

    /// The walls active around each call: the zygote's as it checked them,
    /// the pool's own four as its probe found them (`probe`).
    pub fn walls(&self) -> Option<Walls> {
        let mut walls = self.shared.walls.read().expect("walls lock").clone()?;
        self.probe.apply(&mut walls);
        Some(walls)
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
                // A spare that died (killed from outside) or whose zygote
                // died (it will die too) is skipped and replaced; one whose
                // zygote retired is skipped (its successor's stock stands
                // in for it).
                Ok(Some(c)) => match c.claim() {
                    Claim::Taken => return Ok(c),
                    Claim::Retired => {}
                    Claim::Dead => {
                        c.replace(&self.shared, !self.lean(false));
                    }
                },
                Ok(None) => return Err(SandboxError::ZygoteGone),
                Err(_) if tokio::time::Instant::now() >= deadline => {
                    return Err(SandboxError::NoChild(CHILD_WAIT.as_secs()));
                }
                Err(_) => self.shared.request_spawn(!self.lean(false)),
            }
        }
    }

    /// Runs `code` in a fresh child, killed when `timeout` passes, for a
    /// caller nobody identified.
    pub async fn execute(&self, code: &str, timeout: Duration) -> Result<ExecOutput, SandboxError> {
        self.execute_for(ANONYMOUS, code, &Files::new(), None, timeout)
            .await
    }

    /// Runs `code` with `files` to open, for `caller`, within that caller's
    /// share of the sandbox.
    pub async fn execute_for(
        &self,
        caller: &str,
        code: &str,
        files: &Files,
        session: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<ExecOutput, SandboxError> {
        self.execute_with(caller, code, files, session, timeout, None)
            .await
    }

    /// As [`Self::execute_for`], the script's tool requests (code mode)
    /// answered by `tools`.
    pub async fn execute_with(
        &self,
        caller: &str,
        code: &str,
        files: &Files,
        session: Option<&[u8]>,
        timeout: Duration,
        tools: Option<&dyn ToolHost>,
    ) -> Result<ExecOutput, SandboxError> {
        let _place = self
            .admission
            .enter(caller)
            .await
            .ok_or(SandboxError::ZygoteGone)?;
        let seed = tools.and_then(|t| t.seed()).map(|s| format!("{s:032x}"));
        let frame = request_frame(code, files, session, tools.is_some(), seed)?;

        // A child that sends a session's state for a call outside one lies.
        let limits = call::Limits {
            state_cap: if session.is_some() {
                self.limits.state_cap
            } else {
                0
            },
            ..self.limits
        };
        let call = self.calls.call_started();
        let lean = self.lean(call.back_to_back);
        // A spare may have died with an earlier zygote, or been killed from
        // outside: try a few.
        let mut last_err = None;
        for _ in 0..CHILD_TRIES {
            let child = self.take_child().await?;
            match self
                .run_child(child, &frame, timeout, limits, lean, tools)
                .await
            {
                Ok(ran) => return Ok(ran.out),
                Err(e) => last_err = Some(e),
            }
        }
        match last_err {
            // Killed from outside every time: the script's answer says so.
            Some(SandboxError::KilledFromOutside(out)) => Ok(*out),
            e => Err(e.unwrap_or(SandboxError::ZygoteGone)),
        }
    }

    async fn run_child(
        &self,
        child: Child,
        frame: &[u8],
        timeout: Duration,
        limits: call::Limits,
        lean: bool,
        tools: Option<&dyn ToolHost>,
    ) -> Result<Ran, SandboxError> {
        let pid = child.pid;
        let (exit_tx, exit_rx) = oneshot::channel();
        self.shared
            .exits
            .lock()
            .expect("exits lock")
            .insert(child.pid, exit_tx);
        // Built before the call, so that a call whose caller is gone (its
        // future dropped midway) still ends its child and replaces it.
        let used = Used {
            child,
            shared: self.shared.clone(),
            lean,
        };
        let result = call::drive(&used.child, frame, timeout, exit_rx, limits, tools).await;
        // The answer does not wait for the child's end (~0.05 ms of
        // syscalls): a task ends it while the answer goes out.
        tokio::spawn(async move { drop(used) });
        let (out, stop) = result?;
        Ok(Ran { out, pid, stop })
    }
}

/// One script's run in one child.
struct Ran {
    out: ExecOutput,
    /// The child it ran in.
    pid: i32,
    /// How its deadline stopped it, if it did.
    stop: Option<call::Stop>,
}

/// A call's request as the child reads it: the script and its files, then
/// the session's state when there is one.
fn request_frame(
    code: &str,
    files: &Files,
    session: Option<&[u8]>,
    tools: bool,
    seed: Option<String>,
) -> Result<Vec<u8>, SandboxError> {
    let body = serde_json::to_vec(&ChildRequest {
        code: code.to_owned(),
        files: toolgate_core::files::to_wire(files),
        session: session.is_some(),
        tools,
        seed,
    })
    .map_err(|e| SandboxError::Child(e.into()))?;
    let tail = session.map_or(0, |s| s.len() + 4);
    let mut frame = Vec::with_capacity(body.len() + 4 + tail);
    proto::write_frame(&mut frame, &body).map_err(SandboxError::Child)?;
    if let Some(state) = session {
        proto::write_frame(&mut frame, state).map_err(SandboxError::Child)?;
    }
    Ok(frame)
}

/// A child that has had its call: dropping it ends the child and asks the
/// zygote for a replacement.
struct Used {
    child: Child,
    shared: Arc<Shared>,
    /// Its replacement skips the warm-up run.
    lean: bool,
}

impl Drop for Used {
    fn drop(&mut self) {
        self.child.lower_priority();
        self.child.kill();
        // Only this call's entry, whose receiver went with the call: by now
        // the pid may be reaped and reused by another call's child.
        let mut exits = self.shared.exits.lock().expect("exits lock");
        if exits.get(&self.child.pid).is_some_and(|tx| tx.is_closed()) {
            exits.remove(&self.child.pid);
        }
        drop(exits);
        // Replace the child only now: forking while the script runs would
        // compete with it for the CPU. Other spares cover concurrent calls.
        if self.child.replace(&self.shared, !self.lean) {
            self.shared.replaced[usize::from(!self.lean)].fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        // Killing the zygotes ends their children through PDEATHSIG, and
        // each relay's read with EOF, after which it reaps its zygote.
        self.shared.kill_zygotes();
    }
}

impl SandboxConfig {
    /// The running binary, which the sandbox re-executes as its zygote.
    pub fn current_exe() -> Result<PathBuf, SandboxError> {
        std::env::current_exe().map_err(|e| SandboxError::SpawnZygote {
            exe: "current executable".into(),
            source: e,
        })
    }
}
