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
