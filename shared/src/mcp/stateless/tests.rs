use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::error::{ErrorCode, ToolError};
use crate::registry::Registry;
use crate::tool::testing::Echo;
use crate::tool::{CallContext, Tool, ToolFuture, ToolSpec};

/// A tool that always fails, for MCP's tool errors (`isError`).
struct Refuses(ToolSpec);

impl Tool for Refuses {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn call<'a>(&'a self, _: Value, _: &'a CallContext) -> ToolFuture<'a> {
        Box::pin(async { Err(ToolError::new(ErrorCode::InvalidInput, "no, thanks")) })
    }
}

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name}, for tests"),
        input_schema: json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
        output_schema: json!({"type": "object"}),
        ..Default::default()
    }
}

fn registry() -> Arc<Registry> {
    let mut r = Registry::new();
    r.add(Arc::new(Echo(spec("echo.tool")))).unwrap();
    r.add(Arc::new(Refuses(spec("refuses")))).unwrap();
    Arc::new(r)
}

const V2026: &str = "2026-07-28";

fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn call(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string()
}

fn init(version: &str) -> String {
    call(
        "initialize",
        json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
    )
}

/// (method, extra headers, body, whether the usual Accept and
/// Content-Type headers go too).
type Case = (&'static str, Vec<(&'static str, String)>, String, bool);

fn corpus() -> Vec<Case> {
    let none = Vec::new;
    let v = |s: &str| vec![("MCP-Protocol-Version", s.to_owned())];
    let echo = json!({"name": "echo.tool", "arguments": {"x": 1}});
    let with_meta = |mut p: Value| {
        p["_meta"] = meta(V2026);
        p
    };
    vec![
        // The initialize lifecycle, each version, and one nobody knows.
        post(none(), init("2025-06-18")),
        post(none(), init("2024-11-05")),
        post(none(), init("2025-11-25")),
        post(none(), init(V2026)),
        post(none(), init("1999-01-01")),
        post(v("2025-03-26"), init("2025-06-18")),
        post(v("2025-06-18"), init("2025-06-18")),
        post(
            none(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
        ),
        post(none(), call("ping", json!({}))),
        post(v("2025-06-18"), call("ping", json!({}))),
        post(v("1999-01-01"), call("ping", json!({}))),
        post(v("2025-06-18"), call("tools/list", json!({}))),
        post(none(), call("tools/list", json!({"cursor": "x"}))),
        post(v("2025-06-18"), call("tools/call", echo.clone())),
        post(
            v("2025-06-18"),
            call(
                "tools/call",
                json!({"name": "echo.tool", "arguments": {
                        "files": {"a b.txt": "hi", "bin": {"base64": "AAE="}}}}),
            ),
        ),
        post(none(), call("tools/call", json!({"name": "echo.tool"}))),
        post(none(), call("tools/call", json!({"name": "refuses"}))),
        post(none(), call("tools/call", json!({"name": "nope"}))),
        post(none(), call("tools/call", json!({"arguments": {}}))),
        post(none(), call("tools/call", json!({"name": 5}))),
        post(none(), call("prompts/list", json!({}))),
        post(none(), call("prompts/get", json!({"name": "p"}))),
        post(none(), call("resources/list", json!({}))),
        post(none(), call("resources/read", json!({"uri": "file:///a"}))),
        post(
            none(),
            call(
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "p"},
                    "argument": {"name": "a", "value": "b"}}),
            ),
        ),
        post(none(), call("logging/setLevel", json!({"level": "info"}))),
        post(none(), call("no/such/method", json!({}))),
        post(none(), call("tasks/get", json!({"taskId": "t"}))),
        // The per-request lifecycle (2026-07-28): discover, then calls
        // that carry their version and the standard headers.
        post(
            modern("server/discover", None),
            call("server/discover", with_meta(json!({}))),
        ),
        post(none(), call("server/discover", json!({}))),
        post(
            modern("tools/list", None),
            call("tools/list", with_meta(json!({}))),
        ),
        post(
            modern("tools/call", Some("echo.tool")),
            call("tools/call", with_meta(echo.clone())),
        ),
        post(
            modern("tools/call", Some("=?base64?ZWNoby50b29s?=")),
            call("tools/call", with_meta(echo.clone())),
        ),
        post(
            modern("tools/call", Some("other")),
            call("tools/call", with_meta(echo.clone())),
        ),
        post(
            modern("tools/call", None),
            call("tools/call", with_meta(echo.clone())),
        ),
        post(
            modern("tools/list", None),
            call("tools/call", with_meta(echo.clone())),
        ),
        post(modern("ping", None), call("ping", with_meta(json!({})))),
        post(modern("tools/list", None), call("tools/list", json!({}))),
        post(v("2025-06-18"), call("tools/list", with_meta(json!({})))),
        post(none(), call("tools/list", with_meta(json!({})))),
        post(
            modern("tools/list", None),
            call("tools/list", json!({"_meta": meta("2099-01-01")})),
        ),
        post(modern("initialize", None), init(V2026)),
        post(modern("tools/list", None), init(V2026)),
        // What is not a request for this server.
        post(none(), r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into()),
        post(none(), "{not json".into()),
        post(none(), "[]".into()),
        post(
            none(),
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.into(),
        ),
        post(none(), r#"{"id":1,"method":"ping"}"#.into()),
        post(none(), String::new()),
        negotiating("application/json", None),
        negotiating(
            "application/json, text/event-stream;q=0",
            Some("application/json"),
        ),
        negotiating("application/json, text/event-stream", Some("text/plain")),
        negotiating(
            "application/json;q=0.5, text/event-stream;q=bad",
            Some("application/json; charset=utf-8"),
        ),
        ("GET", none(), String::new(), true),
        ("DELETE", none(), String::new(), true),
        ("PUT", none(), call("ping", json!({})), true),
        post(vec![("Host", "bad host".into())], call("ping", json!({}))),
        post(
            none(),
            call(
                "tools/call",
                json!({"name": "echo.tool",
                    "arguments": {"pad": "x".repeat(crate::tool::MAX_BODY_BYTES)}}),
            ),
        ),
    ]
    .into_iter()
    .chain(extra())
    .collect()
}

