//! One call path: the same calls, good and bad, through every transport
//! that carries a tool call (HTTP on serve, MCP on serve, `toolgate call`,
//! a Lambda HTTP event and a direct invocation through the function the
//! Lambda binaries run) get the same error code, and each logs one line with
//! the canonical tool name and its transport. The Worker serves the same
//! router as serve (`worker.rs` compares them byte for byte).

use serde_json::{Value, json};
use toolgate_e2e::Server;
use toolgate_e2e::lambda_events::{fixture, http_parts, invoke, python_function};
use toolgate_e2e::launch::Launch;
use toolgate_lambda::Function;
use toolgate_lambda::envelope::code_of;

/// (tool name as sent, arguments, the code every transport must answer;
/// "ok" for a call that runs).
const CASES: &[(&str, &str, &str)] = &[
    ("python.evaluate", r#"{"code": "1"}"#, "unknown_tool"),
    ("", r#"{"code": "1"}"#, "unknown_tool"),
    ("python.execute", r#"{}"#, "invalid_input"),
    ("python.execute", r#"{"code": 5}"#, "invalid_input"),
    (
        "python__execute",
        r#"{"code": ["print(1)"]}"#,
        "invalid_input",
    ),
    ("python.execute", r#"{"code": "print(1)"}"#, "ok"),
    (
        "python.execute",
        r#"{"code": "1", "files": {"../x": "y"}}"#,
        "invalid_input",
    ),
    (
        "python.execute",
        r#"{"code": "open('a', 'w').write(open('b').read())", "files": {"b": "y"}}"#,
        "ok",
    ),
    (
        "python__execute",
        r#"{"code": "raise SystemExit(3)"}"#,
        "ok",
    ),
];

fn code_of_body(body: &Value) -> String {
    match body["error"]["code"].as_str() {
        Some(c) => c.to_owned(),
        None if body.get("exit_code").is_some() => "ok".into(),
        None => format!("unreadable: {body}"),
    }
}

fn http(s: &Server, name: &str, args: &str) -> String {
    let r = s.request(
        "POST",
        &format!("/tools/{name}"),
        &[("Content-Type", "application/json")],
        args.as_bytes(),
    );
    code_of_body(&r.json())
}

fn mcp(s: &Server, name: &str, args: &str) -> String {
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": serde_json::from_str::<Value>(args).unwrap()}
    });
    let r = s.request(
        "POST",
        "/mcp",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        call.to_string().as_bytes(),
    );
    let reply = r.json();
    // An unknown name is MCP's protocol error, the contract's code in its data.
    if let Some(code) = reply["error"]["data"]["code"].as_str() {
        return code.to_owned();
    }
    let result = &reply["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    if result["isError"] == true {
        return code_of_body(&body);
    }
    code_of_body(&result["structuredContent"])
}

fn cli(name: &str, args: &str) -> String {
    let out = Launch::toolgate(&["call", name, "--json", args])
        .env("TOOLGATE_LOG", "json")
        .output();
    if out.status.success() {
        return code_of_body(&serde_json::from_slice(&out.stdout).unwrap_or(Value::Null));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    code_of_body(&serde_json::from_str(last).unwrap_or(Value::Null))
}

async fn lambda_direct(f: &Function, name: &str, args: &str) -> String {
    let payload = json!({"tool": name, "arguments": serde_json::from_str::<Value>(args).unwrap()});
    match invoke(f, payload).await {
        Ok(v) => code_of_body(&v),
        Err((kind, _)) => code_of(&kind).as_str().to_owned(),
    }
}

async fn lambda_http(f: &Function, name: &str, args: &str) -> String {
    let mut event = fixture("apigw_v2_call.json");
    let path = format!("/tools/{name}");
    event["rawPath"] = json!(path);
    event["requestContext"]["http"]["path"] = json!(path);
    event["pathParameters"] = json!({ "name": name });
    event["body"] = json!(args);
    event["headers"]["content-length"] = json!(args.len().to_string());
    let resp = invoke(f, event)
        .await
        .expect("HTTP events always get a response");
    code_of_body(&http_parts(&resp).2)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_transport_answers_the_same_calls_with_the_same_codes() {
    let s = Server::start(&[]);
    let f = python_function(&|_| None);
    let mut table = vec![format!(
        "{:<18} {:<36} {:<14} {:<14} {:<14} {:<14} {:<14}",
        "tool", "arguments", "http", "mcp", "cli", "lambda http", "lambda direct"
    )];
    let mut failures = Vec::new();
    for (name, args, want) in CASES {
        // An empty name over HTTP is the bare `/tools/`: no tool route, so
        // the router's own unknown_tool (and no call, so no log line).
        let got = [
            http(&s, name, args),
            mcp(&s, name, args),
            cli(name, args),
            lambda_http(&f, name, args).await,
            lambda_direct(&f, name, args).await,
        ];
        table.push(format!(
            "{:<18} {:<36} {:<14} {:<14} {:<14} {:<14} {:<14}",
            name, args, got[0], got[1], got[2], got[3], got[4]
        ));
        if got.iter().any(|g| g != want) {
            failures.push(format!("{name} {args}: want {want}, got {got:?}"));
        }
    }
    println!("{}", table.join("\n"));
    assert!(
        failures.is_empty(),
        "{}\n{}",
        failures.join("\n"),
        table.join("\n")
    );

    // One line per call on serve, with the canonical name and the transport,
    // whichever name was sent; an unknown name is logged as sent.
    let sent = CASES.iter().filter(|(n, _, _)| !n.is_empty()).count() + CASES.len();
    let is_call = |l: &Value| l["message"] == "tool call";
    let lines = s.json_logs_when(std::time::Duration::from_secs(5), |ls| {
        ls.iter().filter(|l| is_call(l)).count() >= sent
    });
    let calls: Vec<&Value> = lines.iter().filter(|l| is_call(l)).collect();
    assert_eq!(calls.len(), sent, "{calls:#?}");
    for transport in ["http", "mcp"] {
        let mine: Vec<&&Value> = calls
            .iter()
            .filter(|l| l["transport"] == transport)
            .collect();
        assert!(
            mine.iter()
                .any(|l| l["tool"] == "python.execute" && l["outcome"] == "ok"),
            "{transport}: {mine:#?}"
        );
        assert!(
            mine.iter().all(|l| l["tool"] != "python__execute"),
            "{transport} logged the exported name: {mine:#?}"
        );
        assert!(
            mine.iter()
                .any(|l| l["tool"] == "python.evaluate" && l["outcome"] == "unknown_tool"),
            "{transport}: {mine:#?}"
        );
    }
}
