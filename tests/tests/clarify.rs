//! `clarify` end to end on `toolgate serve`: the lifecycle over HTTP with
//! the SQLite store (restart, racing answers, expiry, cancel, every error
//! code, long-poll, the page); and on the Lambda glue in process, the
//! DynamoDB store and Step Functions callbacks against moto server through
//! the real SDK (a task token comes only with a direct invocation).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_e2e::browser::answer_in_chromium;
use toolgate_e2e::lambda_events::{fixture, http_parts, invoke};
use toolgate_e2e::peer::moto;
use toolgate_e2e::stepfunctions::{
    AWS, boto, execute_state_machines, finished, start_waiting_execution,
};
use toolgate_e2e::{Response, Server};
use toolgate_lambda::Function;
use toolgate_shared::config::Config;
use toolgate_shared::logging::id_ref;
use toolgate_shared::tools::clarify::TASK_TOKEN_DIRECT_ONLY;
use toolgate_shared::toolset::Toolset;

fn data_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("toolgate-clarify-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn start(dir: &std::path::Path, extra: &[(&str, &str)]) -> Server {
    let mut env = vec![("TOOLGATE_DATA_DIR", dir.to_str().unwrap())];
    env.extend_from_slice(extra);
    Server::start(&env)
}

fn ask(s: &Server, args: Value) -> Value {
    let r = s.post_json("/tools/clarify", &args);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// Asks, and returns the new clarification's id.
fn ask_id(s: &Server, args: Value) -> String {
    ask(s, args)["id"].as_str().unwrap().to_owned()
}

fn answer(s: &Server, id: &str, body: Value) -> Response {
    s.post_json(&format!("/clarifications/{id}/answer"), &body)
}

fn code(r: &Response) -> String {
    r.json()["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn lifecycle_error_codes_and_long_poll() {
    let dir = data_dir("life");
    let s = start(&dir, &[]);
    let c = ask(
        &s,
        json!({"question": "Deploy to which region?", "options": ["eu-west-1", "us-east-1"]}),
    );
    let id = c["id"].as_str().unwrap().to_owned();
    assert_eq!(c["status"], "pending");
    assert_eq!(id.len(), 40, "160 random bits in hex");
    assert_eq!(c["options"], json!(["eu-west-1", "us-east-1"]));
    assert_eq!(
        c["answer_url"],
        format!("http://{}/clarifications/{id}/answer", s.addr)
    );
    assert!(c["expires_at"].as_str().unwrap().ends_with('Z'));
    assert_ne!(ask(&s, json!({"question": "again?"}))["id"], c["id"]);

    let got = s.get(&format!("/clarifications/{id}")).json();
    assert_eq!(got["status"], "pending");
    assert!(got.get("task_token").is_none());

    // A long-poll returns as soon as the answer lands.
    let poller = {
        let (addr, id) = (s.addr.clone(), id.clone());
        std::thread::spawn(move || {
            let t = Instant::now();
            let r = toolgate_e2e::raw_request(
                &addr,
                "GET",
                &format!("/clarifications/{id}?wait=20"),
                &[],
                b"",
            );
            (t.elapsed(), r.json())
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let r = answer(&s, &id, json!({"choice": 1}));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["answer"], "us-east-1");
    assert_eq!(r.json()["choice"], 1);
    let (took, polled) = poller.join().unwrap();
    assert_eq!(polled["status"], "answered", "{polled}");
    assert!(took < Duration::from_secs(5), "long-poll took {took:?}");
    assert!(polled["answered_at"].as_str().is_some());

    // Answering twice: 409 with the answer that won.
    let r = answer(&s, &id, json!({"answer": "ap-south-1"}));
    assert_eq!(r.status, 409);
    assert_eq!(code(&r), "conflict");
    assert_eq!(r.json()["clarification"]["answer"], "us-east-1");

    // Unknown ids, well-formed or not: 404.
    for bad in [
        "0123456789abcdef0123456789abcdef01234567",
        "nope",
        "..%2F..%2Fetc",
    ] {
        assert_eq!(
            s.get(&format!("/clarifications/{bad}")).status,
            404,
            "{bad}"
        );
        let r = answer(&s, bad, json!({"answer": "x"}));
        assert_eq!(r.status, 404, "{bad}");
        assert_eq!(code(&r), "not_found");
    }

    // Hostile and malformed input: 400 in the contract's shape.
    let open = ask_id(&s, json!({"question": "q", "options": ["a"]}));
    for bad in [
        json!({}),
        json!({"choice": 1}),
        json!({"choice": "0"}),
        json!({"answer": ""}),
        json!([1]),
    ] {
        let r = answer(&s, &open, bad.clone());
        assert_eq!(r.status, 400, "{bad}");
        assert_eq!(code(&r), "invalid_input");
    }
    let r = s.request(
        "POST",
        &format!("/clarifications/{open}/answer"),
        &[("Content-Type", "application/json")],
        b"{not json",
    );
    assert_eq!(r.status, 400);
    assert_eq!(
        s.get(&format!("/clarifications/{open}?wait=soon")).status,
        400
    );
    for bad in [
        json!({}),
        json!({"question": ""}),
        json!({"question": "q", "options": [""]}),
        json!({"question": "q", "options": (0..21).map(|i| i.to_string()).collect::<Vec<_>>()}),
    ] {
        let r = s.post_json("/tools/clarify", &bad);
        assert_eq!(r.status, 400, "{bad}");
    }

    // Cancel: then answering is a conflict, and cancelling again too.
    let r = s.post_json(&format!("/clarifications/{open}/cancel"), &json!({}));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "cancelled");
    assert_eq!(answer(&s, &open, json!({"answer": "late"})).status, 409);
    assert_eq!(
        s.post_json(&format!("/clarifications/{open}/cancel"), &json!({}))
            .status,
        409
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nothing_is_lost_on_restart() {
    let dir = data_dir("restart");
    let s = start(&dir, &[]);
    let id = ask_id(&s, json!({"question": "Still there?"}));
    assert!(s.terminate().success());
    let s = start(&dir, &[]);
    assert_eq!(
        s.get(&format!("/clarifications/{id}")).json()["status"],
        "pending"
    );
    let r = answer(&s, &id, json!({"answer": "yes, after a restart"}));
    assert_eq!(r.status, 200);
    assert!(s.terminate().success());
    let s = start(&dir, &[]);
    assert_eq!(
        s.get(&format!("/clarifications/{id}")).json()["answer"],
        "yes, after a restart"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn racing_answers_have_exactly_one_winner() {
    let dir = data_dir("race");
    let s = start(&dir, &[]);
    exactly_one_winner(&s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sixteen answers at once to one clarification: exactly one wins (200),
/// every other is a 409 that shows the winner, and the store keeps it.
fn exactly_one_winner(s: &Server) {
    let id = ask_id(s, json!({"question": "Who wins?"}));
    let barrier = std::sync::Barrier::new(16);
    let results: Vec<(u16, Value)> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..16)
            .map(|i| {
                let (id, barrier) = (&id, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    let r = answer(s, id, json!({"answer": format!("answer {i}")}));
                    (r.status, r.json())
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let winners: Vec<&Value> = results
        .iter()
        .filter(|(st, _)| *st == 200)
        .map(|(_, v)| v)
        .collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    let won = winners[0]["answer"].clone();
    for (st, v) in &results {
        if *st != 200 {
            assert_eq!(*st, 409, "{v}");
            assert_eq!(
                v["clarification"]["answer"], won,
                "every loser sees the winner"
            );
        }
    }
    assert_eq!(
        s.get(&format!("/clarifications/{id}")).json()["answer"],
        won
    );
}

/// A long-poll ends when the clarification expires (status `expired`, not
/// at the wait asked for), and no later than the 25 s cap (still `pending`);
/// a `wait` that is not a number is the contract's `invalid_input`.
#[test]
fn a_long_poll_ends_at_expiry_and_at_the_25_s_cap() {
    use toolgate_e2e::timing::stop_bound;
    let dir = data_dir("long-poll");
    let s = start(&dir, &[("TOOLGATE_CLARIFY_EXPIRY_SECS", "2")]);
    let id = ask_id(&s, json!({"question": "Soon?"}));
    let started = Instant::now();
    let r = s.get(&format!("/clarifications/{id}?wait=20"));
    let took = started.elapsed();
    assert_eq!(r.json()["status"], "expired", "{}", r.json());
    assert!(took < stop_bound(2), "returned after {took:?}");
    let _ = std::fs::remove_dir_all(&dir);

    let dir = data_dir("long-poll-cap");
    let s = start(&dir, &[]);
    let id = ask_id(&s, json!({"question": "Later?"}));
    let r = s.get(&format!("/clarifications/{id}?wait=abc"));
    assert_eq!((r.status, code(&r).as_str()), (400, "invalid_input"));
    let started = Instant::now();
    let r = s.get(&format!("/clarifications/{id}?wait=600"));
    let took = started.elapsed();
    assert_eq!(r.json()["status"], "pending", "{}", r.json());
    assert!(
        took >= Duration::from_secs(25) && took < stop_bound(25),
        "a 600 s wait returned after {took:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn expired_clarifications_answer_410() {
    let dir = data_dir("expiry");
    let s = start(&dir, &[("TOOLGATE_CLARIFY_EXPIRY_SECS", "1")]);
    let id = ask_id(&s, json!({"question": "Quick?"}));
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(
        s.get(&format!("/clarifications/{id}")).json()["status"],
        "expired"
    );
    let r = answer(&s, &id, json!({"answer": "too late"}));
    assert_eq!(r.status, 410);
    assert_eq!(code(&r), "expired");
    assert_eq!(
        s.post_json(&format!("/clarifications/{id}/cancel"), &json!({}))
            .status,
        410
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_page_escapes_the_question_and_needs_no_token() {
    let dir = data_dir("page");
    let s = start(&dir, &[("TOOLGATE_TOKEN", "agent-secret")]);
    // The tool needs the agent's token...
    let r = s.post_json("/tools/clarify", &json!({"question": "q"}));
    assert_eq!(r.status, 401);
    let r = s.request(
        "POST",
        "/tools/clarify",
        &[("Content-Type", "application/json"), ("Authorization", "Bearer agent-secret")],
        json!({"question": "<script>alert('x')</script> Proceed?", "options": ["<b>yes</b>", "no"]})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 200);
    let id = r.json()["id"].as_str().unwrap().to_owned();
    // ...the page and the answer route do not: the id is the capability.
    let page = s.request(
        "GET",
        &format!("/clarifications/{id}"),
        &[("Accept", "text/html")],
        b"",
    );
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    let html = String::from_utf8_lossy(&page.body);
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; Proceed?"));
    assert!(html.contains("&lt;b&gt;yes&lt;/b&gt;"));
    assert_eq!(answer(&s, &id, json!({"choice": 0})).status, 200);
    let html = String::from_utf8_lossy(
        &s.request(
            "GET",
            &format!("/clarifications/{id}"),
            &[("Accept", "text/html")],
            b"",
        )
        .body,
    )
    .into_owned();
    assert!(html.contains("Answered: &lt;b&gt;yes&lt;/b&gt;"), "{html}");
    // A task token comes only with a direct Lambda invocation: over HTTP
    // it is refused, even with the agent's token (the page never shows
    // one: a unit test in shared/src/clarify/page.rs).
    let r = s.request(
        "POST",
        "/tools/clarify",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", "Bearer agent-secret"),
        ],
        json!({"question": "q", "task_token": "AAAAKgAAAAIAAAAA-a-workflow's"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!((r.status, code(&r).as_str()), (400, "invalid_input"));
    assert_eq!(r.json()["error"]["message"], TASK_TOKEN_DIRECT_ONLY);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Set (to moto's endpoint) in the child process that runs the Step
/// Functions test in process.
const IN_PROCESS: &str = "TOOLGATE_E2E_CLARIFY_IN_PROCESS";

/// This test's own name, for running it again in a child process.
const STEP_FUNCTIONS_TEST: &str = "step_functions_callbacks_and_the_dynamodb_store_against_moto";

/// Step Functions hands its task token only to a direct invocation of the
/// clarify function, so the callbacks are tested on the Lambda glue, in
/// process, over the DynamoDB store in moto: the workflow's ask comes
/// directly, the person's answer and the agent's cancel through the API
/// Gateway routes of the same function, expiry through the schedule's
/// sweep. The AWS SDK takes its endpoint and keys from the process
/// environment, which a test must not change while this binary's other
/// tests run: the test runs itself again in a child process given that
/// environment (the half in [`against_moto_in_process`]), and reads the
/// child's log.
#[test]
fn step_functions_callbacks_and_the_dynamodb_store_against_moto() {
    if let Ok(endpoint) = std::env::var(IN_PROCESS) {
        return against_moto_in_process(&endpoint);
    }
    let (_moto, endpoint) = moto();
    execute_state_machines(&endpoint);
    boto(
        &endpoint,
        r#"
# As template.yaml's ClarifyTable, with the sweep's sparse index.
boto3.client('dynamodb', **kw).create_table(TableName='clarifications', KeySchema=[{'AttributeName': 'id', 'KeyType': 'HASH'}],
  AttributeDefinitions=[{'AttributeName': n, 'AttributeType': t} for n, t in [('id', 'S'), ('awaiting', 'S'), ('due_at', 'N')]],
  GlobalSecondaryIndexes=[{'IndexName': 'expiring', 'KeySchema': [{'AttributeName': 'awaiting', 'KeyType': 'HASH'}, {'AttributeName': 'due_at', 'KeyType': 'RANGE'}],
    'Projection': {'ProjectionType': 'ALL'}}], BillingMode='PAY_PER_REQUEST')
"#,
        &[],
    );
    let child = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", STEP_FUNCTIONS_TEST, "--test-threads=1"])
        .env(IN_PROCESS, &endpoint)
        .env("AWS_ENDPOINT_URL", &endpoint)
        .envs(AWS)
        .env("TOOLGATE_LOG_LEVEL", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run this test in a child process");
    let pid = child.id();
    let out = child.wait_with_output().expect("the child's output");
    // Its stderr is the function's log (the harness captures the test's
    // own output and prints it on stdout): into the suite's log scan.
    toolgate_e2e::captured::record_finished(pid, "clarify-function", &out);
    let (report, logs) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{report}\n{logs}");
    assert!(
        report.contains("test result: ok. 1 passed"),
        "the child ran no test: {report}"
    );
    assert!(logs.contains("task callback sent"), "{logs}");
    assert!(logs.contains("task callback failed"), "{logs}");
    // Logs name a clarification by its ref, and never a task token.
    let items: Vec<Value> = serde_json::from_str(&boto(
        &endpoint,
        "print(json.dumps([{k: v['S'] for k, v in i.items() if k in ('id', 'task_token')} for i in boto3.client('dynamodb', **kw).scan(TableName='clarifications')['Items']]))",
        &[],
    ))
    .unwrap();
    assert_eq!(
        items.len(),
        6,
        "the clarifications the child asked: {items:?}"
    );
    for item in &items {
        let id = item["id"].as_str().unwrap();
        assert!(!logs.contains(id), "{id} is in the log:\n{logs}");
        assert!(logs.contains(&id_ref(id)), "{id}'s ref is not:\n{logs}");
        if let Some(token) = item["task_token"].as_str() {
            assert!(!logs.contains(token), "a task token is in the log:\n{logs}");
        }
    }
}

/// The clarify function as template.yaml configures it (its table, Step
/// Functions callbacks, the API's address), with `extra` settings.
async fn clarify_function(extra: &[(&str, &str)]) -> Function {
    let mut env = vec![
        ("TOOLGATE_CLARIFY_TABLE", "clarifications"),
        ("TOOLGATE_PUBLIC_URL", API),
    ];
    env.extend_from_slice(extra);
    let lookup = move |k: &str| {
        env.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    };
    let cfg = Config::from_parts("", "(test)", &lookup).expect("config");
    let tools = Toolset::new()
        .with_backends(toolgate_aws::Aws::backends())
        .with_clarify(&cfg)
        .await
        .expect("clarify");
    Function::new(&tools)
}

/// The API's base URL in the events.
const API: &str = "https://abc123xyz.execute-api.us-east-1.amazonaws.com";

/// API Gateway's event for `METHOD /clarifications/{id}{tail}` (or
/// `/tools/clarify`, `id` empty), with `body`. The answer route has no
/// authorizer (the person's link); the others keep the fixture's JWT.
fn api_event(method: &str, id: &str, tail: &str, body: Option<&Value>) -> Value {
    let mut e = fixture("apigw_v2_call.json");
    let (path, route, params) = if id.is_empty() {
        (
            "/tools/clarify".to_owned(),
            "POST /tools/{name}".to_owned(),
            json!({"name": "clarify"}),
        )
    } else {
        (
            format!("/clarifications/{id}{tail}"),
            format!("{method} /clarifications/{{id}}{tail}"),
            json!({"id": id}),
        )
    };
    e["rawPath"] = json!(path);
    e["routeKey"] = json!(route);
    e["requestContext"]["routeKey"] = json!(route);
    e["requestContext"]["http"]["path"] = json!(path);
    e["requestContext"]["http"]["method"] = json!(method);
    e["pathParameters"] = params;
    if tail == "/answer" {
        e["requestContext"]["authorizer"] = Value::Null;
    }
    match body {
        Some(b) => {
            e["body"] = json!(b.to_string());
            e["headers"]["content-length"] = json!(b.to_string().len().to_string());
        }
        None => {
            e.as_object_mut().unwrap().remove("body");
            e["headers"]
                .as_object_mut()
                .unwrap()
                .remove("content-length");
        }
    }
    e
}

/// Sends `event` to `f`: the response's status and JSON body.
async fn api(f: &Function, event: Value) -> (u64, Value) {
    let resp = invoke(f, event).await.expect("HTTP events get a response");
    let (status, _, body) = http_parts(&resp);
    (status, body)
}

/// The person's answer through the answer route.
async fn answer_over_api(f: &Function, id: &str, body: Value) -> (u64, Value) {
    api(f, api_event("POST", id, "/answer", Some(&body))).await
}

/// The half of [`step_functions_callbacks_and_the_dynamodb_store_against_moto`]
/// that runs in the child process, against moto at `endpoint`.
fn against_moto_in_process(endpoint: &str) {
    toolgate_shared::logging::init("info");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let f = Arc::new(rt.block_on(clarify_function(&[])));
    // As a state machine's task invokes it: the arguments, with its token.
    let ask = |f: &Function, args: Value| {
        rt.block_on(invoke(f, args))
            .unwrap_or_else(|e| panic!("the direct ask failed: {e:?}"))
    };

    // Over the API, a task token is refused: only a direct invocation
    // carries one.
    let (status, body) = rt.block_on(api(
        &f,
        api_event(
            "POST",
            "",
            "",
            Some(&json!({"question": "q", "task_token": "AAAAKgAAAAIAAAAA-a-workflow's"})),
        ),
    ));
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_input");
    assert_eq!(body["error"]["message"], TASK_TOKEN_DIRECT_ONLY);

    // Concurrent answers: the store's conditional write picks one.
    let id = ask(&f, json!({"question": "Who wins?"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // (On one thread: the function's future is not Send. Each answer
    // awaits moto twice, a read and the conditional write, so they
    // interleave.)
    let results: Vec<(u64, Value)> = tokio::task::LocalSet::new().block_on(&rt, async {
        let mut racers = tokio::task::JoinSet::new();
        for i in 0..16 {
            let (f, id) = (f.clone(), id.clone());
            racers.spawn_local(async move {
                answer_over_api(&f, &id, json!({"answer": format!("answer {i}")})).await
            });
        }
        racers.join_all().await
    });
    let winners: Vec<&Value> = results
        .iter()
        .filter(|(st, _)| *st == 200)
        .map(|(_, v)| v)
        .collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    let won = winners[0]["answer"].clone();
    for (st, v) in &results {
        if *st != 200 {
            assert_eq!(*st, 409, "{v}");
            assert_eq!(
                v["clarification"]["answer"], won,
                "every loser sees the winner"
            );
        }
    }
    let (_, got) = rt.block_on(api(&f, api_event("GET", &id, "", None)));
    assert_eq!(got["answer"], won);

    // Answered: the execution succeeds with the answer as its output.
    let (execution, token) = start_waiting_execution(endpoint, "answered");
    let c = ask(
        &f,
        json!({"question": "Restart web-1?", "options": ["yes", "no"], "task_token": token}),
    );
    let id = c["id"].as_str().unwrap().to_owned();
    assert!(c.get("task_token").is_none(), "{c}");
    assert_eq!(c["answer_url"], format!("{API}/clarifications/{id}/answer"));
    let (status, body) = rt.block_on(answer_over_api(&f, &id, json!({"choice": 0})));
    assert_eq!(status, 200, "{body}");
    let done = finished(endpoint, &execution);
    assert_eq!(done["status"], "SUCCEEDED", "{done}");
    let output: Value = serde_json::from_str(done["output"].as_str().unwrap()).unwrap();
    assert_eq!(output, json!({"answer": "yes", "choice": 0, "id": id}));
    // The item is in DynamoDB, answered, with its TTL, and no longer due.
    let stored = item(endpoint, &id);
    assert_eq!(stored["status"]["S"], "answered", "{stored}");
    assert!(stored["ttl"]["N"].as_str().is_some(), "{stored}");
    assert_eq!(stored["awaiting"], Value::Null, "{stored}");
    // A second answer loses the conditional write.
    let (status, _) = rt.block_on(answer_over_api(&f, &id, json!({"choice": 1})));
    assert_eq!(status, 409);

    // Cancelled (the agent's route): the execution fails with Clarify.Cancelled.
    let (execution, token) = start_waiting_execution(endpoint, "cancelled");
    let id = ask(&f, json!({"question": "q", "task_token": token}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = rt.block_on(api(&f, api_event("POST", &id, "/cancel", Some(&json!({})))));
    assert_eq!(
        (status, body["status"].clone()),
        (200, json!("cancelled")),
        "{body}"
    );
    let done = finished(endpoint, &execution);
    assert_eq!(done["status"], "FAILED", "{done}");
    assert_eq!(done["error"], "Clarify.Cancelled");

    // A bogus token: the answer is still recorded; the failed callback is
    // logged (the parent reads the log).
    let id = ask(
        &f,
        json!({"question": "q", "task_token": "not-a-real-token"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = rt.block_on(answer_over_api(&f, &id, json!({"answer": "fine"})));
    assert_eq!(status, 200);
    let (_, got) = rt.block_on(api(&f, api_event("GET", &id, "", None)));
    assert_eq!(got["answer"], "fine", "{got}");

    // Expired: the workflow fails with Clarify.Expired, told by whichever
    // comes first, a read of the clarification or the schedule's sweep.
    let f = rt.block_on(clarify_function(&[("TOOLGATE_CLARIFY_EXPIRY_SECS", "1")]));
    let (read_execution, token) = start_waiting_execution(endpoint, "expired-read");
    let read = ask(&f, json!({"question": "q", "task_token": token}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (swept_execution, token) = start_waiting_execution(endpoint, "expired-swept");
    let swept = ask(&f, json!({"question": "q", "task_token": token}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    std::thread::sleep(Duration::from_millis(1300));
    let status =
        |id: &str| rt.block_on(api(&f, api_event("GET", id, "", None))).1["status"].clone();
    assert_eq!(status(&read), "expired");
    let done = finished(endpoint, &read_execution);
    assert_eq!(done["status"], "FAILED", "{done}");
    assert_eq!(done["error"], "Clarify.Expired");
    // Nothing reads the other: the sweep (on AWS, the schedule's
    // invocation) expires it and tells its workflow.
    let sweep = || {
        rt.block_on(invoke(&f, json!({"toolgate": "sweep"})))
            .unwrap_or_else(|e| panic!("the sweep failed: {e:?}"))
    };
    assert_eq!(sweep(), json!({"expired": 1, "resent": 0}));
    let done = finished(endpoint, &swept_execution);
    assert_eq!(done["status"], "FAILED", "{done}");
    assert_eq!(done["error"], "Clarify.Expired");
    assert_eq!(status(&swept), "expired");
    // Told, neither is due any longer: the next sweep finds nothing.
    for id in [&read, &swept] {
        assert_eq!(item(endpoint, id)["awaiting"], Value::Null);
    }
    assert_eq!(sweep(), json!({"expired": 0, "resent": 0}));
}

/// A clarification's item in DynamoDB, as moto holds it.
fn item(endpoint: &str, id: &str) -> Value {
    serde_json::from_str(&boto(
        endpoint,
        "print(json.dumps(boto3.client('dynamodb', **kw).get_item(TableName='clarifications', Key={'id': {'S': sys.argv[2]}})['Item']))",
        &[id],
    ))
    .unwrap()
}

#[test]
fn the_page_works_in_headless_chromium() {
    let dir = data_dir("chromium");
    let s = start(&dir, &[]);
    let question = "Restart <script>alert('pwned')</script> nginx on web-1?";
    let c = ask(
        &s,
        json!({"question": question, "options": ["yes, restart", "<img src=x onerror=alert(2)>"]}),
    );
    let id = c["id"].as_str().unwrap().to_owned();
    // The link the tool returned, as the person receives it.
    let url = c["answer_url"].as_str().unwrap();
    assert_eq!(url, format!("http://{}/clarifications/{id}/answer", s.addr));
    let seen = answer_in_chromium(url, 0);
    // The agent's HTML shows as text and runs nowhere.
    assert_eq!(seen["question"], question, "{seen}");
    assert_eq!(
        seen["buttons"],
        json!(["yes, restart", "<img src=x onerror=alert(2)>"])
    );
    assert_eq!(seen["dialogs"], json!([]), "a script ran: {seen}");
    assert_eq!(seen["errors"], json!([]), "{seen}");
    assert!(
        seen["status"].as_str().unwrap().contains("yes, restart"),
        "{seen}"
    );
    // The API agrees.
    let got = s.get(&format!("/clarifications/{id}")).json();
    assert_eq!(got["status"], "answered");
    assert_eq!(got["answer"], "yes, restart");
    assert_eq!(got["choice"], 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Behind a reverse proxy that passes the client's `Host` on (Caddy's and
/// Traefik's default), a server bound to loopback answers the person who
/// opens an answer link under `TOOLGATE_PUBLIC_URL`: the public URL's own
/// name is taken as well as loopback names, and no other name is.
#[test]
fn answer_links_work_behind_a_reverse_proxy() {
    const PUBLIC: &str = "toolgate.example.com";
    let dir = data_dir("proxy");
    let s = start(
        &dir,
        &[("TOOLGATE_PUBLIC_URL", "https://toolgate.example.com/")],
    );
    let mut proxy = toolgate_e2e::peer::Peer::spawn(
        "host-preserving proxy",
        Command::new("python3")
            .arg(toolgate_e2e::support("host_proxy.py"))
            .arg(&s.addr),
    );
    let port = proxy.wait_for_announced_port(Duration::from_secs(20));
    let via = format!("127.0.0.1:{port}");
    let c = ask(
        &s,
        json!({"question": "Ship it?", "options": ["yes", "no"]}),
    );
    let id = c["id"].as_str().unwrap().to_owned();
    let link = c["answer_url"].as_str().unwrap().to_owned();
    let path = link
        .strip_prefix("https://toolgate.example.com")
        .unwrap_or_else(|| panic!("the link is under the public URL: {link}"));
    let through = |host: &str, method: &str, body: &[u8]| {
        let mut headers = vec![("Host", host)];
        if !body.is_empty() {
            headers.push(("Content-Type", "application/json"));
        }
        toolgate_e2e::raw_request(&via, method, path, &headers, body)
    };
    let page = through(PUBLIC, "GET", b"");
    assert_eq!(page.status, 200, "{}", String::from_utf8_lossy(&page.body));
    let answered = through(PUBLIC, "POST", br#"{"choice": 0}"#);
    assert_eq!(
        answered.status,
        200,
        "{}",
        String::from_utf8_lossy(&answered.body)
    );
    assert_eq!(answered.json()["answer"], "yes");
    // Another name, through the same proxy, is still refused.
    let foreign = through("evil.example", "GET", b"");
    assert_eq!(foreign.status, 403);
    // The tools of a server with no caller token stay on loopback names:
    // through the proxy, anyone could run them.
    let tool = toolgate_e2e::raw_request(
        &via,
        "POST",
        "/tools/python.execute",
        &[("Host", PUBLIC), ("Content-Type", "application/json")],
        br#"{"code": "print(1)"}"#,
    );
    assert_eq!(
        toolgate_e2e::error_of(&tool),
        (
            403,
            "forbidden".to_owned(),
            "This server has no caller token, so its tools answer only on loopback names; the \
             public URL serves answer links and approvals. Give it a caller token (--token, \
             TOOLGATE_TOKEN) to serve its tools there"
                .to_owned()
        )
    );
    // And /healthz says no more than that it is up.
    let health = toolgate_e2e::raw_request(&via, "GET", "/healthz", &[("Host", PUBLIC)], b"");
    assert_eq!(health.json(), json!({"status": "ok"}));
    assert!(
        s.get("/healthz").json().get("tools").is_some(),
        "locally it says more"
    );
    assert_eq!(
        s.get(&format!("/clarifications/{id}")).json()["status"],
        "answered"
    );
    let _ = std::fs::remove_dir_all(dir);
}
