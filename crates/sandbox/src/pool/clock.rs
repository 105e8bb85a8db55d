//! Whether calls come back to back, which decides how a used child is
//! replaced.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A call that starts within this of the previous call's end is back to
/// back: its replacement spare skips the warm-up run. Measured on 2 cores,
/// `print(1)` back to back over HTTP: 2.7–3.3 ms with warm spares, 2.0–2.5
/// ms with lean ones; a lean spare costs a lone call ~0.45 ms, so calls
/// further apart keep warm spares.
pub(super) const BACK_TO_BACK: Duration = Duration::from_millis(5);

/// Calls running now, and when the last one ended.
#[derive(Default)]
pub(super) struct CallClock(Mutex<State>);

#[derive(Default)]
struct State {
    running: usize,
    last_end: Option<Instant>,
}

impl CallClock {
    /// Marks a call's start until the guard drops (a cancelled call too).
    /// `back_to_back` is true when it came within [`BACK_TO_BACK`] of the
    /// previous call's end, or while another call runs.
    pub fn call_started(&self) -> CallGuard<'_> {
        let mut c = self.0.lock().expect("calls lock");
        let back_to_back = c.running > 0 || c.last_end.is_some_and(|t| t.elapsed() < BACK_TO_BACK);
        c.running += 1;
        CallGuard {
            clock: self,
            back_to_back,
        }
    }
}

pub(super) struct CallGuard<'a> {
    clock: &'a CallClock,
    pub back_to_back: bool,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        let mut c = self.clock.0.lock().expect("calls lock");
        c.running -= 1;
        c.last_end = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_back_to_back_while_another_runs_or_just_after() {
        let clock = CallClock::default();
        let first = clock.call_started();
        assert!(!first.back_to_back, "the first call follows nothing");
        assert!(
            clock.call_started().back_to_back,
            "another call was running"
        );
        drop(first);
        assert!(
            clock.call_started().back_to_back,
            "the last call just ended"
        );
        std::thread::sleep(BACK_TO_BACK * 3);
        assert!(!clock.call_started().back_to_back);
    }
}
