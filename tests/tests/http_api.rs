//! The HTTP API of docs/contracts.md#http-api against the real binary: specs, errors, auth,
//! limits and logs, with hostile input as well as happy paths.

use serde_json::{Value, json};
use toolgate_e2e::launch::{Launch, TempDir};
use toolgate_e2e::{Server, error_of};

#[test]
fn tools_are_listed_in_every_format() {
    let s = Server::start(&[]);
    let native = s.get("/tools").json();
    let t = &native["tools"][0];
    assert_eq!(t["name"], "python.execute");
    assert_eq!(t["input_schema"]["required"], json!(["code"]));
    assert!(t["output_schema"]["properties"]["exit_code"].is_object());
    let d = t["description"].as_str().unwrap();
    assert!(d.contains("Timeout: 20s."), "{d}");
    assert!(
        d.contains("Allowed imports: array, base64, bisect, calendar, cmath,"),
        "{d}"
    );

    let oa = s.get("/tools?format=openai").json();
    assert_eq!(oa["tools"][0]["type"], "function");
    assert_eq!(oa["tools"][0]["function"]["name"], "python__execute");
    assert_eq!(oa["tools"][0]["function"]["parameters"]["type"], "object");
    let an = s.get("/tools?format=anthropic").json();
    assert_eq!(an["tools"][0]["name"], "python__execute");
    assert!(an["tools"][0]["input_schema"]["properties"]["code"].is_object());
    let mcp = s.get("/tools?format=mcp").json();
    assert_eq!(mcp["tools"][0]["name"], "python__execute");
    assert!(mcp["tools"][0]["outputSchema"].is_object());
    assert_eq!(mcp["tools"][0]["annotations"]["readOnlyHint"], false);

    let r = s.get("/tools?format=xml");
    let (st, code, msg) = error_of(&r);
    assert_eq!((st, code.as_str()), (400, "invalid_input"));
    assert!(msg.contains("native, openai, anthropic, mcp"));
}