/// More, most of them hostile (from a review of the port against
/// rmcp's source): Origin and Host, duplicate and non-UTF-8 headers,
/// every method this server has no capability for, notifications,
/// odd ids and envelopes, `_meta` at older versions, the body limit.
fn extra() -> Vec<Case> {
    let none = Vec::new;
    let v = |s: &str| vec![("MCP-Protocol-Version", s.to_owned())];
    let h = |pairs: &[(&'static str, &str)]| -> Vec<(&'static str, String)> {
        pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
    };
    let with_meta = |mut p: Value| {
        p["_meta"] = meta(V2026);
        p
    };
    let echo = json!({"name": "echo.tool", "arguments": {"x": 1}});
    let ping = || call("ping", json!({}));
    let limit = crate::tool::MAX_BODY_BYTES;
    let sized = |n: usize| {
        let base = call(
            "tools/call",
            json!({"name": "echo.tool", "arguments": {"pad": ""}}),
        );
        call(
            "tools/call",
            json!({"name": "echo.tool", "arguments": {"pad": "x".repeat(n - base.len())}}),
        )
    };
    let mut init_meta: Value = serde_json::from_str(&init("2025-06-18")).unwrap();
    init_meta["params"]["_meta"] = meta(V2026);
    let init_meta = init_meta.to_string();
    vec![
            post(h(&[("Origin", "https://evil.example")]), ping()),
            post(h(&[("Origin", "null")]), ping()),
            post(h(&[("Origin", "RAW:ff")]), ping()),
            post(h(&[("Host", "RAW:ff")]), ping()),
            post(h(&[("Host", "NONE")]), ping()),
            post(h(&[("Host", "")]), ping()),
            post(h(&[("Host", "[::1]:8080")]), ping()),
            post(h(&[("Host", "a:99999")]), ping()),
            ("GET", h(&[("Host", "bad host")]), String::new(), true),
            ("HEAD", none(), String::new(), true),
            ("OPTIONS", none(), String::new(), true),
            post(h(&[("MCP-Protocol-Version", "2025-06-18"), ("MCP-Protocol-Version", V2026)]), ping()),
            post(h(&[("MCP-Protocol-Version", V2026), ("MCP-Protocol-Version", "2025-06-18"), ("Mcp-Method", "tools/list")]), call("tools/list", with_meta(json!({})))),
            post(h(&[("MCP-Protocol-Version", "RAW:ff")]), ping()),
            post(h(&[("MCP-Protocol-Version", "RAW:ff")]), init("2025-06-18")),
            post(h(&[("MCP-Protocol-Version", "RAW:ff")]), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into()),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "RAW:ff")]), init(V2026)),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "initialize"), ("Mcp-Method", "initialize")]), init(V2026)),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "initialize"), ("Mcp-Name", "zzz")]), init(V2026)),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "tools/call"), ("Mcp-Name", "RAW:ff")]), call("tools/call", with_meta(echo.clone()))),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo.tool"), ("Mcp-Name", "echo.tool")]), call("tools/call", with_meta(echo.clone()))),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "tools/call"), ("Mcp-Name", "=?base64?!!!?=")]), call("tools/call", with_meta(echo.clone()))),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "tools/call"), ("Mcp-Name", "=?base64?ZWNoby50b29sX===?=")]), call("tools/call", with_meta(echo.clone()))),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "tools/list"), ("Mcp-Method", "tools/list")]), call("tools/list", with_meta(json!({})))),
            post(modern("tasks/get", Some("t")), call("tasks/get", with_meta(json!({"taskId": "t"})))),
            post(modern("tasks/get", None), call("tasks/get", with_meta(json!({"taskId": "t"})))),
            post(none(), call("tasks/cancel", json!({"taskId": "t"}))),
            post(modern("tasks/update", Some("t")), call("tasks/update", with_meta(json!({"taskId": "t", "inputResponses": {}})))),
            post(modern("tasks/list", None), call("tasks/list", with_meta(json!({})))),
            post(modern("subscriptions/listen", None), call("subscriptions/listen", with_meta(json!({"notifications": {}})))),
            post(modern("subscriptions/listen", None), call("subscriptions/listen", with_meta(json!({"notifications": {"toolsListChanged": true}})))),
            post(none(), call("subscriptions/listen", json!({"notifications": {}}))),
            post(modern("resources/subscribe", Some("file:///a")), call("resources/subscribe", with_meta(json!({"uri": "file:///a"})))),
            post(none(), call("resources/subscribe", json!({"uri": "file:///a"}))),
            post(none(), call("resources/unsubscribe", json!({"uri": "file:///a"}))),
            post(none(), call("resources/templates/list", json!({}))),
            post(none(), call("skills/list", json!({}))),
            post(modern("skills/list", None), call("skills/list", with_meta(json!({})))),
            post(modern("skills/get", None), call("skills/get", with_meta(json!({"uri": "skill://a/SKILL.md"})))),
            post(none(), call("skills/get", json!({"uri": "nope"}))),
            post(none(), call("resources/directory/read", json!({"uri": "file:///a/"}))),
            post(modern("logging/setLevel", None), call("logging/setLevel", with_meta(json!({"level": "info"})))),
            post(modern("prompts/get", Some("p")), call("prompts/get", with_meta(json!({"name": "p"})))),
            post(modern("resources/read", Some("=?base64?ZmlsZTovLy9h?=")), call("resources/read", with_meta(json!({"uri": "file:///a"})))),
            post(h(&[("MCP-Protocol-Version", V2026)]), r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#.into()),
            post(modern("notifications/cancelled", None), r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#.into()),
            post(v("2099-01-01"), r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#.into()),
            post(modern("tools/call", Some("x")), r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#.into()),
            post(modern("notifications/initialized", None), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":-3,"method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":null}"#.into()),
            post(none(), r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1}}}"#.into()),
            post(none(), init_meta.clone()),
            post(v("2025-06-18"), init_meta.clone()),
            post(v(V2026), init_meta.clone()),
            post(v("2025-06-18"), call("ping", json!({"_meta": meta("2025-06-18")}))),
            post(v("2025-06-18"), call("tools/list", json!({"_meta": meta("2025-06-18")}))),
            post(v("2025-06-18"), call("tools/call", json!({"name": "echo.tool", "arguments": {"x": 1}, "_meta": meta("2025-06-18")}))),
            post(v("2025-06-18"), call("server/discover", json!({"_meta": meta("2025-06-18")}))),
            post(v("2025-06-18"), call("server/discover", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-06-18"}}))),
            post(modern("server/discover", None), call("server/discover", json!({"_meta": meta("2099-01-01")}))),
            post(v("2099-01-01"), call("server/discover", json!({"_meta": meta("2099-01-01")}))),
            post(modern("ping", None), call("ping", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V2026}}))),
            post(modern("tools/list", None), call("tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 5}}))),
            post(modern("tools/call", Some("echo.tool")), call("tools/call", json!({"name": "echo.tool", "arguments": {"x": 1}, "_meta": {"progressToken": "p", "io.modelcontextprotocol/protocolVersion": V2026, "io.modelcontextprotocol/clientCapabilities": {}}}))),
            post(modern("tools/call", Some("nope")), call("tools/call", with_meta(json!({"name": "nope"})))),
            post(modern("tools/call", Some("refuses")), call("tools/call", with_meta(json!({"name": "refuses"})))),
            post(modern("tools/call", None), call("tools/call", with_meta(json!({"name": 5})))),
            post(modern("no/such", None), call("no/such", with_meta(json!({})))),
            post(h(&[("Content-Type", "text/plain")]), ping()),
            ("POST", h(&[("Accept", "*/*"), ("Content-Type", "application/json")]), ping(), false),
            ("POST", h(&[("Accept", "application/json, text/event-stream"), ("Content-Type", "RAW:ff")]), ping(), false),
            post(none(), sized(limit)),
            post(none(), sized(limit + 1)),
            post(none(), format!("{}{}", "[".repeat(200), "]".repeat(200))),
            post(none(), call("initialize", json!({"protocolVersion": "2025-06-18"}))),
        ]
}

/// The 2026-07-28 headers: the version, `Mcp-Method`, and `Mcp-Name`.
fn modern(method: &str, name: Option<&str>) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("MCP-Protocol-Version", V2026.to_owned()),
        ("Mcp-Method", method.to_owned()),
    ];
    h.extend(name.map(|n| ("Mcp-Name", n.to_owned())));
    h
}

