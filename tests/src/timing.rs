//! Time in tests: bounds derived from the configured timeout with a stated
//! margin, polling for a condition instead of sleeping, and one lock for the
//! tests that load the machine (CI has 2 cores, and cargo runs a binary's
//! tests in parallel).

use std::sync::{Mutex, MutexGuard};
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

static MACHINE: Mutex<()> = Mutex::new(());

/// Held by the tests of one binary that load the CPU (runaway scripts,
/// concurrency, exhaustion), so that none of them measures another's load.
/// A panic in one does not poison the others.
pub fn machine_lock() -> MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(|p| p.into_inner())
}
