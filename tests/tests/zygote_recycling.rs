//! Zygotes are replaced after `TOOLGATE_PYTHON_ZYGOTE_MAX_CALLS` calls or
//! `TOOLGATE_PYTHON_ZYGOTE_MAX_AGE_SECS` seconds: the string-hash key and
//! the warm objects' addresses, which every child of one zygote shares,
//! change; no call fails or waits for it; a call running across the switch
//! completes in its old zygote's child; and the old zygote and its children
//! are gone afterwards (docs/sandbox.md#recycling).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::timing::{machine_lock, machine_share, poll, poll_until};
use toolgate_e2e::{IDLE_PROCESSES, Server, children_of, descendants_of, proc_state};

/// What every child of one zygote shares: the string-hash key (as
/// `hash()` of a string shows it) and the addresses of warm objects (a
/// builtin, a module's function). Objects a script makes land elsewhere in
/// every call (`vary_heap`), so `id(object())` says nothing here.
const PROBE: &str = "import json\nresult = [hash('toolgate'), id(len), id(json.dumps)]";

fn probe(s: &Server) -> Value {
    let out = s.exec(PROBE);
    assert_eq!(out["exit_code"], 0, "{out}");
    out["result"].clone()
}

/// The server's zygotes (its children), live ones only.
fn zygotes(s: &Server) -> Vec<u32> {
    children_of(s.pid())
        .into_iter()
        .filter(|p| proc_state(*p).is_some_and(|(st, _)| st != 'Z'))
        .collect()
}

/// Waits until one zygote and its spares remain, and nothing of `gone`.
fn settled(s: &Server, gone: &[u32]) {
    let why = poll(Duration::from_secs(20), || {
        let procs = descendants_of(s.pid());
        let left: Vec<_> = gone
            .iter()
            .filter(|p| proc_state(**p).is_some_and(|(st, _)| st != 'Z'))
            .collect();
        (procs.len() == IDLE_PROCESSES && zygotes(s).len() == 1 && left.is_empty()).then_some(())
    });
    assert!(
        why.is_some(),
        "left behind: sandbox processes {:?} (zygotes {:?}); retired zygotes alive: {:?}\n{}",
        descendants_of(s.pid()),
        zygotes(s),
        gone.iter()
            .filter(|p| proc_state(**p).is_some_and(|(st, _)| st != 'Z'))
            .collect::<Vec<_>>(),
        s.logs()
    );
}

/// A child that was handed a call: only those get a CPU cap (the default
/// timeout, 20 s, + 1); spares wait under a 1,201 s ceiling.
fn has_a_call(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/limits")).is_ok_and(|l| {
        l.lines()
            .find(|l| l.starts_with("Max cpu time"))
            .and_then(|l| l.split_whitespace().nth(3))
            == Some("21")
    })
}

fn recycled_lines(s: &Server) -> Vec<Value> {
    s.json_logs()
        .into_iter()
        .filter(|v| v["message"] == "sandbox zygote recycled")
        .collect()
}

#[test]
fn the_hash_key_and_warm_addresses_change_after_n_calls() {
    let _machine = machine_share();
    let s = Server::start(&[
        ("TOOLGATE_PYTHON_ZYGOTE_MAX_CALLS", "5"),
        ("TOOLGATE_PYTHON_ZYGOTE_MAX_AGE_SECS", "0"),
    ]);
    let first_zygote = zygotes(&s);
    assert_eq!(first_zygote.len(), 1, "{first_zygote:?}");
    let first: Vec<Value> = (0..5).map(|_| probe(&s)).collect();
    assert!(
        first.iter().all(|k| *k == first[0]),
        "one zygote, one key and one image: {first:?}"
    );
    // The fifth call starts a successor; it serves once it is warm.
    let later = poll(Duration::from_secs(20), || {
        let k = probe(&s);
        (k != first[0]).then_some(k)
    });
    let Some(later) = later else {
        panic!(
            "the key never changed: no recycling ({:?})\n{}",
            first[0],
            s.logs()
        );
    };
    for (i, what) in ["the string-hash key", "id(len)", "id(json.dumps)"]
        .iter()
        .enumerate()
    {
        assert_ne!(later[i], first[0][i], "{what} is the first zygote's");
    }
    let line = &recycled_lines(&s)[0];
    assert!(line["calls"].as_u64().unwrap() >= 5, "{line}");
    settled(&s, &first_zygote);

    // No call fails across recycles: 4 callers at once until two more
    // recycles have happened. (A loaded machine warms the successor more
    // slowly, at nice 10, and the old zygote serves on until it is warm.)
    let s = Arc::new(s);
    let before = recycled_lines(&s).len();
    let stop = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = (0..4)
        .map(|c| {
            let (s, stop) = (s.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut keys = Vec::new();
                for i in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let out = s.exec(&format!("{PROBE}\nresult.append({c} * 1000 + {i})"));
                    assert_eq!(out["exit_code"], 0, "caller {c}, call {i}: {out}");
                    assert_eq!(out["stderr"], "", "caller {c}, call {i}: {out}");
                    let r = out["result"].as_array().unwrap().clone();
                    assert_eq!(r[3], json!(c * 1000 + i));
                    keys.push(r[0].to_string());
                }
                keys
            })
        })
        .collect();
    let recycled = poll(Duration::from_secs(30), || {
        (recycled_lines(&s).len() >= before + 2).then_some(())
    });
    stop.store(true, Ordering::SeqCst);
    let keys: HashSet<String> = callers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert!(recycled.is_some(), "no two recycles in 30 s\n{}", s.logs());
    assert!(keys.len() >= 2, "keys seen: {keys:?}");
    settled(&s, &first_zygote);
}

