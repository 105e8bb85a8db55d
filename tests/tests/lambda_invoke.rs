//! Each Lambda function binary under `cargo lambda watch` (the real Lambda
//! Runtime API loop: next-invocation, response and error endpoints),
//! invoked with `cargo lambda invoke` on the committed event fixtures.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::code_mode::OPS_SCRIPT;
use toolgate_e2e::lambda_events::fixture;
use toolgate_e2e::peer::{
    Peer, cargo_env, everything, free_port, moto, run_ok, tools_dir, tools_path,
};
use toolgate_e2e::stepfunctions::{
    AWS, boto, execute_state_machines, finished, start_waiting_execution,
};
use toolgate_e2e::workspace;

/// The JWT issuer the gateway is given: its RFC 9728 metadata names it.
const ISSUER: &str = "https://issuer.example/pool";

/// `cargo lambda watch` on a free loopback port, serving the workspace's
/// function binaries (built with the same target dir as the tests).
fn watch(env: &[(&str, &str)]) -> (Peer, u16) {
    watch_on(free_port(), env)
}

fn watch_on(port: u16, env: &[(&str, &str)]) -> (Peer, u16) {
    watch_for(port, 60, env)
}

/// As [`watch_on`], cutting each invocation at `timeout` seconds.
fn watch_for(port: u16, timeout: u64, env: &[(&str, &str)]) -> (Peer, u16) {
    let mut cmd = Command::new("cargo");
    cmd.args(["lambda", "watch", "--ignore-changes", "--timeout"])
        .arg(timeout.to_string())
        .args(["--invoke-address", "127.0.0.1", "--invoke-port"])
        .arg(port.to_string())
        .env("PATH", tools_path())
        .envs(cargo_env())
        .current_dir(workspace());
    // The functions it starts inherit this environment.
    cmd.envs(env.iter().copied());
    let mut peer = Peer::spawn("cargo lambda watch", &mut cmd);
    peer.wait_for_port(port, Duration::from_secs(60));
    (peer, port)
}

enum Outcome {
    /// The function returned this payload.
    Returned(Value),
    /// The function failed with this `errorType` and message.
    Failed(String),
}

fn invoke(port: u16, function: &str, fixture: &str) -> Outcome {
    let data = workspace().join("tests/fixtures/lambda").join(fixture);
    invoke_with(
        port,
        function,
        fixture,
        &["--data-file".as_ref(), data.as_os_str()],
    )
}

/// Invokes with a payload built by the test (through a file: an argument
/// is capped at 128 KiB).
fn invoke_value(port: u16, function: &str, payload: &Value) -> Outcome {
    toolgate_e2e::issued::record_request_json(payload);
    invoke_text(port, function, &payload.to_string())
}

/// Invokes with `payload` exactly as written (serde_json's `Value` would
/// sort an object's keys).
fn invoke_text(port: u16, function: &str, payload: &str) -> Outcome {
    let file = std::env::temp_dir().join(format!(
        "toolgate-event-{}-{:?}.json",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&file, payload).unwrap();
    let outcome = invoke_with(
        port,
        function,
        "(built)",
        &["--data-file".as_ref(), file.as_os_str()],
    );
    let _ = std::fs::remove_file(&file);
    outcome
}

fn invoke_with(port: u16, function: &str, fixture: &str, data: &[&std::ffi::OsStr]) -> Outcome {
    let out = Command::new("cargo")
        .args(["lambda", "invoke", function, "--output-format", "json"])
        .args(["--invoke-address", "127.0.0.1", "--invoke-port"])
        .arg(port.to_string())
        .args(data)
        .env("PATH", tools_path())
        .current_dir(workspace())
        .output()
        .expect("run cargo lambda invoke");
    // The ids in the function's answer, for the log scan.
    toolgate_e2e::issued::record_body(&out.stdout);
    toolgate_e2e::issued::record_text(&String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        Outcome::Returned(
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{fixture}: {e}: {stdout}")),
        )
    } else {
        Outcome::Failed(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// What `function` returned; fails the test, with the functions' log, if it
/// failed.
fn returned(watch: &Peer, port: u16, function: &str, payload: &Value) -> Value {
    match invoke_value(port, function, payload) {
        Outcome::Returned(v) => v,
        Outcome::Failed(e) => panic!("{function} failed: {e}\n{}", watch.logs()),
    }
}

/// An API Gateway / Function URL response: status and parsed JSON body.
fn http(fixture: &str, outcome: Outcome) -> (u64, Value) {
    let resp = match outcome {
        Outcome::Returned(resp) => resp,
        Outcome::Failed(e) => panic!("{fixture}: HTTP events always get a response, not {e}"),
    };
    let status = resp["statusCode"]
        .as_u64()
        .unwrap_or_else(|| panic!("{fixture}: no statusCode in {resp}"));
    // A REST API's response carries its headers in multiValueHeaders only.
    let content_type = resp["headers"]
        .get("content-type")
        .or_else(|| resp["multiValueHeaders"]["content-type"].get(0));
    assert_eq!(
        content_type,
        Some(&json!("application/json")),
        "{fixture}: {resp}"
    );
    let body = serde_json::from_str(resp["body"].as_str().expect("body")).expect("JSON body");
    (status, body)
}

/// Two IAM principals that sign requests to an HTTP API with IAM auth.
const ALICE_ARN: &str = "arn:aws:iam::123456789012:user/alice";
const BOB_ARN: &str = "arn:aws:iam::123456789012:role/bob";

/// API Gateway's event for `POST /tools/{tool}` with `args`, signed by the
/// IAM principal `arn` (an HTTP API's IAM authorizer: no JWT, and the
/// caller is the signer's ARN), in scope for the server `box`.
fn iam_event(tool: &str, arn: &str, args: &Value) -> Value {
    let mut event = fixture("apigw_v2_call.json");
    let path = format!("/tools/{tool}");
    event["rawPath"] = json!(path);
    event["requestContext"]["http"]["path"] = json!(path);
    event["pathParameters"] = json!({ "name": tool });
    event["requestContext"]["authorizer"] = json!({"iam": {
        "accessKey": "AKIAEXAMPLE", "accountId": "123456789012",
        "callerId": "AIDAEXAMPLE", "principalOrgId": null,
        "userArn": arn, "userId": "AIDAEXAMPLE"
    }});
    event["headers"]["x-toolgate-servers"] = json!("box");
    let body = args.to_string();
    event["headers"]["content-length"] = json!(body.len().to_string());
    event["body"] = json!(body);
    event
}

#[test]
fn python_execute_function_answers_every_event_kind() {
    // Traces go to a receiver; a batch would wait a minute, so only the
    // flush after each invocation brings them in time.
    let (_otlp, otlp) = toolgate_e2e::otlp::receiver();
    // A 1 MiB files cap keeps the over-the-limit event small (2.7 MB).
    let (watch, port) = watch(&[
        ("TOOLGATE_PYTHON_MAX_FILES_MB", "1"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp),
        ("OTEL_BSP_SCHEDULE_DELAY", "60000"),
    ]);
    let f = "python-execute";

    let (status, body) = http("list", invoke(port, f, "apigw_v2_list_tools.json"));
    assert_eq!(status, 200, "{body}\n{}", watch.logs());
    assert_eq!(body["tools"][0]["function"]["name"], "python__execute");

    let (status, body) = http("call", invoke(port, f, "apigw_v2_call.json"));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["stdout"], "hi from lambda\n");
    assert_eq!(body["result"], json!({"sum": 45}));
    // 60 s of function time and API Gateway's 30 s both leave the default
    // 20 s timeout alone, so nothing is said about lowering it.
    assert_eq!(body["stderr"], "", "{body}");

    let (status, body) = http("base64", invoke(port, f, "apigw_v2_call_base64.json"));
    assert_eq!((status, body["stdout"].clone()), (200, json!("é ✓\n")));

    let (status, body) = http("bad json", invoke(port, f, "apigw_v2_bad_json.json"));
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "invalid_input");

    let (status, body) = http("unknown", invoke(port, f, "apigw_v2_unknown_tool.json"));
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "unknown_tool");

    // A REST API (v1 event) on its stage `prod`, and an HTTP API on a named
    // stage: both route the API's own path.
    let (status, body) = http("v1", invoke(port, f, "apigw_v1_call.json"));
    assert_eq!(status, 200, "{body}\n{}", watch.logs());
    assert_eq!(
        (body["stdout"].clone(), body["result"].clone()),
        (json!("hi from a REST API\n"), json!(42))
    );
    let mut staged = fixture("apigw_v2_call.json");
    staged["rawPath"] = json!("/prod/tools/python.execute");
    staged["requestContext"]["stage"] = json!("prod");
    staged["requestContext"]["http"]["path"] = json!("/prod/tools/python.execute");
    let (status, body) = http("v2 stage", invoke_value(port, f, &staged));
    assert_eq!(
        (status, body["stdout"].clone()),
        (200, json!("hi from lambda\n")),
        "{body}"
    );

    // Over the limit and the wrong content type: the same errors as serve's.
    let mut big = fixture("apigw_v2_call.json");
    let code = format!(
        "{{\"code\": \"{}\"}}",
        "x".repeat(toolgate_shared::tools::python_execute::max_body_bytes(
            1 << 20
        ))
    );
    big["headers"]["content-length"] = json!(code.len().to_string());
    big["body"] = json!(code);
    let (status, body) = http("413", invoke_value(port, f, &big));
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (413, json!("too_large")),
        "{body}"
    );
    let mut text = fixture("apigw_v1_call.json");
    text["headers"]["Content-Type"] = json!("text/plain");
    text["multiValueHeaders"]["Content-Type"] = json!(["text/plain"]);
    let (status, body) = http("text/plain", invoke_value(port, f, &text));
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!("invalid_input")),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("application/json"),
        "{body}"
    );

    // Files in and out, invoked directly as Step Functions would.
    let out = returned(
        &watch,
        port,
        f,
        &json!({
            "code": "open('out.txt', 'w').write(open('in.txt').read().upper())",
            "files": {"in.txt": "from lambda", "bad": {"base64": "AAH/"}}
        }),
    );
    assert_eq!(out["files"], json!({"out.txt": "FROM LAMBDA"}), "{out}");

    // No TOOLGATE_SESSIONS_TABLE here: a session is 503, saying so.
    let mut session = fixture("apigw_v2_call.json");
    let asked = json!({"code": "print(1)", "session": "new"}).to_string();
    session["headers"]["content-length"] = json!(asked.len().to_string());
    session["body"] = json!(asked);
    let (status, body) = http("session", invoke_value(port, f, &session));
    assert_eq!(
        (status, &body["error"]),
        (
            503,
            &json!({"code": "not_configured", "message": "sessions are not set up on this deployment (its operator names a table in TOOLGATE_SESSIONS_TABLE to keep them): run without \"session\""})
        ),
        "{body}"
    );

    let (status, body) = http("healthz", invoke(port, f, "apigw_v2_healthz.json"));
    assert_eq!(status, 200);
    assert_eq!(body["sandbox"]["walls"]["seccomp"], true, "{body}");

    let (status, body) = http("url", invoke(port, f, "function_url_call.json"));
    assert_eq!(
        (status, body["exit_code"].clone()),
        (200, json!(1)),
        "{body}"
    );

    match invoke(port, f, "direct_arguments.json") {
        Outcome::Returned(v) => assert_eq!(v["result"], json!({"answer": 42}), "{v}"),
        Outcome::Failed(e) => panic!("direct call failed: {e}"),
    }
    match invoke(port, f, "direct_envelope.json") {
        Outcome::Returned(v) => assert_eq!(v["exit_code"], 3, "a script's exit is a result: {v}"),
        Outcome::Failed(e) => panic!("direct call failed: {e}"),
    }
    for (bad, kind) in [
        ("direct_invalid.json", "InvalidInput"),
        ("direct_unknown_tool.json", "UnknownTool"),
    ] {
        match invoke(port, f, bad) {
            Outcome::Failed(e) => assert!(e.contains(kind), "{bad}: {e}"),
            Outcome::Returned(v) => panic!("{bad} must fail the invocation, got {v}"),
        }
    }
    // An HTTP event that does not parse fails the invocation. The runtime's
    // own line of a function error is not written (it would carry ids), so
    // Toolgate's line says what failed.
    let unreadable = json!({"requestContext": {"http": 1}, "rawPath": ["/healthz"]});
    match invoke_value(port, f, &unreadable) {
        Outcome::Failed(e) => assert!(e.contains("InvalidEvent"), "{e}"),
        Outcome::Returned(v) => panic!("an unreadable event must fail, got {v}"),
    }
    let said = |logs: &str| {
        !lines_with(
            logs,
            &[
                "\"message\":\"invocation failed\"",
                "\"error_type\":\"InvalidEvent\"",
            ],
        )
        .is_empty()
    };
    let logs = watch.logs_when(Duration::from_secs(10), said);
    assert!(said(&logs), "{logs}");
    emf_lines_are_metrics(&logs);
    spans_sent_after_each_invocation(&otlp);
}

/// The traces of the calls above reached the receiver within seconds,
/// under the function's resource: a direct call's tool call, and an HTTP
/// call's request with its tool call and sandbox run.
fn spans_sent_after_each_invocation(otlp: &str) {
    use toolgate_e2e::otlp::{child_of, named, spans_within};
    let seen = spans_within(otlp, Duration::from_secs(10), "the calls' spans", |spans| {
        named(spans, "tool call")
            .iter()
            .any(|s| s["attributes"]["transport"] == "lambda")
            && named(spans, "tool call")
                .iter()
                .any(|s| s["attributes"]["transport"] == "http")
    });
    let spans = seen["spans"].as_array().unwrap();
    let direct = named(spans, "tool call")
        .into_iter()
        .find(|s| s["attributes"]["transport"] == "lambda")
        .unwrap();
    assert_eq!(direct["resource"]["cloud.provider"], "aws", "{direct}");
    assert!(direct["resource"]["faas.name"].is_string(), "{direct}");
    let request = named(spans, "request")
        .into_iter()
        .find(|r| {
            spans
                .iter()
                .any(|s| s["name"] == "tool call" && s["parent_span_id"] == r["span_id"])
        })
        .expect("an HTTP call's request span with its tool call");
    let call = child_of(spans, request, "tool call");
    child_of(spans, call, "sandbox run");
}

