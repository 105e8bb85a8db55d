//! Time in tests: bounds derived from the configured timeout with a stated
//! margin, polling for a condition instead of sleeping, and one lock for the
//! tests that time or load the machine (CI has 2 cores, cargo runs a
//! binary's tests in parallel, and scripts/test runs binaries side by side).

use std::fs::{File, OpenOptions};
use std::time::{Duration, Instant};

/// How much later than its deadline a stopped script may be answered on a
/// loaded 2-core machine: the in-VM stop, or SIGKILL 20 ms later
/// (`STOP_GRACE`), the reap, and the reply over HTTP. Unloaded this is under
/// 100 ms; the margin is fifteen times that, so a bound fails when the stop
/// is late by whole seconds (a missed kill), not because the machine is busy.
pub const LATE_MARGIN: Duration = Duration::from_millis(1500);

/// The latest a script with a `timeout_s` timeout may be answered.
pub fn stop_bound(timeout_s: u64) -> Duration {
    Duration::from_secs(timeout_s) + LATE_MARGIN
}

/// Calls `probe` every 20 ms until it returns `Some`, and returns that, or
/// `None` once `limit` has passed. The limit is a failure bound, not a wait:
/// a condition met sooner returns sooner.
pub fn poll<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// [`poll`], panicking with `what` if `limit` passes first.
pub fn poll_until<T>(limit: Duration, what: &str, probe: impl FnMut() -> Option<T>) -> T {
    poll(limit, probe).unwrap_or_else(|| panic!("{what}: not within {limit:?}"))
}

/// The machine's one lock, across test binaries as well as within one:
/// scripts/test runs the Worker's tests beside the native ones. An `flock`
/// on a file in the temp dir, so a test that dies (panic or kill) lets go
/// of it with its file descriptor.
pub struct MachineGuard {
    _file: std::rc::Rc<File>,
}

fn lock_file(name: &str) -> File {
    let path = std::env::temp_dir().join(name);
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

thread_local! {
    /// The lock this thread holds already, and whether as the share: a test
    /// holding it that calls a helper taking it again (Chromium takes the
    /// share) must not queue behind the turnstile, where a test waiting for
    /// the lock alone would wait for it in turn.
    static HELD: std::cell::RefCell<Option<(bool, std::rc::Weak<File>)>> =
        const { std::cell::RefCell::new(None) };
}

/// Takes the lock (shared or not) behind a turnstile: every taker passes
/// it one at a time, and a test waiting for the lock alone holds it, so
/// that a lane of tests taking the share one after another cannot keep the
/// lock from it forever (`flock` alone prefers no one). A thread that holds
/// it already keeps what it holds: the lock alone covers the share, and
/// asking for the lock alone while holding the share is a test's bug.
fn take(shared: bool) -> MachineGuard {
    let held = HELD.with_borrow(|h| {
        h.as_ref()
            .and_then(|(was_shared, f)| Some((*was_shared, f.upgrade()?)))
    });
    if let Some((was_shared, file)) = held {
        assert!(
            shared || !was_shared,
            "this thread holds the machine's share and asks for the lock alone: take the lock first"
        );
        return MachineGuard { _file: file };
    }
    let guard = take_anew(shared);
    HELD.with_borrow_mut(|h| *h = Some((shared, std::rc::Rc::downgrade(&guard._file))));
    guard
}

fn take_anew(shared: bool) -> MachineGuard {
    let turnstile = lock_file("toolgate-e2e-machine.turnstile");
    turnstile
        .lock()
        .expect("flock the machine lock's turnstile");
    let file = lock_file("toolgate-e2e-machine.lock");
    if shared {
        file.lock_shared().expect("flock the machine lock (shared)");
    } else {
        file.lock().expect("flock the machine lock");
    }
    drop(turnstile);
    MachineGuard {
        _file: std::rc::Rc::new(file),
    }
}

/// Held alone by a test whose bounds are times that the CPU decides
/// (runaway scripts stopped, calls beside a burst) or that loads every core
/// on purpose, so that none of them measures another test's load.
pub fn machine_lock() -> MachineGuard {
    take(false)
}

/// Held, beside other holders of the share, by a test that keeps a core
/// busy for seconds (a corpus, the conformance cases) but bounds no time:
/// it may run beside its like, never beside a [`machine_lock`] holder.
pub fn machine_share() -> MachineGuard {
    take(true)
}
