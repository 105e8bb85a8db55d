//! Fairness between callers: one caller's burst of runaway scripts does not
//! make another caller wait. The caller is who the runtime says it is (here
//! the JWT `sub` of an API Gateway event, through the same `Function` the
//! Lambda binaries run, with the real sandbox behind it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_e2e::lambda_events::{fixture, http_parts, invoke, python_function};
use toolgate_e2e::timing::machine_lock;
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

/// Seconds another caller's `print(1)` takes while "burst" runs six
/// runaway scripts at once. (A local task set: the handler's future holds a
/// body that is not `Sync`; the sandbox runs the scripts in processes.)
async fn others_wait(f: Arc<Function>) -> f64 {
    tokio::task::LocalSet::new()
        .run_until(others_wait_local(f))
        .await
}

async fn others_wait_local(f: Arc<Function>) -> f64 {
    let burst: Vec<_> = (0..6)
        .map(|_| {
            let f = f.clone();
            tokio::task::spawn_local(async move {
                invoke(&f, call("burst", "while True:\n    pass")).await
            })
        })
        .collect();
    // Let the burst take its places.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let started = Instant::now();
    let resp = invoke(&f, call("other", "print(1)"))
        .await
        .expect("answered");
    let waited = started.elapsed().as_secs_f64();
    let (status, _, body) = http_parts(&resp);
    assert_eq!((status, &body["stdout"]), (200, &json!("1\n")), "{body}");
    for b in burst {
        let (status, _, body) = http_parts(&b.await.unwrap().expect("answered"));
        assert_eq!((status, &body["timed_out"]), (200, &json!(true)), "{body}");
    }
    waited
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_callers_burst_does_not_hold_up_another_caller() {
    let _machine = machine_lock();
    // With a share of 3 of the 4 places, the other caller gets the fourth.
    let waited = others_wait(Arc::new(function(3))).await;
    assert!(
        waited < 2.5,
        "another caller waited {waited:.2}s behind a burst"
    );
    // The control: a share of all 4 places lets the burst fill the sandbox,
    // and the other caller waits for a runaway's 4 s timeout. This is what
    // the test would see if fairness broke.
    let waited = others_wait(Arc::new(function(4))).await;
    assert!(
        waited >= 2.5,
        "without a share the other caller waited only {waited:.2}s"
    );
}
