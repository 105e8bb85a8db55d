//! Code mode (issue #58): a python.execute script calls the other tools
//! (`from toolgate import tools`) on `toolgate serve`, against a real
//! OpenSSH sshd on loopback. Each call is a request on the sealed child's
//! socket, answered by the server through its one invocation path: one
//! audit line per call (transport `code`, the parent call named), the
//! caller's own scope, and nothing a direct call could not do.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::code_mode::OPS_SCRIPT;
use toolgate_e2e::sshd::Sshd;
use toolgate_e2e::{Server, TempPath, temp_file};

fn serve(sshd: &Sshd, env: &[(&str, &str)]) -> (Server, TempPath) {
    let text = format!(
        "{}{}",
        sshd.server_toml("box", ""),
        sshd.server_toml("ro", "[servers.ro.policy]\npreset = \"readonly\"\n")
    );
    let cfg = temp_file("toolgate-code-mode", &text);
    let s = Server::start_with_args(env, &["--config", cfg.0.to_str().unwrap()]);
    (s, cfg)
}

fn result(s: &Server, code: &str) -> Value {
    let out = s.exec(code);
    assert_eq!(out["exit_code"], 0, "{out}\n{}", s.logs());
    out["result"].clone()
}

#[test]
fn a_script_calls_the_servers_tools_as_its_caller() {
    let sshd = Sshd::start();
    let (s, _cfg) = serve(&sshd, &[]);
    let code = r#"
from toolgate import tools, ToolError

def code_of(call):
    try:
        call()
    except ToolError as e:
        return e.code
    return None

servers = tools.list_servers()
out = tools.ssh_run(server_name="box", command="echo hi; echo err >&2")
result = {
    "servers": sorted(s["name"] for s in servers["servers"]),
    "stdout": out["stdout"],
    "stderr": out["stderr"],
    "exit_code": out["exit_code"],
    "unknown_server": code_of(lambda: tools.ssh_run(server_name="nowhere", command="true")),
    "unknown_tool": code_of(lambda: tools.no_such_tool()),
    "itself": code_of(lambda: tools.python__execute(code="1")),
    "itself_canonical": code_of(lambda: getattr(tools, "python.execute")(code="1")),
    "bad_args": code_of(lambda: tools.ssh_run(server_name="box")),
    "listed": dir(tools),
}
"#;
    let r = result(&s, code);
    assert_eq!(r["servers"], json!(["box", "ro"]), "{r}");
    // (The command's remote timeout fits the script's deadline, and says so.)
    assert_eq!(
        (&r["stdout"], &r["exit_code"]),
        (&json!("hi\n"), &json!(0)),
        "{r}"
    );
    assert!(r["stderr"].as_str().unwrap().starts_with("err\n"), "{r}");
    assert_eq!(r["unknown_server"], "invalid_input", "{r}");
    assert_eq!(r["unknown_tool"], "unknown_tool", "{r}");
    assert_eq!(r["itself"], "forbidden", "{r}");
    assert_eq!(r["itself_canonical"], "forbidden", "{r}");
    assert_eq!(r["bad_args"], "invalid_input", "{r}");
    let listed: Vec<&str> = r["listed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        listed.contains(&"ssh_run") && listed.contains(&"list_servers"),
        "{r}"
    );
    assert!(!listed.iter().any(|n| n.starts_with("python")), "{r}");

    // One audit line per tool call, as transport `code`, naming the
    // script's call; the script's own line is `http`.
    let is_code = |l: &Value| l["message"] == "tool call" && l["transport"] == "code";
    let lines = s.json_logs_when(Duration::from_secs(5), |ls| {
        ls.iter().filter(|l| is_code(l)).count() >= 7
    });
    let code_lines: Vec<&Value> = lines.iter().filter(|l| is_code(l)).collect();
    // list_servers, ssh_run x3 (one refused for its server, one for its
    // arguments), the unknown name, python.execute x2 refused.
    assert_eq!(code_lines.len(), 7, "{code_lines:#?}");
    let parent = code_lines[0]["parent"].as_str().unwrap_or_default();
    assert!(parent.starts_with("python.execute#"), "{code_lines:#?}");
    assert!(code_lines.iter().all(|l| l["parent"] == parent));
    assert_eq!(
        code_lines
            .iter()
            .filter(|l| l["tool"] == "ssh_run" && l["outcome"] == "ok")
            .count(),
        1
    );
    s.terminate();
}

