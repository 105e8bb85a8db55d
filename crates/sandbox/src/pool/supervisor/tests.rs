//! The supervisor's decisions, without threads or zygote processes.

use super::*;

/// A supervisor with no thread, no zygote process and no relay: its
/// zygotes are generations whose control socket is /dev/null.
fn supervisor() -> Supervisor {
    let (spares, _) = mpsc::channel(4);
    let (events_tx, events) = std::sync::mpsc::channel();
    Supervisor {
        cfg: SandboxConfig {
            exe: "/nonexistent".into(),
            zygote: crate::ZygoteConfig {
                allowed: vec![],
                memory_mb: 64,
                require_seccomp: false,
                files_cap: 0,
                state_cap: 0,
                frozen_between_calls: false,
            },
            spare_children: 1,
            max_concurrency: 1,
            max_per_caller: 1,
            recycle: super::super::Recycle::NEVER,
        },
        shared: Arc::new(Shared::new()),
        spares,
        events_tx,
        events,
        ready: None,
        current: None,
        next: None,
        ids: 0,
        backoff: FIRST_BACKOFF,
        hold_until: Instant::now(),
    }
}

fn zygote(id: u64, warm: bool) -> Zygote {
    let null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .expect("/dev/null");
    Zygote {
        generation: Arc::new(Generation::new(id, 0, null.into(), 0, Box::new(|| {}))),
        started: Instant::now(),
        warm: warm.then(|| (Instant::now(), crate::control::tests::walls())),
    }
}

/// The serving zygote dies while its warm successor is being stocked:
/// the successor serves at once (it waited for a `Stocked` that only
/// hands over from a serving zygote, and calls found none for good).
#[test]
fn a_warm_successor_serves_when_the_current_zygote_dies() {
    let mut s = supervisor();
    s.current = Some(zygote(1, true));
    s.next = Some(zygote(2, true));
    assert!(s.ended(1).is_continue());
    assert_eq!(s.current.as_ref().map(|z| z.generation.id), Some(2));
    assert!(s.next.is_none());
    let serving = s.shared.current.read().expect("current lock");
    assert_eq!(serving.as_ref().map(|g| g.id), Some(2));
    drop(serving);
    assert!(!s.wants_zygote());

    // A successor still warming takes over when it is ready; until then
    // none serves, and none more is started while it warms.
    let mut s = supervisor();
    s.current = Some(zygote(1, true));
    s.next = Some(zygote(2, false));
    assert!(s.ended(1).is_continue());
    assert!(s.current.is_none());
    assert_eq!(s.next.as_ref().map(|z| z.generation.id), Some(2));
    assert!(!s.wants_zygote());
}

#[test]
fn an_ended_hold_leaves_the_tick_alone() {
    let now = Instant::now();
    let ms = Duration::from_millis;
    // No hold to come, no successor: the tick.
    assert_eq!(next_wait(now, now, None), TICK);
    assert_eq!(next_wait(now, now - ms(500), None), TICK);
    // A hold to come, a stock wait to come: the nearer.
    assert_eq!(next_wait(now, now + ms(200), None), ms(200));
    assert_eq!(next_wait(now, now + ms(200), Some(now + ms(50))), ms(50));
    assert_eq!(next_wait(now, now + ms(5_000), None), TICK);
    // A stock wait that is over: look again soon.
    assert_eq!(next_wait(now, now, Some(now - ms(1))), ms(1));
}
