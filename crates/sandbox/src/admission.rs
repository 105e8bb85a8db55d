//! Admission to the sandbox, fair between callers: at most `max` scripts
//! run at once, and one caller at most `per_caller` of them, so that the
//! other `max - per_caller` places stay open to everyone else. A caller's
//! burst then waits in its own queue, not in front of other callers' calls.
//! Both queues are first come, first served (tokio's semaphores).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The caller of a call no runtime identified: they share one share.
pub const ANONYMOUS: &str = "anonymous";

pub struct Admission {
    all: Arc<Semaphore>,
    per_caller: usize,
    callers: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// A place in the sandbox; dropping it frees the place.
pub struct Place<'a> {
    admission: &'a Admission,
    caller: String,
    // Dropped before the cleanup in `drop` looks at the caller's semaphore.
    permits: Option<(OwnedSemaphorePermit, OwnedSemaphorePermit)>,
}

impl Admission {
    /// `max` places in all, `per_caller` for one caller (both at least 1;
    /// `per_caller` at most `max`).
    pub fn new(max: usize, per_caller: usize) -> Self {
        let max = max.max(1);
        Self {
            all: Arc::new(Semaphore::new(max)),
            per_caller: per_caller.clamp(1, max),
            callers: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for a place for `caller`. None once the sandbox is closed.
    pub async fn enter(&self, caller: &str) -> Option<Place<'_>> {
        let own = {
            let mut callers = self.callers.lock().expect("callers lock");
            callers
                .entry(caller.to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_caller)))
                .clone()
        };
        // The caller's own queue first: a caller at its share waits there,
        // leaving the shared places to the others.
        let mine = own.acquire_owned().await.ok()?;
        let shared = self.all.clone().acquire_owned().await.ok()?;
        Some(Place {
            admission: self,
            caller: caller.to_owned(),
            permits: Some((mine, shared)),
        })
    }

    /// Callers with a place or waiting for one.
    #[cfg(test)]
    fn callers(&self) -> usize {
        self.callers.lock().expect("callers lock").len()
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.permits = None;
        // Forget a caller nobody uses any more, so the map stays small.
        let mut callers = self.admission.callers.lock().expect("callers lock");
        if let Some(own) = callers.get(&self.caller)
            && Arc::strong_count(own) == 1
            && own.available_permits() == self.admission.per_caller
        {
            callers.remove(&self.caller);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn one_callers_burst_leaves_places_for_the_others() {
        let a = Admission::new(4, 3);
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(a.enter("burst").await.unwrap());
        }
        // The burst's fourth call waits for its own share...
        let fourth = tokio::time::timeout(Duration::from_millis(50), a.enter("burst")).await;
        assert!(fourth.is_err(), "a caller got more than its share");
        // ...while another caller gets in at once.
        let other = tokio::time::timeout(Duration::from_millis(50), a.enter("other")).await;
        assert!(other.is_ok(), "another caller was kept waiting");
        drop(other);
        drop(held);
        assert_eq!(a.callers(), 0, "idle callers are forgotten");
    }

    #[tokio::test]
    async fn the_total_is_bounded_and_places_come_back() {
        let a = Admission::new(2, 2);
        let p1 = a.enter("x").await.unwrap();
        let p2 = a.enter("y").await.unwrap();
        let third = tokio::time::timeout(Duration::from_millis(50), a.enter("z")).await;
        assert!(third.is_err(), "more than max places");
        drop(p1);
        let third = tokio::time::timeout(Duration::from_millis(50), a.enter("z")).await;
        assert!(third.is_ok(), "a freed place was not handed on");
        drop(p2);
    }

    #[tokio::test]
    async fn a_cancelled_wait_gives_nothing_away() {
        let a = Admission::new(1, 1);
        let p = a.enter("x").await.unwrap();
        let waiting = tokio::time::timeout(Duration::from_millis(20), a.enter("y")).await;
        assert!(waiting.is_err());
        drop(p);
        let again = tokio::time::timeout(Duration::from_millis(50), a.enter("y")).await;
        assert!(again.is_ok(), "the cancelled wait kept the place");
    }
}