/// A POST with the usual `Accept` and `Content-Type`, and `headers`.
fn post(headers: Vec<(&'static str, String)>, body: String) -> Case {
    ("POST", headers, body, true)
}

/// A ping with these `Accept` and `Content-Type` headers alone.
fn negotiating(accept: &str, content_type: Option<&str>) -> Case {
    let mut headers = vec![("Accept", accept.to_owned())];
    headers.extend(content_type.map(|c| ("Content-Type", c.to_owned())));
    ("POST", headers, call("ping", json!({})), false)
}

fn request(method: &str, headers: &[(&str, String)], body: &str, usual: bool) -> Request<Body> {
    let mut b = Request::builder().method(method).uri("/mcp");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        b = b.header("Host", "localhost");
    }
    if usual {
        b = b
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json");
    }
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("host") && v == "NONE" {
            continue;
        }
        if let Some(hex) = v.strip_prefix("RAW:") {
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            b = b.header(*k, axum::http::HeaderValue::from_bytes(&bytes).unwrap());
        } else {
            b = b.header(*k, v.as_str());
        }
    }
    b.body(Body::from(body.to_owned())).unwrap()
}

async fn parts<B>(r: axum::http::Response<B>) -> (u16, Vec<String>, String)
where
    B: axum::body::HttpBody,
    B::Error: std::fmt::Debug,
{
    let status = r.status().as_u16();
    let mut headers: Vec<String> = r
        .headers()
        .iter()
        .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or("?")))
        .collect();
    headers.sort();
    let body = r.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