/// Each call's CloudWatch embedded-metric-format line (stdout), checked as
/// CloudWatch reads one: the metadata names a namespace, dimension sets
/// whose keys are the line's string members, and metrics whose names are
/// its numeric members; an ok call has `Errors` 0, a refused one 1.
fn emf_lines_are_metrics(logs: &str) {
    let lines: Vec<Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .filter(|v| v.get("_aws").is_some())
        .collect();
    assert!(!lines.is_empty(), "no EMF line in:\n{logs}");
    for line in &lines {
        let meta = &line["_aws"];
        assert!(
            meta["Timestamp"]
                .as_i64()
                .is_some_and(|t| t > 1_600_000_000_000),
            "{line}"
        );
        for directive in meta["CloudWatchMetrics"]
            .as_array()
            .expect("CloudWatchMetrics")
        {
            assert_eq!(directive["Namespace"], "Toolgate", "{line}");
            for set in directive["Dimensions"].as_array().unwrap() {
                for key in set.as_array().unwrap() {
                    assert!(
                        line[key.as_str().unwrap()].is_string(),
                        "dimension {key} in {line}"
                    );
                }
            }
            for metric in directive["Metrics"].as_array().unwrap() {
                assert!(
                    line[metric["Name"].as_str().unwrap()].is_number(),
                    "{metric} in {line}"
                );
            }
        }
    }
    let of = |outcome: &str| {
        lines
            .iter()
            .find(|l| l["tool"] == "python.execute" && l["outcome"] == outcome)
            .unwrap_or_else(|| panic!("no EMF line for an {outcome} call: {lines:?}"))
    };
    assert_eq!(of("ok")["Errors"], 0);
    assert_eq!(of("invalid_input")["Errors"], 1);
}

/// A function that cannot start (clarify without its table) reports why to
/// the Runtime API, so the invocation fails at once with the reason instead
/// of waiting for the timeout. In a watch of its own: `cargo lambda watch`
/// 1.9.2 does not always give an init error to the right invocation when
/// other functions run beside it (seen with the gateway listing its peers).
#[test]
fn a_function_that_cannot_start_fails_its_invocation_with_the_reason() {
    let (watch, port) = watch(&[]);
    let started = std::time::Instant::now();
    // `cargo lambda invoke` prints an init error as its output (AWS marks
    // it a function error): either way, the reason is what comes back.
    let answer = match invoke_value(port, "clarify", &json!({"toolgate": "describe"})) {
        Outcome::Failed(e) => e,
        Outcome::Returned(v) => v.to_string(),
    };
    assert!(
        answer.contains("TOOLGATE_CLARIFY_TABLE is not set") && answer.contains("InitError"),
        "{answer}\n{}",
        watch.logs()
    );
    // The watch's own timeout is 60 s; an unreported init error waits for it.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

/// A function error's message as `cargo lambda invoke` prints it, without
/// the box it wraps it in (whitespace and `│` taken out) or its own footer
/// (a link to cargo-lambda's discussions).
fn error_message(e: &str) -> String {
    let flat: String = e
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '│')
        .collect();
    let message = flat.split_once('×').map_or(flat.as_str(), |(_, m)| m);
    message
        .split("Wasthisbehaviorunexpected?")
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The approval's id from an ApprovalRequired failure. The agent is told
/// the id and how to use it once approved, and nothing that decides it: no
/// link, no capability.
fn approval_id(e: &str, watch: &Peer) -> String {
    assert!(e.contains("ApprovalRequired"), "{e}\n{}", watch.logs());
    let message = error_message(e);
    let id = message
        .match_indices("Approval")
        .map(|(at, w)| &message[at + w.len()..])
        .find_map(|rest| {
            let id = rest.get(..40)?;
            id.bytes()
                .all(|b| b.is_ascii_hexdigit())
                .then(|| id.to_owned())
        })
        .unwrap_or_else(|| panic!("no approval id in {message}"));
    // The box may have cut the id across lines: the log scan looks for it.
    toolgate_e2e::issued::record("approval id", &id);
    // `"approval"` (ssh_run) or `"toolgate_approval"` (a cloud tool).
    assert!(
        message.contains(&format!("approval\":\"{id}\"")),
        "{message}"
    );
    for link in ["http", "/clarifications/", "/inbox", "#cap="] {
        assert!(!message.contains(link), "{link} in {message}");
    }
    id
}

/// The approvers' group: `TOOLGATE_APPROVERS_JWT_GROUP` in the watch, and
/// in the decision fixture's `cognito:groups` claim (flattened as API
/// Gateway passes an array).
const APPROVERS_GROUP: &str = "toolgate-approvers";

/// The approver's JWT `sub` in the decision fixture.
const APPROVER_SUB: &str = "ops-5d2e";

/// API Gateway's event for `POST /approvals/{id}/decision` through the JWT
/// authorizer: from the fixture's approver, or from a JWT with `claims`.
fn decision_event(id: &str, decision: &str, claims: Option<Value>) -> Value {
    let mut event = fixture("apigw_v2_approval_decision.json");
    let path = format!("/approvals/{id}/decision");
    event["rawPath"] = json!(path);
    event["requestContext"]["http"]["path"] = json!(path);
    event["pathParameters"] = json!({ "id": id });
    let body = json!({ "decision": decision }).to_string();
    event["headers"]["content-length"] = json!(body.len().to_string());
    event["body"] = json!(body);
    if let Some(claims) = claims {
        event["requestContext"]["authorizer"]["jwt"]["claims"] = claims;
    }
    event
}

/// An approver approves `id` through the clarify function, after everything
/// the agent could try is refused: the answer route of questions, and the
/// decision route with a JWT outside the approvers' group (its own, and
/// another group's).
fn approve(watch: &Peer, port: u16, id: &str) {
    let api = |what: &str, event: Value| http(what, invoke_value(port, "clarify", &event));
    let (status, body) = api(
        "the agent answers",
        answer_route_event("POST", id, Some(r#"{"choice": 0}"#)),
    );
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (403, json!("forbidden")),
        "{body}\n{}",
        watch.logs()
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("only an approver can decide it"),
        "{body}"
    );
    let agent =
        fixture("apigw_v2_call.json")["requestContext"]["authorizer"]["jwt"]["claims"].clone();
    let other_group = json!({"sub": "dev-11", "cognito:groups": "[operators developers]"});
    for (who, claims) in [
        ("the agent's JWT", agent),
        ("another group's JWT", other_group),
    ] {
        let (status, body) = api(who, decision_event(id, "approve", Some(claims)));
        assert_eq!(
            (status, body["error"]["code"].clone()),
            (403, json!("forbidden")),
            "{who}: {body}"
        );
    }
    let (status, body) = api(
        "the agent reads it",
        clarification_event("GET", id, "", "", None),
    );
    assert_eq!(
        (status, body["status"].clone()),
        (200, json!("pending")),
        "nothing above decided it: {body}"
    );
    let (status, body) = api("the approver decides", decision_event(id, "approve", None));
    assert_eq!(
        (status, body["status"].clone(), body["approver"].clone()),
        (200, json!("approved"), json!(format!("jwt:{APPROVER_SUB}"))),
        "{body}\n{}",
        watch.logs()
    );
}

/// What a log line says for an id (docs/approvals.md, "Logs"), computed
/// apart from the product's code.
fn id_ref(id: &str) -> String {
    run_ok(
        Command::new("python3").args([
            "-c",
            "import hashlib, sys; print('ref:' + hashlib.sha256(b'toolgate-log-ref\\0' + sys.argv[1].encode()).hexdigest()[:16])",
            id,
        ]),
        "python3",
    )
    .trim()
    .to_owned()
}

/// The watch's JSON log lines that hold every one of `parts`.
fn lines_with<'a>(logs: &'a str, parts: &[&str]) -> Vec<&'a str> {
    logs.lines()
        .filter(|l| parts.iter().all(|p| l.contains(p)))
        .collect()
}

/// The approval's receipts and failures in the watch's log (waiting until
/// they are all in it): the decision's audit line and the run's (`event`)
/// name the approval by its ref and the approver by identity; each failed
/// call's own line (`failures`: its outcome and why) says what failed, by
/// ref; and the raw id is nowhere (lambda_runtime's line of a function
/// error, which carries the id, is not written).
fn approval_logged(watch: &Peer, id: &str, event: &str, failures: &[(&str, &str)]) {
    let r_id = id_ref(id);
    let approval = format!("\"approval\":\"{r_id}\"");
    let approver = format!("\"approver\":\"jwt:{APPROVER_SUB}\"");
    let run = format!("\"event\":\"{event}\"");
    let wanted: Vec<Vec<&str>> = [
        vec![
            "\"event\":\"approval\"",
            "\"decision\":\"approved\"",
            &approval,
            &approver,
        ],
        vec![&run, &approval, &approver],
    ]
    .into_iter()
    .chain(
        failures
            .iter()
            .map(|(outcome, why)| vec!["\"message\":\"tool call\"", outcome, why, &r_id]),
    )
    .collect();
    let logs = watch.logs_when(Duration::from_secs(10), |logs| {
        wanted
            .iter()
            .all(|parts| !lines_with(logs, parts).is_empty())
    });
    for parts in &wanted {
        assert!(
            !lines_with(&logs, parts).is_empty(),
            "no line with {parts:?}:\n{logs}"
        );
    }
    // A line the runtime would write after the last call's own has time to.
    let leaked = watch.logs_when(Duration::from_secs(2), |logs| logs.contains(id));
    assert!(!leaked.contains(id), "the id {id} is in the log:\n{leaked}");
}

/// Clarify's table, as the ssh and cloud functions keep approvals in it.
const CLARIFY_TABLE: &str = "boto3.client('dynamodb', **kw).create_table(TableName='clarifications', KeySchema=[{'AttributeName': 'id', 'KeyType': 'HASH'}], AttributeDefinitions=[{'AttributeName': 'id', 'AttributeType': 'S'}], BillingMode='PAY_PER_REQUEST')";

/// The API's address as the functions are told it (answer links, the inbox).
const PUBLIC_URL: &str = "https://abc123xyz.execute-api.us-east-1.amazonaws.com";

#[test]
fn cloud_function_reads_ssm_and_proxies_a_direct_call() {
    let (_moto, endpoint) = moto();
    let (_mcp, mcp_port) = everything();
    // The inventory goes in through boto3 (moto's own dependency); the
    // function reads it back through the Rust SDK.
    let doc = json!({"url": format!("http://127.0.0.1:{mcp_port}/mcp")}).to_string();
    run_ok(
        Command::new(tools_dir().join("aws/bin/python"))
            .arg("-c")
            .arg("import boto3, sys; boto3.client('ssm', endpoint_url=sys.argv[1], region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing').put_parameter(Name='/toolgate/clouds/ref', Type='String', Value=sys.argv[2])")
            .arg(&endpoint)
            .arg(&doc),
        "put the account into moto's SSM",
    );
    boto(&endpoint, CLARIFY_TABLE, &[]);
    let (watch, port) = watch(&[
        ("AWS_ENDPOINT_URL", &endpoint),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("TOOLGATE_CLOUD_SSM_PREFIX", "/toolgate/clouds"),
        ("TOOLGATE_CLOUD_APPROVE_TOOLS", "*__get-sum"),
        ("TOOLGATE_CLARIFY_TABLE", "clarifications"),
        ("TOOLGATE_CLARIFY_STEP_FUNCTIONS", "0"),
        ("TOOLGATE_PUBLIC_URL", PUBLIC_URL),
        ("TOOLGATE_APPROVERS_JWT_GROUP", APPROVERS_GROUP),
    ]);
    match invoke(port, "cloud", "direct_cloud_echo.json") {
        Outcome::Returned(v) => {
            assert_eq!(
                v["content"][0]["text"],
                "Echo: from a state machine",
                "{v}\n{}",
                watch.logs()
            )
        }
        Outcome::Failed(e) => panic!("cloud call failed: {e}\n{}", watch.logs()),
    }
    // A cloud function serves many tools: bare arguments are refused.
    match invoke(port, "cloud", "direct_arguments.json") {
        Outcome::Failed(e) => {
            assert!(
                e.contains("InvalidInput") && e.contains("several tools"),
                "{e}"
            )
        }
        Outcome::Returned(v) => panic!("bare arguments must fail, got {v}"),
    }

    // A gated tool waits for an approver, then runs once with exactly the
    // approved arguments (their order aside). Each refusal names the
    // approval (a workflow passes the id back); the log names its ref.
    let sum = |args: Value| {
        invoke_value(
            port,
            "cloud",
            &json!({"tool": "ref__get-sum", "arguments": args}),
        )
    };
    let id = match sum(json!({"a": 2, "b": 40})) {
        Outcome::Failed(e) => approval_id(&e, &watch),
        Outcome::Returned(v) => panic!("a gated tool must wait, got {v}"),
    };
    approve(&watch, port, &id);
    let refused = |e: &str, why: &str| {
        let message = error_message(e);
        assert!(
            e.contains("Forbidden") && message.contains(why) && message.contains(&id),
            "{e}"
        );
    };
    match sum(json!({"a": 2, "b": 41, "toolgate_approval": id})) {
        Outcome::Failed(e) => refused(&e, "anothercommand"),
        Outcome::Returned(v) => panic!("changed arguments must be refused, got {v}"),
    }
    // The approved arguments in another order, sent as written.
    let reordered = format!(
        r#"{{"tool": "ref__get-sum", "arguments": {{"b": 40, "toolgate_approval": "{id}", "a": 2}}}}"#
    );
    assert!(reordered.find("\"b\"") < reordered.find("\"a\""));
    match invoke_text(port, "cloud", &reordered) {
        Outcome::Returned(v) => assert!(v.to_string().contains("42"), "{v}"),
        Outcome::Failed(e) => panic!("the approved call failed: {e}\n{}", watch.logs()),
    }
    match sum(json!({"a": 2, "b": 40, "toolgate_approval": id})) {
        Outcome::Failed(e) => refused(&e, "alreadybeenused"),
        Outcome::Returned(v) => panic!("an approval runs once, got {v}"),
    }
    approval_logged(
        &watch,
        &id,
        "cloud_call",
        &[
            ("\"outcome\":\"approval_required\"", "waits for an approver"),
            ("\"outcome\":\"forbidden\"", "another command"),
            ("\"outcome\":\"forbidden\"", "already been used"),
        ],
    );
}