#[test]
fn configuration_shows_in_the_description() {
    let s = Server::start(&[
        ("TOOLGATE_PYTHON_TIMEOUT", "7"),
        ("TOOLGATE_PYTHON_ALLOWED_MODULES", "html"),
        ("TOOLGATE_PYTHON_NAMESPACE", "py"),
    ]);
    let tools = s.get("/tools").json();
    assert_eq!(tools["tools"][0]["name"], "py.execute");
    let d = tools["tools"][0]["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(d.contains("Timeout: 7s."), "{d}");
    assert!(d.contains("hmac, html, itertools"), "{d}");
    let r = s.post_json(
        "/tools/py__execute",
        &json!({"code": "import html; result = html.escape('<')"}),
    );
    assert_eq!(r.json()["result"], "&lt;");
    let r = s.post_json("/tools/python.execute", &json!({"code": "1"}));
    assert_eq!(error_of(&r).1, "unknown_tool");
}

#[test]
fn invalid_input_is_a_400_with_the_contract_message() {
    let s = Server::start(&[]);
    let obj_msg = "Tool input must be a JSON object (dict)";
    let code_msg = "\"code\" is required and must be a non-empty string";
    let cases: Vec<(Value, &str)> = vec![
        (json!([1, 2]), obj_msg),
        (json!("print(1)"), obj_msg),
        (json!(null), obj_msg),
        (json!(42), obj_msg),
        (json!({}), code_msg),
        (json!({"code": ""}), code_msg),
        (json!({"code": "   \n\t"}), code_msg),
        (json!({"code": 1}), code_msg),
        (json!({"code": ["print(1)"]}), code_msg),
        // An unknown key is named, before anything else is checked: a
        // misspelt argument is never ignored.
        (
            json!({"source": "print(1)"}),
            "Unknown input key \"source\". This tool takes: code, files, session, resume",
        ),
        (
            json!({"code": "1", "sesion": "new"}),
            "Unknown input key \"sesion\" (did you mean \"session\"?). This tool takes: code, files, session, resume",
        ),
        (
            json!({"code": "1", "timeout": 1}),
            "Unknown input key \"timeout\". This tool takes: code, files, session, resume",
        ),
    ];
    for (body, want) in cases {
        for name in ["python.execute", "python__execute"] {
            let r = s.post_json(&format!("/tools/{name}"), &body);
            assert_eq!(
                error_of(&r),
                (400, "invalid_input".into(), want.into()),
                "{body}"
            );
        }
    }
    // An empty body is no arguments at all.
    let r = s.request("POST", "/tools/python.execute", &[], b"");
    assert_eq!(error_of(&r), (400, "invalid_input".into(), code_msg.into()));
}

#[test]
fn malformed_requests_get_json_errors_never_500() {
    let s = Server::start(&[]);
    let ct = [("Content-Type", "application/json")];
    let r = s.request("POST", "/tools/python.execute", &ct, b"{\"code\": ");
    let (st, code, msg) = error_of(&r);
    assert_eq!((st, code.as_str()), (400, "invalid_input"));
    assert!(msg.contains("not valid JSON"), "{msg}");

    let r = s.request("POST", "/tools/python.execute", &ct, b"\xff\xfe\x00garbage");
    assert_eq!(error_of(&r).0, 400);

    let r = s.request(
        "POST",
        "/tools/python.execute",
        &[("Content-Type", "text/plain")],
        b"{\"code\": \"print(1)\"}",
    );
    let (st, code, msg) = error_of(&r);
    assert_eq!((st, code.as_str()), (400, "invalid_input"));
    assert!(msg.contains("application/json"), "{msg}");

    // Over the limit: refused by Content-Length, and when streamed without
    // one. python.execute takes its files on top of 1 MiB; other tools 1 MiB.
    let limit = toolgate_e2e::python_body_limit();
    let big = format!("{{\"code\": \"{}\"}}", "x".repeat(limit));
    let r = s.request("POST", "/tools/python.execute", &ct, big.as_bytes());
    assert_eq!(error_of(&r).0, 413);
    assert_eq!(error_of(&r).1, "too_large");
    assert!(
        error_of(&r).2.contains(&limit.to_string()),
        "{:?}",
        error_of(&r)
    );
    let over_1_mib = format!("{{\"question\": \"{}\"}}", "x".repeat(1_100_000));
    let r = s.request("POST", "/tools/clarify", &ct, over_1_mib.as_bytes());
    assert_eq!(
        error_of(&r),
        (
            413,
            "too_large".into(),
            "Request body is larger than 1048576 bytes".into()
        )
    );
    let mut chunked = Vec::new();
    for chunk in big.as_bytes().chunks(64 * 1024) {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let r = s.request(
        "POST",
        "/tools/python.execute",
        &[
            ("Content-Type", "application/json"),
            ("Transfer-Encoding", "chunked"),
        ],
        &chunked,
    );
    assert_eq!(r.status, 413, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(error_of(&r).1, "too_large");

    // Just under the limit is accepted.
    let ok = format!(
        "{{\"code\": \"x = '{}'\\nresult = len(x)\"}}",
        "y".repeat(1_000_000)
    );
    let r = s.request("POST", "/tools/python.execute", &ct, ok.as_bytes());
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"], 1_000_000);

    let r = s.post_json("/tools/nope", &json!({"code": "1"}));
    assert_eq!(error_of(&r).0, 404);
    assert_eq!(error_of(&r).1, "unknown_tool");
    let r = s.get("/nowhere");
    assert_eq!(error_of(&r).0, 404);
    let r = s.get("/tools/python.execute");
    let (st, code, _) = error_of(&r);
    assert_eq!((st, code.as_str()), (400, "invalid_input"));
    let r = s.request("DELETE", "/tools", &[], b"");
    assert_eq!(error_of(&r).0, 400);

    // Rejections from axum's own extractors are JSON too (found by Schemathesis).
    let r = s.get("/tools?format=openai&format=mcp");
    let (st, code, _) = error_of(&r);
    assert_eq!((st, code.as_str()), (400, "invalid_input"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let r = s.request("POST", "/tools/%FF%FE", &ct, b"{}");
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("application/json"))
    );
    let (st, code, _) = error_of(&r);
    assert_eq!((st, code.as_str()), (400, "invalid_input"));
}

#[test]
fn bearer_token_guards_everything_but_healthz() {
    let secret = "s3cret-token-value";
    let s = Server::start_with_args(&[], &["--token", secret]);
    let body = br#"{"code": "print(1)"}"#;
    let ct = ("Content-Type", "application/json");
    let r = s.request("POST", "/tools/python.execute", &[ct], body);
    assert_eq!(error_of(&r).0, 401);
    assert_eq!(error_of(&r).1, "unauthorized");
    let r = s.request(
        "POST",
        "/tools/python.execute",
        &[ct, ("Authorization", "Bearer wrong")],
        body,
    );
    assert_eq!(error_of(&r).0, 401);
    let r = s.request("GET", "/tools", &[("Authorization", "Basic abc")], b"");
    assert_eq!(error_of(&r).0, 401);
    // The API's description is behind the token too (/mcp: mcp_openapi.rs).
    let (status, code, _) = error_of(&s.request("GET", "/openapi.json", &[], b""));
    assert_eq!((status, code.as_str()), (401, "unauthorized"));
    let auth = format!("Bearer {secret}");
    let r = s.request(
        "POST",
        "/tools/python.execute",
        &[ct, ("Authorization", &auth)],
        body,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["stdout"], "1\n");
    assert_eq!(s.get("/healthz").status, 200);
    assert!(!s.logs().contains(secret), "the token must never be logged");

    // TOOLGATE_TOKEN works the same way.
    let s = Server::start(&[("TOOLGATE_TOKEN", secret)]);
    assert_eq!(s.get("/tools").status, 401);
}

/// The four walls the pool keeps itself as its probe scripts found them,
/// run inside the first `/healthz`; the others as the zygote checked them.
#[test]
fn healthz_reports_the_walls() {
    const POOLS: [&str; 4] = [
        "process_per_call",
        "instance_per_call",
        "stop_at_deadline",
        "kill_at_deadline",
    ];
    // The in-VM stop's 20 ms is CPU-decided.
    let _machine = toolgate_e2e::timing::machine_lock();
    let s = Server::start(&[]);
    let h = s.get("/healthz").json();
    assert_eq!(h["status"], "ok");
    assert_eq!(h["tools"], json!(["python.execute", "clarify"]));
    let w = &h["sandbox"]["walls"];
    assert_eq!(w.get("probe_error"), None, "{w}");
    for wall in ["capability_gap", "scrub", "rlimits"]
        .into_iter()
        .chain(POOLS)
    {
        assert_eq!(w[wall], true, "{wall} in {w}");
    }
    assert!(w["seccomp"].is_boolean());
    assert_eq!(w["memory_mb"], 256);
    // The probe ran down the calls' path: its deadline stops were logged.
    let logs = s.json_logs();
    let stops: Vec<&str> = logs
        .iter()
        .filter(|l| l["message"] == "script stopped at its deadline")
        .filter_map(|l| l["stop"].as_str())
        .collect();
    assert!(
        stops.contains(&"in_vm") && stops.contains(&"killed"),
        "{stops:?}"
    );
}

/// `/healthz` tells a stranger only that the server is up: the tools, the
/// sandbox's walls, accounts and their errors are for whoever may call.
#[test]
fn healthz_without_a_token_says_only_ok() {
    let caller = "healthz-caller-token-1234";
    let approver = "healthz-approver-token-1234";
    let s = Server::start_with_args(
        &[("TOOLGATE_APPROVER_TOKEN", approver)],
        &["--token", caller],
    );
    for headers in [
        &[][..],
        &[("Authorization", "Bearer wrong-token-value-1234")],
    ] {
        let r = s.request("GET", "/healthz", headers, b"");
        assert_eq!(r.status, 200);
        assert_eq!(r.json(), json!({"status": "ok"}), "{headers:?}");
    }
    for token in [caller, approver] {
        let auth = format!("Bearer {token}");
        let h = s
            .request("GET", "/healthz", &[("Authorization", &auth)], b"")
            .json();
        assert_eq!(h["status"], "ok");
        assert_eq!(h["tools"], json!(["python.execute", "clarify"]), "{h}");
        assert_eq!(h["sandbox"]["walls"]["scrub"], true, "{h}");
    }
}

/// A body without `Content-Type` is what a web page's `no-cors` fetch of a
/// `Blob` sends: refused, and the tool does not run. An empty body still
/// means no arguments.
#[test]
fn a_json_body_needs_its_content_type() {
    let s = Server::start(&[]);
    let r = s.request(
        "POST",
        "/tools/python.execute",
        &[],
        br#"{"code": "print(1)"}"#,
    );
    assert_eq!(
        error_of(&r),
        (
            400,
            "invalid_input".into(),
            "Content-Type: application/json is required for a JSON body".into()
        )
    );
    let r = s.request("POST", "/tools/clarify", &[], br#"{"question": "q?"}"#);
    assert_eq!(error_of(&r).1, "invalid_input", "{r:?}");
    // No body, or a blank one: no arguments, as before.
    let r = s.request("POST", "/tools/python.execute", &[], b"");
    assert_eq!(error_of(&r).1, "invalid_input");
    assert!(error_of(&r).2.contains("code"), "{r:?}");
    let ran: Vec<Value> = s
        .json_logs_when(std::time::Duration::from_secs(2), |_| false)
        .into_iter()
        .filter(|l| l["message"] == "tool call" && l["outcome"] == "ok")
        .collect();
    assert!(ran.is_empty(), "{ran:?}");
}

#[test]
fn every_call_logs_tool_duration_and_outcome_as_json() {
    let s = Server::start(&[]);
    s.exec("print('hi')");
    let _ = s.post_json("/tools/python.execute", &json!({"code": ""}));
    // The line is written as the answer goes out; wait for both.
    let is_call = |v: &Value| v["message"] == "tool call";
    let lines: Vec<Value> = s
        .json_logs_when(std::time::Duration::from_secs(5), |ls| {
            ls.iter().filter(|v| is_call(v)).count() >= 2
        })
        .into_iter()
        .filter(is_call)
        .collect();
    let logs = s.logs();
    assert_eq!(lines.len(), 2, "logs:\n{logs}");
    assert_eq!(lines[0]["tool"], "python.execute");
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[0]["exit_code"], 0);
    assert!(lines[0]["duration_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(lines[1]["outcome"], "invalid_input");
    assert!(!logs.contains("print('hi')"), "scripts are not logged");
}

fn start_fails(env: &[(&str, &str)]) -> String {
    let out = Launch::toolgate(&["serve", "--addr", "127.0.0.1:0"])
        .envs(env)
        .within(std::time::Duration::from_secs(30))
        .output();
    assert!(!out.status.success(), "toolgate started with {env:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_configuration_refuses_to_start_with_a_clear_error() {
    let e = start_fails(&[("TOOLGATE_PYTHON_ALLOWED_MODULES", "os")]);
    assert!(e.contains("\"os\" cannot be allowed"), "{e}");
    let e = start_fails(&[("TOOLGATE_PYTHON_ALLOWED_MODULES", "html,importlib")]);
    assert!(e.contains("\"importlib\" cannot be allowed"), "{e}");
    let e = start_fails(&[("TOOLGATE_PYTHON_ALLOWED_MODULES", "no_such_module_xyz")]);
    assert!(
        e.contains("no_such_module_xyz") && e.contains("cannot be imported"),
        "{e}"
    );
    let e = start_fails(&[("TOOLGATE_PYTHON_MEMORY_MB", "lots")]);
    assert!(e.contains("TOOLGATE_PYTHON_MEMORY_MB"), "{e}");
}

#[test]
fn call_and_tools_subcommands_print_json() {
    let out = Launch::toolgate(&[
        "call",
        "python__execute",
        "--json",
        r#"{"code": "result = 6 * 7"}"#,
    ])
    .output();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"], 42);

    let out = Launch::toolgate(&["call", "python.execute"])
        .stdin(br#"{"code": "print('from stdin')"}"#)
        .output();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stdout"], "from stdin\n");

    let out = Launch::toolgate(&["call", "python.execute", "--json", "[1]"]).output();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    let e: Value = serde_json::from_str(last).unwrap_or_else(|_| panic!("{stderr}"));
    assert_eq!(e["error"]["code"], "invalid_input");

    let out = Launch::toolgate(&["tools", "--format", "openai"]).output();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tools"][0]["function"]["name"], "python__execute");
}

/// `toolgate tools` with a hermetic environment (the launcher's).
fn tools_command(env: &[(&str, &str)], format: &str) -> std::process::Output {
    Launch::toolgate(&["tools", "--format", format])
        .envs(env)
        .within(std::time::Duration::from_secs(30))
        .output()
}

#[test]
fn tools_prints_what_the_server_lists_without_starting_anything() {
    let env = [
        ("TOOLGATE_PYTHON_TIMEOUT", "7"),
        ("TOOLGATE_PYTHON_NAMESPACE", "py"),
        ("TOOLGATE_CLARIFY_EXPIRY_SECS", "600"),
    ];
    let s = Server::start(&env);
    for format in ["native", "openai", "anthropic", "mcp"] {
        let out = tools_command(&env, format);
        assert!(out.status.success(), "{format}: {out:?}");
        let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
        let served = s.get(&format!("/tools?format={format}")).json();
        assert_eq!(printed, served, "{format}");
    }

    // A module that cannot be imported stops a sandbox from warming up, an
    // SSM prefix with no AWS credentials stops the SSH inventory from
    // loading, and the clarify store would be created in the data folder:
    // the listing needs none of them.
    let tmp = TempDir::new("toolgate-tools");
    let data_dir = tmp.path().join("data");
    let env = [
        ("TOOLGATE_PYTHON_ALLOWED_MODULES", "no_such_module_xyz"),
        ("TOOLGATE_SSH_SSM_PREFIX", "/toolgate/servers"),
        ("TOOLGATE_DATA_DIR", data_dir.to_str().unwrap()),
    ];
    let out = tools_command(&env, "native");
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["python.execute", "list_servers", "ssh_run", "clarify"]
    );
    let d = v["tools"][0]["description"].as_str().unwrap();
    assert!(d.contains("no_such_module_xyz"), "{d}");
    assert!(!data_dir.exists(), "the listing created the data folder");
    let e = start_fails(&env);
    assert!(e.contains("cannot be imported"), "serving does start: {e}");
}