/// Every request of the corpus gets from `handle` what it gets from
/// rmcp's own server: status, headers and body, byte for byte.
#[tokio::test]
async fn answers_as_rmcp_does() {
    let registry = registry();
    let rmcp = super::super::service(registry.clone(), None);
    let mut differ = Vec::new();
    let cases = corpus();
    for (method, headers, body, usual) in &cases {
        let theirs = parts(rmcp.handle(request(method, headers, body, *usual)).await).await;
        let ours =
            parts(super::handle(registry.clone(), request(method, headers, body, *usual)).await)
                .await;
        if theirs != ours {
            differ.push(format!(
                "{method} {headers:?} {}\n  rmcp: {theirs:?}\n  ours: {ours:?}",
                body.chars().take(200).collect::<String>()
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} differ:\n{}",
        differ.len(),
        cases.len(),
        differ.join("\n")
    );
}

/// The corpus is not all refusals: the calls run, each lifecycle answers,
/// and the errors are the ones meant.
#[tokio::test]
async fn the_corpus_reaches_every_kind_of_answer() {
    let registry = registry();
    let mut seen = std::collections::BTreeMap::new();
    for (method, headers, body, usual) in corpus() {
        let (status, _, text) =
            parts(super::handle(registry.clone(), request(method, &headers, &body, usual)).await)
                .await;
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let kind = if v["result"]["structuredContent"]["x"] == 1 {
            "call ran"
        } else if v["result"]["isError"] == true {
            "tool error"
        } else if v["result"]["protocolVersion"].is_string() {
            "initialized"
        } else if v["result"]["supportedVersions"].is_array() {
            "discovered"
        } else if v["result"]["tools"].is_array() {
            "listed"
        } else if v["error"]["code"] == -32601 {
            "method not found"
        } else if v["error"]["data"]["code"] == "unknown_tool" {
            "unknown tool"
        } else if status == 202 {
            "accepted"
        } else {
            "other"
        };
        *seen.entry(kind).or_insert(0) += 1;
    }
    for kind in [
        "call ran",
        "tool error",
        "initialized",
        "discovered",
        "listed",
        "method not found",
        "unknown tool",
        "accepted",
    ] {
        assert!(seen.contains_key(kind), "{kind} never answered: {seen:?}");
    }
}
