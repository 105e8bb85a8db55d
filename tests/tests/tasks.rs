//! Long calls as tasks on `toolgate serve` (issue #57): over HTTP
//! (`Prefer: respond-async`, `GET /tasks/{id}`, `POST /tasks/{id}/cancel`)
//! and over MCP's tasks extension (`resultType: "task"`, `tasks/get`,
//! `tasks/cancel`), against a real sshd and the real sandbox. A completed
//! task holds the call's exact result; cancelling stops the command on the
//! server; a task is its caller's alone; a call that ends within its window
//! answers directly.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::sshd::Sshd;
use toolgate_e2e::{Response, Server, TempPath, temp_file};

const AGENT: &str = "agent-token-0123456789abcdef";
const OTHER: &str = "other-agent-token-0123456789";

/// Two callers and a server; calls become tasks after 500 ms.
fn serve(d: &Sshd) -> (Server, TempPath) {
    let cfg = temp_file(
        "toolgate-tasks",
        &format!(
            "[[server.tokens]]\nname = \"agent\"\ntoken = \"{AGENT}\"\n\n\
             [[server.tokens]]\nname = \"other\"\ntoken = \"{OTHER}\"\n\n{}",
            d.server_toml("box", "")
        ),
    );
    let s = Server::start_with_args(
        &[("TOOLGATE_TASKS_AFTER_MS", "500")],
        &["--config", cfg.0.to_str().unwrap()],
    );
    (s, cfg)
}

fn send(
    s: &Server,
    token: &str,
    method: &str,
    path: &str,
    extra: &[(&str, &str)],
    body: &Value,
) -> Response {
    let auth = format!("Bearer {token}");
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Authorization", auth.as_str()),
    ];
    headers.extend_from_slice(extra);
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    s.request(method, path, &headers, body.as_bytes())
}

/// `POST /tools/{tool}` preferring an asynchronous answer.
fn call_async(s: &Server, tool: &str, args: &Value, prefer: &str) -> Response {
    send(
        s,
        AGENT,
        "POST",
        &format!("/tools/{tool}"),
        &[("Prefer", prefer)],
        args,
    )
}

