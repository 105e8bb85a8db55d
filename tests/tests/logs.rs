//! The default text log (`TOOLGATE_LOG` unset) against what callers send:
//! no value starts a line of its own (a forged `toolgate::audit` line),
//! reaches the operator's terminal (ESC, OSC, bidi), or writes megabytes,
//! whether Toolgate logs it or a library does (rmcp logs a JSON-RPC id
//! with `%`). ssh_run's command and intent: tests/ssh.rs.

use serde_json::{Value, json};
use toolgate_e2e::Server;

/// A newline, then what a real audit line starts with; a carriage return,
/// an OSC title sequence and a right-to-left override.
const FORGED: &str = "\nFORGED toolgate::audit: audit event=\"ssh_run\" outcome=\"ran\"\r\u{1b}]0;owned\u{7}\u{202e}";

/// The longest line the server may write for any of these calls.
const MAX_LINE: usize = 8 << 10;

fn text_server() -> Server {
    Server::start(&[("TOOLGATE_LOG", "text")])
}

fn mcp(s: &Server, body: &Value) -> u16 {
    s.request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        body.to_string().as_bytes(),
    )
    .status
}

/// Every line of the server's log is its own, short, and free of raw
/// terminal controls; `marker` (a call's own text) shows up escaped.
fn assert_clean(s: &Server, marker: &str) {
    toolgate_e2e::timing::poll(std::time::Duration::from_secs(5), || {
        s.logs().contains(marker).then_some(())
    });
    // The test reads the log line by line: let the rest of a (forged)
    // line arrive.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let logs = s.logs();
    assert!(logs.contains(marker), "the call was not logged:\n{logs}");
    for line in logs.lines() {
        assert!(
            !line.starts_with("FORGED"),
            "a caller's text started a line: {line}"
        );
        assert!(
            line.len() < MAX_LINE,
            "a {}-byte line: {}…",
            line.len(),
            &line[..200]
        );
        // ANSI colours (ESC [) are the formatter's own; a caller's ESC is
        // escaped, so no OSC (ESC ]) and no raw CR, BEL or U+202E.
        for bad in ["\u{1b}]", "\r", "\u{7}", "\u{202e}"] {
            assert!(!line.contains(bad), "{bad:?} reached the log: {line:?}");
        }
    }
}

#[test]
fn a_json_rpc_id_cannot_forge_a_line_or_flood_the_log() {
    let s = text_server();
    // rmcp logs a failed request's id at WARN with `%`: today raw.
    let body = json!({
        "jsonrpc": "2.0",
        "id": format!("id-1{FORGED}{}", "i".repeat(1 << 20)),
        "method": "tools/call",
        "params": {"name": "no-such-tool", "arguments": {}},
    });
    assert_eq!(mcp(&s, &body), 200);
    assert_clean(&s, "id-1");
}

#[test]
fn session_ids_and_file_names_cannot_forge_a_line_or_flood_the_log() {
    let s = text_server();
    let session = format!("session-1{FORGED}{}", "s".repeat(1 << 20));
    let r = s.post_json(
        "/tools/python.execute",
        &json!({"session": session, "code": "1"}),
    );
    assert_eq!(r.status, 404, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        r.body.len() < 1024,
        "the answer repeats the id whole: {} bytes",
        r.body.len()
    );
    let name = format!("name-1{FORGED}{}", "n".repeat(1 << 20));
    let r = s.post_json(
        "/tools/python.execute",
        &json!({"code": "1", "files": {name: "x"}}),
    );
    assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
    assert!(
        r.body.len() < 1024,
        "the answer repeats the name whole: {} bytes",
        r.body.len()
    );
    assert_clean(&s, "name-1");
    assert!(s.logs().contains("session-1"), "{}", s.logs());
}