#[test]
fn a_scripts_calls_keep_its_callers_scope_and_the_cap() {
    let sshd = Sshd::start();
    let (s, _cfg) = serve(&sshd, &[("TOOLGATE_CODE_MODE_MAX_CALLS", "3")]);
    // The scope header narrows the script's calls as it narrows the
    // caller's own.
    let code = r#"
from toolgate import tools, ToolError
try:
    tools.ssh_run(server_name="box", command="id")
    box = "ran"
except ToolError as e:
    box = e.code
names = [s["name"] for s in tools.list_servers()["servers"]]
try:
    tools.ssh_run(server_name="ro", command="uptime")
except ToolError:
    pass
try:
    tools.list_servers()
    fourth = "ran"
except ToolError as e:
    fourth = e.code
result = {"box": box, "names": names, "fourth": fourth}
"#;
    let r = s.request(
        "POST",
        "/tools/python.execute",
        &[
            ("Content-Type", "application/json"),
            ("X-Toolgate-Servers", "ro"),
        ],
        json!({ "code": code }).to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let out = r.json();
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(
        out["result"],
        json!({"box": "forbidden", "names": ["ro"], "fourth": "quota_exceeded"}),
        "{out}"
    );
    s.terminate();
}

#[test]
fn a_scripts_tools_end_by_its_deadline() {
    let sshd = Sshd::start();
    let (s, _cfg) = serve(&sshd, &[("TOOLGATE_PYTHON_TIMEOUT", "4")]);
    let marker = format!("tg-code-mode-{}", std::process::id());
    let code = format!(
        "from toolgate import tools\nprint('before')\n\
         out = tools.ssh_run(server_name='box', command='sleep 60 # {marker}')\n\
         print('after', out['timed_out'])\nwhile True: pass"
    );
    let started = std::time::Instant::now();
    let r = s.post_json("/tools/python.execute", &json!({ "code": code }));
    let took = started.elapsed();
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let out = r.json();
    // The command's remote timeout fitted the script's: it came back timed
    // out before the script's deadline, which then stopped the script.
    assert_eq!(
        (&out["timed_out"], &out["stdout"]),
        (&json!(true), &json!("before\nafter True\n")),
        "{out}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    toolgate_e2e::timing::poll_until(
        Duration::from_secs(15),
        "the remote command to stop",
        || sshd.remote_processes(&marker).is_empty().then_some(()),
    );
    s.terminate();
}

/// A tool slower than the script's deadline (a stand-in host that never
/// answers in time; the real tools fit their time to the script's): the
/// child, blocked waiting for the answer, is stopped by the deadline's
/// STOP, which its watchdog turns into a wake-up, and the script reads as
/// timed out with what it printed. The real zygote, under seccomp.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_blocked_on_a_slow_tool_is_stopped_at_its_deadline() {
    use toolgate_python::sandbox::{Recycle, Sandbox, SandboxConfig, ZygoteConfig};
    use toolgate_shared::code::{ToolAnswer, ToolHost};

    struct Slow;
    impl ToolHost for Slow {
        fn serve<'a>(&'a self, _request: &'a [u8], _left: Duration) -> ToolAnswer<'a> {
            Box::pin(async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Some(br#"{"ok": 1}"#.to_vec())
            })
        }
    }
    let sandbox = Sandbox::start(SandboxConfig {
        exe: toolgate_e2e::toolgate_bin(),
        zygote: ZygoteConfig {
            allowed: vec!["json".into()],
            memory_mb: 256,
            require_seccomp: true,
            files_cap: 1 << 20,
            state_cap: 1 << 20,
            frozen_between_calls: false,
        },
        spare_children: 1,
        max_concurrency: 2,
        max_per_caller: 2,
        recycle: Recycle::NEVER,
    })
    .expect("start the sandbox");
    let code = "from toolgate import tools\nprint('before')\ntools.anything()\nprint('after')";
    let started = std::time::Instant::now();
    let out = sandbox
        .execute_with(
            "anonymous",
            code,
            &Default::default(),
            None,
            Duration::from_secs(2),
            Some(&Slow),
        )
        .await
        .expect("the sandbox runs it");
    let took = started.elapsed();
    assert_eq!(
        (out.timed_out, out.stdout.as_str()),
        (true, "before\n"),
        "{out:?}"
    );
    assert!(took < Duration::from_secs(4), "{took:?}");
    // Without a host the same script cannot import the module.
    let out = sandbox
        .execute_for(
            "anonymous",
            code,
            &Default::default(),
            None,
            Duration::from_secs(2),
        )
        .await
        .expect("the sandbox runs it");
    assert!(out.stderr.contains("ImportError"), "{out:?}");
}