/// Puts the server `name` (its inventory document `doc`, and sshd's client
/// key) into moto's SSM under `/toolgate/servers`.
fn put_server(endpoint: &str, sshd: &toolgate_e2e::sshd::Sshd, name: &str, doc: &str) {
    let key = std::fs::read_to_string(sshd.client_key_path()).unwrap();
    boto(
        endpoint,
        "c = boto3.client('ssm', **kw); c.put_parameter(Name='/toolgate/servers/' + sys.argv[2], Type='String', Value=sys.argv[3]); c.put_parameter(Name='/toolgate/servers/' + sys.argv[2] + '/private-key', Type='SecureString', Value=sys.argv[4])",
        &[name, doc, &key],
    );
}

#[test]
fn ssh_function_reads_ssm_and_runs_a_direct_call_in_scope() {
    let sshd = toolgate_e2e::sshd::Sshd::start();
    let (_moto, endpoint) = moto();
    let doc = json!({
        "host": "127.0.0.1", "port": sshd.port, "username": sshd.user,
        "host_key": sshd.host_key_line(), "tags": ["lambda"],
        "policy": {"approve": ["^mkdir "]}
    })
    .to_string();
    // Approvals live in clarify's table (the template gives the ssh
    // function its name), and are decided through the clarify function.
    boto(&endpoint, CLARIFY_TABLE, &[]);
    put_server(&endpoint, &sshd, "box", &doc);
    let (watch, port) = watch(&[
        ("AWS_ENDPOINT_URL", &endpoint),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("TOOLGATE_SSH_SSM_PREFIX", "/toolgate/servers"),
        ("TOOLGATE_CLARIFY_TABLE", "clarifications"),
        ("TOOLGATE_CLARIFY_STEP_FUNCTIONS", "0"),
        ("TOOLGATE_PUBLIC_URL", PUBLIC_URL),
        ("TOOLGATE_APPROVERS_JWT_GROUP", APPROVERS_GROUP),
    ]);
    match invoke(port, "ssh", "direct_ssh_run.json") {
        Outcome::Returned(v) => {
            assert_eq!(
                v["stdout"],
                "from a state machine\n",
                "{v}\n{}",
                watch.logs()
            );
            assert_eq!(v["exit_code"], 0);
        }
        Outcome::Failed(e) => panic!("ssh call failed: {e}\n{}", watch.logs()),
    }
    match invoke(port, "ssh", "direct_ssh_out_of_scope.json") {
        Outcome::Failed(e) => assert!(e.contains("Forbidden") && e.contains("scope"), "{e}"),
        Outcome::Returned(v) => panic!("out of scope must fail, got {v}"),
    }
    // The audit line went to the function's log, as JSON.
    let audited = |logs: &str| {
        logs.contains("\"target\":\"toolgate::audit\"") && logs.contains("workflow step")
    };
    let logs = watch.logs_when(Duration::from_secs(10), audited);
    assert!(audited(&logs), "{logs}");

    // A gated command: ApprovalRequired (a state machine can Catch it),
    // with the approval's id in the message, and no link.
    let dir = format!("/tmp/toolgate-approved-{}", std::process::id());
    let mkdir = format!("mkdir -p {dir}");
    let gated = |command: &str, approval: Option<&str>| {
        let mut args = json!({"server_name": "box", "command": command});
        if let Some(id) = approval {
            args["approval"] = json!(id);
        }
        invoke_value(
            port,
            "ssh",
            &json!({"tool": "ssh_run", "arguments": args, "scope": {"servers": ["box"]}}),
        )
    };
    let id = match gated(&mkdir, None) {
        Outcome::Failed(e) => approval_id(&e, &watch),
        Outcome::Returned(v) => panic!("a gated command must wait, got {v}"),
    };
    // An approver approves through the clarify function's decision route.
    approve(&watch, port, &id);
    // The approval is bound to the exact command: another one is refused,
    // and the refusal (which names the approval) does not use it up.
    let refused = |e: &str, why: &str| {
        let message = error_message(e);
        assert!(
            e.contains("Forbidden") && message.contains(why) && message.contains(&id),
            "{e}"
        );
    };
    match gated(&format!("{mkdir}-other"), Some(&id)) {
        Outcome::Failed(e) => refused(&e, "anothercommand"),
        Outcome::Returned(v) => panic!("a changed command must be refused, got {v}"),
    }
    match gated(&mkdir, Some(&"0".repeat(40))) {
        Outcome::Failed(e) => assert!(e.contains("does not exist"), "{e}"),
        Outcome::Returned(v) => panic!("an unknown approval must be refused, got {v}"),
    }
    match gated(&mkdir, Some(&id)) {
        Outcome::Returned(v) => {
            assert_eq!(
                (v["exit_code"].clone(), v["approval"].clone()),
                (json!(0), json!(id)),
                "{v}"
            )
        }
        Outcome::Failed(e) => panic!("the approved command failed: {e}\n{}", watch.logs()),
    }
    match gated(&mkdir, Some(&id)) {
        Outcome::Failed(e) => refused(&e, "alreadybeenused"),
        Outcome::Returned(v) => panic!("an approval runs once, got {v}"),
    }
    // sshd is on loopback: the approved command's folder is on this machine.
    assert!(std::path::Path::new(&dir).is_dir(), "{dir}");
    let _ = std::fs::remove_dir(&dir);

    // Through API Gateway with IAM auth, the signer's ARN is the caller the
    // approval is bound to: another principal cannot spend it, the one that
    // asked can.
    let iam_dir = format!("{dir}-iam");
    let as_iam = |arn: &str, approval: Option<&str>| {
        let mut args = json!({"server_name": "box", "command": format!("mkdir -p {iam_dir}")});
        if let Some(id) = approval {
            args["approval"] = json!(id);
        }
        http(
            arn,
            invoke_value(port, "ssh", &iam_event("ssh_run", arn, &args)),
        )
    };
    let (status, asked) = as_iam(ALICE_ARN, None);
    assert_eq!(status, 428, "{asked}\n{}", watch.logs());
    let iam_id = asked["error"]["approval"]["id"]
        .as_str()
        .expect("the approval's id")
        .to_owned();
    toolgate_e2e::issued::record("approval id", &iam_id);
    approve(&watch, port, &iam_id);
    let (status, refused) = as_iam(BOB_ARN, Some(&iam_id));
    assert_eq!(
        (status, &refused["error"]),
        (
            403,
            &json!({"code": "forbidden",
                    "message": format!("approval {iam_id} was asked for by another caller")})
        ),
        "{refused}"
    );
    let (status, ran) = as_iam(ALICE_ARN, Some(&iam_id));
    assert_eq!(
        (status, &ran["exit_code"], &ran["approval"]),
        (200, &json!(0), &json!(iam_id)),
        "{ran}\n{}",
        watch.logs()
    );
    assert!(std::path::Path::new(&iam_dir).is_dir(), "{iam_dir}");
    let _ = std::fs::remove_dir(&iam_dir);
    approval_logged(
        &watch,
        &id,
        "ssh_run",
        &[
            ("\"outcome\":\"approval_required\"", "waits for an approver"),
            ("\"outcome\":\"forbidden\"", "another command"),
            ("\"outcome\":\"forbidden\"", "already been used"),
        ],
    );
}

/// The example workflow's definition with the function names `cargo lambda
/// watch` serves (a Task's FunctionName may be a name) and the partition.
fn example_workflow() -> String {
    let text =
        std::fs::read_to_string(workspace().join("infra/statemachines/clarify-then-run.asl.json"))
            .unwrap()
            .replace("${Partition}", "aws")
            .replace("${ClarifyFunctionArn}", "clarify")
            .replace("${PythonExecuteFunctionArn}", "python-execute")
            .replace("${SshFunctionArn}", "ssh");
    assert!(
        !text.contains("${"),
        "a substitution is not covered: {text}"
    );
    text
}

/// The id of the first pending item in clarify's table that is the
/// workflow's question (it holds a task token) or, with `token` false, an
/// approval; waits up to 30 s for one.
fn pending(endpoint: &str, token: bool) -> String {
    boto(
        endpoint,
        r#"
ddb = boto3.client('dynamodb', **kw)
for _ in range(150):
    items = ddb.scan(TableName='clarifications')['Items']
    hits = [i['id']['S'] for i in items if i['status']['S'] == 'pending' and ('task_token' in i) == (sys.argv[2] == 'token')]
    if hits:
        print(hits[0]); break
    time.sleep(0.2)
else:
    sys.exit('nothing pending with ' + sys.argv[2])
"#,
        &[if token { "token" } else { "approval" }],
    )
    .trim()
    .to_owned()
}

/// Polls the execution until it leaves RUNNING (up to `within`); returns
/// status, output (parsed), error and cause.
fn execution_ends(endpoint: &str, execution: &str, within: Duration) -> Value {
    let out = boto(
        endpoint,
        r#"
sfn = boto3.client('stepfunctions', **kw)
end = time.time() + float(sys.argv[3])
while True:
    d = sfn.describe_execution(executionArn=sys.argv[2])
    if d['status'] != 'RUNNING' or time.time() > end:
        break
    time.sleep(0.2)
print(json.dumps({"status": d['status'], "output": json.loads(d.get('output') or 'null'), "error": d.get('error'), "cause": d.get('cause')}))
"#,
        &[execution, &within.as_secs().to_string()],
    );
    serde_json::from_str(out.trim()).unwrap()
}

/// infra/statemachines/clarify-then-run.asl.json as Step Functions runs
/// it: moto executes the state machine (its ASL interpreter is
/// LocalStack's), each Lambda task invokes the real function under `cargo
/// lambda watch` (moto_serial.py sends them there), clarify completes the
/// task token in moto when the person answers, and ssh_run reaches a real
/// sshd. The paths a new user meets: optional input left out, a command the
/// server's policy gates (caught, approved, run), a command that fails, a
/// rejected approval, an answer that is not a server, and bad input.
#[test]
fn the_example_workflow_runs_in_step_functions_end_to_end() {
    let sshd = toolgate_e2e::sshd::Sshd::start();
    let watch_port = free_port();
    let lambda = format!("http://127.0.0.1:{watch_port}");
    let (_moto, endpoint) =
        toolgate_e2e::peer::moto_with(&[("TOOLGATE_MOTO_LAMBDA_ENDPOINT", &lambda)]);
    execute_state_machines(&endpoint);
    boto(&endpoint, CLARIFY_TABLE, &[]);
    // The default command (`uptime && df -h /`) waits for an approver here.
    let doc = json!({
        "host": "127.0.0.1", "port": sshd.port, "username": sshd.user,
        "host_key": sshd.host_key_line(), "policy": {"approve": ["^uptime"]}
    })
    .to_string();
    put_server(&endpoint, &sshd, "web-1", &doc);
    let (watch, port) = watch_on(
        watch_port,
        &[
            ("AWS_ENDPOINT_URL", &endpoint),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
            ("TOOLGATE_SSH_SSM_PREFIX", "/toolgate/servers"),
            ("TOOLGATE_CLARIFY_TABLE", "clarifications"),
            ("TOOLGATE_CLARIFY_STEP_FUNCTIONS", "1"),
            ("TOOLGATE_PUBLIC_URL", PUBLIC_URL),
            ("TOOLGATE_APPROVERS_JWT_GROUP", APPROVERS_GROUP),
        ],
    );
    let machine = boto(
        &endpoint,
        "print(boto3.client('stepfunctions', **kw).create_state_machine(name='clarify-then-run', definition=sys.argv[2], roleArn='arn:aws:iam::123456789012:role/sfn')['stateMachineArn'])",
        &[&example_workflow()],
    )
    .trim()
    .to_owned();
    let start = |input: Value| -> String {
        boto(
            &endpoint,
            "print(boto3.client('stepfunctions', **kw).start_execution(stateMachineArn=sys.argv[2], name=str(__import__('uuid').uuid4()), input=sys.argv[3])['executionArn'])",
            &[&machine, &input.to_string()],
        )
        .trim()
        .to_owned()
    };
    let answer = |body: Value| {
        let id = pending(&endpoint, true);
        let event = answer_route_event("POST", &id, Some(&body.to_string()));
        let (status, body) = http("the person answers", invoke_value(port, "clarify", &event));
        assert_eq!(status, 200, "{body}\n{}", watch.logs());
    };
    let ends = |execution: &str| execution_ends(&endpoint, execution, Duration::from_secs(60));
    // The run ends FAILED with `error`; its description.
    let fails_with = |execution: &str, error: &str| {
        let end = ends(execution);
        assert_eq!(
            (end["status"].as_str(), end["error"].as_str()),
            (Some("FAILED"), Some(error)),
            "{end:#}\n{}",
            watch.logs()
        );
        end
    };

    // No options, the default command: the policy gates it, the workflow
    // catches ApprovalRequired, finds the id, waits, and runs once approved.
    let run = start(json!({"question": "Which server?", "approval_poll_seconds": 1}));
    answer(json!({"answer": " web-1\n"}));
    let approval = pending(&endpoint, false);
    approve(&watch, port, &approval);
    let done = ends(&run);
    assert_eq!(done["status"], "SUCCEEDED", "{done:#}\n{}", watch.logs());
    let output = &done["output"];
    assert_eq!(
        output["found"]["output"]["result"],
        json!(approval),
        "{output:#}"
    );
    assert_eq!(output["ssh"]["output"]["exit_code"], 0, "{output:#}");
    assert_eq!(
        output["ssh"]["output"]["approval"],
        json!(approval),
        "{output:#}"
    );
    assert!(
        output["ssh"]["output"]["stdout"]
            .as_str()
            .is_some_and(|o| o.contains("load average")),
        "{output:#}"
    );

    // A command that fails ends the run FAILED, saying how it ended.
    let run = start(json!({
        "question": "Which server?", "options": ["web-1", "web-2"],
        "command": "echo disk full >&2; exit 3"
    }));
    answer(json!({"choice": 0}));
    let failed = fails_with(&run, "Toolgate.CommandFailed");
    assert_eq!(
        failed["cause"],
        "The command ended with exit code 3 (timed out: false); what it printed is the \
         result of RunOnServer or RunApproved in the execution history.",
        "{failed:#}"
    );

    // A rejected approval ends the wait: Forbidden, caught as Refused.
    let run = start(json!({"question": "Which server?", "approval_poll_seconds": 1}));
    answer(json!({"answer": "web-1"}));
    let approval = pending(&endpoint, false);
    let (status, body) = http(
        "the approver rejects",
        invoke_value(port, "clarify", &decision_event(&approval, "reject", None)),
    );
    assert_eq!(
        (status, body["status"].clone()),
        (200, json!("rejected")),
        "{body}"
    );
    let refused = fails_with(&run, "Toolgate.Refused");
    assert!(
        refused["cause"]
            .as_str()
            .is_some_and(|c| c.contains("was not approved")),
        "{refused:#}"
    );

    // An answer that is not a server name stops before any command.
    let run = start(json!({"question": "Which server?"}));
    answer(json!({"answer": "web-1; rm -rf /"}));
    fails_with(&run, "Toolgate.NotAServer");

    // Input the workflow cannot use fails at once, in its own words (never
    // States.Runtime, which no Catch takes).
    for input in [
        json!({}),
        json!({"question": 7}),
        json!({"question": "Which server?", "approval_poll_seconds": "soon"}),
        json!({"question": "Which server?", "approval_poll_seconds": 0}),
        json!({"question": "Which server?", "command": ["uptime"]}),
    ] {
        eprintln!("input {input}");
        fails_with(&start(input), "Toolgate.InvalidInput");
    }
}

