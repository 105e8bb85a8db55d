//! What a web page can make a browser send, and names a loopback server
//! must not answer to. A token-less `toolgate serve` (README's default)
//! runs tools for whoever reaches it, so:
//! - a page of another site is refused on every route (`/mcp` included),
//!   in real Chromium and byte for byte; the server's own pages, links
//!   people follow, allowed origins and clients that are not browsers pass;
//! - `Host` is judged in every form a request can carry it;
//! - HTTP/2 (h2c with prior knowledge, which carries no `Host`) gets no
//!   answer at all.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::browser::cross_site_fetch_in_chromium;
use toolgate_e2e::{Server, error_of, support};

const CT: (&str, &str) = ("Content-Type", "application/json");
const PRINT: &[u8] = br#"{"code": "print(1)"}"#;

/// How many python.execute calls ran (logged `outcome: ok`), once more
/// than `expected` have, or after two seconds: a call's line is written
/// as its answer goes out.
fn ran(s: &Server, expected: usize) -> usize {
    let count = |ls: &[Value]| {
        ls.iter()
            .filter(|l| {
                l["message"] == "tool call" && l["tool"] == "python.execute" && l["outcome"] == "ok"
            })
            .count()
    };
    count(&s.json_logs_when(Duration::from_secs(2), |ls| count(ls) > expected))
}

fn assert_refused(r: &toolgate_e2e::Response, what: &str) {
    let (status, code, message) = error_of(r);
    assert_eq!(
        (status, code.as_str()),
        (403, "forbidden"),
        "{what}: {}",
        String::from_utf8_lossy(&r.body)
    );
    assert!(
        message.starts_with("Cross-site request refused")
            && message.contains("TOOLGATE_ALLOWED_ORIGINS"),
        "{what}: {message}"
    );
}

/// The red team's page, in Chromium: a `no-cors` fetch of a `Blob` from
/// `http://localhost:<p>` to the server at `http://127.0.0.1:<q>`. It sends
/// no `Content-Type`, and today it made a session and ran the code.
#[test]
fn a_page_of_another_site_cannot_call_a_tokenless_server() {
    let s = Server::start(&[]);
    let target = format!("http://{}/tools/python.execute", s.addr);
    let page = cross_site_fetch_in_chromium(
        &target,
        &json!({"session": "new", "code": "print(1)"}).to_string(),
    );
    assert_eq!(page["fetch"], "sent", "{page}");
    assert_eq!(ran(&s, 0), 0, "the page's call ran:\n{}", s.logs());
    // It did reach the server, which said why it refused.
    let refused = s.json_logs_when(Duration::from_secs(5), |ls| {
        ls.iter().any(|l| l["message"] == "request refused")
    });
    let line = refused
        .iter()
        .find(|l| l["message"] == "request refused")
        .unwrap_or_else(|| panic!("no refusal logged:\n{}", s.logs()));
    assert!(
        line["reason"]
            .as_str()
            .is_some_and(|r| r.contains("Sec-Fetch-Site: cross-site")),
        "{line}"
    );
}

