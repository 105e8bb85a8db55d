//! The exhaustion suite on serve (payloads and checks in
//! `toolgate_e2e::exhaustion`, shared with the Worker): each payload ends
//! within the timeout plus `LATE_MARGIN`, with exit -1 or an error naming
//! the cause; the response stays bounded; the server stays healthy; no
//! process survives.

use std::time::{Duration, Instant};

use serde_json::json;
use toolgate_e2e::exhaustion::{PAYLOADS, TIMEOUT_S};
use toolgate_e2e::timing::{machine_lock, poll_until};
use toolgate_e2e::{IDLE_PROCESSES, Server, descendants_of};

#[test]
fn every_payload_ends_on_time_bounded_and_leaves_the_server_healthy() {
    let _machine = machine_lock();
    let s = Server::start(&[("TOOLGATE_PYTHON_TIMEOUT", &TIMEOUT_S.to_string())]);
    s.exec("print(1)");
    poll_until(Duration::from_secs(10), "the warm spares forked", || {
        (descendants_of(s.pid()).len() == IDLE_PROCESSES).then_some(())
    });
    let mut failures = Vec::new();
    for payload in PAYLOADS {
        let started = Instant::now();
        let r = s.post_json("/tools/python.execute", &json!({ "code": payload.code() }));
        failures.extend(payload.problems(&r, started.elapsed(), &[]));
        let next = s.exec("result = 6 * 7");
        if next["result"] != 42 {
            failures.push(format!("{}: the next call failed: {next}", payload.name));
        }
    }
    // Spares are replaced after each call; a process left behind keeps the
    // count above the idle one until the limit.
    poll_until(
        Duration::from_secs(10),
        "only the zygote and its spares left",
        || (descendants_of(s.pid()).len() == IDLE_PROCESSES).then_some(()),
    );
    assert_eq!(s.get("/healthz").status, 200);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
