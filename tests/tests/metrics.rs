//! `GET /metrics` on `toolgate serve`, read with Prometheus's reference
//! text parser (prometheus_client, tests/support/prom_parse.py): calls by
//! tool, transport and outcome with their durations, the sandbox's spares
//! and zygotes, and the questions waiting for a person; callers only.

use serde_json::{Value, json};
use toolgate_e2e::Server;
use toolgate_e2e::launch::Launch;
use toolgate_e2e::peer::tools_dir;

const TOKEN: &str = "metrics-caller-token-0123456789";

fn post(s: &Server, path: &str, body: &Value) -> u16 {
    s.post_json_as(path, TOKEN, body).status
}

/// The samples of `text`, as the reference parser reads them.
fn parsed(text: &str) -> Vec<Value> {
    let out = Launch::new(tools_dir().join("venv/bin/python"))
        .arg(toolgate_e2e::support("prom_parse.py"))
        .stdin(text.as_bytes())
        .output();
    assert!(
        out.status.success(),
        "the parser refused it: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn value(samples: &[Value], name: &str, labels: &Value) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s["name"] == name
                && labels
                    .as_object()
                    .unwrap()
                    .iter()
                    .all(|(k, v)| &s["labels"][k] == v)
        })
        .and_then(|s| s["value"].as_f64())
}

#[test]
fn metrics_count_calls_and_say_what_waits() {
    let s = Server::start_with_args(&[], &["--token", TOKEN]);
    assert_eq!(
        post(&s, "/tools/python.execute", &json!({"code": "result = 1"})),
        200
    );
    assert_eq!(
        post(&s, "/tools/python.execute", &json!({"code": "result = 2"})),
        200
    );
    assert_eq!(post(&s, "/tools/python.execute", &json!({"cod": "1"})), 400);
    assert_eq!(post(&s, "/tools/no.such.tool", &json!({})), 404);
    assert_eq!(
        post(&s, "/tools/clarify", &json!({"question": "Which region?"})),
        200
    );

    // Callers only.
    assert_eq!(s.get("/metrics").status, 401);
    let auth = format!("Bearer {TOKEN}");
    let r = s.request("GET", "/metrics", &[("Authorization", &auth)], b"");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = String::from_utf8(r.body.clone()).unwrap();
    let samples = parsed(&text);
    let calls = |tool: &str, outcome: &str| {
        value(
            &samples,
            "toolgate_calls_total",
            &json!({"tool": tool, "transport": "http", "outcome": outcome}),
        )
    };
    assert_eq!(calls("python.execute", "ok"), Some(2.0), "{text}");
    assert_eq!(
        calls("python.execute", "invalid_input"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(calls("(unknown)", "unknown_tool"), Some(1.0), "{text}");
    assert_eq!(calls("clarify", "ok"), Some(1.0), "{text}");
    assert!(
        !text.contains("no.such.tool"),
        "a caller's text is no label"
    );
    let count = value(
        &samples,
        "toolgate_call_duration_seconds_count",
        &json!({"tool": "python.execute", "transport": "http"}),
    );
    assert_eq!(count, Some(3.0), "{text}");
    let inf = value(
        &samples,
        "toolgate_call_duration_seconds_bucket",
        &json!({"tool": "python.execute", "transport": "http", "le": "+Inf"}),
    );
    assert_eq!(inf, Some(3.0), "{text}");
    assert_eq!(
        value(&samples, "toolgate_pending", &json!({"kind": "question"})),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&samples, "toolgate_pending", &json!({"kind": "approval"})),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        value(
            &samples,
            "toolgate_sandbox_zygotes_started_total",
            &json!({})
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        value(&samples, "toolgate_sandbox_spares", &json!({})).is_some(),
        "{text}"
    );
}

/// A used child's replacement skips the warm-up run where the host freezes
/// the process between calls (Lambda: its CPU would land on the next call),
/// and runs it for lone calls elsewhere. Lambda is recognised by its
/// runtime API's variable, set here on the local server (nothing listens at
/// it: serve never talks to it).
#[test]
fn a_frozen_hosts_replacements_skip_the_warm_up_run() {
    for (env, lean_wanted) in [
        (&[][..], false),
        (&[("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")][..], true),
    ] {
        let s = Server::start_with_args(env, &["--token", TOKEN]);
        for i in 0..3 {
            // Well apart: not back to back.
            std::thread::sleep(std::time::Duration::from_millis(100));
            let code = json!({ "code": format!("result = {i}") });
            assert_eq!(post(&s, "/tools/python.execute", &code), 200);
        }
        let auth = format!("Bearer {TOKEN}");
        // Replacements are asked for as each used child is ended, just
        // after its answer: poll, bounded.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let (lean, warm) = loop {
            let r = s.request("GET", "/metrics", &[("Authorization", &auth)], b"");
            let samples = parsed(&String::from_utf8(r.body.clone()).unwrap());
            let kind = |k: &str| {
                let labels = json!({ "kind": k });
                value(&samples, "toolgate_sandbox_replacements_total", &labels).unwrap()
            };
            let (lean, warm) = (kind("lean"), kind("warm"));
            if lean + warm >= 3.0 || std::time::Instant::now() > deadline {
                break (lean, warm);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let want = if lean_wanted { (3.0, 0.0) } else { (0.0, 3.0) };
        assert_eq!((lean, warm), want, "lean, warm replacements with {env:?}");
    }
}