#[test]
fn a_call_running_across_a_switch_completes_in_its_old_zygote() {
    let _machine = machine_lock();
    let s = Arc::new(Server::start(&[
        ("TOOLGATE_PYTHON_ZYGOTE_MAX_CALLS", "3"),
        ("TOOLGATE_PYTHON_ZYGOTE_MAX_AGE_SECS", "0"),
    ]));
    let old = zygotes(&s);
    assert_eq!(old.len(), 1, "{old:?}");
    let key = probe(&s);
    // Call 2: it sleeps, in a child of the first zygote, while call 3 makes
    // the zygote due and the successor takes over.
    let running = {
        let s = s.clone();
        std::thread::spawn(move || {
            s.exec(&format!(
                "import time\ntime.sleep(8)\n{PROBE}\nresult.append('done')"
            ))
        })
    };
    poll_until(Duration::from_secs(5), "the sleeping call started", || {
        children_of(old[0])
            .into_iter()
            .any(has_a_call)
            .then_some(())
    });
    let switched = poll(Duration::from_secs(6), || {
        let k = probe(&s);
        (k != key).then_some(k)
    });
    assert!(
        !running.is_finished(),
        "the sleeping call ended before the switch: the test proves nothing"
    );
    assert!(switched.is_some(), "no switch within 6 s\n{}", s.logs());
    // The old zygote waits for its running child: killing it would kill
    // the call (PDEATHSIG).
    assert!(
        proc_state(old[0]).is_some_and(|(st, _)| st != 'Z'),
        "the old zygote went while its call ran"
    );
    let out = running.join().unwrap();
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(out["stderr"], "", "{out}");
    let r = out["result"].as_array().unwrap();
    assert_eq!(r[3], "done", "{out}");
    assert_eq!(r[0], key[0], "the call ran in the first zygote's child");
    settled(&s, &old);
}

#[test]
fn zygotes_are_recycled_by_age_once_they_served_a_call() {
    let _machine = machine_share();
    let s = Server::start(&[
        ("TOOLGATE_PYTHON_ZYGOTE_MAX_CALLS", "0"),
        ("TOOLGATE_PYTHON_ZYGOTE_MAX_AGE_SECS", "1"),
    ]);
    let first = zygotes(&s);
    assert_eq!(first.len(), 1, "{first:?}");
    // Idle, it does not age: no script has seen its key.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(zygotes(&s), first, "an idle zygote was replaced");
    let key = probe(&s);
    let later = poll(Duration::from_secs(20), || {
        std::thread::sleep(Duration::from_millis(200));
        let k = probe(&s);
        (k != key).then_some(k)
    });
    assert!(later.is_some(), "the key never changed\n{}", s.logs());
    let line = &recycled_lines(&s)[0];
    assert!(line["age_s"].as_u64().unwrap() >= 1, "{line}");
    settled(&s, &first);
}

#[test]
fn a_retired_zygote_goes_when_no_call_follows() {
    let _machine = machine_share();
    let s = Server::start(&[
        ("TOOLGATE_PYTHON_ZYGOTE_MAX_CALLS", "3"),
        ("TOOLGATE_PYTHON_ZYGOTE_MAX_AGE_SECS", "0"),
    ]);
    let first = zygotes(&s);
    let key = probe(&s);
    probe(&s);
    probe(&s);
    // The third call made it due; no call follows, so nothing takes the
    // spares waiting in its queue: the retirement kills them.
    poll_until(Duration::from_secs(20), "the switch logged", || {
        (!recycled_lines(&s).is_empty()).then_some(())
    });
    settled(&s, &first);
    assert_ne!(probe(&s), key);
}

/// Voluntary context switches of every thread of `pid` and its
/// descendants, by thread: each one a wake-up (a thread in a timed wait
/// that wakes to look counts one per look; preemptions are not counted).
fn wakeups(pid: u32) -> HashMap<String, u64> {
    std::iter::once(pid)
        .chain(descendants_of(pid))
        .flat_map(|p| {
            std::fs::read_dir(format!("/proc/{p}/task"))
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter_map(|task| {
            let status = std::fs::read_to_string(task.path().join("status")).ok()?;
            let n = status
                .lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))?
                .trim()
                .parse()
                .ok()?;
            Some((task.path().display().to_string(), n))
        })
        .collect()
}

/// An idle server sleeps: the supervisor looks at its zygote once a
/// second (`TICK`), and nothing else wakes without a reason. (A hold that
/// had ended once had the supervisor wake every millisecond for good: over
/// 2,000 wake-ups in these two seconds.)
#[test]
fn an_idle_server_sleeps_between_its_ticks() {
    let s = Server::start(&[]);
    assert_eq!(probe(&s).as_array().map(Vec::len), Some(3));
    settled(&s, &[]);
    // The used child's replacement finishes its warm-up first.
    std::thread::sleep(Duration::from_millis(500));
    let before = wakeups(s.pid());
    std::thread::sleep(Duration::from_secs(2));
    let woke: u64 = wakeups(s.pid())
        .into_iter()
        .map(|(task, n)| n.saturating_sub(before.get(&task).copied().unwrap_or(0)))
        .sum();
    assert!(
        woke <= 40,
        "the idle server's threads woke {woke} times in 2 s"
    );
}
