//! Fairness between callers: one caller's burst of runaway scripts does not
//! make another caller wait. The caller is who the runtime says it is (here
//! the JWT `sub` of an API Gateway event, through the same `Function` the
//! Lambda binaries run, with the real sandbox behind it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_e2e::lambda_events::{fixture, http_parts, invoke, python_function};
use toolgate_e2e::timing::{machine_lock, poll_until};
use toolgate_e2e::{busy_processes, descendants_of};
use toolgate_lambda::Function;

/// Four places, a 4 s timeout, and `per_caller` places for one caller.
fn function(per_caller: usize) -> Function {
    let env = move |key: &str| match key {
        "TOOLGATE_PYTHON_TIMEOUT" => Some("4".to_owned()),
        "TOOLGATE_PYTHON_MAX_CONCURRENCY" => Some("4".to_owned()),
        "TOOLGATE_PYTHON_MAX_PER_CALLER" => Some(per_caller.to_string()),
        _ => None,
    };
    python_function(&env)
}

/// An API Gateway call of python.execute by the JWT subject `sub`.
fn call(sub: &str, code: &str) -> Value {
    let mut event = fixture("apigw_v2_call.json");
    event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(sub);
    event["body"] = json!(json!({ "code": code }).to_string());
    event
}

/// How another caller's `print(1)` fared while "burst" ran six runaway
/// scripts at once, in 4 s places (a local task set: the handler's future
/// holds a body that is not `Sync`; the sandbox runs the scripts in
/// processes).
struct Wait {
    /// Seconds from its call to its answer.
    waited: f64,
    /// Whether it was answered before any runaway was stopped: it did not
    /// wait for a place to come back.
    before_any_stop: bool,
}

async fn others_wait(f: Arc<Function>, places: usize) -> Wait {
    tokio::task::LocalSet::new()
        .run_until(others_wait_local(f, places))
        .await
}

/// Waits until `places` sandbox processes (this binary's descendants: the
/// zygote's children) run scripts: the same ones burn CPU in two windows
/// in a row, which a spare warming up for a few milliseconds does not.
async fn burst_holds(places: usize) {
    let held = move || {
        let pids = descendants_of(std::process::id());
        let first = busy_processes(&pids, Duration::from_millis(100));
        let second = busy_processes(&first, Duration::from_millis(100));
        (first.len() >= places && second.len() >= places).then_some(())
    };
    tokio::task::spawn_blocking(move || {
        poll_until(
            Duration::from_secs(10),
            "the burst holding its places",
            held,
        )
    })
    .await
    .expect("the poll's thread");
}

async fn others_wait_local(f: Arc<Function>, places: usize) -> Wait {
    let burst: Vec<_> = (0..6)
        .map(|_| {
            let f = f.clone();
            tokio::task::spawn_local(async move {
                let resp = invoke(&f, call("burst", "while True:\n    pass")).await;
                (Instant::now(), resp)
            })
        })
        .collect();
    burst_holds(places).await;
    let started = Instant::now();
    let resp = invoke(&f, call("other", "print(1)"))
        .await
        .expect("answered");
    let answered = Instant::now();
    let (status, _, body) = http_parts(&resp);
    assert_eq!((status, &body["stdout"]), (200, &json!("1\n")), "{body}");
    let mut first_stop = None::<Instant>;
    for b in burst {
        let (stopped, resp) = b.await.unwrap();
        let (status, _, body) = http_parts(&resp.expect("answered"));
        assert_eq!((status, &body["timed_out"]), (200, &json!(true)), "{body}");
        first_stop = Some(first_stop.map_or(stopped, |f| f.min(stopped)));
    }
    Wait {
        waited: (answered - started).as_secs_f64(),
        before_any_stop: first_stop.is_some_and(|f| answered < f),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_callers_burst_does_not_hold_up_another_caller() {
    let _machine = machine_lock();
    // With a share of 3 of the 4 places, the other caller gets the fourth
    // at once: answered before any runaway is stopped.
    let w = others_wait(Arc::new(function(3)), 3).await;
    assert!(
        w.before_any_stop && w.waited < 2.5,
        "another caller waited {:.2}s behind a burst",
        w.waited
    );
    // The control: a share of all 4 places lets the burst fill the sandbox,
    // and the other caller waits until a runaway is stopped at its 4 s
    // timeout. This is what the test would see if fairness broke.
    let w = others_wait(Arc::new(function(4)), 4).await;
    assert!(
        !w.before_any_stop,
        "without a share the other caller was answered while the burst held every place ({:.2}s)",
        w.waited
    );
}