#[test]
fn cross_site_requests_are_refused_on_every_route() {
    let s = Server::start(&[]);
    // What Chromium sends for the page above.
    let r = s.request(
        "POST",
        "/tools/python.execute",
        &[
            ("Origin", "http://localhost:9"),
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Mode", "no-cors"),
        ],
        br#"{"session": "new", "code": "print(1)"}"#,
    );
    assert_refused(&r, "no-cors fetch");
    assert!(error_of(&r).2.contains("(Sec-Fetch-Site: cross-site)"));
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "page", "version": "1"}}})
    .to_string();
    let accept = ("Accept", "application/json, text/event-stream");
    // Each signal alone, `null` (sandboxed frames, file:), and same-site
    // (another port of localhost), on tool, MCP and approver routes.
    for signal in [
        &[("Sec-Fetch-Site", "cross-site")][..],
        &[
            ("Sec-Fetch-Site", "same-site"),
            ("Origin", "http://localhost:3000"),
        ],
        &[("Origin", "https://evil.example")],
        &[("Origin", "null")],
    ] {
        for (method, path, body) in [
            ("POST", "/tools/python.execute", PRINT),
            (
                "POST",
                "/tools/clarify",
                br#"{"question": "q?"}"#.as_slice(),
            ),
            ("POST", "/mcp", initialize.as_bytes()),
            ("GET", "/tools", b"".as_slice()),
            (
                "POST",
                "/approvals/x/decision",
                br#"{"decision": "approve"}"#,
            ),
        ] {
            let mut headers = vec![CT, accept];
            headers.extend_from_slice(signal);
            let r = s.request(method, path, &headers, body);
            assert_refused(&r, &format!("{method} {path} {signal:?}"));
        }
    }
    let r = s.request(
        "POST",
        "/tools/python.execute",
        &[CT, ("Origin", "null")],
        PRINT,
    );
    assert!(error_of(&r).2.contains(r#"Origin "null""#), "{r:?}");
    assert_eq!(ran(&s, 0), 0, "{}", s.logs());

    // Still answered: the server's own pages (same-origin; an older browser
    // sends only its Origin), a typed URL, clients that are not browsers.
    let own = format!("http://{}", s.addr);
    for headers in [
        &[CT][..],
        &[CT, ("Sec-Fetch-Mode", "cors")],
        &[
            CT,
            ("Sec-Fetch-Site", "same-origin"),
            ("Origin", own.as_str()),
        ],
        &[CT, ("Sec-Fetch-Site", "none")],
        &[CT, ("Origin", own.as_str())],
    ] {
        let r = s.request("POST", "/tools/python.execute", headers, PRINT);
        assert_eq!(r.status, 200, "{headers:?}: {r:?}");
    }
    assert_eq!(ran(&s, 5), 5);
    // A person following a link from mail or chat: a cross-site navigation.
    let nav = [
        ("Sec-Fetch-Site", "cross-site"),
        ("Sec-Fetch-Mode", "navigate"),
        ("Origin", "https://mail.example"),
    ];
    for path in ["/inbox", "/healthz", "/clarifications/unknown/answer"] {
        let r = s.request("GET", path, &nav, b"");
        assert_ne!(r.status, 403, "GET {path}: {r:?}");
        assert!(r.status == 200 || r.status == 404, "GET {path}: {r:?}");
    }
}

#[test]
fn allowed_origins_and_the_public_url_may_call() {
    let s = Server::start(&[
        (
            "TOOLGATE_ALLOWED_ORIGINS",
            "http://localhost:3000, https://App.example:443",
        ),
        ("TOOLGATE_PUBLIC_URL", "https://toolgate.example/base/"),
    ]);
    for (site, origin) in [
        ("same-site", "http://localhost:3000"),
        ("cross-site", "https://app.example"),
        ("cross-site", "https://toolgate.example"),
    ] {
        let headers = [CT, ("Sec-Fetch-Site", site), ("Origin", origin)];
        let r = s.request("POST", "/tools/python.execute", &headers, PRINT);
        assert_eq!(r.status, 200, "{origin}: {r:?}");
    }
    for origin in ["http://localhost:3001", "http://app.example", "null"] {
        let headers = [CT, ("Sec-Fetch-Site", "cross-site"), ("Origin", origin)];
        let r = s.request("POST", "/tools/python.execute", &headers, PRINT);
        assert_refused(&r, origin);
    }
    // A setting that is not an origin stops the server at start.
    let out = toolgate_e2e::output_within(
        {
            let mut c = Command::new(toolgate_e2e::toolgate_bin());
            c.args(["serve", "--addr", "127.0.0.1:0"])
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env(
                    "TOOLGATE_DATA_DIR",
                    std::env::temp_dir().join("toolgate-origins-refused"),
                )
                .env("TOOLGATE_ALLOWED_ORIGINS", "https://app.example/path")
                .current_dir(std::env::temp_dir());
            c
        },
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("TOOLGATE_ALLOWED_ORIGINS") && stderr.contains("https://app.example/path"),
        "{stderr}"
    );
}

/// Sends `raw` as it is and reads the answer to its end: the status and
/// the body; status 0 and all that came back when that was no HTTP/1
/// answer (nothing at all when the server closed without a word).
fn send_raw(addr: &str, raw: &[u8]) -> (u16, String) {
    let mut c = TcpStream::connect(addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(raw).expect("write");
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .strip_prefix("HTTP/1.")
        .and_then(|t| t.get(2..5))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    if status == 0 {
        return (0, text);
    }
    let body = text
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_owned());
    (status, body)
}

fn post(target: &str, version: &str, hosts: &[&str]) -> Vec<u8> {
    let mut head = format!("POST {target} HTTP/{version}\r\nConnection: close\r\n");
    for h in hosts {
        head.push_str(&format!("Host: {h}\r\n"));
    }
    head.push_str(&format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        PRINT.len()
    ));
    let mut raw = head.into_bytes();
    raw.extend_from_slice(PRINT);
    raw
}