#[test]
fn gateway_lists_every_function_and_forwards_mcp_calls() {
    let sshd = toolgate_e2e::sshd::Sshd::start();
    let (_moto, endpoint) = moto();
    let (mcp, mcp_port) = everything();
    let server = json!({
        "host": "127.0.0.1", "port": sshd.port, "username": sshd.user,
        "host_key": sshd.host_key_line()
    })
    .to_string();
    let account = json!({"url": format!("http://127.0.0.1:{mcp_port}/mcp")}).to_string();
    let key = std::fs::read_to_string(sshd.client_key_path()).unwrap();
    run_ok(
        Command::new(tools_dir().join("aws/bin/python"))
            .arg("-c")
            .arg("import boto3, sys; c = boto3.client('ssm', endpoint_url=sys.argv[1], region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing'); c.put_parameter(Name='/toolgate/servers/box', Type='String', Value=sys.argv[2]); c.put_parameter(Name='/toolgate/servers/box/private-key', Type='SecureString', Value=sys.argv[3]); c.put_parameter(Name='/toolgate/clouds/ref', Type='String', Value=sys.argv[4])")
            .arg(&endpoint)
            .arg(&server)
            .arg(&key)
            .arg(&account),
        "put the inventory into moto's SSM",
    );
    // The gateway reaches its peers through `cargo lambda watch`'s own
    // Invoke API; SSM is moto's.
    let port = free_port();
    let lambda_api = format!("http://127.0.0.1:{port}");
    let (mut watch, port) = watch_on(
        port,
        &[
            ("AWS_ENDPOINT_URL", &endpoint),
            ("AWS_ENDPOINT_URL_LAMBDA", &lambda_api),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
            ("TOOLGATE_SSH_SSM_PREFIX", "/toolgate/servers"),
            ("TOOLGATE_CLOUD_SSM_PREFIX", "/toolgate/clouds"),
            ("TOOLGATE_PEER_FUNCTIONS", "python-execute,ssh,cloud"),
            ("TOOLGATE_OAUTH_ISSUER", ISSUER),
            ("TOOLGATE_PYTHON_TIMEOUT", "40"),
        ],
    );
    // A peer whose first listing outlasts the gateway's start (cargo lambda
    // watch starts each function on its first call) joins when it answers.
    let wanted = ["python__execute", "list_servers", "ssh_run", "ref__echo"];
    let listed = || {
        let (status, body) = http(
            "apigw_v2_list_tools.json",
            invoke(port, "gateway", "apigw_v2_list_tools.json"),
        );
        assert_eq!(status, 200, "{body}\n{}", watch.logs());
        body
    };
    let mut body = listed();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !wanted
        .iter()
        .all(|w| body.to_string().contains(&format!("\"{w}\"")))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(500));
        body = listed();
    }
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for want in wanted {
        assert!(
            names.contains(&want),
            "{want} missing from {names:?}\n{}",
            watch.logs()
        );
    }

    // An MCP call through the gateway runs on the ssh function, with the
    // JWT's scope and caller passed along.
    let (status, body) = http(
        "apigw_v2_mcp_call_ssh.json",
        invoke(port, "gateway", "apigw_v2_mcp_call_ssh.json"),
    );
    assert_eq!(status, 200, "{body}\n{}", watch.logs());
    let result = &body["result"];
    assert_eq!(result["isError"], false, "{body}");
    assert_eq!(result["structuredContent"]["stdout"], "via mcp\n", "{body}");
    // The function's log reaches us through a pipe, maybe after its answer.
    watch.wait_for_log("mcp through the gateway", Duration::from_secs(10));
    let logs = watch.logs();
    let audit = logs
        .lines()
        .find(|l| l.contains("toolgate::audit") && l.contains("mcp through the gateway"))
        .unwrap_or_else(|| panic!("no audit line:\n{logs}"));
    assert!(audit.contains("\"caller\":\"agent-7f3a\""), "{audit}");

    // A 40 s script and a 40 s command through /mcp answer timed_out, with
    // what they printed, before API Gateway's 30 s: counted from when it
    // took the request (5 s ago here, a cold start), the deadline carried
    // from the gateway to the function that runs the call.
    for (tool, arguments, printed) in [
        (
            "python__execute",
            // Its 40 s is the function's (TOOLGATE_PYTHON_TIMEOUT below).
            json!({"code": "print('started', flush=True)\nwhile True: pass"}),
            "started",
        ),
        (
            "ssh_run",
            // It ignores TERM: the remote KILL's 2 s and the local 1 s of
            // slack must fit too.
            json!({"server_name": "box", "command": "trap '' TERM; echo started; sleep 40", "timeout": 40, "intent": "a long command"}),
            "started",
        ),
    ] {
        let mut e = fixture("apigw_v2_mcp_call_ssh.json");
        e["body"] = json!(
            json!({
                "jsonrpc": "2.0", "id": 6, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}
            })
            .to_string()
        );
        e["headers"]["content-length"] = json!(e["body"].as_str().unwrap().len().to_string());
        let received = std::time::SystemTime::now() - Duration::from_secs(5);
        let epoch = received.duration_since(std::time::UNIX_EPOCH).unwrap();
        e["requestContext"]["timeEpoch"] = json!(epoch.as_millis() as u64);
        let (status, body) = http(tool, invoke_value(port, "gateway", &e));
        let took = received.elapsed().unwrap();
        assert!(
            took < Duration::from_secs(30),
            "{tool}: answered after {took:?}"
        );
        assert_eq!(status, 200, "{tool}: {body}");
        let out = &body["result"]["structuredContent"];
        assert_eq!(out["timed_out"], true, "{tool}: {body}\n{}", watch.logs());
        assert!(
            out["stdout"].as_str().unwrap_or_default().contains(printed),
            "{tool}: {body}"
        );
        assert!(
            out["stderr"]
                .as_str()
                .unwrap_or_default()
                .contains("to fit the runtime's remaining time]"),
            "{tool}: {body}"
        );
    }

    // A script's 5 MB file is past Lambda's 6 MB response once in base64:
    // it is left out and named, the small one kept, on the function's own
    // route and through the gateway's /mcp.
    let code = "open('big.bin', 'wb').write(bytes(range(256)) * 20480)\nopen('small.txt', 'w').write('kept')";
    let mut direct = fixture("apigw_v2_call.json");
    let body = json!({"code": code}).to_string();
    direct["headers"]["content-length"] = json!(body.len().to_string());
    direct["body"] = json!(body);
    let mut via_mcp = fixture("apigw_v2_mcp_call_ssh.json");
    via_mcp["body"] = json!(
        json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "python__execute", "arguments": {"code": code}}
        })
        .to_string()
    );
    via_mcp["headers"]["content-length"] =
        json!(via_mcp["body"].as_str().unwrap().len().to_string());
    for (route, function, event) in [
        ("POST /tools/python.execute", "python-execute", direct),
        ("/mcp", "gateway", via_mcp),
    ] {
        let whole = match invoke_value(port, function, &event) {
            Outcome::Returned(v) => v,
            Outcome::Failed(e) => panic!("{route}: {e}\n{}", watch.logs()),
        };
        let size = whole.to_string().len();
        assert!(size <= 6 * 1024 * 1024, "{route}: {size} bytes");
        let (status, body) = http(route, Outcome::Returned(whole));
        assert_eq!(status, 200, "{route}: {body}");
        let out = if route == "/mcp" {
            body["result"]["structuredContent"].clone()
        } else {
            body
        };
        assert_eq!(
            out["files"],
            json!({"small.txt": "kept"}),
            "{route}: {}",
            out["stderr"]
        );
        assert!(
            out["stderr"]
                .as_str()
                .unwrap_or_default()
                .contains("[file \"big.bin\" (5242880 bytes) not returned: the answer would pass this runtime's response limit"),
            "{route}: {out}"
        );
    }

    let mut get = fixture("apigw_v2_list_tools.json");
    get["rawPath"] = json!("/healthz");
    get["routeKey"] = json!("GET /healthz");
    get["requestContext"]["http"]["path"] = json!("/healthz");
    let (status, body) = http("healthz", invoke_value(port, "gateway", &get));
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["peers"]["functions"]["ssh"],
        json!({"ok": true, "tools": 2}),
        "{body}"
    );

    // /openapi.json and MCP's tools/list describe the same tools.
    let mut openapi = get.clone();
    openapi["rawPath"] = json!("/openapi.json");
    openapi["routeKey"] = json!("GET /openapi.json");
    openapi["requestContext"]["http"]["path"] = json!("/openapi.json");
    let (status, doc) = http("openapi", invoke_value(port, "gateway", &openapi));
    assert_eq!(status, 200, "{doc}");
    for want in ["python__execute", "ssh_run", "ref__echo"] {
        let path = doc["paths"]
            .as_object()
            .unwrap()
            .keys()
            .find(|p| p.ends_with(want) || p.ends_with(&want.replace("__", ".")));
        assert!(path.is_some(), "{want} missing from /openapi.json: {doc}");
    }
    let mut list = fixture("apigw_v2_mcp_call_ssh.json");
    list["body"] = json!(r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}"#);
    list["headers"]["content-length"] = json!(list["body"].as_str().unwrap().len().to_string());
    let (status, body) = http("tools/list", invoke_value(port, "gateway", &list));
    assert_eq!(status, 200, "{body}");
    let mut listed: Vec<&str> = body["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    listed.sort();
    // MCP lists the names every model provider takes, as OpenAI's format
    // does.
    let mut want = names.clone();
    want.sort();
    assert_eq!(listed, want);
    // Each with its annotations, peers' included.
    let hints = |name: &str| {
        body["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["annotations"].clone())
            .unwrap_or_default()
    };
    assert_eq!(hints("python__execute")["readOnlyHint"], false, "{body}");
    assert_eq!(hints("ssh_run")["destructiveHint"], true, "{body}");
    assert_eq!(hints("list_servers")["readOnlyHint"], true, "{body}");

    // RFC 9728's metadata, open, names the issuer the gateway was given.
    let mut meta = get.clone();
    meta["rawPath"] = json!("/.well-known/oauth-protected-resource/mcp");
    meta["routeKey"] = json!("GET /.well-known/oauth-protected-resource/mcp");
    meta["requestContext"]["http"]["path"] = json!("/.well-known/oauth-protected-resource/mcp");
    meta["requestContext"]["authorizer"] = Value::Null;
    let (status, doc) = http("protected resource", invoke_value(port, "gateway", &meta));
    assert_eq!(status, 200, "{doc}");
    assert_eq!(doc["authorization_servers"], json!([ISSUER]), "{doc}");
    assert!(
        doc["resource"]
            .as_str()
            .unwrap_or_default()
            .ends_with("/mcp"),
        "{doc}"
    );

    // A cloud tool's result through the gateway is the account's own MCP
    // result: its content as it sent it, and its failure as isError.
    let cloud_call = |arguments: &str| {
        let mut e = fixture("apigw_v2_mcp_call_ssh.json");
        e["body"] = json!(format!(
            r#"{{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {{"name": "ref__echo", "arguments": {arguments}}}}}"#
        ));
        e["headers"]["content-length"] = json!(e["body"].as_str().unwrap().len().to_string());
        http("ref__echo", invoke_value(port, "gateway", &e))
    };
    let (status, body) = cloud_call(r#"{"message": "hi"}"#);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["content"],
        json!([{"type": "text", "text": "Echo: hi"}]),
        "{body}"
    );
    let (status, body) = cloud_call(r#"{"message": 5}"#);
    assert_eq!(
        (status, &body["result"]["isError"]),
        (200, &json!(true)),
        "{body}"
    );

    // A misspelt argument, through the gateway to a peer, is named.
    let mut typo = fixture("apigw_v2_mcp_call_ssh.json");
    typo["body"] = json!(
        r#"{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ssh_run", "arguments": {"server_name": "web-1", "command": "true", "timeuot": 5}}}"#
    );
    typo["headers"]["content-length"] = json!(typo["body"].as_str().unwrap().len().to_string());
    let (status, body) = http("typo", invoke_value(port, "gateway", &typo));
    assert_eq!(
        (status, &body["result"]["isError"]),
        (200, &json!(true)),
        "{body}"
    );
    let text = body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains(r#"Unknown input key \"timeuot\" (did you mean \"timeout\"?)"#),
        "{body}"
    );

    // A peer's call that fails upstream: the gateway answers with the
    // peer's error code, and the other functions keep answering.
    drop(mcp);
    let mut echo = fixture("apigw_v2_mcp_call_ssh.json");
    echo["body"] = json!(
        r#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ref__echo", "arguments": {"message": "hi"}}}"#
    );
    echo["headers"]["content-length"] = json!(echo["body"].as_str().unwrap().len().to_string());
    let (status, body) = http("echo, upstream gone", invoke_value(port, "gateway", &echo));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["isError"], true, "{body}");
    let text = body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("upstream_unavailable"), "{body}");
    let (status, body) = http(
        "ssh after",
        invoke(port, "gateway", "apigw_v2_mcp_call_ssh.json"),
    );
    assert_eq!(
        (status, body["result"]["isError"].clone()),
        (200, json!(false)),
        "{body}"
    );
}