#[test]
fn code_mode_off_is_an_import_error_and_the_link_refuses() {
    let sshd = Sshd::start();
    let (s, _cfg) = serve(&sshd, &[("TOOLGATE_CODE_MODE", "0")]);
    let out = s.exec("import toolgate");
    assert_eq!(out["exit_code"], 1, "{out}");
    assert!(
        out["stderr"].as_str().unwrap().contains("ImportError"),
        "{out}"
    );
    // Nor is there anything to resume.
    let r = s.post_json(
        "/tools/python.execute",
        &json!({"code": "print(1)", "resume": format!("resume_{}", "a".repeat(40))}),
    );
    let e = r.json();
    assert_eq!(
        (r.status, &e["error"]["code"]),
        (403, &json!("forbidden")),
        "{e}"
    );
    // Reached around the import (through a module that holds `sys`), any
    // request is refused; or the module is out of reach.
    let code = r#"
import typing
tg = getattr(getattr(typing, "sys", None), "modules", {}).get("toolgate")
if tg is None:
    result = "unreachable"
else:
    try:
        tg.tools.list_servers()
        result = "ran"
    except tg.ToolError as e:
        result = e.code
"#;
    let r = result(&s, code);
    assert!(r == "forbidden" || r == "unreachable", "{r}");
    s.terminate();
}

#[test]
fn hostile_requests_are_refused_in_the_contracts_shape() {
    let sshd = Sshd::start();
    let (s, _cfg) = serve(&sshd, &[]);
    let code = r#"
import json
import toolgate
link = toolgate._link
answers = []
for raw in ["", "null", "[1]", "{}", '{"call": 7}', '{"call": "list_servers", "arguments": [1]}',
            '{"call": "list_servers", "arguments": {"x": 1}}', "\udcff"]:
    try:
        answers.append(json.loads(link(raw)))
    except Exception as e:
        answers.append({"raised": type(e).__name__})
big = "x" * (2 << 20)
try:
    toolgate.tools.ssh_run(server_name="box", command=big)
    answers.append("ran")
except toolgate.ToolError as e:
    answers.append(e.code)
result = answers
"#;
    let r = result(&s, code);
    let r = r.as_array().unwrap();
    for a in &r[..5] {
        assert_eq!(a["error"]["code"], "invalid_input", "{a}");
    }
    assert_eq!(r[5]["error"]["code"], "invalid_input", "{:?}", r[5]);
    // Unknown keywords are the tool's to refuse, as in a direct call.
    assert!(
        r[6]["error"].is_object() || r[6]["ok"].is_object(),
        "{:?}",
        r[6]
    );
    assert!(
        r[7]["error"].is_object() || r[7]["raised"].is_string(),
        "{:?}",
        r[7]
    );
    assert_eq!(r[8], "too_large", "{r:?}");
    // The server is fine after them.
    assert_eq!(s.exec("result = 1")["result"], 1);
    s.terminate();
}

// ---- Waiting for a person (journal replay) ----

/// The agent's (caller's) token, another caller's, and an approver's.
const AGENT: &str = "agent-token-0123456789abcdef";
const OTHER: &str = "other-token-0123456789abcdef";
const OPS: &str = "ops-approver-token-0123456789";

/// Serve with two callers and an approver; `box` needs approval for
/// anything but reads, `twin` for nothing.
fn gated(sshd: &Sshd) -> (Server, TempPath) {
    let text = format!(
        "[[server.tokens]]\nname = \"agent\"\ntoken = \"{AGENT}\"\n\n\
         [[server.tokens]]\nname = \"other\"\ntoken = \"{OTHER}\"\n\n\
         [[approvals.approvers]]\nname = \"ops\"\ntoken = \"{OPS}\"\n\n{}\
         [servers.box.policy]\napprove_preset = \"readonly\"\n{}",
        sshd.server_toml("box", ""),
        sshd.server_toml("twin", "")
    );
    let cfg = temp_file("toolgate-code-mode-waits", &text);
    let s = Server::start_with_args(&[], &["--config", cfg.0.to_str().unwrap()]);
    (s, cfg)
}

