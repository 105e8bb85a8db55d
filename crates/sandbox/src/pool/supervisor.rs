//! The zygotes' supervisor: starts a zygote, relays its messages (children
//! to the pool, exit statuses to the calls that wait for them), restarts it
//! should it die, and replaces it when it is due (`recycle`).
//!
//! A replacement never leaves a gap: the successor warms and is stocked
//! with spares while the old zygote still serves; then one swap makes it
//! the zygote every new spare comes from, the old one's waiting spares are
//! killed, and the old one exits once the last call running in one of its
//! children is done. No running call is killed.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::SandboxConfig;
use super::generation::Generation;
use super::handle::Child;
use crate::error::SandboxError;
use crate::proto::Walls;

mod relay;
use relay::{Relay, spawn_zygote};

/// A successor that warmed waits at most this long for its spares before
/// it takes over anyway (a fork can fail; the pool asks again).
const STOCK_WAIT: Duration = Duration::from_secs(3);
/// How long a successor's relay waits for each spare of its stock to seal.
const SEAL_WAIT: Duration = Duration::from_secs(1);
/// The supervisor looks at the current zygote's age at least this often.
const TICK: Duration = Duration::from_secs(1);
/// The first wait before a zygote that died or failed is started again;
/// it doubles with each failure, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long the first zygote's failure waits for it to be reaped.
const REAP_WAIT: Duration = Duration::from_secs(5);

/// Until the next thing to look at: a tick, the end of a hold still to
/// come (one that has ended shortens nothing: it once had the supervisor
/// wake every millisecond, idle or not), the end of a successor's stock
/// wait; at least a millisecond.
fn next_wait(now: Instant, hold_until: Instant, stock_due: Option<Instant>) -> Duration {
    let mut wait = TICK;
    if hold_until > now {
        wait = wait.min(hold_until - now);
    }
    if let Some(due) = stock_due {
        wait = wait.min(due.saturating_duration_since(now));
    }
    wait.max(Duration::from_millis(1))
}

/// What the pool and the supervisor's threads share.
pub(super) struct Shared {
    /// The zygote new spares come from (none while one restarts).
    current: RwLock<Option<Arc<Generation>>>,
    /// Calls waiting for their child's exit status, by pid.
    pub exits: Mutex<HashMap<i32, oneshot::Sender<i32>>>,
    pub walls: RwLock<Option<Walls>>,
    pub shutdown: AtomicBool,
    /// Every zygote not yet reaped: the current one, one warming, and
    /// retired ones whose calls still run.
    zygote_pids: Mutex<Vec<i32>>,
    /// Zygotes started: the first, each restart and each recycle.
    pub zygotes_started: std::sync::atomic::AtomicU64,
    /// Used children replaced, by whether the replacement was lean (no
    /// warm-up run): `[lean, warm]`.
    pub replaced: [std::sync::atomic::AtomicU64; 2],
}

impl Shared {
    pub fn new() -> Self {
        Self {
            current: RwLock::new(None),
            exits: Mutex::new(HashMap::new()),
            walls: RwLock::new(None),
            shutdown: AtomicBool::new(false),
            zygote_pids: Mutex::new(Vec::new()),
            zygotes_started: std::sync::atomic::AtomicU64::new(0),
            replaced: Default::default(),
        }
    }

    /// Asks the current zygote for one more child. Calls that come back to
    /// back get spares without the warm-up run: it costs ~2 ms of CPU to
    /// save a call ~0.5 ms, and on a small machine that CPU is the next
    /// call's.
    pub fn request_spawn(&self, warm_up: bool) {
        if let Some(g) = self.current.read().expect("current lock").as_ref() {
            g.request_spawn(warm_up);
        }
    }

