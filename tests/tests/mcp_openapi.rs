//! `/mcp` and `/openapi.json` against the real binary, with clients nobody on
//! this team wrote: rmcp's client, the MCP Inspector CLI (npm), an OpenAPI
//! validator and Schemathesis (PyPI). `scripts/test` installs the last three
//! and points `TOOLGATE_TEST_TOOLS` at them; without it these tests fail and
//! say so, rather than skip.

use std::path::PathBuf;
use std::process::Command;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolgate_e2e::Server;
use toolgate_e2e::mcp::rmcp_client as mcp_client;
use toolgate_e2e::peer::{run_ok, tools_dir};

fn args(map: Value) -> Option<serde_json::Map<String, Value>> {
    map.as_object().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_lists_and_calls_tools() {
    let s = Server::start(&[]);
    let client = mcp_client(format!("http://{}/mcp", s.addr), None)
        .await
        .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let py = tools
        .iter()
        .find(|t| t.name == "python__execute")
        .expect("python.execute listed under its portable name");
    // Listed names are what model providers take as function names.
    for t in &tools {
        assert!(
            t.name.len() <= 64
                && t.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{}",
            t.name
        );
    }
    assert!(py.input_schema.get("properties").is_some());
    assert!(py.output_schema.is_some());
    assert!(
        py.description
            .as_deref()
            .unwrap_or("")
            .contains("Timeout: 20s.")
    );

    let mut call = CallToolRequestParams::new("python.execute");
    call.arguments = args(json!({"code": "print('hi')\nresult = 6 * 7"}));
    let r = client.call_tool(call).await.unwrap();
    assert_ne!(r.is_error, Some(true));
    let structured = r.structured_content.expect("structured content");
    assert_eq!(structured["result"], 42);
    assert_eq!(structured["stdout"], "hi\n");

    // A script's own failure is a normal result, exit_code 1.
    let mut call = CallToolRequestParams::new("python__execute");
    call.arguments = args(json!({"code": "1/0"}));
    let r = client.call_tool(call).await.unwrap();
    assert_eq!(r.structured_content.unwrap()["exit_code"], 1);

    // A failing tool is an MCP tool error (isError), not a protocol error.
    let mut call = CallToolRequestParams::new("python.execute");
    call.arguments = args(json!({"code": ""}));
    let r = client.call_tool(call).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(
        r.structured_content.is_none(),
        "an error does not fit the output schema"
    );
    let text = r.content[0].as_text().expect("text content").text.clone();
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["code"], "invalid_input");

    // An unknown tool is a protocol error.
    let call = CallToolRequestParams::new("nope");
    assert!(client.call_tool(call).await.is_err());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_needs_the_same_bearer_token() {
    let s = Server::start(&[("TOOLGATE_TOKEN", "mcp-secret")]);
    let url = format!("http://{}/mcp", s.addr);
    assert!(mcp_client(url.clone(), None).await.is_err());
    assert!(mcp_client(url.clone(), Some("wrong")).await.is_err());
    // The refusal itself, not any failure of the client: 401 in the API's
    // error shape, with or without a wrong token.
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    for auth in [None, Some("Bearer wrong")] {
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        headers.extend(auth.map(|a| ("Authorization", a)));
        let r = s.request("POST", "/mcp", &headers, init);
        assert_eq!(
            r.status,
            401,
            "{auth:?}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.json()["error"]["code"], "unauthorized", "{auth:?}");
    }
    let client = mcp_client(url, Some("mcp-secret")).await.unwrap();
    assert!(!client.list_all_tools().await.unwrap().is_empty());
    client.cancel().await.unwrap();
}

#[test]
fn mcp_refuses_foreign_host_names_on_loopback() {
    let s = Server::start(&[]);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let r = s.request(
        "POST",
        "/tools/python.execute",
        &[
            ("Host", "attacker.example"),
            ("Content-Type", "application/json"),
        ],
        br#"{"code": "print(1)"}"#,
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["error"]["code"], "forbidden");
    let r = s.request(
        "POST",
        "/mcp",
        &[
            ("Host", "attacker.example:8080"),
            ("Content-Type", "application/json"),
        ],
        body,
    );
    assert_eq!(r.status, 403);
}

fn inspector(s: &Server, extra: &[&str]) -> Value {
    toolgate_e2e::mcp::inspector(&format!("http://{}/mcp", s.addr), extra)
}

#[test]
fn mcp_inspector_cli_lists_and_calls_python() {
    let s = Server::start(&[]);
    let listed = inspector(&s, &["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, vec!["python__execute", "clarify"], "{listed}");
    let called = inspector(
        &s,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "python__execute",
            "--tool-arg",
            "code=result = 6 * 7",
        ],
    );
    assert_eq!(called["structuredContent"]["result"], 42, "{called}");
    assert_ne!(called["isError"], true);
}

fn venv_python() -> PathBuf {
    tools_dir().join("venv/bin/python")
}

#[test]
fn openapi_document_is_valid_openapi_3_1() {
    let s = Server::start(&[("TOOLGATE_TOKEN", "t")]);
    let r = s.request(
        "GET",
        "/openapi.json",
        &[("Authorization", "Bearer t")],
        b"",
    );
    assert_eq!(r.status, 200);
    let doc = r.json();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(
        doc["paths"]["/tools/python.execute"]["post"]["operationId"],
        "python__execute"
    );
    assert_eq!(
        doc["paths"]["/tools/python.execute"]["post"]["security"],
        json!([{"bearerAuth": []}])
    );
    let path = std::env::temp_dir().join(format!("toolgate-openapi-{}.json", std::process::id()));
    std::fs::write(&path, &r.body).unwrap();
    run_ok(
        Command::new(venv_python())
            .args(["-c", "import sys, json; from openapi_spec_validator import validate; validate(json.load(open(sys.argv[1]))); print('valid')"])
            .arg(&path),
        "openapi-spec-validator",
    );
    let _ = std::fs::remove_file(&path);

    // A broken document is refused, so the validator is really checking.
    let bad = json!({"openapi": "3.1.0", "info": {"title": "x"}, "paths": {"/a": {"get": {"responses": 5}}}});
    let out = Command::new(venv_python())
        .args(["-c", "import sys, json; from openapi_spec_validator import validate; validate(json.loads(sys.argv[1]))"])
        .arg(bad.to_string())
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn schemathesis_finds_no_server_errors_and_no_drift() {
    // Clarifications expire in 1 s, so that long-polls (`?wait=N`, which
    // Schemathesis's stateful phase finds through the API links) end fast.
    let s = Server::start(&[
        ("TOOLGATE_PYTHON_TIMEOUT", "2"),
        ("TOOLGATE_CLARIFY_EXPIRY_SECS", "1"),
    ]);
    let bin = tools_dir().join("venv/bin/schemathesis");
    let stdout = run_ok(
        Command::new(&bin)
            .args(["run", &format!("http://{}/openapi.json", s.addr)])
            .args([
                "--checks",
                "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
                "--max-examples",
                "40",
                "--seed",
                "1",
                "--request-timeout",
                "30",
                "--no-color",
            ])
            .env("SCHEMATHESIS_HOOKS", "")
            // Schemathesis keeps a cache in its working directory: not the repo.
            .current_dir(std::env::temp_dir()),
        "schemathesis (it found problems)",
    );
    // Every operation was exercised, not skipped: the listing, health,
    // both tools' calls (with and without `Prefer: respond-async`) and
    // their task routes, clarify's three answer routes, and the task routes.
    assert!(stdout.contains("Tested: 11"), "{stdout}");
    // No failure and no error; warnings are allowed (random clarification
    // ids mostly meet 404, which is the contract).
    let cases = stdout
        .lines()
        .find(|l| l.contains(" generated, "))
        .unwrap_or_else(|| panic!("no test-case summary:\n{stdout}"));
    assert!(
        !cases.contains("failed") && !cases.contains("errored"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("FAILURES") && !stdout.contains("ERRORS"),
        "{stdout}"
    );
}

/// A 401 says how to sign in, as MCP's authorization asks: RFC 6750's
/// challenge always; with a JWT issuer, RFC 9728's metadata, read here by
/// the MCP Python SDK's own discovery helpers and model.
#[test]
fn a_401_says_how_to_sign_in() {
    let s = Server::start(&[("TOOLGATE_TOKEN", "t0123456789abcdef")]);
    let mcp = |headers: &[(&str, &str)]| {
        let mut h = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        h.extend_from_slice(headers);
        s.request(
            "POST",
            "/mcp",
            &h,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        )
    };
    let r = mcp(&[]);
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("www-authenticate"),
        Some("Bearer realm=\"toolgate\"")
    );
    let r = mcp(&[("Authorization", "Bearer wrong")]);
    assert_eq!(
        r.header("www-authenticate"),
        Some("Bearer realm=\"toolgate\", error=\"invalid_token\"")
    );
    // Static tokens: no authorization server to name.
    let r = s.get("/.well-known/oauth-protected-resource/mcp");
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_str()),
        (404, Some("not_found"))
    );

    let issuer = "https://issuer.example/pool";
    let s = Server::start(&[
        ("TOOLGATE_TOKEN", "t0123456789abcdef"),
        ("TOOLGATE_OAUTH_ISSUER", issuer),
    ]);
    let url = format!("http://{}/mcp", s.addr);
    let check = format!(
        r#"
import httpx, sys
from mcp.client.auth.utils import extract_resource_metadata_from_www_auth, build_protected_resource_metadata_discovery_urls
from mcp.shared.auth import ProtectedResourceMetadata
r = httpx.post("{url}", json={{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}, headers={{"Accept": "application/json, text/event-stream"}})
assert r.status_code == 401, r.status_code
where = extract_resource_metadata_from_www_auth(r)
urls = build_protected_resource_metadata_discovery_urls(where, "{url}")
assert urls[0] == "http://{addr}/.well-known/oauth-protected-resource/mcp", urls
for u in urls:
    m = ProtectedResourceMetadata.model_validate_json(httpx.get(u).text)
    assert [str(a) for a in m.authorization_servers] == ["{issuer}"], m
assert str(ProtectedResourceMetadata.model_validate_json(httpx.get(urls[0]).text).resource) == "{url}"
print("discovered")
"#,
        addr = s.addr
    );
    let out = toolgate_e2e::launch::Launch::new(tools_dir().join("clients/bin/python"))
        .args(["-c", &check])
        .within(std::time::Duration::from_secs(60))
        .output();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("discovered"),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each error a call can answer, driven for real, is declared in
/// `/openapi.json` under its status, and its body validates against the
/// declared schema (openapi-schema-validator, OpenAPI 3.1): a client that
/// validates responses takes an expired session's 410.
#[test]
fn documented_errors_validate_against_openapi() {
    let s = Server::start(&[
        ("TOOLGATE_TOKEN", "t0123456789abcdef"),
        ("TOOLGATE_PYTHON_SESSION_IDLE_SECS", "1"),
    ]);
    let auth = ("Authorization", "Bearer t0123456789abcdef");
    let ct = ("Content-Type", "application/json");
    let post = |headers: &[(&str, &str)], body: &[u8]| {
        s.request("POST", "/tools/python.execute", headers, body)
    };
    let session = post(&[auth, ct], br#"{"code": "x = 1", "session": "new"}"#).json()["session"]
        .as_str()
        .unwrap()
        .to_owned();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let expired = format!(r#"{{"code": "print(x)", "session": "{session}"}}"#);
    let big = format!(r#"{{"code": "{}"}}"#, "x".repeat(30 << 20));
    let driven = [
        (400, post(&[auth, ct], br#"{"code": "1", "sesion": "new"}"#)),
        (401, post(&[ct], br#"{"code": "1"}"#)),
        (
            404,
            post(
                &[auth, ct],
                format!(r#"{{"code": "1", "session": "{}"}}"#, "0".repeat(40)).as_bytes(),
            ),
        ),
        (410, post(&[auth, ct], expired.as_bytes())),
        (413, post(&[auth, ct], big.as_bytes())),
    ];
    let mut cases = Vec::new();
    for (want, r) in driven {
        assert_eq!(r.status, want, "{}", String::from_utf8_lossy(&r.body));
        cases.push(json!({"path": "/tools/python.execute", "status": r.status, "body": r.json()}));
    }
    let doc = s.request("GET", "/openapi.json", &[auth], b"").json();
    let dir = toolgate_e2e::launch::TempDir::new("toolgate-openapi-errors");
    let doc_path = dir.path().join("openapi.json");
    let cases_path = dir.path().join("cases.json");
    std::fs::write(&doc_path, doc.to_string()).unwrap();
    std::fs::write(&cases_path, Value::Array(cases).to_string()).unwrap();
    let check = r#"
import json, sys
from openapi_schema_validator import validate, OAS31Validator
doc = json.load(open(sys.argv[1]))
for c in json.load(open(sys.argv[2])):
    declared = doc["paths"][c["path"]]["post"]["responses"]
    resp = declared.get(str(c["status"]))
    assert resp, f"{c['status']} is not declared for {c['path']}: {sorted(declared)}"
    schema = dict(resp["content"]["application/json"]["schema"], components=doc["components"])
    validate(c["body"], schema, cls=OAS31Validator)
    print("valid", c["status"])
"#;
    let out = toolgate_e2e::launch::Launch::new(venv_python())
        .args(["-c", check])
        .arg(&doc_path)
        .arg(&cases_path)
        .within(std::time::Duration::from_secs(60))
        .output();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(said.matches("valid ").count(), 5, "{said}");
}