/// The task a 202 names, checked: its `Location`, and that it works.
fn accepted(r: &Response) -> String {
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    let id = v["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(v["task"]["status"], "working", "{v}");
    assert_eq!(r.header("location"), Some(format!("/tasks/{id}").as_str()));
    assert_eq!(r.header("preference-applied"), Some("respond-async"));
    toolgate_e2e::issued::record("task id", &id);
    id
}

/// `GET /tasks/{id}`, waiting up to 20 s while it works.
fn read(s: &Server, id: &str) -> Response {
    send(
        s,
        AGENT,
        "GET",
        &format!("/tasks/{id}?wait=20"),
        &[],
        &Value::Null,
    )
}

/// `POST /tasks/{id}/cancel`.
fn cancel(s: &Server, id: &str) -> Response {
    send(
        s,
        AGENT,
        "POST",
        &format!("/tasks/{id}/cancel"),
        &[],
        &Value::Null,
    )
}

/// A 2026-07-28 request of `method` over `/mcp` from a client that declares
/// the tasks extension; `name` is its `Mcp-Name` (the tool, or the task).
fn mcp(s: &Server, token: &str, method: &str, name: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "scripted", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    let auth = format!("Bearer {token}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
        ("Authorization", auth.as_str()),
    ];
    let r = s.request("POST", "/mcp", &headers, body.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// `tasks/get` until the task is no longer working.
fn mcp_settled(s: &Server, id: &str) -> Value {
    toolgate_e2e::timing::poll_until(Duration::from_secs(30), "the task to end", || {
        let r = mcp(s, AGENT, "tasks/get", id, json!({"taskId": id}));
        (r["result"]["status"] != "working").then_some(r)
    })
}

#[test]
fn a_long_call_runs_on_as_a_task_and_cancelling_it_stops_the_command() {
    let d = Sshd::start();
    let (s, _cfg) = serve(&d);

    // Over HTTP: the call outlives its window (none asked: 0 s); the task
    // ends with exactly what a direct call gives.
    let args = json!({"server_name": "box", "command": "sleep 2; echo done; echo err >&2"});
    let id = accepted(&call_async(&s, "ssh_run", &args, "respond-async"));
    let r = read(&s, &id);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let done = r.json();
    assert_eq!(done["task"]["status"], "completed", "{done}");
    let out = &done["result"];
    assert_eq!(
        (
            &out["stdout"],
            &out["stderr"],
            &out["exit_code"],
            &out["timed_out"]
        ),
        (&json!("done\n"), &json!("err\n"), &json!(0), &json!(false)),
        "{done}"
    );
    let direct = send(&s, AGENT, "POST", "/tools/ssh_run", &[], &args).json();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(out), keys(&direct));
    // Another caller's read or cancel: as for no such task.
    for (method, path) in [
        ("GET", format!("/tasks/{id}")),
        ("POST", format!("/tasks/{id}/cancel")),
    ] {
        let r = send(&s, OTHER, method, &path, &[], &Value::Null);
        assert_eq!(r.status, 404, "{}", String::from_utf8_lossy(&r.body));
    }
    let r = send(
        &s,
        AGENT,
        "GET",
        &format!("/tasks/{}", "0".repeat(40)),
        &[],
        &Value::Null,
    );
    assert_eq!(r.status, 404);
    let r = send(
        &s,
        AGENT,
        "GET",
        &format!("/tasks/{id}?wait=99"),
        &[],
        &Value::Null,
    );
    assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
    // A call that ends within the wait it allows answers directly.
    let quick = call_async(
        &s,
        "ssh_run",
        &json!({"server_name": "box", "command": "echo hi"}),
        "respond-async, wait=10",
    );
    assert_eq!(
        quick.status,
        200,
        "{}",
        String::from_utf8_lossy(&quick.body)
    );
    assert_eq!(quick.json()["stdout"], "hi\n");
    // Bad arguments are refused at once, not made a task.
    let bad = call_async(
        &s,
        "ssh_run",
        &json!({"server_name": "box"}),
        "respond-async",
    );
    assert_eq!(bad.status, 400, "{}", String::from_utf8_lossy(&bad.body));

    // Cancelled: the command on the server is stopped.
    let marker = format!("tg-task-{}", std::process::id());
    let long = json!({"server_name": "box", "command": format!("sleep 300 # {marker}")});
    let id = accepted(&call_async(&s, "ssh_run", &long, "respond-async"));
    toolgate_e2e::timing::poll_until(
        Duration::from_secs(10),
        "the remote command to start",
        || (!d.remote_processes(&marker).is_empty()).then_some(()),
    );
    let r = cancel(&s, &id);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["task"]["status"], "cancelled");
    toolgate_e2e::timing::poll_until(
        Duration::from_secs(10),
        "the remote command to stop",
        || d.remote_processes(&marker).is_empty().then_some(()),
    );

    // Over MCP: a client that declares tasks gets one for a long call, and
    // the completed task's result is the call's `CallToolResult`.
    let call = |command: &str| {
        mcp(
            &s,
            AGENT,
            "tools/call",
            "ssh_run",
            json!({"name": "ssh_run", "arguments": {"server_name": "box", "command": command}}),
        )
    };
    let quick = call("echo direct");
    assert_eq!(
        quick["result"]["structuredContent"]["stdout"], "direct\n",
        "{quick}"
    );
    let started = call("sleep 2; echo later");
    let task = &started["result"];
    assert_eq!(task["resultType"], "task", "{started}");
    assert_eq!(task["status"], "working");
    assert_eq!(
        (task["ttlMs"].as_u64(), task["pollIntervalMs"].as_u64()),
        (Some(3_600_000), Some(1000))
    );
    let id = task["taskId"].as_str().unwrap().to_owned();
    let got = mcp_settled(&s, &id);
    let r = &got["result"];
    assert_eq!(r["status"], "completed", "{got}");
    assert_eq!(
        r["result"]["structuredContent"]["stdout"], "later\n",
        "{got}"
    );
    assert_eq!(r["result"]["isError"], json!(false), "{got}");
    // Another caller's task is unknown; cancelling stops it.
    let other = mcp(&s, OTHER, "tasks/get", &id, json!({"taskId": id}));
    assert!(other["error"].is_object(), "{other}");
    let started = call(&format!("sleep 300 # {marker}-mcp"));
    let id = started["result"]["taskId"].as_str().unwrap().to_owned();
    toolgate_e2e::timing::poll_until(
        Duration::from_secs(10),
        "the remote command to start",
        || (!d.remote_processes(&format!("{marker}-mcp")).is_empty()).then_some(()),
    );
    let ack = mcp(&s, AGENT, "tasks/cancel", &id, json!({"taskId": id}));
    assert!(ack["error"].is_null(), "{ack}");
    assert_eq!(mcp_settled(&s, &id)["result"]["status"], "cancelled");
    toolgate_e2e::timing::poll_until(
        Duration::from_secs(10),
        "the remote command to stop",
        || {
            d.remote_processes(&format!("{marker}-mcp"))
                .is_empty()
                .then_some(())
        },
    );
}

#[test]
fn a_long_script_runs_on_as_a_task_and_a_cancelled_one_is_stopped() {
    let d = Sshd::start();
    let (s, _cfg) = serve(&d);
    // The document says so: the preference and its 202, the task routes.
    let doc = send(&s, AGENT, "GET", "/openapi.json", &[], &Value::Null).json();
    let op = &doc["paths"]["/tools/python.execute"]["post"];
    assert_eq!(
        (
            &op["parameters"][0]["name"],
            &op["responses"]["202"]["content"]["application/json"]["schema"]["$ref"]
        ),
        (&json!("Prefer"), &json!("#/components/schemas/Task")),
        "{op}"
    );
    assert!(
        doc["paths"]["/tasks/{id}/cancel"]["post"].is_object(),
        "{doc}"
    );
    let code = "import time\ntime.sleep(2)\nprint('slept')\nresult = 6 * 7";
    let id = accepted(&call_async(
        &s,
        "python.execute",
        &json!({"code": code}),
        "respond-async",
    ));
    let r = read(&s, &id);
    let v = r.json();
    assert_eq!(v["task"]["status"], "completed", "{v}");
    assert_eq!(
        (&v["result"]["stdout"], &v["result"]["result"]),
        (&json!("slept\n"), &json!(42)),
        "{v}"
    );

    // A runaway script, cancelled: the task says so at once, and the next
    // call runs as usual. Started on the task route, which needs no header
    // (its wait: 0), as on AWS, where a tool's route sends `Prefer` callers
    // to it.
    assert!(
        doc["paths"]["/tools/python.execute/task"]["post"]["responses"]["202"].is_object(),
        "{doc}"
    );
    let spin = json!({"code": "while True: pass"});
    let id = accepted(&send(
        &s,
        AGENT,
        "POST",
        "/tools/python.execute/task",
        &[],
        &spin,
    ));
    let r = cancel(&s, &id);
    assert_eq!(
        r.json()["task"]["status"],
        "cancelled",
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let next = send(
        &s,
        AGENT,
        "POST",
        "/tools/python.execute",
        &[],
        &json!({"code": "print(1)"}),
    );
    assert_eq!(next.json()["stdout"], "1\n");
    // Where a runtime runs no tasks the routes say so: the Worker's and
    // Lambda's are covered by their own suites; here, a preference for an
    // asynchronous answer is only a preference.
    let plain = send(
        &s,
        AGENT,
        "POST",
        "/tools/python.execute",
        &[("Prefer", "return=minimal")],
        &json!({"code": "print(2)"}),
    );
    assert_eq!(plain.status, 200);
}