    /// SIGKILL to every zygote: their children die with them (PDEATHSIG),
    /// and each relay reads EOF, reaps its zygote and ends.
    pub fn kill_zygotes(&self) {
        // Held while signalling: a relay takes its pid out under this lock
        // before it reaps, so no pid here can have been reused.
        let pids = self.zygote_pids.lock().expect("pids lock");
        for pid in pids.iter() {
            // SAFETY: signalling our own unreaped child process by pid.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
    }

    fn forget_zygote(&self, pid: i32) {
        self.zygote_pids
            .lock()
            .expect("pids lock")
            .retain(|p| *p != pid);
    }
}

pub(super) type ReadyTx = std::sync::mpsc::Sender<Result<(), SandboxError>>;

/// What a zygote's relay tells the supervisor.
enum Event {
    /// Warm, with its walls as checked and the CPU its warm-up took.
    Ready {
        id: u64,
        walls: Walls,
        cpu_ms: Option<u64>,
    },
    /// Its warm-up failed; it exits.
    Failed { id: u64, error: SandboxError },
    /// It has sent as many children as the pool keeps spares.
    Stocked { id: u64 },
    /// The current zygote served its last call before recycling.
    Worn,
    /// It is gone and reaped.
    Ended { id: u64 },
}

/// A zygote the supervisor started, and when it warmed.
struct Zygote {
    generation: Arc<Generation>,
    started: Instant,
    warm: Option<(Instant, Walls)>,
}

/// Runs on its own thread for the sandbox's lifetime (the zygotes die with
/// it, PDEATHSIG): starts the zygote, restarts it should it die, and
/// replaces it when due. `ready` hears once: whether the first zygote
/// warmed up.
pub(super) fn supervise(
    cfg: SandboxConfig,
    shared: Arc<Shared>,
    tx: mpsc::Sender<Child>,
    ready: ReadyTx,
) {
    let (events_tx, events) = std::sync::mpsc::channel();
    let mut s = Supervisor {
        cfg,
        shared,
        spares: tx,
        events_tx,
        events,
        ready: Some(ready),
        current: None,
        next: None,
        ids: 0,
        backoff: FIRST_BACKOFF,
        hold_until: Instant::now(),
    };
    while !s.shared.shutdown.load(Ordering::SeqCst) {
        if s.wants_zygote()
            && let Err(e) = s.start()
        {
            if let Some(r) = s.ready.take() {
                let _ = r.send(Err(e));
                return;
            }
            tracing::error!(error = %e, "cannot start a sandbox zygote");
            s.hold_off();
        }
        if s.stock_waited() {
            s.switch();
        }
        match s.events.recv_timeout(s.wait()) {
            Ok(ev) => {
                if s.on(ev).is_break() {
                    return;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

struct Supervisor {
    cfg: SandboxConfig,
    shared: Arc<Shared>,
    spares: mpsc::Sender<Child>,
    events_tx: std::sync::mpsc::Sender<Event>,
    events: std::sync::mpsc::Receiver<Event>,
    ready: Option<ReadyTx>,
    /// The zygote that serves.
    current: Option<Zygote>,
    /// One started that does not serve yet: the first, a restart, or a
    /// successor.
    next: Option<Zygote>,
    ids: u64,
    backoff: Duration,
    /// No zygote starts before this, after a failure.
    hold_until: Instant,
}

impl Supervisor {
    fn stock(&self) -> usize {
        self.cfg.spare_children.max(1)
    }

    /// None serves, or the one that serves is due, and none is warming.
    fn wants_zygote(&self) -> bool {
        if self.next.is_some() || Instant::now() < self.hold_until {
            return false;
        }
        match &self.current {
            None => true,
            Some(z) => z
                .warm
                .as_ref()
                .is_some_and(|(at, _)| self.cfg.recycle.due(z.generation.calls(), at.elapsed())),
        }
    }

    /// A successor warmed long enough ago that its spares should be here.
    fn stock_waited(&self) -> bool {
        self.current.is_some()
            && self
                .next
                .as_ref()
                .and_then(|z| z.warm.as_ref())
                .is_some_and(|(at, _)| at.elapsed() >= STOCK_WAIT)
    }

    fn wait(&self) -> Duration {
        let stock_due = self
            .next
            .as_ref()
            .and_then(|z| z.warm.as_ref())
            .map(|(at, _)| *at + STOCK_WAIT);
        next_wait(Instant::now(), self.hold_until, stock_due)
    }

    fn hold_off(&mut self) {
        self.hold_until = Instant::now() + self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// Starts a zygote (on this thread: it dies when this thread ends) and
    /// its relay.
    fn start(&mut self) -> Result<(), SandboxError> {
        let (process, control) = spawn_zygote(&self.cfg)?;
        let pid = process.id() as i32;
        self.shared.zygote_pids.lock().expect("pids lock").push(pid);
        self.shared
            .zygotes_started
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.ids += 1;
        let events = self.events_tx.clone();
        let generation = Arc::new(Generation::new(
            self.ids,
            pid,
            control,
            self.cfg.recycle.max_calls,
            Box::new(move || {
                let _ = events.send(Event::Worn);
            }),
        ));
        let relay = Relay {
            generation: generation.clone(),
            process,
            shared: self.shared.clone(),
            spares: self.spares.clone(),
            events: self.events_tx.clone(),
            stock: self.stock(),
            successor: self.current.is_some(),
        };
        if let Err(e) = std::thread::Builder::new()
            .name("sandbox-relay".into())
            .spawn(move || relay.run())
        {
            // The closure, and the process handle with it, is gone: the
            // zygote is killed here and reaped when the server exits.
            self.shared.forget_zygote(pid);
            // SAFETY: signalling the child just spawned, not reaped (its
            // handle was dropped, which does not wait).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return Err(SandboxError::SpawnZygote {
                exe: "relay thread".into(),
                source: e,
            });
        }
        self.next = Some(Zygote {
            generation,
            started: Instant::now(),
            warm: None,
        });
        Ok(())
    }

    fn on(&mut self, ev: Event) -> ControlFlow<()> {
        match ev {
            Event::Ready { id, walls, cpu_ms } => {
                let stock = self.stock();
                let Some(z) = self.next.as_mut().filter(|z| z.generation.id == id) else {
                    return ControlFlow::Continue(());
                };
                tracing::info!(
                    generation = id,
                    warm_ms = z.started.elapsed().as_millis() as u64,
                    warm_cpu_ms = cpu_ms,
                    seccomp = walls.seccomp,
                    "sandbox zygote ready"
                );
                z.warm = Some((Instant::now(), walls));
                self.backoff = FIRST_BACKOFF;
                if self.current.is_none() {
                    self.switch();
                } else {
                    // Stocked before it serves, so that the calls that come
                    // as it takes over find warm spares of its own.
                    for _ in 0..stock {
                        z.generation.request_spawn(true);
                    }
                }
            }
            Event::Stocked { id } => {
                let warm = self
                    .next
                    .as_ref()
                    .is_some_and(|z| z.generation.id == id && z.warm.is_some());
                if warm && self.current.is_some() {
                    self.switch();
                }
            }
            Event::Failed { id, error } => {
                if self.ready.is_some() && self.is_next(id) {
                    // The first zygote: the sandbox does not start, and says
                    // why once the zygote is reaped.
                    self.shared.kill_zygotes();
                    self.await_end(id);
                    if let Some(r) = self.ready.take() {
                        let _ = r.send(Err(error));
                    }
                    return ControlFlow::Break(());
                }
                // It exits; `Ended` follows.
                tracing::error!(generation = id, error = %error, "sandbox zygote failed");
            }
            Event::Worn => {}
            Event::Ended { id } => return self.ended(id),
        }
        ControlFlow::Continue(())
    }

    fn is_next(&self, id: u64) -> bool {
        self.next.as_ref().is_some_and(|z| z.generation.id == id)
    }

    fn ended(&mut self, id: u64) -> ControlFlow<()> {
        let shutdown = self.shared.shutdown.load(Ordering::SeqCst);
        if self.current.as_ref().is_some_and(|z| z.generation.id == id) {
            self.current = None;
            let mut current = self.shared.current.write().expect("current lock");
            if current.as_ref().is_some_and(|g| g.id == id) {
                *current = None;
            }
            drop(current);
            if !shutdown {
                tracing::error!(generation = id, "sandbox zygote exited; restarting");
                // A successor that warmed serves now: its stock wait and its
                // `Stocked` switch only ever hand over from a current one.
                self.switch();
                if self.current.is_none() {
                    self.hold_off();
                }
            }
        } else if self.is_next(id) {
            self.next = None;
            if let Some(r) = self.ready.take() {
                let _ = r.send(Err(SandboxError::ZygoteGone));
                return ControlFlow::Break(());
            }
            if !shutdown {
                tracing::error!(
                    generation = id,
                    "a new sandbox zygote exited before it served; the current one serves on"
                );
                self.hold_off();
            }
        } else {
            tracing::debug!(generation = id, "retired sandbox zygote exited");
        }
        ControlFlow::Continue(())
    }

    /// Waits a while for zygote `id` to be reaped (other events are moot:
    /// the sandbox is not starting).
    fn await_end(&self, id: u64) {
        let deadline = Instant::now() + REAP_WAIT;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.events.recv_timeout(left) {
                Ok(Event::Ended { id: ended }) if ended == id => return,
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }

    /// The warm `next` serves from now on: one swap, after which every new
    /// spare comes from it. The zygote it replaces is retired: its waiting
    /// spares are killed (the successor was stocked in their place), and it
    /// exits once the calls running in its children are done.
    fn switch(&mut self) {
        let Some(new) = self.next.take() else {
            return;
        };
        let Some((_, walls)) = &new.warm else {
            self.next = Some(new);
            return;
        };
        *self.shared.walls.write().expect("walls lock") = Some(walls.clone());
        *self.shared.current.write().expect("current lock") = Some(new.generation.clone());
        match self.current.take() {
            Some(old) => {
                // After the swap, so that no replacement is asked of it
                // and lost.
                old.generation.retire();
                let age = old
                    .warm
                    .as_ref()
                    .map_or(Duration::ZERO, |(at, _)| at.elapsed());
                tracing::info!(
                    generation = new.generation.id,
                    retired = old.generation.id,
                    calls = old.generation.calls(),
                    age_s = age.as_secs(),
                    "sandbox zygote recycled"
                );
            }
            None => {
                for _ in 0..self.stock() {
                    self.shared.request_spawn(true);
                }
                if let Some(r) = self.ready.take() {
                    let _ = r.send(Ok(()));
                }
            }
        }
        self.current = Some(new);
    }
}

#[cfg(test)]
mod tests;