/// API Gateway's event for `METHOD /clarifications/{id}{tail}`. The answer
/// routes (`tail` "/answer", the person's link) have no authorizer; the
/// others keep the fixture's JWT.
fn clarification_event(
    method: &str,
    id: &str,
    tail: &str,
    query: &str,
    body: Option<&str>,
) -> Value {
    let mut event = fixture("apigw_v2_call.json");
    let path = format!("/clarifications/{id}{tail}");
    event["rawPath"] = json!(path);
    event["rawQueryString"] = json!(query);
    event["routeKey"] = json!(format!("{method} /clarifications/{{id}}{tail}"));
    event["requestContext"]["http"]["path"] = json!(path);
    event["requestContext"]["http"]["method"] = json!(method);
    if tail == "/answer" {
        event["requestContext"]["authorizer"] = Value::Null;
    }
    event["pathParameters"] = json!({"id": id});
    if let Some((k, v)) = query.split_once('=') {
        event["queryStringParameters"] = json!({ k: v });
    }
    match body {
        Some(b) => {
            event["body"] = json!(b);
            event["headers"]["content-length"] = json!(b.len().to_string());
        }
        None => {
            event.as_object_mut().unwrap().remove("body");
            event["headers"]["accept"] = json!("*/*");
            event["headers"]
                .as_object_mut()
                .unwrap()
                .remove("content-length");
        }
    }
    event
}

fn answer_route_event(method: &str, id: &str, body: Option<&str>) -> Value {
    clarification_event(method, id, "/answer", "", body)
}

