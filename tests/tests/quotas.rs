//! Bounds on what one caller, or everyone, may hold at once
//! (`quota_exceeded`, 429): calls held at the sandbox, clarifications
//! waiting for a person, and `/mcp` arguments held to each tool's own body
//! limit. Session quotas: tests/sessions.rs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_e2e::{Response, Server, temp_file};

const ALICE: &str = "alice-quota-token-00001";
const BOB: &str = "bob-quota-token-0000002";

fn post(s: &Server, path: &str, token: Option<&str>, body: &Value) -> Response {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    s.request("POST", path, &headers, body.to_string().as_bytes())
}

fn code_of(r: &Response) -> String {
    r.json()["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn calls_held_at_the_sandbox_are_bounded_per_caller() {
    let _m = toolgate_e2e::timing::machine_lock();
    let s = Arc::new(Server::start(&[
        ("TOOLGATE_PYTHON_MAX_QUEUED_MB", "24"),
        ("TOOLGATE_PYTHON_MAX_CONCURRENCY", "1"),
        ("TOOLGATE_PYTHON_TIMEOUT", "6"),
    ]));
    // One spinner holds the one place for 6 s.
    let spinner = {
        let s = s.clone();
        std::thread::spawn(move || s.exec("while True: pass"))
    };
    std::thread::sleep(Duration::from_millis(500));
    // Four calls of 9 MiB each: a caller's share is half of 24 MiB, or one
    // call's worth (1 MiB of code, 10 MiB of files, 4 MiB of state) if
    // more: one of them waits, the others are refused at once.
    let started = Instant::now();
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || {
                let r = s.post_json(
                    "/tools/python.execute",
                    &json!({"code": "print(len(open('big').read()))", "files": {"big": "x".repeat(9 << 20)}}),
                );
                (r.status, code_of(&r), r.json(), started.elapsed())
            })
        })
        .collect();
    let answers: Vec<_> = calls.into_iter().map(|t| t.join().unwrap()).collect();
    let refused: Vec<_> = answers.iter().filter(|a| a.0 == 429).collect();
    assert!(refused.len() >= 2, "{answers:?}");
    for (_, code, body, took) in &refused {
        assert_eq!(code, "quota_exceeded", "{body}");
        let msg = body["error"]["message"].as_str().unwrap();
        assert!(msg.contains("TOOLGATE_PYTHON_MAX_QUEUED_MB"), "{msg}");
        assert!(
            *took < Duration::from_secs(4),
            "refused only after {took:?}"
        );
    }
    let ran: Vec<_> = answers.iter().filter(|a| a.0 == 200).collect();
    assert!(!ran.is_empty(), "{answers:?}");
    assert_eq!(ran[0].2["stdout"], format!("{}\n", 9 << 20));
    assert_eq!(spinner.join().unwrap()["timed_out"], true);
}

#[test]
fn clarifications_waiting_are_bounded_per_caller_and_in_all() {
    let cfg = temp_file(
        "toolgate-quotas",
        &format!(
            "[[server.tokens]]\nname = \"alice\"\ntoken = \"{ALICE}\"\n\
             [[server.tokens]]\nname = \"bob\"\ntoken = \"{BOB}\"\n"
        ),
    );
    let s = Server::start_with_args(
        &[
            ("TOOLGATE_CLARIFY_MAX_PENDING_PER_CALLER", "2"),
            ("TOOLGATE_CLARIFY_MAX_PENDING", "3"),
        ],
        &["--config", cfg.0.to_str().unwrap()],
    );
    let ask = |token: &str| {
        post(
            &s,
            "/tools/clarify",
            Some(token),
            &json!({"question": "Which region?"}),
        )
    };
    let first = ask(ALICE);
    assert_eq!(
        first.status,
        200,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    assert_eq!(ask(ALICE).status, 200);
    let third = ask(ALICE);
    assert_eq!(
        (third.status, code_of(&third).as_str()),
        (429, "quota_exceeded")
    );
    let msg = third.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        msg.contains("This caller has 2 clarifications waiting")
            && msg.contains("TOOLGATE_CLARIFY_MAX_PENDING_PER_CALLER"),
        "{msg}"
    );
    // Bob has his own share, within the total.
    assert_eq!(ask(BOB).status, 200);
    let fourth = ask(BOB);
    assert_eq!(
        (fourth.status, code_of(&fourth).as_str()),
        (429, "quota_exceeded")
    );
    let msg = fourth.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(msg.contains("(TOOLGATE_CLARIFY_MAX_PENDING)"), "{msg}");
    // One answered or cancelled makes room again.
    let id = first.json()["id"].as_str().unwrap().to_owned();
    let cancel = post(
        &s,
        &format!("/clarifications/{id}/cancel"),
        Some(ALICE),
        &json!({}),
    );
    assert_eq!(
        cancel.status,
        200,
        "{}",
        String::from_utf8_lossy(&cancel.body)
    );
    assert_eq!(ask(ALICE).status, 200);
}