#[test]
fn a_loopback_server_answers_only_loopback_names_in_every_form() {
    let s = Server::start(&[]);
    let port = s.addr.rsplit_once(':').unwrap().1.to_owned();
    let path = "/tools/python.execute";
    let ok_host = format!("127.0.0.1:{port}");
    let foreign = "only answers Host: localhost, 127.0.0.1 or [::1]";
    for (what, raw, needle) in [
        (
            "userinfo",
            post(path, "1.1", &[&format!("localhost:{port}@evil.example")]),
            foreign,
        ),
        (
            "after the bracket",
            post(path, "1.1", &["[::1]evil.com"]),
            foreign,
        ),
        ("no Host", post(path, "1.0", &[]), "needs a Host header"),
        (
            "two Hosts",
            post(path, "1.1", &[&ok_host, "evil.example"]),
            foreign,
        ),
        (
            "the same Host twice",
            post(path, "1.1", &[&ok_host, &ok_host]),
            foreign,
        ),
        (
            "absolute-form target",
            post(&format!("http://evil.example{path}"), "1.1", &[&ok_host]),
            foreign,
        ),
        (
            "absolute-form target with userinfo",
            post(
                &format!("http://localhost:{port}@evil.example{path}"),
                "1.1",
                &[&ok_host],
            ),
            foreign,
        ),
    ] {
        let (status, body) = send_raw(&s.addr, &raw);
        assert_eq!(status, 403, "{what}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_default();
        assert_eq!(v["error"]["code"], "forbidden", "{what}: {body}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains(needle),
            "{what}: {body}"
        );
    }
    assert_eq!(ran(&s, 0), 0, "{}", s.logs());
    for (what, raw) in [
        ("[::1]", post(path, "1.1", &[&format!("[::1]:{port}")])),
        (
            "localhost",
            post(path, "1.1", &[&format!("LOCALHOST:{port}")]),
        ),
        (
            "absolute-form loopback",
            post(
                &format!("http://127.0.0.1:{port}{path}"),
                "1.1",
                &[&ok_host],
            ),
        ),
    ] {
        let (status, body) = send_raw(&s.addr, &raw);
        assert_eq!(status, 200, "{what}: {body}");
    }
}

/// HTTP/2 requests carry their authority in the URI and no `Host` header;
/// `toolgate serve` speaks HTTP/1.1 only and closes the connection at the
/// HTTP/2 preface, answering nothing.
#[test]
fn http2_with_prior_knowledge_gets_no_answer() {
    let s = Server::start(&[]);
    for authority in ["evil.example", &s.addr] {
        let out = toolgate_e2e::peer::run_ok(
            Command::new("node")
                .arg(support("h2c_call.cjs"))
                .arg(format!("http://{}", s.addr))
                .arg("/tools/python.execute")
                .arg(std::str::from_utf8(PRINT).unwrap())
                .arg(authority),
            "an h2c request",
        );
        let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert!(
            v.get("status").is_none() && v["error"].is_string(),
            "{authority}: {v}"
        );
    }
    // The preface alone, byte for byte: closed, not a byte back.
    let (status, body) = send_raw(
        &s.addr,
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00",
    );
    assert_eq!((status, body.as_str()), (0, ""));
    assert_eq!(ran(&s, 0), 0, "{}", s.logs());
    // HTTP/1.1 is still answered.
    assert_eq!(s.get("/healthz").status, 200);
}
