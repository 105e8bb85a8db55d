//! Code mode (issue #58): a python.execute script calls the other tools
//! (`from toolgate import tools`) on `toolgate serve`, against a real
//! OpenSSH sshd on loopback. Each call is a request on the sealed child's
//! socket, answered by the server through its one invocation path: one
//! audit line per call (transport `code`, the parent call named), the
//! caller's own scope, and nothing a direct call could not do.

use std::time::Duration;

use serde_json::{Value, json};
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
                br#"{"ok": 1}"#.to_vec()
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