/// `command` on the SSH server `twin`, called directly by the agent.
fn twin_run(s: &Server, command: &str) -> toolgate_e2e::Response {
    let body = json!({"server_name": "twin", "command": command});
    as_caller(s, AGENT, "POST", "/tools/ssh_run", &body)
}

fn as_caller(
    s: &Server,
    token: &str,
    method: &str,
    path: &str,
    body: &Value,
) -> toolgate_e2e::Response {
    let auth = format!("Bearer {token}");
    s.request(
        method,
        path,
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
        ],
        body.to_string().as_bytes(),
    )
}

/// python.execute as `token`: the status and the answer.
fn execute(s: &Server, token: &str, body: &Value) -> (u16, Value) {
    let r = as_caller(s, token, "POST", "/tools/python.execute", body);
    let v = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    (r.status, v)
}

fn approve(s: &Server, id: &str) {
    let r = as_caller(
        s,
        OPS,
        "POST",
        &format!("/approvals/{id}/decision"),
        &json!({"decision": "approve"}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

/// A folder of this run's own on the sshd host, made on `twin`.
fn run_dir(s: &Server, what: &str) -> String {
    let dir = format!(
        "/tmp/tg-code-mode-{what}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let r = twin_run(s, &format!("mkdir -p {dir}"));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    dir
}

/// The lines of `path` on the sshd host.
fn lines_of(s: &Server, path: &str) -> Vec<String> {
    let r = twin_run(s, &format!("cat {path}"));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()["stdout"]
        .as_str()
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_script_waits_for_each_approval_and_resumes_where_it_stopped_running_every_call_once() {
    let sshd = Sshd::start();
    let (s, _cfg) = gated(&sshd);
    let dir = run_dir(&s, "ops");
    let log = format!("{dir}/gated.log");
    let body = json!({
        "code": OPS_SCRIPT,
        "files": {"gated.txt": "box", "log.txt": log},
    });
    let (status, first) = execute(&s, AGENT, &body);
    assert_eq!(status, 200, "{first}\n{}", s.logs());
    // Stopped at call 11 (i = 10), waiting for its approval.
    assert_eq!(first["exit_code"], -1, "{first}");
    assert_eq!(first["timed_out"], false, "{first}");
    assert_eq!(first["waiting"]["for"], "approval", "{first}");
    assert_eq!(first["waiting"]["tool"], "ssh_run", "{first}");
    let resume = first["resume"].as_str().unwrap().to_owned();
    let seed_line = first["stdout"]
        .as_str()
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    assert!(
        first["stdout"].as_str().unwrap().ends_with("step 9\n"),
        "{first}"
    );
    assert!(
        first["stderr"].as_str().unwrap().contains(&resume),
        "{first}"
    );
    let expect: Vec<String> = (0..10).map(|i| i.to_string()).collect();
    assert_eq!(lines_of(&s, &log), expect);
    let with_resume = |id: &str| {
        let mut b = body.clone();
        b["resume"] = json!(id);
        b
    };

    // Another caller cannot resume it; an edited script or other files
    // are refused; nothing runs.
    let (status, e) = execute(&s, OTHER, &with_resume(&resume));
    assert_eq!(
        (status, &e["error"]["code"]),
        (404, &json!("not_found")),
        "{e}"
    );
    let mut edited = with_resume(&resume);
    edited["code"] = json!(format!("{OPS_SCRIPT}\n# edited"));
    let (status, e) = execute(&s, AGENT, &edited);
    assert_eq!(
        (status, &e["error"]["code"]),
        (409, &json!("conflict")),
        "{e}"
    );
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("code differs"),
        "{e}"
    );
    let mut refiled = with_resume(&resume);
    refiled["files"]["gated.txt"] = json!("twin");
    let (status, e) = execute(&s, AGENT, &refiled);
    assert_eq!(
        (status, &e["error"]["code"]),
        (409, &json!("conflict")),
        "{e}"
    );

    // Resumed before anyone decided: it waits again on the same approval,
    // having run nothing again, under a new id (the journal is spent each
    // time its waited call is tried); the old one is used.
    let (status, again) = execute(&s, AGENT, &with_resume(&resume));
    assert_eq!(status, 200, "{again}");
    assert_eq!(
        again["waiting"]["approval"]["id"],
        first["waiting"]["approval"]["id"]
    );
    assert_ne!(again["resume"], resume.as_str(), "{again}");
    assert_eq!(lines_of(&s, &log), expect);
    let (status, e) = execute(&s, AGENT, &with_resume(&resume));
    assert_eq!(
        (status, &e["error"]["code"]),
        (410, &json!("expired")),
        "{e}"
    );

    // Each gate: approved, resumed, on to the next.
    let mut answer = again;
    let mut resume = answer["resume"].as_str().unwrap().to_owned();
    for (n, stop) in [(10, 25), (25, 40), (40, 50)] {
        let id = answer["waiting"]["approval"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        approve(&s, &id);
        let (status, next) = execute(&s, AGENT, &with_resume(&resume));
        assert_eq!(status, 200, "{next}\n{}", s.logs());
        // The same randomness on every run.
        assert_eq!(
            next["stdout"].as_str().unwrap().lines().next().unwrap(),
            seed_line
        );
        let mut want: Vec<String> = (0..stop)
            .map(|i| {
                if [10, 25, 40].contains(&i) {
                    format!("gated-{i}")
                } else {
                    i.to_string()
                }
            })
            .collect();
        if stop == 50 {
            assert_eq!(next["exit_code"], 0, "{next}");
            assert!(
                next.get("waiting").is_none() && next.get("resume").is_none(),
                "{next}"
            );
        } else {
            assert_eq!(next["waiting"]["for"], "approval", "after {n}: {next}");
            assert_ne!(next["waiting"]["approval"]["id"], json!(id));
        }
        want.truncate(stop);
        assert_eq!(lines_of(&s, &log), want, "after gate {n}");
        // The id it went on from is used.
        let (status, e) = execute(&s, AGENT, &with_resume(&resume));
        assert_eq!(
            (status, &e["error"]["code"]),
            (410, &json!("expired")),
            "{e}"
        );
        if let Some(next_id) = next["resume"].as_str() {
            resume = next_id.to_owned();
        }
        answer = next;
    }
    // Spent: a resume of a finished script is refused.
    let (status, e) = execute(&s, AGENT, &with_resume(&resume));
    assert_eq!(
        (status, &e["error"]["code"]),
        (410, &json!("expired")),
        "{e}"
    );

    // The same script with the gates off answers the same.
    let open_log = format!("{dir}/open.log");
    let (status, open) = execute(
        &s,
        AGENT,
        &json!({"code": OPS_SCRIPT, "files": {"gated.txt": "twin", "log.txt": open_log}}),
    );
    assert_eq!(status, 200, "{open}");
    assert_eq!(open["result"], answer["result"]);
    let tail = |v: &Value| {
        v["stdout"]
            .as_str()
            .unwrap()
            .lines()
            .skip(1)
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(tail(&open), tail(&answer));
    assert_eq!(lines_of(&s, &open_log).len(), 50);
    s.terminate();
}

#[test]
fn a_resumed_script_that_takes_another_path_is_refused_and_runs_nothing_again() {
    let sshd = Sshd::start();
    let (s, _cfg) = gated(&sshd);
    let dir = run_dir(&s, "diverge");
    // The first command holds the time, which is not replayed: on resume
    // it differs, and the replay stops there.
    let code = format!(
        "import time\nfrom toolgate import tools\n\
         tools.ssh_run(server_name='twin', command=f'echo {{time.time_ns()}} >> {dir}/log')\n\
         tools.ssh_run(server_name='box', command='touch {dir}/gated')\n"
    );
    let (status, first) = execute(&s, AGENT, &json!({ "code": code }));
    assert_eq!(status, 200, "{first}");
    let resume = first["resume"].as_str().unwrap().to_owned();
    approve(&s, first["waiting"]["approval"]["id"].as_str().unwrap());
    let (status, e) = execute(&s, AGENT, &json!({ "code": code, "resume": resume }));
    assert_eq!(
        (status, &e["error"]["code"]),
        (409, &json!("conflict")),
        "{e}"
    );
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("tool call 1") && msg.contains("other arguments"),
        "{msg}"
    );
    assert_eq!(
        lines_of(&s, &format!("{dir}/log")).len(),
        1,
        "the first command ran once"
    );
    // The approved command did not run, and the approval is still unused:
    // a direct call of exactly that command runs under it.
    let r = twin_run(&s, &format!("test -e {dir}/gated && echo yes || echo no"));
    assert_eq!(r.json()["stdout"], "no\n");
    s.terminate();
}

#[test]
fn a_scripts_question_waits_for_its_answer() {
    let sshd = Sshd::start();
    let (s, _cfg) = gated(&sshd);
    let code = r#"
from toolgate import tools
print("asking")
a = tools.clarify(question="Restart nginx on web-1?", options=["yes", "no"])
print("answered", a["status"], a.get("choice"))
result = a["answer"]
"#;
    let (status, first) = execute(&s, AGENT, &json!({ "code": code }));
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["waiting"]["for"], "answer", "{first}");
    assert_eq!(first["waiting"]["tool"], "clarify", "{first}");
    assert_eq!(first["stdout"], "asking\n");
    let q = first["waiting"]["clarification"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let resume = first["resume"].as_str().unwrap().to_owned();
    // Unanswered: it waits again, and no second question is asked.
    let (_, again) = execute(&s, AGENT, &json!({ "code": code, "resume": resume }));
    assert_eq!(
        again["waiting"]["clarification"]["id"],
        q.as_str(),
        "{again}"
    );
    assert_eq!(again["resume"], resume.as_str(), "{again}");
    let r = s.post_json(
        &format!("/clarifications/{q}/answer"),
        &json!({"choice": 0}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let (status, done) = execute(&s, AGENT, &json!({ "code": code, "resume": resume }));
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["exit_code"], 0, "{done}");
    assert_eq!(done["stdout"], "asking\nanswered answered 0\n", "{done}");
    assert_eq!(done["result"], "yes", "{done}");
    // Bad resume ids are refused in the contract's shape.
    for (bad, code_) in [
        (json!(""), "invalid_input"),
        (json!(7), "invalid_input"),
        (json!("nope"), "not_found"),
    ] {
        let (status, e) = execute(&s, AGENT, &json!({"code": code, "resume": bad}));
        assert_eq!(e["error"]["code"], code_, "{bad}: {status} {e}");
    }
    let (status, e) = execute(
        &s,
        AGENT,
        &json!({"code": code, "resume": resume, "session": "new"}),
    );
    assert_eq!(
        (status, &e["error"]["code"]),
        (400, &json!("invalid_input")),
        "{e}"
    );
    s.terminate();
}

#[test]
fn a_resume_holds_its_journal_and_a_full_journal_no_longer_stops() {
    let sshd = Sshd::start();
    let text = format!(
        "[[server.tokens]]\nname = \"agent\"\ntoken = \"{AGENT}\"\n\n\
         [[approvals.approvers]]\nname = \"ops\"\ntoken = \"{OPS}\"\n\n{}\
         [servers.box.policy]\napprove_preset = \"readonly\"\n{}",
        sshd.server_toml("box", ""),
        sshd.server_toml("twin", "")
    );
    let cfg = temp_file("toolgate-code-mode-hold", &text);
    let s = Server::start_with_args(
        &[("TOOLGATE_PYTHON_SESSION_MAX_STATE_MB", "1")],
        &["--config", cfg.0.to_str().unwrap()],
    );
    let dir = run_dir(&s, "hold");
    // Two resumes of one journal at once: the second is refused while the
    // first replays (it holds the journal), and the command after the wait
    // runs once; then the journal is used.
    let code = format!(
        "import time\nfrom toolgate import tools\n\
         time.sleep(3)\n\
         tools.ssh_run(server_name='box', command='touch {dir}/gated')\n\
         tools.ssh_run(server_name='twin', command='echo after >> {dir}/log')\n"
    );
    let (status, first) = execute(&s, AGENT, &json!({ "code": code }));
    assert_eq!(status, 200, "{first}");
    approve(&s, first["waiting"]["approval"]["id"].as_str().unwrap());
    let body = json!({ "code": code, "resume": first["resume"] });
    let second = std::thread::scope(|t| {
        let one = t.spawn(|| execute(&s, AGENT, &body));
        std::thread::sleep(Duration::from_millis(1000));
        let two = execute(&s, AGENT, &body);
        let one = one.join().unwrap();
        assert_eq!((one.0, &one.1["exit_code"]), (200, &json!(0)), "{}", one.1);
        two
    });
    assert_eq!(
        (second.0, &second.1["error"]["code"]),
        (409, &json!("conflict")),
        "{}",
        second.1
    );
    assert!(
        second.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("in use"),
        "{}",
        second.1
    );
    assert_eq!(lines_of(&s, &format!("{dir}/log")), ["after"]);
    let (status, e) = execute(&s, AGENT, &body);
    assert_eq!(
        (status, &e["error"]["code"]),
        (410, &json!("expired")),
        "{e}"
    );

    // Past a session's state (1 MiB here) of answers, a gated call no
    // longer stops the script (it could not be resumed): it raises.
    let code = "from toolgate import tools, ToolError\n\
         for _ in range(25):\n    tools.ssh_run(server_name='twin', command=\"head -c 60000 /dev/zero | tr '\\\\0' a\")\n\
         try:\n    tools.ssh_run(server_name='box', command='touch /tmp/never')\n    result = 'ran'\n\
         except ToolError as e:\n    result = e.code\n";
    let (status, out) = execute(&s, AGENT, &json!({ "code": code }));
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["result"], "approval_required", "{out}");
    assert!(
        out.get("waiting").is_none() && out.get("resume").is_none(),
        "{out}"
    );
    s.terminate();
}

/// An approval is bound to the exact call: a script that holds one (a
/// session's script raises `approval_required` instead of waiting) cannot
/// spend it on other arguments; the approved call runs under it, once.
#[test]
fn a_scripts_approval_cannot_be_spent_on_other_arguments() {
    let sshd = Sshd::start();
    let (s, _cfg) = gated(&sshd);
    let dir = run_dir(&s, "rebind");
    let ask = format!(
        "from toolgate import tools, ToolError\n\
         try:\n    tools.ssh_run(server_name='box', command='touch {dir}/asked')\n    result = 'ran'\n\
         except ToolError as e:\n    result = [e.code, e.detail['approval']['id']]\n"
    );
    let (status, first) = execute(&s, AGENT, &json!({"code": ask, "session": "new"}));
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["result"][0], "approval_required", "{first}");
    let id = first["result"][1].as_str().unwrap().to_owned();
    let session = first["session"].as_str().unwrap().to_owned();
    approve(&s, &id);
    let spend = format!(
        "from toolgate import tools, ToolError\n\
         out = []\n\
         for cmd in ['touch {dir}/other', 'touch {dir}/asked', 'touch {dir}/asked']:\n\
         \x20   try:\n\
         \x20       tools.ssh_run(server_name='box', command=cmd, approval='{id}')\n\
         \x20       out.append('ran')\n\
         \x20   except ToolError as e:\n\
         \x20       out.append(e.code)\n\
         result = out\n"
    );
    let (status, spent) = execute(&s, AGENT, &json!({"code": spend, "session": session}));
    assert_eq!(status, 200, "{spent}\n{}", s.logs());
    let r = spent["result"].as_array().unwrap();
    // Other arguments: refused; the approved call: runs; again: refused.
    assert_ne!(r[0], "ran", "{spent}");
    assert_eq!(r[1], "ran", "{spent}");
    assert_ne!(r[2], "ran", "{spent}");
    let r = twin_run(&s, &format!("ls {dir}"));
    assert_eq!(
        r.json()["stdout"],
        "asked\n",
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    s.terminate();
}

// ---- Waiting in the agent's own MCP client (MCP 2026-07-28, #57) ----

/// A 2026-07-28 `tools/call` of python.execute as `token`, the client
/// declaring `caps`, a retry's `extra` params; the JSON-RPC answer.
fn mcp(s: &Server, token: &str, args: &Value, caps: &Value, extra: &Value) -> Value {
    let body = toolgate_e2e::mcp::call_2026("python.execute", args, caps, extra);
    let auth = format!("Bearer {token}");
    let mut headers = toolgate_e2e::mcp::call_headers("2026-07-28", "python.execute");
    headers.push(("Authorization", auth));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = s.request("POST", "/mcp", &headers, body.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// The link a first call's input request sends the person to, and its
/// sealed state.
fn link_asked(reply: &Value) -> (Value, String) {
    let (request, state) = toolgate_e2e::mcp::input_asked(reply, "script");
    let params = request["params"].clone();
    assert_eq!(params["mode"], "url", "{reply}");
    (params, state)
}

fn opened(state: &str) -> Value {
    json!({"requestState": state, "inputResponses": {"script": {"action": "accept"}}})
}

/// A client that opens links is sent to the page where the script's wait
/// is settled (the question's answer page; the approval's page, which
/// holds no capability), and its retry, once the person acted there,
/// resumes the script: the MCP form of `waiting` and `resume`. The state
/// is refused changed or from another caller; a client without
/// elicitation gets `waiting` as over HTTP.
#[test]
fn a_waiting_script_asks_in_the_callers_mcp_client() {
    let sshd = Sshd::start();
    let (s, _cfg) = gated(&sshd);
    let url_only = json!({"elicitation": {"url": {}}});
    let ask = json!({"code": "from toolgate import tools\nq = tools.clarify(question='Restart web-1?', options=['yes', 'no'])\nresult = q['answer']"});
    let (params, state) = link_asked(&mcp(&s, AGENT, &ask, &url_only, &json!({})));
    let url = params["url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("http://{}/clarifications/", s.addr)) && url.ends_with("/answer"),
        "{params}"
    );
    assert_eq!(params["message"], "Restart web-1?");
    // Changed, or from another caller: refused.
    let mut bent = state.clone();
    bent.push('x');
    let r = mcp(&s, AGENT, &ask, &url_only, &opened(&bent));
    assert_eq!(r["result"]["isError"], true, "{r}");
    let r = mcp(&s, OTHER, &ask, &url_only, &opened(&state));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r.to_string().contains("another caller"), "{r}");
    // Declined: nothing runs, the script still waits under its id; a
    // retry without the person's word asks again.
    let declined =
        json!({"requestState": state, "inputResponses": {"script": {"action": "decline"}}});
    let r = mcp(&s, AGENT, &ask, &url_only, &declined);
    let out = &r["result"]["structuredContent"];
    assert_eq!(out["exit_code"], -1, "{r}");
    assert!(
        out["resume"].as_str().unwrap().starts_with("resume_"),
        "{r}"
    );
    let (again, _) = link_asked(&mcp(
        &s,
        AGENT,
        &ask,
        &url_only,
        &json!({"requestState": state}),
    ));
    assert_eq!(again["url"], params["url"], "{again}");
    // The person answers on the page while the retry waits for them.
    let page = s.addr.clone();
    let path = url
        .trim_start_matches(&format!("http://{}", s.addr))
        .to_owned();
    let answering = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        toolgate_e2e::raw_request(
            &page,
            "POST",
            &path,
            &[("Content-Type", "application/json")],
            br#"{"choice": 0}"#,
        )
    });
    let done = mcp(&s, AGENT, &ask, &url_only, &opened(&state));
    assert_eq!(answering.join().unwrap().status, 200);
    let out = &done["result"]["structuredContent"];
    assert_eq!(
        (&out["exit_code"], &out["result"]),
        (&json!(0), &json!("yes")),
        "{done}"
    );

    // A gated command: the approval's page (no capability in the link);
    // an approver decides; the retry runs the command once.
    let dir = run_dir(&s, "mcp");
    let gated = json!({"code": format!("from toolgate import tools\nr = tools.ssh_run(server_name='box', command='touch {dir}/done')\nresult = r['exit_code']")});
    let (params, state) = link_asked(&mcp(&s, AGENT, &gated, &url_only, &json!({})));
    let url = params["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("http://{}/inbox/", s.addr)),
        "{params}"
    );
    assert!(!url.contains("cap="), "{params}");
    let id = url.rsplit('/').next().unwrap().to_owned();
    approve(&s, &id);
    let done = mcp(&s, AGENT, &gated, &url_only, &opened(&state));
    let out = &done["result"]["structuredContent"];
    assert_eq!(
        (&out["exit_code"], &out["result"]),
        (&json!(0), &json!(0)),
        "{done}"
    );
    let r = twin_run(&s, &format!("ls {dir}"));
    assert_eq!(r.json()["stdout"], "done\n");

    // Without elicitation: `waiting` and `resume`, as over HTTP.
    let plain = mcp(&s, AGENT, &ask, &json!({}), &json!({}));
    let out = &plain["result"]["structuredContent"];
    assert_eq!(out["waiting"]["for"], "answer", "{plain}");
    assert!(out["resume"].is_string(), "{plain}");
    s.terminate();
}