#[test]
fn mcp_holds_each_tool_to_its_own_body_limit() {
    let s = Server::start(&[("TOOLGATE_PYTHON_MAX_FILES_MB", "1")]);
    // clarify takes 1 MiB; /mcp reads up to python.execute's ~3 MiB.
    let args = json!({"question": "q", "pad": "x".repeat(2 << 20)});
    let http = s.post_json("/tools/clarify", &args);
    assert_eq!((http.status, code_of(&http).as_str()), (413, "too_large"));
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "clarify", "arguments": args},
    });
    let r = s.request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("\"too_large\""), "{text}");
    // python.execute still takes what its own limit allows over /mcp.
    let ok = json!({
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "python.execute", "arguments": {"code": "print(len(open('f').read()))", "files": {"f": "y".repeat(900 << 10)}}},
    });
    let r = s.request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        ok.to_string().as_bytes(),
    );
    let v = r.json();
    assert_eq!(
        v["result"]["structuredContent"]["stdout"],
        format!("{}\n", 900 << 10),
        "{v}"
    );
}

/// The Worker counts waiting questions on D1 with the SQL the SQLite store
/// runs (`clarify::store::sql::COUNT_PENDING`): past the caller's bound,
/// `quota_exceeded`; a cancelled question makes room again. (DynamoDB:
/// tests/quotas_dynamo.rs.)
#[test]
fn clarifications_waiting_are_bounded_on_the_worker() {
    use toolgate_e2e::wrangler::{Role, Wrangler};
    const TOKEN: &str = "w0rker-quota-t0ken-0f-a-caller";
    let _m = toolgate_e2e::timing::machine_share();
    let dir = std::env::temp_dir().join(format!("toolgate-quotas-worker-{}", std::process::id()));
    let (registry, state) = (dir.join("registry"), dir.join("state"));
    let _sandbox = Wrangler::start(Role::Sandbox, &[], &registry, &state);
    // The default bound (20 per caller): the Worker does not read the
    // setting yet (functions/worker/src/lib.rs builds `Clarify` without it).
    let worker = Wrangler::start(
        Role::Dispatcher,
        &[("TOOLGATE_TOKEN", TOKEN)],
        &registry,
        &state,
    );
    let post = |path: &str, body: &Value| {
        let auth = format!("Bearer {TOKEN}");
        toolgate_e2e::raw_request(
            &worker.addr,
            "POST",
            path,
            &[
                ("Content-Type", "application/json"),
                ("Authorization", &auth),
            ],
            body.to_string().as_bytes(),
        )
    };
    let ask = || post("/tools/clarify", &json!({"question": "Which region?"}));
    let first = ask();
    assert_eq!(
        first.status,
        200,
        "{}\n{}",
        String::from_utf8_lossy(&first.body),
        worker.logs()
    );
    for _ in 1..toolgate_shared::clarify::DEFAULT_MAX_PENDING_PER_CALLER {
        assert_eq!(ask().status, 200);
    }
    let over = ask();
    assert_eq!(
        (over.status, code_of(&over).as_str()),
        (429, "quota_exceeded"),
        "{}",
        String::from_utf8_lossy(&over.body)
    );
    let msg = over.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        msg.contains("This caller has 20 clarifications waiting"),
        "{msg}"
    );
    let id = first.json()["id"].as_str().unwrap().to_owned();
    let cancel = post(&format!("/clarifications/{id}/cancel"), &json!({}));
    assert_eq!(
        cancel.status,
        200,
        "{}",
        String::from_utf8_lossy(&cancel.body)
    );
    assert_eq!(ask().status, 200);
    drop(worker);
    let _ = std::fs::remove_dir_all(&dir);
}