/// Each request refused before any tool runs is one `request refused` line
/// (JSON logs) with its status, method and path, and whose token it was
/// when it was one of ours; never the token, right or wrong.
#[test]
fn every_refused_request_is_logged_without_its_token() {
    const CALLER: &str = "refused-caller-token-0123456789";
    const APPROVER: &str = "refused-approver-token-0123456789";
    const WRONG: &str = "a-wrong-token-nobody-has-0123456789";
    let s = Server::start_with_args(
        &[("TOOLGATE_APPROVER_TOKEN", APPROVER)],
        &["--token", CALLER],
    );
    let call = |token: Option<&str>| {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(a) = &auth {
            headers.push(("Authorization", a.as_str()));
        }
        s.request(
            "POST",
            "/tools/python.execute",
            &headers,
            br#"{"code": "1"}"#,
        )
        .status
    };
    assert_eq!(call(None), 401);
    assert_eq!(call(Some(WRONG)), 401);
    assert_eq!(call(Some(APPROVER)), 403);
    let auth = format!("Bearer {CALLER}");
    let not_acceptable = s.request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
            ("Authorization", &auth),
        ],
        br#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#,
    );
    assert_eq!(not_acceptable.status, 406);
    let foreign_host = s.request("GET", "/healthz", &[("Host", "evil.example")], b"");
    assert_eq!(foreign_host.status, 403);

    let refused = |logs: &[Value]| -> Vec<Value> {
        logs.iter()
            .filter(|l| l["message"] == "request refused")
            .cloned()
            .collect()
    };
    let logs = s.json_logs_when(std::time::Duration::from_secs(10), |l| {
        refused(l).len() >= 5
    });
    let lines: Vec<(u64, String, String, Value)> = refused(&logs)
        .iter()
        .map(|l| {
            (
                l["status"].as_u64().unwrap_or(0),
                l["method"].as_str().unwrap_or("").to_owned(),
                l["path"].as_str().unwrap_or("").to_owned(),
                l["caller"].clone(),
            )
        })
        .collect();
    let tool = "/tools/python.execute".to_owned();
    assert_eq!(
        lines,
        vec![
            (401, "POST".into(), tool.clone(), Value::Null),
            (401, "POST".into(), tool.clone(), Value::Null),
            (403, "POST".into(), tool, json!("approver approver")),
            (
                406,
                "POST".into(),
                "/mcp".into(),
                json!(s_caller_name(CALLER))
            ),
            (403, "GET".into(), "/healthz".into(), Value::Null),
        ],
        "{logs:?}"
    );
    let all = s.logs();
    for token in [CALLER, APPROVER, WRONG] {
        assert!(!all.contains(token), "a token reached the log");
    }
}

/// The caller name the single `--token` gets (docs/configuration.md).
fn s_caller_name(token: &str) -> String {
    toolgate_shared::config::single_token_name(token)
}

/// Every answer carries `X-Request-Id`, and every log line of its request
/// the same id: a proxy's own id is kept when it is a safe token, anything
/// else replaced.
#[test]
fn a_request_id_ties_a_calls_lines_to_its_answer() {
    let s = Server::start(&[]);
    let call = |id: Option<&str>| {
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(id) = id {
            headers.push(("X-Request-Id", id));
        }
        s.request(
            "POST",
            "/tools/python.execute",
            &headers,
            br#"{"code": "print(1)"}"#,
        )
    };
    let mine = call(Some("proxy-id.42_a"));
    assert_eq!(mine.header("x-request-id"), Some("proxy-id.42_a"));
    let fresh = call(None);
    let fresh_id = fresh.header("x-request-id").unwrap().to_owned();
    assert_eq!(fresh_id.len(), 16, "{fresh_id}");
    let forged = call(Some("a b\\nFORGED"));
    let replaced = forged.header("x-request-id").unwrap().to_owned();
    assert_eq!(replaced.len(), 16, "{replaced}");
    let long = "x".repeat(65);
    let too_long = call(Some(&long));
    assert_ne!(too_long.header("x-request-id"), Some(long.as_str()));
    let refused = s.get("/no/such/route");
    assert!(refused.header("x-request-id").is_some());

    for id in ["proxy-id.42_a", fresh_id.as_str(), replaced.as_str()] {
        let logs = s.json_logs_when(std::time::Duration::from_secs(10), |l| {
            l.iter()
                .any(|l| l["span"]["request_id"] == id && l["message"] == "tool call")
        });
        let line = logs
            .iter()
            .find(|l| l["span"]["request_id"] == id && l["message"] == "tool call");
        assert!(
            line.is_some(),
            "no tool call line with request id {id}: {logs:?}"
        );
    }
}