#[test]
fn clarify_function_asks_directly_and_takes_the_answer_over_http() {
    let (_moto, endpoint) = moto();
    run_ok(
        Command::new(tools_dir().join("aws/bin/python"))
            .arg("-c")
            .arg("import boto3, sys; boto3.client('dynamodb', endpoint_url=sys.argv[1], region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing').create_table(TableName='clarifications', KeySchema=[{'AttributeName': 'id', 'KeyType': 'HASH'}], AttributeDefinitions=[{'AttributeName': 'id', 'AttributeType': 'S'}], BillingMode='PAY_PER_REQUEST')")
            .arg(&endpoint),
        "create the table in moto",
    );
    // A webhook channel: a Lambda function is frozen once it answers, so it
    // delivers before answering (the receiver has the event at once).
    let secret = "a-webhook-secret-of-32-characters";
    let (_rx, hooks) = toolgate_e2e::webhook::receiver(secret);
    let hook = format!("{hooks}/hook");
    let (watch, port) = watch(&[
        ("AWS_ENDPOINT_URL", &endpoint),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("TOOLGATE_CLARIFY_TABLE", "clarifications"),
        ("TOOLGATE_CLARIFY_STEP_FUNCTIONS", "0"),
        ("TOOLGATE_PUBLIC_URL", PUBLIC_URL),
        ("TOOLGATE_CLARIFY_WEBHOOK_URL", &hook),
        ("TOOLGATE_CLARIFY_WEBHOOK_SECRET", secret),
    ]);
    // As a state machine calls it: bare arguments.
    let asked = returned(
        &watch,
        port,
        "clarify",
        &json!({"question": "Which server?", "options": ["web-1", "web-2"]}),
    );
    let id = asked["id"].as_str().unwrap().to_owned();
    let seen = toolgate_e2e::webhook::seen(&hooks);
    assert_eq!(
        toolgate_e2e::webhook::events(&seen, &id),
        ["clarification.created"],
        "delivered before the answer: {seen:#}\n{}",
        watch.logs()
    );
    assert_eq!(
        asked["answer_url"],
        format!("https://abc123xyz.execute-api.us-east-1.amazonaws.com/clarifications/{id}/answer")
    );
    // The person opens the link through API Gateway (a GET, no authorizer
    // on this route) and gets the page.
    let page = answer_route_event("GET", &id, None);
    let Outcome::Returned(resp) = invoke_value(port, "clarify", &page) else {
        panic!("HTTP events always get a response\n{}", watch.logs())
    };
    assert_eq!(resp["statusCode"], 200, "{resp}");
    assert_eq!(resp["headers"]["content-type"], "text/html; charset=utf-8");
    assert!(resp["body"].as_str().unwrap().contains("Which server?"));

    // The person answers through API Gateway.
    let event = answer_route_event("POST", &id, Some(r#"{"choice": 1}"#));
    let Outcome::Returned(resp) = invoke_value(port, "clarify", &event) else {
        panic!("HTTP events always get a response\n{}", watch.logs())
    };
    assert_eq!(resp["statusCode"], 200, "{resp}");
    let body: Value = serde_json::from_str(resp["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["status"], "answered");
    assert_eq!(body["answer"], "web-2");

    // The agent's routes: a long-poll that ends pending at its wait, a
    // cancel, and an answer after it refused.
    let api = |what: &str, event: Value| http(what, invoke_value(port, "clarify", &event));
    let other = returned(&watch, port, "clarify", &json!({"question": "Proceed?"}));
    let other = other["id"].as_str().unwrap().to_owned();
    let started = std::time::Instant::now();
    let (status, body) = api(
        "long-poll",
        clarification_event("GET", &other, "", "wait=2", None),
    );
    assert_eq!(
        (status, body["status"].clone()),
        (200, json!("pending")),
        "{body}"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the wait ended early: {body}"
    );
    let (status, body) = api(
        "cancel",
        clarification_event("POST", &other, "/cancel", "", Some("{}")),
    );
    assert_eq!(
        (status, body["status"].clone()),
        (200, json!("cancelled")),
        "{body}"
    );
    let (status, body) = api(
        "answer after cancel",
        answer_route_event("POST", &other, Some(r#"{"answer": "yes"}"#)),
    );
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (409, json!("conflict")),
        "{body}"
    );
    let (status, body) = api("read", clarification_event("GET", &id, "", "", None));
    assert_eq!(
        (status, body["answer"].clone()),
        (200, json!("web-2")),
        "{body}"
    );
    // Both events were delivered, and their outcomes kept in DynamoDB.
    assert_eq!(
        body["notified"],
        json!({"webhook": {"created": "ok", "answered": "ok"}}),
        "{body}"
    );
    match invoke_value(port, "clarify", &json!({"question": ""})) {
        Outcome::Failed(e) => assert!(e.contains("InvalidInput"), "{e}"),
        Outcome::Returned(v) => panic!("an empty question must fail, got {v}"),
    }
}

/// A clarification's item in DynamoDB, as moto holds it.
fn item(endpoint: &str, table: &str, id: &str) -> Value {
    serde_json::from_str(&boto(
        endpoint,
        "print(json.dumps(boto3.client('dynamodb', **kw).get_item(TableName=sys.argv[2], Key={'id': {'S': sys.argv[3]}})['Item']))",
        &[table, id],
    ))
    .unwrap()
}

/// On AWS nothing runs between invocations: a clarification that expires
/// unanswered fails its waiting workflow because the template's schedule
/// invokes the clarify function, and for no other reason. The stack (table,
/// index, rule) is template.yaml's, created in moto's CloudFormation; the
/// test plays EventBridge, sending the rule's own input to the function
/// under `cargo lambda watch`.
#[test]
fn the_schedule_alone_fails_an_expired_workflow() {
    let (_moto, endpoint) = moto();
    execute_state_machines(&endpoint);
    let report = run_ok(
        Command::new(tools_dir().join("aws/bin/python"))
            .arg(workspace().join("tests/support/moto_deploy.py"))
            .arg(&endpoint)
            .arg(workspace().join("template.yaml"))
            .arg("AuthMode=IAM"),
        "deploy template.yaml into moto",
    );
    let report: Value = serde_json::from_str(&report).unwrap();
    let table = report["outputs"]["ClarifyTableName"]
        .as_str()
        .unwrap()
        .to_owned();
    let clarify_arn = report["outputs"]["ClarifyFunctionArn"].as_str().unwrap();
    // The rule that targets the clarify function: its schedule and input.
    let rule: Value = serde_json::from_str(&boto(
        &endpoint,
        r#"
ev = boto3.client('events', **kw)
for r in ev.list_rules()['Rules']:
    for t in ev.list_targets_by_rule(Rule=r['Name'])['Targets']:
        if t['Arn'] == sys.argv[2]:
            print(json.dumps({"schedule": r.get('ScheduleExpression'), "state": r.get('State'), "input": t.get('Input')}))
"#,
        &[clarify_arn],
    ))
    .expect("one rule targets the clarify function");
    assert_eq!(rule["schedule"], "rate(1 minute)", "{rule}");
    assert_eq!(rule["state"], "ENABLED", "{rule}");
    let sweep: Value = serde_json::from_str(rule["input"].as_str().unwrap()).unwrap();

    let mut env: Vec<(&str, &str)> = AWS.to_vec();
    env.extend([
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("TOOLGATE_CLARIFY_TABLE", table.as_str()),
        ("TOOLGATE_CLARIFY_EXPIRY_SECS", "2"),
        // `toolgate serve` sweeps on this timer: a function that ran one
        // would sweep within the wait below.
        ("TOOLGATE_CLARIFY_SWEEP_SECS", "1"),
        ("TOOLGATE_PUBLIC_URL", PUBLIC_URL),
    ]);
    let (watch, port) = watch(&env);
    let (execution, token) = start_waiting_execution(&endpoint, "swept");
    let asked = returned(
        &watch,
        port,
        "clarify",
        &json!({"question": "Restart web-1?", "task_token": token}),
    );
    assert_eq!(asked["status"], "pending", "{asked}");

    // Past the expiry, with nothing invoked: the workflow still waits. The
    // wait is three sweep intervals past the expiry, so a timer in the
    // function doing the schedule's work would show here.
    std::thread::sleep(Duration::from_secs(5));
    let waiting = boto(
        &endpoint,
        "print(boto3.client('stepfunctions', **kw).describe_execution(executionArn=sys.argv[2])['status'])",
        &[&execution],
    );
    assert_eq!(waiting.trim(), "RUNNING");

    // The schedule fires: the sweep finds it through the index, and the
    // workflow fails with Clarify.Expired.
    let swept = |port: u16| match invoke_value(port, "clarify", &sweep) {
        Outcome::Returned(v) => v,
        Outcome::Failed(e) => panic!("the sweep failed: {e}"),
    };
    assert_eq!(
        swept(port),
        json!({"expired": 1, "resent": 0}),
        "{}",
        watch.logs()
    );
    let done = finished(&endpoint, &execution);
    assert_eq!(done["status"], "FAILED", "{done}\n{}", watch.logs());
    assert_eq!(done["error"], "Clarify.Expired");
    // Told, the item leaves the index: the next tick finds nothing.
    let id = asked["id"].as_str().unwrap();
    assert_eq!(item(&endpoint, &table, id)["awaiting"], Value::Null);
    assert_eq!(swept(port), json!({"expired": 0, "resent": 0}));
    drop(watch);

    // An answer whose callback cannot land (Step Functions unreachable)
    // is recorded and stays due; the next tick sends it.
    let mut broken = env.clone();
    broken.push(("AWS_ENDPOINT_URL_SFN", "http://127.0.0.1:9"));
    let (watch, port) = watch_on(free_port(), &broken);
    let (execution, token) = start_waiting_execution(&endpoint, "resent");
    let asked = returned(
        &watch,
        port,
        "clarify",
        &json!({"question": "Restart web-2?", "options": ["yes", "no"], "task_token": token}),
    );
    let id = asked["id"].as_str().unwrap().to_owned();
    let answer = answer_route_event("POST", &id, Some(r#"{"choice": 0}"#));
    let Outcome::Returned(resp) = invoke_value(port, "clarify", &answer) else {
        panic!("HTTP events always get a response\n{}", watch.logs())
    };
    assert_eq!(resp["statusCode"], 200, "{resp}");
    assert_eq!(item(&endpoint, &table, &id)["awaiting"]["S"], "task");
    drop(watch);
    let (watch, port) = watch_on(free_port(), &env);
    assert_eq!(
        swept(port),
        json!({"expired": 0, "resent": 1}),
        "{}",
        watch.logs()
    );
    let done = finished(&endpoint, &execution);
    assert_eq!(done["status"], "SUCCEEDED", "{done}\n{}", watch.logs());
    assert_eq!(
        serde_json::from_str::<Value>(done["output"].as_str().unwrap()).unwrap(),
        json!({"answer": "yes", "choice": 0, "id": id})
    );
    assert_eq!(item(&endpoint, &table, &id)["awaiting"], Value::Null);
    assert_eq!(swept(port), json!({"expired": 0, "resent": 0}));
    // A function without clarify refuses a sweep by name.
    match invoke_value(port, "python-execute", &sweep) {
        Outcome::Failed(e) => assert!(e.contains("NotConfigured"), "{e}"),
        Outcome::Returned(v) => panic!("python-execute swept: {v}"),
    }
}

/// Sessions on Lambda: python-execute's own table in moto (DynamoDB), a
/// conversation that moves from one function instance (one `cargo lambda
/// watch`) to another, state larger than one item, and a session that is
/// its caller's only.
#[test]
fn python_sessions_live_in_dynamodb_across_instances() {
    let (_moto, endpoint) = moto();
    run_ok(
        Command::new(tools_dir().join("aws/bin/python"))
            .arg("-c")
            .arg("import boto3, sys; boto3.client('dynamodb', endpoint_url=sys.argv[1], region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing').create_table(TableName='sessions', KeySchema=[{'AttributeName': 'id', 'KeyType': 'HASH'}], AttributeDefinitions=[{'AttributeName': 'id', 'AttributeType': 'S'}], BillingMode='PAY_PER_REQUEST')")
            .arg(&endpoint),
        "create the sessions table in moto",
    );
    let env = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("TOOLGATE_SESSIONS_TABLE", "sessions"),
    ];
    let as_caller = |caller: &str, args: Value| json!({"tool": "python.execute", "arguments": args, "caller": caller});
    let id = {
        let (watch, port) = watch(&env);
        let first = returned(
            &watch,
            port,
            "python-execute",
            &as_caller(
                "alice",
                json!({"session": "new", "files": {"in.csv": "a,b\n1,2\n"},
                       "code": "import csv\nrows = list(csv.reader(open('in.csv')))\nblob = bytes(range(256)) * 4000\nclass Acc:\n    def __init__(self):\n        self.n = 0\nacc = Acc()"}),
            ),
        );
        assert_eq!(first["exit_code"], 0, "{first}");
        first["session"].as_str().unwrap().to_owned()
    };
    // Another instance (another process) continues it: the state, over a
    // megabyte, was stored in parts.
    let (watch, port) = watch(&env);
    let next = returned(
        &watch,
        port,
        "python-execute",
        &as_caller(
            "alice",
            json!({"session": id, "code": "acc.n += len(rows)\nresult = [rows, len(blob), acc.n, open('in.csv').read()]"}),
        ),
    );
    assert_eq!(
        next["result"],
        json!([[["a", "b"], ["1", "2"]], 1_024_000, 2, "a,b\n1,2\n"]),
        "{next}"
    );
    assert_eq!(next["session"], id.as_str());
    // Someone else's session does not exist for them.
    match invoke_value(
        port,
        "python-execute",
        &as_caller("mallory", json!({"session": id, "code": "print(acc)"})),
    ) {
        Outcome::Failed(e) => assert!(e.contains("NotFound") && e.contains("No session"), "{e}"),
        Outcome::Returned(v) => panic!("another caller continued the session: {v}"),
    }
    // Through API Gateway with IAM auth the caller is the signer's ARN: a
    // session it starts is its own, and another principal's ARN, or a
    // direct caller, finds no such session.
    let as_iam = |arn: &str, args: Value| {
        http(
            arn,
            invoke_value(
                port,
                "python-execute",
                &iam_event("python.execute", arn, &args),
            ),
        )
    };
    let (status, started) = as_iam(ALICE_ARN, json!({"session": "new", "code": "x = 41"}));
    assert_eq!(status, 200, "{started}\n{}", watch.logs());
    let sid = started["session"]
        .as_str()
        .expect("a session id")
        .to_owned();
    let (status, next) = as_iam(ALICE_ARN, json!({"session": sid, "code": "result = x + 1"}));
    assert_eq!((status, &next["result"]), (200, &json!(42)), "{next}");
    let (status, refused) = as_iam(BOB_ARN, json!({"session": sid, "code": "result = x"}));
    assert_eq!(
        (status, &refused["error"]),
        (
            404,
            &json!({"code": "not_found", "message": format!("No session \"{sid}\"")})
        ),
        "{refused}"
    );
    match invoke_value(
        port,
        "python-execute",
        &as_caller("alice", json!({"session": sid, "code": "print(x)"})),
    ) {
        Outcome::Failed(e) => assert!(e.contains("NotFound") && e.contains("No session"), "{e}"),
        Outcome::Returned(v) => panic!("a direct caller continued an IAM caller's session: {v}"),
    }
}

/// On AWS a webhook's key is an SSM SecureString that the environment names
/// (`TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER`), never the key itself: the
/// clarify function reads it once at init and signs with it, which the
/// receiver checks with the same key. A parameter that is missing, kept as
/// plain text or too short leaves the channel off, named in the log and in
/// each clarification's `notified`, and the function working.
#[test]
fn clarify_function_signs_webhooks_with_its_secret_from_ssm() {
    let (_moto, endpoint) = moto();
    boto(&endpoint, CLARIFY_TABLE, &[]);
    let secret = "a-webhook-secret-kept-in-ssm-only";
    let put = "boto3.client('ssm', **kw).put_parameter(Name=sys.argv[2], Type=sys.argv[3], Value=sys.argv[4])";
    boto(
        &endpoint,
        put,
        &["/toolgate/webhook-secret", "SecureString", secret],
    );
    boto(
        &endpoint,
        put,
        &["/toolgate/plain-secret", "String", secret],
    );
    let (_rx, hooks) = toolgate_e2e::webhook::receiver(secret);
    let hook = format!("{hooks}/hook");
    let start = |parameter: &str| {
        watch(&[
            ("AWS_ENDPOINT_URL", &endpoint),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
            ("TOOLGATE_CLARIFY_TABLE", "clarifications"),
            ("TOOLGATE_CLARIFY_STEP_FUNCTIONS", "0"),
            ("TOOLGATE_PUBLIC_URL", PUBLIC_URL),
            ("TOOLGATE_CLARIFY_WEBHOOK_URL", &hook),
            ("TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER", parameter),
        ])
    };

    {
        let (watch, port) = start("/toolgate/webhook-secret");
        let asked = returned(&watch, port, "clarify", &json!({"question": "Ship it?"}));
        let id = asked["id"].as_str().unwrap().to_owned();
        let seen = toolgate_e2e::webhook::seen(&hooks);
        assert_eq!(
            (
                toolgate_e2e::webhook::events(&seen, &id),
                seen["refused"].clone()
            ),
            (vec!["clarification.created".to_owned()], json!([])),
            "signed with the key in SSM: {seen:#}\n{}",
            watch.logs()
        );
        assert!(!watch.logs().contains(secret), "{}", watch.logs());
    }

    // A secret that cannot be used (nothing checks it at deploy time)
    // leaves that channel unusable, not the function: the question is asked,
    // its `notified` says why the webhook heard nothing, and the log names
    // the parameter (never the value).
    boto(
        &endpoint,
        put,
        &["/toolgate/short-secret", "SecureString", "too-short"],
    );
    for (parameter, why) in [
        ("/toolgate/no-such-secret", "it does not exist"),
        ("/toolgate/plain-secret", "is not a SecureString"),
        ("/toolgate/short-secret", "must be at least 16 characters"),
    ] {
        let (watch, port) = start(parameter);
        let asked = returned(&watch, port, "clarify", &json!({"question": "Ship it?"}));
        let id = asked["id"].as_str().unwrap();
        let (status, body) = http(
            "read",
            invoke_value(
                port,
                "clarify",
                &clarification_event("GET", id, "", "", None),
            ),
        );
        let failed = body["notified"]["webhook"]["created"]
            .as_str()
            .unwrap_or_default();
        assert!(
            status == 200
                && failed.starts_with("error: not set up:")
                && failed.contains(parameter)
                && failed.contains(why),
            "{parameter}: {body:#}\n{}",
            watch.logs()
        );
        let logged = lines_with(
            &watch.logs(),
            &[
                "\"level\":\"ERROR\"",
                "notification channel not set up",
                parameter,
                why,
            ],
        )
        .len();
        assert_eq!(logged, 1, "{parameter}: {}", watch.logs());
        assert!(!watch.logs().contains(secret), "{}", watch.logs());
        assert!(!watch.logs().contains("too-short"), "{}", watch.logs());
    }
}

/// An MCP 2026-07-28 `tools/call` of clarify through the gateway, as API
/// Gateway delivers it with the JWT of `sub`: the client declares form
/// elicitation, and a retry carries `extra` (`requestState`,
/// `inputResponses`).
fn elicit_event(sub: &str, args: &Value, extra: &Value) -> Value {
    let form = json!({"elicitation": {"form": {}}});
    mcp_2026_event("clarify", &form, sub, args, extra)
}

/// The same for `tool`, from a client with `caps`.
fn mcp_2026_event(tool: &str, caps: &Value, sub: &str, args: &Value, extra: &Value) -> Value {
    let body = toolgate_e2e::mcp::call_2026(tool, args, caps, extra);
    let mut e = fixture("apigw_v2_mcp_call_ssh.json");
    e["body"] = json!(body.to_string());
    e["headers"]["content-length"] = json!(e["body"].as_str().unwrap().len().to_string());
    for (k, v) in toolgate_e2e::mcp::call_headers("2026-07-28", tool) {
        e["headers"][k.to_lowercase()] = json!(v);
    }
    e["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(sub);
    e["requestContext"]["timeEpoch"] = json!(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    );
    e
}

/// A gated `ssh_run` asked through gateway `a` from a client that opens
/// links: the approval's page, no capability; the caller's own person (a
/// JWT of the approvers' group with the caller's `sub`) approves through
/// the clarify function; the retry through gateway `b` (another ssh
/// function process) waits for nothing more and runs it once.
fn approve_in_the_client((a, a_port): (&Peer, u16), (b, b_port): (&Peer, u16)) {
    let url = json!({"elicitation": {"url": {}}});
    let file = format!("/tmp/toolgate-mcp-approved-{}", std::process::id());
    let args = json!({"server_name": "box", "command": format!("touch {file}")});
    let call = |watch: &Peer, port: u16, extra: &Value| {
        gateway_mcp(
            watch,
            port,
            &mcp_2026_event("ssh_run", &url, "agent-7f3a", &args, extra),
        )
    };
    let asked = call(a, a_port, &json!({}));
    let r = &asked["result"];
    assert_eq!(
        r["resultType"],
        "input_required",
        "{asked}
{}",
        a.logs()
    );
    let params = &r["inputRequests"]["approval"]["params"];
    assert_eq!(params["mode"], "url", "{asked}");
    let id = params["url"]
        .as_str()
        .unwrap()
        .strip_prefix(&format!("{PUBLIC_URL}/inbox/"))
        .unwrap_or_else(|| panic!("{asked}"))
        .to_owned();
    assert!(!asked.to_string().contains("cap="), "{asked}");
    let state = r["requestState"].as_str().unwrap().to_owned();
    toolgate_e2e::issued::record("request state", &state);
    let retry =
        json!({"requestState": state, "inputResponses": {"approval": {"action": "accept"}}});

    // The agent's own JWT decides nothing, in the approvers' group or not
    // (its app client is the agents'); its person's (the same `sub`, issued
    // to the people's app client) does.
    let decide = |claims: Value| {
        http(
            "decision",
            invoke_value(
                a_port,
                "clarify",
                &decision_event(&id, "approve", Some(claims)),
            ),
        )
    };
    let group = format!("[{APPROVERS_GROUP}]");
    for agents in [
        json!({"sub": "agent-7f3a", "client_id": "agent-app"}),
        json!({"sub": "agent-7f3a", "cognito:groups": group, "client_id": "agent-app"}),
    ] {
        let (status, body) = decide(agents.clone());
        assert_eq!(status, 403, "{agents}: {body}");
    }
    let (status, body) =
        decide(json!({"sub": "agent-7f3a", "cognito:groups": group, "client_id": "people-web"}));
    assert_eq!(
        (status, &body["approver"]),
        (200, &json!("jwt:agent-7f3a")),
        "{body}
{}",
        a.logs()
    );
    let started = std::time::Instant::now();
    let ran = call(b, b_port, &retry);
    println!(
        "approval retry through another gateway and ssh process: {:?}",
        started.elapsed()
    );
    let out = &ran["result"]["structuredContent"];
    assert_eq!(
        (&out["exit_code"], &out["approval"]),
        (&json!(0), &json!(id)),
        "{ran}
{}",
        b.logs()
    );
    assert!(std::path::Path::new(&file).exists(), "{ran}");
    // Replayed: used once.
    let again = call(a, a_port, &retry);
    let text = again["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.contains("already been used"), "{again}");
    // The receipt: through MCP, approved by the caller's own person.
    let logs = b.logs_when(Duration::from_secs(10), |l| {
        l.contains("\"approved_via\":\"mcp\"")
    });
    let line = lines_with(&logs, &["\"outcome\":\"ran\"", "\"approved_via\":\"mcp\""]);
    assert_eq!(line.len(), 1, "{logs}");
    assert!(
        line[0].contains("\"approver\":\"jwt:agent-7f3a\""),
        "{}",
        line[0]
    );
    let _ = std::fs::remove_file(&file);
}

/// The JSON-RPC reply of the gateway under `port` to `event`.
fn gateway_mcp(watch: &Peer, port: u16, event: &Value) -> Value {
    let (status, body) = http("(elicitation)", invoke_value(port, "gateway", event));
    assert_eq!(status, 200, "{body}\n{}", watch.logs());
    body
}

/// clarify in the agent's own MCP client on AWS (issue #57): the gateway
/// passes the client's elicitation capability and its retry to the clarify
/// function; the retry, through another gateway and another clarify
/// function process, answers the one clarification. The key that seals the
/// state is made once in the clarify table, so nothing is configured.
#[test]
fn gateway_asks_in_the_mcp_client_and_any_instance_takes_the_retry() {
    let sshd = toolgate_e2e::sshd::Sshd::start();
    let (_moto, endpoint) = moto();
    boto(&endpoint, CLARIFY_TABLE, &[]);
    // A server whose every command waits for a person, who may be the
    // caller's own (`approvers = "client"`).
    let doc = json!({
        "host": "127.0.0.1", "port": sshd.port, "username": sshd.user,
        "host_key": sshd.host_key_line(),
        "policy": {"approve_preset": "all", "approvers": "client"}
    })
    .to_string();
    put_server(&endpoint, &sshd, "box", &doc);
    // Two deployments' worth of processes on one table: each watch's
    // gateway reaches its own clarify function.
    let start = || {
        let port = free_port();
        let lambda_api = format!("http://127.0.0.1:{port}");
        watch_on(
            port,
            &[
                ("AWS_ENDPOINT_URL", &endpoint),
                ("AWS_ENDPOINT_URL_LAMBDA", &lambda_api),
                ("AWS_ACCESS_KEY_ID", "testing"),
                ("AWS_SECRET_ACCESS_KEY", "testing"),
                ("AWS_REGION", "us-east-1"),
                ("TOOLGATE_PEER_FUNCTIONS", "clarify,ssh"),
                ("TOOLGATE_CLARIFY_TABLE", "clarifications"),
                ("TOOLGATE_CLARIFY_STEP_FUNCTIONS", "0"),
                ("TOOLGATE_PUBLIC_URL", PUBLIC_URL),
                ("TOOLGATE_SSH_SSM_PREFIX", "/toolgate/servers"),
                ("TOOLGATE_APPROVERS_JWT_GROUP", APPROVERS_GROUP),
                ("TOOLGATE_APPROVERS_JWT_AUDIENCE", "people-web"),
            ],
        )
    };
    let ((a, a_port), (b, b_port)) = (start(), start());
    let args = json!({"question": "Roll back release 1843?", "options": ["yes", "no"]});
    // The gateway lists clarify once its function has started.
    let first = |watch: &Peer, port: u16| {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let reply = gateway_mcp(watch, port, &elicit_event("agent-7f3a", &args, &json!({})));
            let unknown = reply["error"]["data"]["code"] == "unknown_tool";
            if !unknown || std::time::Instant::now() > deadline {
                return reply;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    };
    let asked = first(&a, a_port);
    let r = &asked["result"];
    assert_eq!(r["resultType"], "input_required", "{asked}\n{}", a.logs());
    assert_eq!(
        r["inputRequests"]["answer"]["params"]["requestedSchema"]["properties"]["choice"]["enum"],
        json!(["yes", "no"]),
        "{asked}"
    );
    let state = r["requestState"].as_str().unwrap().to_owned();
    toolgate_e2e::issued::record("request state", &state);
    // The key is the table's own item, made by the first ask.
    let kept = boto(
        &endpoint,
        "print(boto3.client('dynamodb', **kw).get_item(TableName='clarifications', Key={'id': {'S': 'secret:mcp-state-key'}})['Item']['secret']['S'])",
        &[],
    );
    toolgate_e2e::issued::record("MCP state key", kept.trim());
    assert_eq!(kept.trim().len(), 64, "{kept}");

    let yes = json!({"requestState": state, "inputResponses": {"answer": {"action": "accept", "content": {"choice": "yes"}}}});
    // Another caller's retry, or a changed state, is refused on b.
    let refused = |reply: &Value| -> (String, String) {
        let r = &reply["result"];
        assert_eq!(r["isError"], true, "{reply}");
        let body: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        (
            body["error"]["code"].as_str().unwrap().to_owned(),
            body["error"]["message"].as_str().unwrap().to_owned(),
        )
    };
    // While b cannot read the key (its item holds none), its retry is
    // refused to be sent again, not asked anew: nothing the person said is
    // lost.
    let item = |secret: Option<&str>| {
        let value = match secret {
            Some(v) => format!("{{'secret': {{'S': '{v}'}}}}"),
            None => "{}".to_owned(),
        };
        boto(
            &endpoint,
            &format!(
                "boto3.client('dynamodb', **kw).put_item(TableName='clarifications', Item={{'id': {{'S': 'secret:mcp-state-key'}}, **{value}}})"
            ),
            &[],
        );
    };
    item(None);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let unreadable = loop {
        let reply = gateway_mcp(&b, b_port, &elicit_event("agent-7f3a", &args, &yes));
        if reply["error"]["data"]["code"] != "unknown_tool" || std::time::Instant::now() > deadline
        {
            break reply;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(
        refused(&unreadable),
        (
            "unavailable".to_owned(),
            "\"requestState\" cannot be opened here now: this deployment's MCP state key is unavailable; call again with it later".to_owned()
        ),
        "{}",
        b.logs()
    );
    item(Some(kept.trim()));
    assert_eq!(
        refused(&gateway_mcp(
            &b,
            b_port,
            &elicit_event("someone-else", &args, &yes)
        )),
        (
            "forbidden".to_owned(),
            "\"requestState\" was issued to another caller".to_owned()
        ),
        "{}",
        b.logs()
    );
    let mut changed = yes.clone();
    changed["requestState"] = json!(format!("{state}x"));
    assert_eq!(
        refused(&gateway_mcp(
            &b,
            b_port,
            &elicit_event("agent-7f3a", &args, &changed)
        ))
        .0,
        "invalid_input"
    );

    // The retry through b answers it.
    let started = std::time::Instant::now();
    let answered = gateway_mcp(&b, b_port, &elicit_event("agent-7f3a", &args, &yes));
    let retried_in = started.elapsed();
    let out = &answered["result"]["structuredContent"];
    assert_eq!(
        (&out["status"], &out["answer"], &out["choice"]),
        (&json!("answered"), &json!("yes"), &json!(0)),
        "{answered}\n{}",
        b.logs()
    );
    // Replayed through a: the answer that stands, as a second answer gets.
    let no = json!({"requestState": state, "inputResponses": {"answer": {"action": "accept", "content": {"choice": "no"}}}});
    assert_eq!(
        refused(&gateway_mcp(
            &a,
            a_port,
            &elicit_event("agent-7f3a", &args, &no)
        )),
        (
            "conflict".to_owned(),
            "This clarification is already answered".to_owned()
        )
    );
    approve_in_the_client((&a, a_port), (&b, b_port));

    // A 2025-11-25 client through the gateway: today's pending question.
    // Its trace context (`_meta.traceparent`) reaches the function that
    // runs the tool, whose call line names it.
    const CLIENT_TRACE: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let mut old = fixture("apigw_v2_mcp_call_ssh.json");
    old["body"] = json!(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "clarify", "arguments": {"question": "Old client?"},
                          "_meta": {"traceparent": CLIENT_TRACE}}})
        .to_string()
    );
    old["headers"]["content-length"] = json!(old["body"].as_str().unwrap().len().to_string());
    old["headers"]["mcp-protocol-version"] = json!("2025-11-25");
    let pending = gateway_mcp(&a, a_port, &old);
    assert_eq!(
        pending["result"]["structuredContent"]["status"], "pending",
        "{pending}"
    );
    let logs = a.logs_when(Duration::from_secs(10), |logs| {
        !lines_with(logs, &["\"transport\":\"lambda\"", CLIENT_TRACE]).is_empty()
    });
    let line = lines_with(
        &logs,
        &[
            "\"message\":\"tool call\"",
            "\"transport\":\"lambda\"",
            CLIENT_TRACE,
        ],
    );
    assert_eq!(line.len(), 1, "the clarify function's call line:\n{logs}");
    println!("retry through another gateway and clarify process: {retried_in:?}");
}

/// API Gateway's event for `GET path` (its route `GET route`) by caller
/// `sub`.
fn get_event(path: &str, route: &str, sub: &str) -> Value {
    let mut e = fixture("apigw_v2_healthz.json");
    e["rawPath"] = json!(path);
    e["requestContext"]["http"]["path"] = json!(path);
    e["routeKey"] = json!(format!("GET {route}"));
    e["requestContext"]["routeKey"] = json!(format!("GET {route}"));
    e["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(sub);
    e
}

/// API Gateway's event for a 2026-07-28 MCP request of `method` (its
/// `Mcp-Name` is `name`) from a client that declares MCP's tasks
/// extension, by caller `sub`.
fn mcp_tasks_event(method: &str, name: &str, params: Value, sub: &str) -> Value {
    let caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let mut e = mcp_2026_event("ssh_run", &caps, sub, &json!({}), &json!({}));
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "scripted", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    e["body"] = json!(body.to_string());
    e["headers"]["content-length"] = json!(e["body"].as_str().unwrap().len().to_string());
    e["headers"]["mcp-method"] = json!(method);
    e["headers"]["mcp-name"] = json!(name);
    e
}

/// Long calls through the gateway as MCP tasks (issue #57): a 60 s
/// `ssh_run` and a 40 s script outlive API Gateway's 30 s, run in their own
/// functions from asynchronous invocations, and complete with their whole
/// output, read through the gateway (MCP's `tasks/get` and `GET
/// /tasks/{id}`); a task is its caller's alone; cancelling one stops its
/// command on the server. `cargo lambda watch` runs an asynchronous
/// (`Event`) invocation as it runs any, answering when the function
/// returns: the gateway counts the task's start in its row as accepted,
/// as it counts Lambda's 202.
#[test]
fn gateway_runs_long_calls_as_tasks_in_their_functions() {
    let sshd = toolgate_e2e::sshd::Sshd::start();
    let (_moto, endpoint) = moto();
    boto(&endpoint, CLARIFY_TABLE, &[]);
    let doc = json!({
        "host": "127.0.0.1", "port": sshd.port, "username": sshd.user,
        "host_key": sshd.host_key_line(),
    })
    .to_string();
    put_server(&endpoint, &sshd, "box", &doc);
    let port = free_port();
    let lambda_api = format!("http://127.0.0.1:{port}");
    let (w, port) = watch_for(
        port,
        180,
        &[
            ("AWS_ENDPOINT_URL", &endpoint),
            ("AWS_ENDPOINT_URL_LAMBDA", &lambda_api),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
            ("TOOLGATE_PEER_FUNCTIONS", "python-execute,ssh"),
            ("TOOLGATE_TASKS_TABLE", "clarifications"),
            ("TOOLGATE_TASKS_AFTER_MS", "2000"),
            ("TOOLGATE_SSH_SSM_PREFIX", "/toolgate/servers"),
            ("TOOLGATE_PYTHON_TIMEOUT", "90"),
        ],
    );
    let rpc = |method: &str, name: &str, params: Value, sub: &str| {
        gateway_mcp(&w, port, &mcp_tasks_event(method, name, params, sub))
    };
    let call = |tool: &str, args: Value| {
        let params = json!({"name": tool, "arguments": args});
        // The gateway lists its peers once they have started.
        toolgate_e2e::timing::poll_until(Duration::from_secs(60), "the gateway's tools", || {
            let r = rpc("tools/call", tool, params.clone(), "agent-7f3a");
            (r["error"]["data"]["code"] != "unknown_tool").then_some(r)
        })
    };
    let task_of = |started: &Value| -> String {
        let t = &started["result"];
        assert_eq!(
            (&t["resultType"], &t["status"]),
            (&json!("task"), &json!("working")),
            "{started}\n{}",
            w.logs()
        );
        let id = t["taskId"].as_str().unwrap().to_owned();
        // The log scan looks for it: lines carry its ref, never the id.
        toolgate_e2e::issued::record("task id", &id);
        id
    };
    // A quick call answers directly, as before.
    let quick = call(
        "ssh_run",
        json!({"server_name": "box", "command": "echo direct"}),
    );
    assert_eq!(
        quick["result"]["structuredContent"]["stdout"],
        "direct\n",
        "{quick}\n{}",
        w.logs()
    );
    // What a quick call pays on the task path (a task row, an asynchronous
    // invocation, reads of its run) beside a client without tasks: printed.
    let t = std::time::Instant::now();
    call(
        "ssh_run",
        json!({"server_name": "box", "command": "echo direct"}),
    );
    let via_task = t.elapsed();
    let mut plain = fixture("apigw_v2_mcp_call_ssh.json");
    plain["body"] = json!(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "ssh_run", "arguments": {"server_name": "box", "command": "echo direct"}}})
        .to_string()
    );
    plain["headers"]["content-length"] = json!(plain["body"].as_str().unwrap().len().to_string());
    plain["headers"]["mcp-protocol-version"] = json!("2025-11-25");
    let t = std::time::Instant::now();
    let direct = gateway_mcp(&w, port, &plain);
    println!(
        "a quick ssh_run through the gateway: {via_task:?} on the task path, {:?} direct",
        t.elapsed()
    );
    assert_eq!(
        direct["result"]["structuredContent"]["stdout"], "direct\n",
        "{direct}"
    );
    // The gateway's document has the task routes, and on the tools' own
    // routes (their functions') `Prefer` answers a 307 to them.
    let doc = get_event("/openapi.json", "/openapi.json", "agent-7f3a");
    let (_, doc) = http("GET /openapi.json", invoke_value(port, "gateway", &doc));
    assert!(doc["paths"]["/tasks/{id}"]["get"].is_object(), "{doc}");
    assert!(
        doc["paths"]["/tools/ssh_run/task"]["post"]["responses"]["202"].is_object(),
        "{doc}"
    );
    let tool_route = &doc["paths"]["/tools/ssh_run"]["post"]["responses"];
    assert!(
        tool_route["307"].is_object() && tool_route.get("202").is_none(),
        "{doc}"
    );
    let lines = "for i in $(seq 1 60); do echo line $i; sleep 1; done";
    let ssh = task_of(&call(
        "ssh_run",
        json!({"server_name": "box", "command": lines, "timeout": 120}),
    ));
    let code = "import time\nfor i in range(40):\n    print(i)\n    time.sleep(1)\nresult = 'done'";
    let py = task_of(&call("python.execute", json!({"code": code})));
    let started = std::time::Instant::now();

    // Over HTTP too, through the gateway's route; another caller sees none.
    let read = |id: &str, sub: &str| {
        let e = get_event(&format!("/tasks/{id}"), "/tasks/{id}", sub);
        http("GET /tasks/{id}", invoke_value(port, "gateway", &e))
    };
    let (status, view) = read(&ssh, "agent-7f3a");
    assert_eq!(
        (status, &view["task"]["status"]),
        (200, &json!("working")),
        "{view}"
    );
    let (status, view) = read(&ssh, "someone-else");
    assert_eq!(
        (status, &view["error"]["code"]),
        (404, &json!("not_found")),
        "{view}"
    );
    let other = rpc("tasks/get", &ssh, json!({"taskId": ssh}), "someone-else");
    assert!(other["error"].is_object(), "{other}");

    let settled = |id: &str| {
        toolgate_e2e::timing::poll_until(Duration::from_secs(150), "the task to end", || {
            let r = rpc("tasks/get", id, json!({"taskId": id}), "agent-7f3a");
            (r["result"]["status"] != "working").then_some(r)
        })
    };
    let done = settled(&ssh);
    let took = started.elapsed();
    let r = &done["result"];
    assert_eq!(r["status"], "completed", "{done}\n{}", w.logs());
    let out = &r["result"]["structuredContent"];
    let want: String = (1..=60).map(|i| format!("line {i}\n")).collect();
    assert_eq!(
        (&out["exit_code"], &out["stdout"]),
        (&json!(0), &json!(want)),
        "{done}"
    );
    assert_eq!(r["result"]["isError"], json!(false), "{done}");
    let done = settled(&py);
    let out = &done["result"]["result"]["structuredContent"];
    let want: String = (0..40).map(|i| format!("{i}\n")).collect();
    assert_eq!(
        (&out["stdout"], &out["result"], &out["timed_out"]),
        (&json!(want), &json!("done"), &json!(false)),
        "{done}\n{}",
        w.logs()
    );
    // Read after it ended, over HTTP: the tool's own result.
    let (status, view) = read(&py, "agent-7f3a");
    assert_eq!(
        (status, &view["result"]["result"]),
        (200, &json!("done")),
        "{view}"
    );
    println!("60 s ssh_run as a task: completed after {took:?}");

    // Over plain HTTP: `POST /tools/python.execute` with `Prefer` reaches
    // python-execute's own function (API Gateway routes by path), which
    // starts no task (its role may not) and sends the caller to the task
    // route with a 307; that route goes to the gateway, which starts it.
    let mut post = fixture("apigw_v2_call.json");
    let code = "import time\ntime.sleep(6)\nresult = 'later'";
    post["body"] = json!(json!({ "code": code }).to_string());
    post["headers"]["content-length"] = json!(post["body"].as_str().unwrap().len().to_string());
    post["headers"]["prefer"] = json!("respond-async");
    let moved = match invoke_value(port, "python-execute", &post) {
        Outcome::Returned(r) => r,
        Outcome::Failed(e) => panic!("{e}\n{}", w.logs()),
    };
    assert_eq!(
        (&moved["statusCode"], &moved["headers"]["location"]),
        (&json!(307), &json!("python.execute/task")),
        "{moved}"
    );
    let to_task_route = |mut e: Value| {
        e["rawPath"] = json!("/tools/python.execute/task");
        e["requestContext"]["http"]["path"] = json!("/tools/python.execute/task");
        e["routeKey"] = json!("POST /tools/{name}/task");
        e["requestContext"]["routeKey"] = json!("POST /tools/{name}/task");
        e
    };
    let t = std::time::Instant::now();
    let (status, started) = http(
        "POST /tools/python.execute/task",
        invoke_value(port, "gateway", &to_task_route(post.clone())),
    );
    let answered = t.elapsed();
    assert_eq!(status, 202, "{started}\n{}", w.logs());
    assert_eq!(started["task"]["status"], "working", "{started}");
    let http_task = started["task"]["id"].as_str().unwrap().to_owned();
    toolgate_e2e::issued::record("task id", &http_task);
    let (status, view) = read(&http_task, "someone-else");
    assert_eq!((status, &view["error"]["code"]), (404, &json!("not_found")));
    let view =
        toolgate_e2e::timing::poll_until(Duration::from_secs(60), "the HTTP task to end", || {
            let (_, v) = read(&http_task, "agent-7f3a");
            (v["task"]["status"] != "working").then_some(v)
        });
    assert_eq!(
        (&view["task"]["status"], &view["result"]["result"]),
        (&json!("completed"), &json!("later")),
        "{view}\n{}",
        w.logs()
    );
    println!("POST /tools/python.execute/task on Lambda: 202 after {answered:?}");
    // Cancelled over HTTP: the function running it stops.
    post["body"] = json!(json!({"code": "import time\ntime.sleep(300)"}).to_string());
    post["headers"]["content-length"] = json!(post["body"].as_str().unwrap().len().to_string());
    let (status, started) = http(
        "POST /tools/python.execute/task",
        invoke_value(port, "gateway", &to_task_route(post.clone())),
    );
    assert_eq!(status, 202, "{started}\n{}", w.logs());
    let long = started["task"]["id"].as_str().unwrap().to_owned();
    toolgate_e2e::issued::record("task id", &long);
    let mut stop = get_event(
        &format!("/tasks/{long}/cancel"),
        "/tasks/{id}/cancel",
        "agent-7f3a",
    );
    stop["requestContext"]["http"]["method"] = json!("POST");
    stop["routeKey"] = json!("POST /tasks/{id}/cancel");
    stop["requestContext"]["routeKey"] = json!("POST /tasks/{id}/cancel");
    let (status, _) = http(
        "POST /tasks/{id}/cancel",
        invoke_value(port, "gateway", &stop),
    );
    assert_eq!(status, 200);
    let view = toolgate_e2e::timing::poll_until(
        Duration::from_secs(30),
        "the cancelled HTTP task to stop",
        || {
            let (_, v) = read(&long, "agent-7f3a");
            (v["task"]["status"] != "working").then_some(v)
        },
    );
    assert_eq!(view["task"]["status"], "cancelled", "{view}");
    let t = std::time::Instant::now();
    rpc("tasks/get", &ssh, json!({"taskId": ssh}), "agent-7f3a");
    println!(
        "tasks/get of a completed task through the gateway: {:?}",
        t.elapsed()
    );

    // Cancelled: the command on the server is stopped.
    let marker = format!("tg-lambda-task-{}", std::process::id());
    let id = task_of(&call(
        "ssh_run",
        json!({"server_name": "box", "command": format!("sleep 300 # {marker}")}),
    ));
    toolgate_e2e::timing::poll_until(
        Duration::from_secs(20),
        "the remote command to start",
        || (!sshd.remote_processes(&marker).is_empty()).then_some(()),
    );
    let ack = rpc("tasks/cancel", &id, json!({"taskId": id}), "agent-7f3a");
    assert!(ack["error"].is_null(), "{ack}\n{}", w.logs());
    assert_eq!(settled(&id)["result"]["status"], "cancelled");
    toolgate_e2e::timing::poll_until(
        Duration::from_secs(10),
        "the remote command to stop",
        || sshd.remote_processes(&marker).is_empty().then_some(()),
    );
}

// ---- Code mode on AWS (#58) ----

/// API Gateway's event for `POST /tools/python.execute` with `body`, from
/// the JWT whose `sub` is `sub`.
fn python_event(sub: &str, body: &Value) -> Value {
    let mut event = fixture("apigw_v2_call.json");
    event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(sub);
    let body = body.to_string();
    event["headers"]["content-length"] = json!(body.len().to_string());
    event["body"] = json!(body);
    event
}

/// Code mode through the Lambda functions: python-execute's scripts call
/// the ssh and clarify functions' tools through the Invoke API as their
/// caller (`cargo lambda watch` runs every function; moto keeps the
/// sessions, the approvals and the servers; a real sshd runs the
/// commands). A gated call stops the script, which waits with nothing
/// running; an approver approves through the clarify function; the
/// resume, from a journal in DynamoDB, runs no command twice.
#[test]
fn python_execute_scripts_call_the_other_functions_and_wait_for_people() {
    let sshd = toolgate_e2e::sshd::Sshd::start();
    let (_moto, endpoint) = moto();
    boto(&endpoint, CLARIFY_TABLE, &[]);
    boto(
        &endpoint,
        "boto3.client('dynamodb', **kw).create_table(TableName='sessions', KeySchema=[{'AttributeName': 'id', 'KeyType': 'HASH'}], AttributeDefinitions=[{'AttributeName': 'id', 'AttributeType': 'S'}], BillingMode='PAY_PER_REQUEST')",
        &[],
    );
    let doc = |policy: Value| {
        json!({
            "host": "127.0.0.1", "port": sshd.port, "username": sshd.user,
            "host_key": sshd.host_key_line(), "policy": policy,
        })
        .to_string()
    };
    // `box` asks an approver before any `echo gated`; `twin` never does.
    put_server(
        &endpoint,
        &sshd,
        "box",
        &doc(json!({"approve": ["^echo gated"]})),
    );
    put_server(&endpoint, &sshd, "twin", &doc(json!({})));
    let port = free_port();
    let lambda_api = format!("http://127.0.0.1:{port}");
    let (w, port) = watch_for(
        port,
        180,
        &[
            ("AWS_ENDPOINT_URL", &endpoint),
            ("AWS_ENDPOINT_URL_LAMBDA", &lambda_api),
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
            // python-execute leaves itself out.
            ("TOOLGATE_PEER_FUNCTIONS", "python-execute,ssh,clarify"),
            ("TOOLGATE_SESSIONS_TABLE", "sessions"),
            ("TOOLGATE_SSH_SSM_PREFIX", "/toolgate/servers"),
            ("TOOLGATE_CLARIFY_TABLE", "clarifications"),
            ("TOOLGATE_CLARIFY_STEP_FUNCTIONS", "0"),
            ("TOOLGATE_PUBLIC_URL", PUBLIC_URL),
            ("TOOLGATE_APPROVERS_JWT_GROUP", APPROVERS_GROUP),
            ("TOOLGATE_PYTHON_TIMEOUT", "120"),
        ],
    );
    let execute = |sub: &str, body: &Value| -> (u64, Value) {
        http(
            "python.execute",
            invoke_value(port, "python-execute", &python_event(sub, body)),
        )
    };
    let dir = std::env::temp_dir().join(format!("tg-code-mode-lambda-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let log = dir.join("gated.log");
    let lines = || -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let body = json!({
        "code": OPS_SCRIPT,
        "files": {"gated.txt": "box", "log.txt": log.display().to_string()},
    });
    let (status, first) = execute("agent-7f3a", &body);
    assert_eq!(status, 200, "{first}\n{}", w.logs());
    assert_eq!(first["waiting"]["for"], "approval", "{first}\n{}", w.logs());
    assert_eq!(first["waiting"]["tool"], "ssh_run", "{first}");
    assert_eq!(first["exit_code"], -1, "{first}");
    let expect: Vec<String> = (0..10).map(|i| i.to_string()).collect();
    assert_eq!(lines(), expect);
    let seed_line = first["stdout"]
        .as_str()
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let with_resume = |id: &str| {
        let mut b = body.clone();
        b["resume"] = json!(id);
        b
    };
    let mut resume = first["resume"].as_str().unwrap().to_owned();
    toolgate_e2e::issued::record("resume id", &resume);
    // Another caller finds no such journal; nothing runs.
    let (status, e) = execute("mallory-9", &with_resume(&resume));
    assert_eq!(
        (status, &e["error"]["code"]),
        (404, &json!("not_found")),
        "{e}"
    );
    // Each gate: approved by an approver (what the agent tries is
    // refused), resumed, on to the next.
    let mut answer = first;
    for (gate, stop) in [(10, 25), (25, 40), (40, 50)] {
        let id = answer["waiting"]["approval"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        toolgate_e2e::issued::record("approval id", &id);
        approve(&w, port, &id);
        let (status, next) = execute("agent-7f3a", &with_resume(&resume));
        assert_eq!(status, 200, "{next}\n{}", w.logs());
        assert_eq!(
            next["stdout"].as_str().unwrap().lines().next().unwrap(),
            seed_line
        );
        let want: Vec<String> = (0..stop)
            .map(|i| {
                if [10, 25, 40].contains(&i) {
                    format!("gated-{i}")
                } else {
                    i.to_string()
                }
            })
            .collect();
        assert_eq!(lines(), want, "after gate {gate}\n{next}");
        if stop == 50 {
            assert_eq!(next["exit_code"], 0, "{next}");
            assert!(next.get("resume").is_none(), "{next}");
        } else {
            assert_eq!(next["waiting"]["for"], "approval", "after {gate}: {next}");
        }
        // The id it went on from is spent.
        let (status, e) = execute("agent-7f3a", &with_resume(&resume));
        assert_eq!(
            (status, &e["error"]["code"]),
            (410, &json!("expired")),
            "{e}"
        );
        if let Some(next_id) = next["resume"].as_str() {
            resume = next_id.to_owned();
            toolgate_e2e::issued::record("resume id", &resume);
        }
        answer = next;
    }
    // The same script with the gates off answers the same.
    let open_log = dir.join("open.log");
    let (status, open) = execute(
        "agent-7f3a",
        &json!({"code": OPS_SCRIPT, "files": {"gated.txt": "twin", "log.txt": open_log.display().to_string()}}),
    );
    assert_eq!(status, 200, "{open}\n{}", w.logs());
    assert_eq!(open["result"], answer["result"]);
    assert_eq!(
        std::fs::read_to_string(&open_log).unwrap().lines().count(),
        50
    );

    // A question waits for its answer, given on the clarify function's
    // answer page; the resume reads it there.
    let code = r#"
from toolgate import tools
print("asking")
a = tools.clarify(question="Restart nginx on web-1?", options=["yes", "no"])
print("answered", a["status"], a.get("choice"))
result = a["answer"]
"#;
    let (status, asked) = execute("agent-7f3a", &json!({ "code": code }));
    assert_eq!(status, 200, "{asked}\n{}", w.logs());
    assert_eq!(asked["waiting"]["for"], "answer", "{asked}");
    let q = asked["waiting"]["clarification"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    toolgate_e2e::issued::record("clarification id", &q);
    let resume = asked["resume"].as_str().unwrap().to_owned();
    toolgate_e2e::issued::record("resume id", &resume);
    let (_, again) = execute("agent-7f3a", &json!({ "code": code, "resume": resume }));
    assert_eq!(
        again["waiting"]["clarification"]["id"],
        q.as_str(),
        "{again}"
    );
    let (status, answered) = http(
        "answer",
        invoke_value(
            port,
            "clarify",
            &answer_route_event("POST", &q, Some(r#"{"choice": 0}"#)),
        ),
    );
    assert_eq!(status, 200, "{answered}");
    let (status, done) = execute("agent-7f3a", &json!({ "code": code, "resume": resume }));
    assert_eq!(status, 200, "{done}\n{}", w.logs());
    assert_eq!(done["stdout"], "asking\nanswered answered 0\n", "{done}");
    assert_eq!(done["result"], "yes", "{done}");

    // The scripts' calls are each a line in python-execute's log (transport
    // `code`, the script named) and in the called function's (the script
    // named there too).
    let logs = w.logs();
    let parents: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("\"transport\":\"code\"") && l.contains("\"tool\":\"ssh_run\""))
        .filter_map(|l| l.split("\"parent\":\"").nth(1)?.split('"').next())
        .collect();
    assert!(parents.len() >= 100, "{} code lines", parents.len());
    assert!(
        parents.iter().all(|p| p.starts_with("python.execute#")),
        "{parents:?}"
    );
    let seen_by_ssh = logs
        .lines()
        .filter(|l| {
            l.contains("\"transport\":\"lambda\"") && l.contains("\"parent\":\"python.execute#")
        })
        .count();
    assert!(
        seen_by_ssh >= 100,
        "{seen_by_ssh} lines in the ssh function\n{logs}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
