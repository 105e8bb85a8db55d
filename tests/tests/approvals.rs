//! Approval gates end to end: `toolgate serve` against a real OpenSSH sshd
//! on loopback (and the MCP reference server for cloud tools). A command
//! the policy marks waits for an approver; the agent that asked is given
//! the approval's id and nothing that decides it; an approver (a token of
//! its own, the local operator's CLI, a Slack click, or where the operator
//! chose it a link holder) decides; the approval is bound to the exact
//! command, server, host key and caller, used once, and audited with a
//! receipt naming the approver.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::peer::run_ok as run_tool;
use toolgate_e2e::sshd::Sshd;
use toolgate_e2e::webhook::{receiver, seen};
use toolgate_e2e::{Response, Server, TempPath, error_of as error, temp_file};

const SECRET: &str = "a-webhook-secret-of-32-characters";
/// The agent's (caller's) token, and an approver's.
const AGENT: &str = "agent-token-0123456789abcdef";
const OPS: &str = "ops-approver-token-0123456789";

/// The config every test starts from: one caller, one approver, then
/// `extra` (servers, clouds).
fn config(extra: &str) -> String {
    format!(
        "[[server.tokens]]\nname = \"agent\"\ntoken = \"{AGENT}\"\n\n\
         [[approvals.approvers]]\nname = \"ops\"\ntoken = \"{OPS}\"\n\n{extra}"
    )
}

fn serve(text: &str, env: &[(&str, &str)]) -> (Server, TempPath) {
    let cfg = temp_file("toolgate-approvals", text);
    let s = Server::start_with_args(env, &["--config", cfg.0.to_str().unwrap()]);
    (s, cfg)
}

fn with_token(s: &Server, token: &str, method: &str, path: &str, body: &str) -> Response {
    let auth = format!("Bearer {token}");
    s.request(
        method,
        path,
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", &auth),
        ],
        body.as_bytes(),
    )
}

/// A call as the agent.
fn as_agent(s: &Server, path: &str, body: &Value) -> Response {
    with_token(s, AGENT, "POST", path, &body.to_string())
}

fn ssh_run(s: &Server, args: Value) -> Response {
    as_agent(s, "/tools/ssh_run", &args)
}

/// Asks to run `command` on `server`; the pending approval's id. The
/// agent is told the id, the expiry and what it is for, and nothing that
/// decides it.
fn pending(s: &Server, server: &str, command: &str) -> String {
    let r = ssh_run(
        s,
        json!({"server_name": server, "command": command, "intent": "test"}),
    );
    let (status, code, msg) = error(&r);
    assert_eq!(
        (status, code.as_str()),
        (428, "approval_required"),
        "{msg}\n{}",
        s.logs()
    );
    let a = &r.json()["error"]["approval"];
    assert_eq!(a["status"], "pending");
    assert_eq!(a["target"], server);
    let id = a["id"].as_str().unwrap().to_owned();
    let body = String::from_utf8_lossy(&r.body);
    assert!(
        !body.contains("http") && !body.contains("/inbox") && !body.contains("cap"),
        "{body}"
    );
    assert!(a.get("answer_url").is_none(), "{body}");
    assert!(msg.contains(&id) && msg.contains("\"approval\""), "{msg}");
    id
}

/// An approver decides `id`.
fn decide(s: &Server, id: &str, approve: bool) -> Value {
    let d = if approve { "approve" } else { "reject" };
    let r = with_token(
        s,
        OPS,
        "POST",
        &format!("/approvals/{id}/decision"),
        &json!({ "decision": d }).to_string(),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// The approval as approvers see it.
fn approval(s: &Server, id: &str) -> Value {
    let r = with_token(s, OPS, "GET", &format!("/approvals/{id}"), "");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// The remote user's home (the login directory), so that a path under it
/// is written without `~`, which the readonly preset does not read as
/// literal.
fn home(s: &Server) -> String {
    let r = ssh_run(s, json!({"server_name": "box", "command": "pwd"}));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()["stdout"].as_str().unwrap().trim_end().to_owned()
}

fn exists(s: &Server, path: &str) -> bool {
    let path = match path.strip_prefix("~/") {
        Some(rest) => format!("{}/{rest}", home(s)),
        None => path.to_owned(),
    };
    let r = ssh_run(
        s,
        json!({"server_name": "box", "command": format!("test -e {path} && echo yes || echo no")}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()["stdout"] == "yes\n"
}

fn audit(s: &Server) -> Vec<Value> {
    s.json_logs()
        .into_iter()
        .filter(|l| l["target"] == "toolgate::audit")
        .collect()
}

/// The audit lines once one matches `want`, or after 5 s: the server may
/// write a call's audit line after the call's answer reached the test.
fn audit_once(s: &Server, want: impl Fn(&Value) -> bool) -> Vec<Value> {
    s.json_logs_when(std::time::Duration::from_secs(5), |ls| {
        ls.iter()
            .any(|l| l["target"] == "toolgate::audit" && want(l))
    })
    .into_iter()
    .filter(|l| l["target"] == "toolgate::audit")
    .collect()
}

/// The audit line of the cloud call that ran under an approval.
fn cloud_call_approved(s: &Server) -> Value {
    let approved = |l: &Value| l["event"] == "cloud_call" && l["outcome"] == "approved";
    let lines = audit_once(s, approved);
    lines
        .into_iter()
        .find(|l| approved(l))
        .unwrap_or_else(|| panic!("no approved cloud call in the audit"))
}

fn python(code: &str, arg: &str) -> String {
    run_tool(Command::new("python3").args(["-c", code, arg]), "python3")
        .trim()
        .to_owned()
}

fn sha256(text: &str) -> String {
    python(
        "import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest())",
        text,
    )
}

/// What a log line says for an id (docs/approvals.md, "Receipts and logs"), computed
/// apart from the product's code.
fn id_ref(id: &str) -> String {
    python(
        "import hashlib, sys; print('ref:' + hashlib.sha256(b'toolgate-log-ref\\0' + sys.argv[1].encode()).hexdigest()[:16])",
        id,
    )
}

/// A folder of this run's own on the sshd host (the test user's home
/// outlives runs).
fn run_dir() -> String {
    format!(
        "~/tg-approvals-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

#[test]
fn a_risky_command_waits_for_an_approver_and_runs_once_exactly_as_approved() {
    let d = Sshd::start();
    let (_rx, hooks) = receiver(SECRET);
    let hook = format!("{hooks}/hook");
    // Its own folder: the store's files (the database, its journal, the MCP
    // state key beside it) go with it.
    let db_dir = toolgate_e2e::launch::TempDir::new("toolgate-approvals-db");
    let db = db_dir.path().join("clarify.sqlite3");
    let db_path = db.to_str().unwrap().to_owned();
    let text = config(&format!(
        "{}[servers.box.policy]\napprove_preset = \"readonly\"\n{}",
        d.server_toml("box", ""),
        d.server_toml("twin", "")
    ));
    let env = [
        ("TOOLGATE_CLARIFY_DB", db_path.as_str()),
        ("TOOLGATE_CLARIFY_WEBHOOK_URL", hook.as_str()),
        ("TOOLGATE_CLARIFY_WEBHOOK_SECRET", SECRET),
    ];
    let (s, _cfg) = serve(&text, &env);
    // Made and removed on `twin`, which needs no approval.
    let dir = run_dir();
    let r = ssh_run(
        &s,
        json!({"server_name": "twin", "command": format!("mkdir -p {dir}")}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let f = |n: u32| format!("{dir}/approved-{n}");

    // A read runs at once; a write waits, and nothing ran.
    let r = ssh_run(&s, json!({"server_name": "box", "command": "uptime"}));
    assert_eq!(r.status, 200);
    assert!(r.json().get("approval").is_none());
    let cmd = format!("touch {}", f(1));
    let cmd = cmd.as_str();
    let id = pending(&s, "box", cmd);
    assert!(!exists(&s, &f(1)));
    // The approvers hear of it (the webhook): every field in a box of its
    // own, whole, and a link to the inbox (where they sign in).
    let q = toolgate_e2e::webhook::wait_for(&hooks, "the approval's notification", |v| {
        toolgate_e2e::webhook::events(v, &id) == ["approval.created"]
    });
    let told = &q["hook"][0]["body"];
    assert_eq!(told["kind"], "approval");
    let field = |label: &str| {
        told["details"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["label"] == label)
            .map(|f| f["text"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("no {label} in {told:#}"))
    };
    assert_eq!(field("Command"), cmd);
    assert_eq!(field("Host key"), d.host_fingerprint());
    assert_eq!(field("Intent"), "test");
    assert_eq!(field("Caller"), "agent");
    assert_eq!(
        told["approval_url"],
        format!("http://{}/inbox/{id}", s.addr)
    );
    assert!(told.get("answer_url").is_none(), "{told}");

    // Before anyone decides, the approval does not run the command.
    let with = |command: &str, server: &str| {
        ssh_run(
            &s,
            json!({"server_name": server, "command": command, "approval": id}),
        )
    };
    let (status, code, msg) = error(&with(cmd, "box"));
    assert_eq!((status, code.as_str()), (428, "approval_required"), "{msg}");
    let v = decide(&s, &id, true);
    assert_eq!(v["status"], "approved");
    assert_eq!(v["approver"], "token:ops");

    // Approved: not for another command, not for another server.
    let (status, code, msg) = error(&with(&format!("touch {}", f(2)), "box"));
    assert_eq!((status, code.as_str()), (403, "forbidden"), "{msg}");
    assert!(msg.contains("another command"), "{msg}");
    let (status, _, msg) = error(&with(cmd, "twin"));
    assert_eq!(status, 403, "{msg}");
    assert!(msg.contains("server \"box\", not \"twin\""), "{msg}");
    assert!(!exists(&s, &f(2)));

    // Exactly as approved: it runs, once.
    let r = with(cmd, "box");
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["approval"], id);
    assert!(exists(&s, &f(1)));
    let (status, _, msg) = error(&with(cmd, "box"));
    assert_eq!(status, 403);
    assert!(msg.contains("already been used"), "{msg}");
    assert!(approval(&s, &id)["used_at"].is_string());

    // The receipt: the run's audit line names the approver; the approval
    // is its ref, never its id. The log is read until the refusal that came
    // after the run is in it (the server writes its log on its own time).
    let r_id = id_ref(&id);
    let lines = audit_once(&s, |l| {
        l["outcome"] == "forbidden"
            && l["approval"] == r_id.as_str()
            && l["reason"]
                .as_str()
                .is_some_and(|r| r.contains("already been used"))
    });
    let ran = lines
        .iter()
        .find(|l| l["outcome"] == "ran" && l["command"] == cmd)
        .unwrap_or_else(|| panic!("no audit line of the run: {lines:#?}"));
    assert_eq!(ran["approval"], r_id);
    assert_eq!(ran["approver"], "token:ops");
    assert_eq!(ran["caller"], "agent");
    assert!(ran["approved_at"].as_str().unwrap().ends_with('Z'), "{ran}");
    assert_eq!(ran["command_sha256"], sha256(cmd));
    assert_eq!(ran["host_key"], d.host_fingerprint());
    assert!(
        !s.logs().contains(&id),
        "the approval's id is in the log: {}",
        s.logs()
    );

    // Rejected: refused, and nothing ran.
    let rm = format!("rm -f {}", f(1));
    let rm = rm.as_str();
    let no = pending(&s, "box", rm);
    decide(&s, &no, false);
    let (status, _, msg) = error(&ssh_run(
        &s,
        json!({"server_name": "box", "command": rm, "approval": no}),
    ));
    assert_eq!(status, 403);
    assert!(
        msg.contains("not approved") && msg.contains("token:ops"),
        "{msg}"
    );
    assert!(exists(&s, &f(1)));
    // A second decision is a conflict carrying the first.
    let r = with_token(
        &s,
        OPS,
        "POST",
        &format!("/approvals/{no}/decision"),
        r#"{"decision": "approve"}"#,
    );
    let (status, code, msg) = error(&r);
    assert_eq!((status, code.as_str()), (409, "conflict"), "{msg}");
    assert_eq!(msg, "This approval is already rejected");
    assert_eq!(r.json()["error"]["approval"]["status"], "rejected");
    // Each decision is audited when it is made, with what it was for.
    let no_ref = id_ref(&no);
    let decisions: Vec<(String, String, String)> = audit_once(&s, |l| {
        l["approval"] == no_ref.as_str() && l["decision"] == "rejected"
    })
    .iter()
    .filter(|l| l["event"] == "approval")
    .map(|l| {
        (
            l["approval"].as_str().unwrap().to_owned(),
            l["decision"].as_str().unwrap().to_owned(),
            l["approver"].as_str().unwrap().to_owned(),
        )
    })
    .collect();
    assert!(
        decisions.contains(&(r_id.clone(), "approved".into(), "token:ops".into())),
        "{decisions:?}"
    );
    assert!(
        decisions.contains(&(no_ref.clone(), "rejected".into(), "token:ops".into())),
        "{decisions:?}"
    );
    let rejected = audit(&s)
        .into_iter()
        .find(|l| l["event"] == "approval" && l["approval"] == no_ref.as_str())
        .unwrap();
    assert_eq!(rejected["command_sha256"], sha256(rm));
    assert_eq!(rejected["server"], "box");

    // `wait`: the call blocks until an approver decides, then runs.
    let approver = {
        let hooks = hooks.clone();
        let marker = f(3);
        let base = s.addr.clone();
        std::thread::spawn(move || {
            let about = |e: &Value| {
                e["body"]["details"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .contains(&marker)
            };
            let v = toolgate_e2e::webhook::wait_for(&hooks, "the waiting approval", |v| {
                v["hook"].as_array().unwrap().iter().any(about)
            });
            let id = v["hook"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| about(e))
                .unwrap()["body"]["id"]
                .as_str()
                .unwrap()
                .to_owned();
            let r = toolgate_e2e::raw_request(
                &base,
                "POST",
                &format!("/approvals/{id}/decision"),
                &[
                    ("Content-Type", "application/json"),
                    ("Authorization", &format!("Bearer {OPS}")),
                ],
                br#"{"decision": "approve"}"#,
            );
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        })
    };
    let r = ssh_run(
        &s,
        json!({"server_name": "box", "command": format!("touch {}", f(3)), "wait": 20}),
    );
    approver.join().unwrap();
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(exists(&s, &f(3)));

    // An approval given for the key pinned then is refused once the pin
    // changes (the server re-keyed, or the inventory was edited).
    let later = pending(&s, "box", &format!("touch {}", f(4)));
    decide(&s, &later, true);
    let r = ssh_run(
        &s,
        json!({"server_name": "twin", "command": format!("rm -rf {dir}")}),
    );
    assert_eq!(r.status, 200);
    drop(s);
    let other = std::env::temp_dir().join(format!("toolgate-approvals-key-{}", std::process::id()));
    let _ = std::fs::remove_file(&other);
    run_tool(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&other),
        "ssh-keygen",
    );
    let new_pin = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let rekeyed = text.replacen(&d.host_key_line(), new_pin.trim(), 1);
    let (s, _cfg2) = serve(&rekeyed, &env);
    let (status, _, msg) = error(&ssh_run(
        &s,
        json!({"server_name": "box", "command": format!("touch {}", f(4)), "approval": later}),
    ));
    assert_eq!(status, 403, "{msg}");
    assert!(msg.contains("host key pinned for \"box\" changed"), "{msg}");
    let _ = seen(&hooks);
    let _ = std::fs::remove_file(&other);
    let _ = std::fs::remove_file(other.with_extension("pub"));
}

/// The agent is handed an id and whatever an error, a tool result or a
/// listing tells it. None of it decides: not the old answer route, not the
/// approvers' routes with its own token or none, not any string it was
/// given used as a path or a link capability, over HTTP or MCP.
#[test]
fn the_agent_cannot_approve_its_own_command_by_anything_it_was_given() {
    let d = Sshd::start();
    let text = config(&format!(
        "{}[servers.box.policy]\napprove = [\"^touch \"]\n",
        d.server_toml("box", "")
    ));
    let (s, _cfg) = serve(&text, &[]);
    let dir = run_dir();
    let cmd = format!("touch {dir}-self-approved");
    let id = pending(&s, "box", &cmd);

    // Everything the agent got, over HTTP and over MCP.
    let http = ssh_run(&s, json!({"server_name": "box", "command": cmd}));
    let mcp = with_token(
        &s,
        AGENT,
        "POST",
        "/mcp",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "ssh_run", "arguments": {"server_name": "box", "command": cmd}}})
        .to_string(),
    );
    let mut given = String::from_utf8_lossy(&http.body).into_owned();
    given.push_str(&String::from_utf8_lossy(&mcp.body));
    for (k, v) in http.headers.iter().chain(mcp.headers.iter()) {
        given.push_str(&format!("\n{k}: {v}"));
    }
    let state = with_token(&s, AGENT, "GET", &format!("/clarifications/{id}"), "");
    assert_eq!(state.status, 200);
    assert_eq!(state.json()["kind"], "approval");
    given.push_str(&String::from_utf8_lossy(&state.body));
    let mcp_text = mcp.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(mcp_text.contains("approval_required"), "{mcp_text}");
    for text in [&given, &mcp_text] {
        assert!(
            !text.contains("http://") && !text.contains("#cap="),
            "{text}"
        );
    }

    // Every word of it as a capability, and every path-like string as a
    // route to POST a decision to.
    let words: Vec<String> = given
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '/' || c == '-' || c == '_'))
        .filter(|w| w.len() >= 16)
        .map(String::from)
        .collect();
    assert!(words.contains(&id), "{given}");
    for w in &words {
        let r = s.post_json(
            &format!("/approval-links/{id}"),
            &json!({"capability": w, "decision": "approve"}),
        );
        assert_eq!(r.status, 403, "{w}: {}", String::from_utf8_lossy(&r.body));
        if w.starts_with('/') {
            let _ = with_token(
                &s,
                AGENT,
                "POST",
                w,
                r#"{"decision": "approve", "choice": 0}"#,
            );
        }
    }
    // The answer route of an ordinary question refuses an approval.
    for token in [None, Some(AGENT)] {
        let path = format!("/clarifications/{id}/answer");
        let r = match token {
            None => s.post_json(&path, &json!({"choice": 0})),
            Some(t) => with_token(&s, t, "POST", &path, r#"{"choice": 0}"#),
        };
        let (status, code, msg) = error(&r);
        assert_eq!((status, code.as_str()), (403, "forbidden"), "{msg}");
        assert!(msg.contains("only an approver can decide it"), "{msg}");
        let r = s.post_json(&format!("/clarifications/{id}/cancel"), &json!({}));
        assert_eq!(r.status, 403);
    }
    // Its old answer page sends a browser to the inbox, where approvers
    // sign in (relative, so that an API stage in front stays).
    let r = s.get(&format!("/clarifications/{id}/answer"));
    assert_eq!(r.status, 303);
    assert_eq!(
        r.header("location"),
        Some(format!("../../inbox/{id}").as_str())
    );
    // The approvers' routes: not with the agent's token, not without one.
    let decision = format!("/approvals/{id}/decision");
    let body = r#"{"decision": "approve"}"#;
    let (status, code, msg) = error(&with_token(&s, AGENT, "POST", &decision, body));
    assert_eq!((status, code.as_str()), (403, "forbidden"), "{msg}");
    let (status, code, _) = error(&s.post_json(&decision, &json!({"decision": "approve"})));
    assert_eq!((status, code.as_str()), (401, "unauthorized"));
    for list in ["/approvals", "/clarifications"] {
        assert_eq!(with_token(&s, AGENT, "GET", list, "").status, 403, "{list}");
    }
    // An approver's token is not a caller's either.
    let (status, _, msg) = error(&with_token(
        &s,
        OPS,
        "POST",
        "/tools/ssh_run",
        &json!({"server_name": "box", "command": "uptime"}).to_string(),
    ));
    assert_eq!(status, 403, "{msg}");

    // Still pending: the call still waits, and nothing ran.
    assert_eq!(approval(&s, &id)["status"], "pending");
    let (status, code, _) = error(&ssh_run(
        &s,
        json!({"server_name": "box", "command": cmd, "approval": id}),
    ));
    assert_eq!((status, code.as_str()), (428, "approval_required"));
    assert!(!exists(&s, &format!("{dir}-self-approved")));
}

#[test]
fn an_approval_expires_and_bad_or_foreign_ids_are_refused_and_rules_apply_by_tag() {
    let d = Sshd::start();
    let text = config(&format!(
        "{}[servers.box.policy]\napprove = [\"^reboot\"]\n",
        d.server_toml("box", "")
    ));
    let (s, _cfg) = serve(&text, &[("TOOLGATE_CLARIFY_EXPIRY_SECS", "2")]);
    let id = pending(&s, "box", "reboot --dry-run");
    std::thread::sleep(Duration::from_millis(2_500));
    let r = with_token(
        &s,
        OPS,
        "POST",
        &format!("/approvals/{id}/decision"),
        r#"{"decision": "approve"}"#,
    );
    let (status, code, msg) = error(&r);
    assert_eq!((status, code.as_str()), (410, "expired"), "too late: {msg}");
    assert_eq!(msg, "This approval has expired");
    let r_id = id_ref(&id);
    let expired = |l: &Value| {
        l["event"] == "approval" && l["approval"] == r_id.as_str() && l["decision"] == "expired"
    };
    assert!(
        audit_once(&s, expired).iter().any(expired),
        "the expiry is audited"
    );
    let (status, _, msg) = error(&ssh_run(
        &s,
        json!({"server_name": "box", "command": "reboot --dry-run", "approval": id}),
    ));
    assert_eq!(status, 403);
    assert!(msg.contains("expired unanswered"), "{msg}");
    // A made-up approval, and a malformed one.
    let (status, _, msg) = error(&ssh_run(
        &s,
        json!({"server_name": "box", "command": "reboot --dry-run", "approval": "0".repeat(40)}),
    ));
    assert_eq!(status, 403);
    assert!(msg.contains("does not exist"), "{msg}");
    let (status, code, _) = error(&ssh_run(
        &s,
        json!({"server_name": "box", "command": "reboot", "approval": "../../etc"}),
    ));
    assert_eq!((status, code.as_str()), (400, "invalid_input"));
    // Deciding what is no approval: 404; a bad decision: 400.
    for (path, body, want) in [
        (
            format!("/approvals/{}/decision", "0".repeat(40)),
            r#"{"decision": "approve"}"#,
            404,
        ),
        (
            format!("/approvals/{id}/decision"),
            r#"{"decision": "yes"}"#,
            400,
        ),
        (
            format!("/approvals/{id}/decision"),
            r#"{"decision": "approve", "choice": 0}"#,
            400,
        ),
        (format!("/approvals/{id}/decision"), r#"[1]"#, 400),
    ] {
        let r = with_token(&s, OPS, "POST", &path, body);
        assert_eq!(
            r.status,
            want,
            "{path} {body}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert!(r.json()["error"]["message"].is_string());
    }
    // An ordinary clarification is not an approval.
    let c = as_agent(
        &s,
        "/tools/clarify",
        &json!({"question": "ok?", "options": ["Approve"]}),
    );
    let cid = c.json()["id"].as_str().unwrap().to_owned();
    let r = s.post_json(
        &format!("/clarifications/{cid}/answer"),
        &json!({"choice": 0}),
    );
    assert_eq!(r.status, 200);
    let (status, _, msg) = error(&ssh_run(
        &s,
        json!({"server_name": "box", "command": "reboot --dry-run", "approval": cid}),
    ));
    assert_eq!(status, 403);
    assert!(msg.contains("is not an approval"), "{msg}");
    // Nor does an approver decide a question through the approvals' route.
    let r = with_token(
        &s,
        OPS,
        "POST",
        &format!("/approvals/{cid}/decision"),
        r#"{"decision": "approve"}"#,
    );
    assert_eq!(r.status, 404);

    // `[ssh] approve_preset = "all"` for servers tagged `prod`: this one is
    // tagged `test`, so only its own rule applies.
    let text = config(&format!(
        "[ssh]\napprove_preset = \"all\"\napprove_tags = [\"test\"]\n{}",
        d.server_toml("box", "")
    ));
    let (s2, _cfg2) = serve(&text, &[]);
    let r = ssh_run(&s2, json!({"server_name": "box", "command": "uptime"}));
    assert_eq!(error(&r).0, 428, "every command on a tagged server");
    let text = config(&format!(
        "[ssh]\napprove_preset = \"all\"\napprove_tags = [\"prod\"]\n{}",
        d.server_toml("box", "")
    ));
    let (s3, _cfg3) = serve(&text, &[]);
    let r = ssh_run(&s3, json!({"server_name": "box", "command": "uptime"}));
    assert_eq!(r.status, 200, "untagged servers are not gated");
}

/// `approve_preset = "readonly"`: the red team's ways around a read-only
/// list (a wrapper, quotes, a backslash, an interpreter, a path, a second
/// command) all wait for a person, and none of them ran.
#[test]
fn readonly_means_read_only_whatever_the_spelling() {
    let d = Sshd::start();
    let text = config(&format!(
        "{}[servers.box.policy]\napprove_preset = \"readonly\"\n",
        d.server_toml("box", "")
    ));
    let (s, _cfg) = serve(&text, &[]);
    let dir = run_dir();
    let mark = |n: usize| format!("{dir}-ro-{n}");
    let forms = |n: usize| {
        let m = mark(n);
        [
            format!("env touch {m}"),
            format!("'touch' {m}"),
            format!("\\touch {m}"),
            format!("\"touch\" {m}"),
            format!(
                "python3 -c 'import pathlib,os; pathlib.Path(os.path.expanduser(\"{m}\")).touch()'"
            ),
            format!("/usr/bin/touch {m}"),
            format!("A=1 touch {m}"),
            format!("uptime; touch {m}"),
            format!("uptime && touch {m}"),
            format!("echo > {m}"),
            format!("ls $(touch {m})"),
            format!("uptime\ntouch {m}"),
        ]
    };
    let count = forms(0).len();
    for n in 0..count {
        let cmd = forms(n)[n].clone();
        let r = ssh_run(&s, json!({"server_name": "box", "command": cmd}));
        assert_eq!(error(&r).0, 428, "{cmd:?} ran without a person");
    }
    for n in 0..count {
        assert!(!exists(&s, &mark(n)), "{}", mark(n));
    }
    // What is plainly read-only still runs at once.
    for cmd in [
        "uptime",
        "df -h /",
        "uptime; df -h /",
        "ps aux | grep -c sshd",
    ] {
        let r = ssh_run(&s, json!({"server_name": "box", "command": cmd}));
        assert_eq!(r.status, 200, "{cmd}: {}", String::from_utf8_lossy(&r.body));
    }
}

/// Cloud tools by name: a gated tool of the MCP reference server waits for
/// an approver; the approval binds the account, the tool and the arguments.
#[test]
fn a_gated_cloud_tool_runs_once_with_exactly_the_approved_arguments() {
    let (_mcp, port) = toolgate_e2e::peer::everything();
    let text = config(&format!(
        "[clouds.demo]\nurl = \"http://127.0.0.1:{port}/mcp\"\napprove = [\"ech*\"]\n"
    ));
    let (s, _cfg) = serve(&text, &[]);
    let tools = with_token(&s, AGENT, "GET", "/tools", "").json();
    let schema = |name: &str| {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["input_schema"].clone())
            .unwrap_or_else(|| panic!("no {name} in {tools:#}"))
    };
    assert!(schema("demo__echo")["properties"]["toolgate_approval"].is_object());
    let others: Vec<&Value> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("demo__") && t["name"] != "demo__echo")
        .collect();
    assert!(!others.is_empty());
    assert!(others.iter().all(|t| {
        t["input_schema"]["properties"]
            .get("toolgate_approval")
            .is_none()
    }));

    // Over MCP the gate is a tool error whose text is the same body.
    let over_mcp = with_token(
        &s,
        AGENT,
        "POST",
        "/mcp",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "demo__echo", "arguments": {"message": "hi"}}})
        .to_string(),
    );
    let over_mcp = over_mcp.json();
    assert_eq!(over_mcp["result"]["isError"], true, "{over_mcp}");
    let text: Value =
        serde_json::from_str(over_mcp["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["error"]["code"], "approval_required", "{text}");
    assert_eq!(text["error"]["approval"]["status"], "pending", "{text}");
    assert!(!text.to_string().contains("http"), "{text}");

    let call = |body: &str| with_token(&s, AGENT, "POST", "/tools/demo__echo", body);
    let r = call(r#"{"message": "hi"}"#);
    let (status, code, msg) = error(&r);
    assert_eq!((status, code.as_str()), (428, "approval_required"), "{msg}");
    // It names the cloud tool's own argument for the approval.
    assert!(msg.contains("\"toolgate_approval\": \""), "{msg}");
    let id = r.json()["error"]["approval"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = approval(&s, &id);
    assert_eq!(shown["details"][0]["label"], "Arguments");
    assert!(
        shown["details"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"hi\""),
        "{shown}"
    );
    decide(&s, &id, true);
    let (status, _, msg) = error(&call(&format!(
        r#"{{"message": "bye", "toolgate_approval": "{id}"}}"#
    )));
    assert_eq!(status, 403);
    assert!(msg.contains("another command"), "{msg}");
    // The same arguments in another order are the same call: the body is
    // sent as written, the approval's key first.
    let r = call(&format!(
        r#"{{"toolgate_approval": "{id}", "message": "hi"}}"#
    ));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json().to_string().contains("hi"), "{}", r.json());
    let (status, _, msg) = error(&call(&format!(
        r#"{{"message": "hi", "toolgate_approval": "{id}"}}"#
    )));
    assert_eq!(status, 403);
    assert!(msg.contains("already been used"), "{msg}");
    let ran = cloud_call_approved(&s);
    assert_eq!(ran["approval"], id_ref(&id));
    assert_eq!(ran["approver"], "token:ops");
    assert_eq!(ran["account"], "demo");
    assert_eq!(ran["arguments_sha256"], sha256(r#"{"message":"hi"}"#));
    assert_eq!(ran["endpoint"], format!("http://127.0.0.1:{port}/mcp"));
}

/// A cloud account of `toolgate.toml` as an operator writes one: its bearer
/// token from the environment variable `token_env` names, headers of its
/// own, and `echo` gated.
fn gated_account(port: u16) -> String {
    config(&format!(
        "[clouds.demo]\nurl = \"http://127.0.0.1:{port}/mcp\"\napprove = [\"ech*\"]\n\
         token_env = \"DEMO_CLOUD_TOKEN\"\nheaders = {{ \"X-Tenant\" = \"t1\" }}\n"
    ))
}

const DEMO_CLOUD_TOKEN: &str = "demo-cloud-token-0123456789abcdef";

/// A gated cloud call with `toolgate_wait` runs in that one call once an
/// approver approves while it waits, with the account's token (from
/// `token_env`) and headers upstream and the wait argument stripped; an
/// approval is bound to the account's endpoint, so after the operator
/// moves the account elsewhere it is refused, naming both endpoints.
#[test]
fn a_cloud_approval_waits_for_its_decision_and_is_bound_to_the_endpoint() {
    let (first, first_port) = toolgate_e2e::peer::everything_recording_headers();
    let (moved, moved_port) = toolgate_e2e::peer::everything_recording_headers();
    let data = toolgate_e2e::launch::TempDir::new("toolgate-cloud-approvals");
    let data_dir = data.path().to_str().unwrap().to_owned();
    let env = [
        ("DEMO_CLOUD_TOKEN", DEMO_CLOUD_TOKEN),
        ("TOOLGATE_DATA_DIR", data_dir.as_str()),
    ];
    let (s, _cfg) = serve(&gated_account(first_port), &env);
    let call = |s: &Server, body: &Value| as_agent(s, "/tools/demo__echo", body);

    // The call waits; an approver, seeing it pending, approves; the same
    // call then runs.
    let waited = std::thread::scope(|scope| {
        let waiting = scope.spawn(|| {
            let started = std::time::Instant::now();
            let r = call(&s, &json!({"message": "hi", "toolgate_wait": 20}));
            (r, started.elapsed())
        });
        let id = toolgate_e2e::timing::poll_until(
            Duration::from_secs(15),
            "the waiting call's approval pending",
            || {
                let list = with_token(&s, OPS, "GET", "/approvals?status=pending", "").json();
                list["approvals"][0]["id"].as_str().map(str::to_owned)
            },
        );
        decide(&s, &id, true);
        let (r, took) = waiting.join().expect("the waiting call");
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        assert!(r.json().to_string().contains("hi"), "{}", r.json());
        assert!(
            took < Duration::from_secs(20),
            "it waited out its wait: {took:?}"
        );
        id
    });
    let ran = cloud_call_approved(&s);
    assert_eq!(ran["approval"], id_ref(&waited));
    // What was forwarded is the tool's own arguments, `toolgate_wait` gone.
    assert_eq!(ran["arguments_sha256"], sha256(r#"{"message":"hi"}"#));
    // Every request upstream carried the account's token and headers.
    let seen = toolgate_e2e::peer::recorded_headers(&first);
    assert!(!seen.is_empty());
    for h in &seen {
        assert_eq!(
            (h["authorization"].as_str(), h["x-tenant"].as_str()),
            (
                Some(format!("Bearer {DEMO_CLOUD_TOKEN}").as_str()),
                Some("t1")
            ),
            "{h}"
        );
    }

    // An approval asked for at the first endpoint, then the account moved.
    let r = call(&s, &json!({"message": "again"}));
    assert_eq!(r.status, 428, "{}", String::from_utf8_lossy(&r.body));
    let id = r.json()["error"]["approval"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    decide(&s, &id, true);
    s.terminate();
    let (s, _cfg) = serve(&gated_account(moved_port), &env);
    let listed = with_token(&s, AGENT, "GET", "/tools", "").json();
    assert!(listed.to_string().contains("demo__echo"), "{listed}");
    let requests = toolgate_e2e::peer::recorded_headers(&moved).len();
    let r = call(&s, &json!({"message": "again", "toolgate_approval": id}));
    assert_eq!(
        error(&r),
        (
            403,
            "forbidden".to_owned(),
            format!(
                "the endpoint of cloud account \"demo\" changed since approval {id} \
                 (approved for http://127.0.0.1:{first_port}/mcp, now http://127.0.0.1:{moved_port}/mcp)"
            )
        )
    );
    // Nothing was sent to the moved account for the refused call.
    assert_eq!(
        toolgate_e2e::peer::recorded_headers(&moved).len(),
        requests,
        "{}",
        moved.logs()
    );
}

/// Where the operator chooses link-holder approvals, the channels get a
/// link whose fragment is the capability (never sent to the server in a
/// URL, never in the agent's answer, stored only hashed), and the receipt
/// says a link holder decided.
#[test]
fn a_link_decides_only_where_the_operator_chose_it() {
    let d = Sshd::start();
    let (_rx, hooks) = receiver(SECRET);
    let hook = format!("{hooks}/hook");
    let text = config(&format!(
        "[approvals]\nlink_holder = true\n\n{}[servers.box.policy]\napprove = [\"^touch \"]\n",
        d.server_toml("box", "")
    ));
    let env = [
        ("TOOLGATE_CLARIFY_WEBHOOK_URL", hook.as_str()),
        ("TOOLGATE_CLARIFY_WEBHOOK_SECRET", SECRET),
    ];
    let (s, _cfg) = serve(&text, &env);
    let dir = run_dir();
    let cmd = format!("touch {dir}-by-link");
    let id = pending(&s, "box", &cmd);
    let q = toolgate_e2e::webhook::wait_for(&hooks, "the approval's link", |v| {
        toolgate_e2e::webhook::events(v, &id) == ["approval.created"]
    });
    let url = q["hook"][0]["body"]["approval_url"]
        .as_str()
        .unwrap()
        .to_owned();
    let (page, cap) = url.split_once("#cap=").unwrap_or_else(|| panic!("{url}"));
    assert_eq!(page, format!("http://{}/inbox/{id}", s.addr));
    assert_eq!(cap.len(), 64);
    let link = |body: Value| s.post_json(&format!("/approval-links/{id}"), &body);
    // A wrong capability, or one for another approval, decides nothing.
    let r = link(json!({"capability": "f".repeat(64), "decision": "approve"}));
    assert_eq!(r.status, 403);
    let other = pending(&s, "box", &format!("{cmd}-other"));
    let r = s.post_json(
        &format!("/approval-links/{other}"),
        &json!({"capability": cap, "decision": "approve"}),
    );
    assert_eq!(r.status, 403);
    // Read, then decide, with the link.
    let r = link(json!({"capability": cap}));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "pending");
    let r = link(json!({"capability": cap, "decision": "approve"}));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["approver"], "link holder");
    let r = ssh_run(
        &s,
        json!({"server_name": "box", "command": cmd, "approval": id}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let r_id = id_ref(&id);
    let lines = audit_once(&s, |l| {
        l["outcome"] == "ran" && l["approval"] == r_id.as_str()
    });
    let ran = lines.iter().find(|l| l["outcome"] == "ran").unwrap();
    assert_eq!(ran["approver"], "link holder");
    assert!(!s.logs().contains(cap), "the capability is in the log");
}

/// `v0=` and the hex HMAC-SHA256 of `v0:{ts}:{body}`: Slack's documented
/// request signature, computed here apart from the product's code. No Slack
/// server can run here, so the test plays Slack's side of the request.
fn slack_signature(secret: &str, ts: &str, body: &str) -> String {
    run_tool(
        Command::new("python3").args([
            "-c",
            "import hashlib, hmac, sys; print('v0=' + hmac.new(sys.argv[1].encode(), ('v0:' + sys.argv[2] + ':' + sys.argv[3]).encode(), hashlib.sha256).hexdigest())",
            secret,
            ts,
            body,
        ]),
        "slack signature",
    )
    .trim()
    .to_owned()
}

/// Slack's interactive buttons: a signed click from an allowed Slack user
/// decides, and the receipt names that user; a bad or stale signature and
/// a user not on the list decide nothing.
#[test]
fn a_signed_slack_click_decides_as_that_slack_user() {
    const SIGNING: &str = "slack-signing-secret-0123456789";
    let d = Sshd::start();
    let (_rx, hooks) = receiver(SECRET);
    let slack = format!("{hooks}/slack");
    let text = config(&format!(
        "[approvals]\nslack_users = [\"U0ALLOWED\"]\n\n{}[servers.box.policy]\napprove = [\"^touch \"]\n",
        d.server_toml("box", "")
    ));
    let env = [
        ("TOOLGATE_CLARIFY_SLACK_URL", slack.as_str()),
        ("TOOLGATE_SLACK_SIGNING_SECRET", SIGNING),
    ];
    let (s, _cfg) = serve(&text, &env);
    let cmd = format!("touch {}-by-slack", run_dir());
    let id = pending(&s, "box", &cmd);
    // The message carries Approve and Reject buttons with the id.
    let seen_msg = toolgate_e2e::webhook::wait_for(&hooks, "the Slack message", |v| {
        v["slack"].as_array().is_some_and(|a| !a.is_empty())
    });
    let blocks = seen_msg["slack"][0]["body"]["blocks"].to_string();
    assert!(
        blocks.contains("toolgate_approve") && blocks.contains(&id),
        "{blocks}"
    );

    let click = |user: &str, action: &str| {
        let payload = json!({
            "type": "block_actions",
            "team": {"id": "T0TEAM"},
            "user": {"id": user, "username": "someone", "name": "someone"},
            "actions": [{"action_id": action, "value": id, "type": "button"}],
            "response_url": format!("{hooks}/slack"),
        });
        python(
            "import sys, urllib.parse; print('payload=' + urllib.parse.quote(sys.argv[1]))",
            &payload.to_string(),
        )
    };
    let send = |body: &str, ts: i64, sig: Option<String>| {
        let ts = ts.to_string();
        let sig = sig.unwrap_or_else(|| slack_signature(SIGNING, &ts, body));
        s.request(
            "POST",
            "/slack/interactions",
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("X-Slack-Request-Timestamp", &ts),
                ("X-Slack-Signature", &sig),
            ],
            body.as_bytes(),
        )
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let good = click("U0ALLOWED", "toolgate_approve");
    // Forged, stale, or from someone not on the list: nothing is decided.
    assert_eq!(
        send(
            &good,
            now,
            Some(slack_signature("wrong-secret", &now.to_string(), &good))
        )
        .status,
        401
    );
    assert_eq!(send(&good, now - 600, None).status, 401);
    let r = send(&click("U0STRANGER", "toolgate_approve"), now, None);
    assert_eq!(r.status, 200, "Slack is answered, the click refused");
    assert!(
        r.json()
            .to_string()
            .contains("not one of this deployment's approvers"),
        "{}",
        r.json()
    );
    assert_eq!(approval(&s, &id)["status"], "pending");
    // The allowed user's click decides, as that user.
    let r = send(&good, now, None);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let v = approval(&s, &id);
    assert_eq!(v["status"], "approved");
    assert_eq!(v["approver"], "slack:T0TEAM/U0ALLOWED");
    let r = ssh_run(
        &s,
        json!({"server_name": "box", "command": cmd, "approval": id}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    // A second click is answered with the decision that stands.
    let r = send(&click("U0ALLOWED", "toolgate_reject"), now, None);
    assert_eq!(r.status, 200);
    assert_eq!(approval(&s, &id)["status"], "approved");
    assert!(!s.logs().contains(SIGNING));
}

/// The operator on the server's own machine decides with the CLI, against
/// the same data folder: no token needed, the receipt names the Unix user
/// (by its id: `$USER` is the caller's to set).
/// With `--url` the CLI signs in as an approver instead.
#[test]
fn the_operator_decides_with_the_cli() {
    let d = Sshd::start();
    let data = std::env::temp_dir().join(format!("toolgate-approvals-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let text = config(&format!(
        "{}[servers.box.policy]\napprove = [\"^touch \"]\n",
        d.server_toml("box", "")
    ));
    let data_dir = data.to_str().unwrap().to_owned();
    let (s, cfg) = serve(&text, &[("TOOLGATE_DATA_DIR", data_dir.as_str())]);
    let cmd = format!("touch {}-by-cli", run_dir());
    let id = pending(&s, "box", &cmd);
    let cli = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = Command::new(toolgate_e2e::toolgate_bin());
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &data)
            .env("USER", "opsperson")
            .env("TOOLGATE_DATA_DIR", &data)
            .arg("--config")
            .arg(&cfg.0)
            .args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        toolgate_e2e::output_within(c, Duration::from_secs(60))
    };
    let out = cli(&["approvals", "list"], &[]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        listed.contains(&id) && listed.contains("Run a command on box"),
        "{listed}"
    );
    let out = cli(&["approvals", "show", &id], &[]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains(&cmd), "{shown}");
    // Over HTTP: the agent's token is not an approver's.
    let url = format!("http://{}", s.addr);
    let out = cli(
        &["approvals", "approve", &id, "--url", &url],
        &[("TOOLGATE_APPROVER_TOKEN", AGENT)],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("403"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Locally, as the operator.
    let out = cli(&["approvals", "approve", &id, "--json"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The user the command runs as, whatever `$USER` claims.
    let me = run_tool(Command::new("id").arg("-un"), "id -un");
    assert_eq!(v["approver"], format!("local:{}", me.trim()));
    let r = ssh_run(
        &s,
        json!({"server_name": "box", "command": cmd, "approval": id}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    // The same over HTTP with an approver's token, for a question.
    let q = as_agent(
        &s,
        "/tools/clarify",
        &json!({"question": "Which region?", "options": ["eu", "us"]}),
    );
    let qid = q.json()["id"].as_str().unwrap().to_owned();
    let out = cli(
        &["clarifications", "list", "--url", &url],
        &[("TOOLGATE_APPROVER_TOKEN", OPS)],
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&qid),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cli(
        &[
            "clarifications",
            "answer",
            &qid,
            "--choice",
            "1",
            "--url",
            &url,
            "--json",
        ],
        &[("TOOLGATE_APPROVER_TOKEN", OPS)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["answer"], "us");
    drop(s);
    let _ = std::fs::remove_dir_all(&data);
}

/// The inbox in real headless Chromium: an approver signs in (a wrong token
/// is refused), and the command that would run is shown whole, however it
/// hides itself (1,495 spaces before `; touch X`, a right-to-left
/// override), before Approve is clicked. The clarify page's free-text
/// answer still works whatever `?choice=` a crafted link carries.
#[test]
fn the_inbox_shows_exactly_what_would_run_and_an_approver_decides_in_a_browser() {
    let d = Sshd::start();
    let text = config(&format!(
        "{}[servers.box.policy]\napprove_preset = \"readonly\"\n",
        d.server_toml("box", "")
    ));
    let (s, _cfg) = serve(&text, &[]);
    let cmd = format!("uptime{}; touch X\u{202e}gnp.exe", " ".repeat(1495));
    let id = pending(&s, "box", &cmd);
    let base = format!("http://{}", s.addr);
    let shot = std::env::temp_dir().join(format!("toolgate-inbox-{}.png", std::process::id()));
    let seen = toolgate_e2e::browser::inbox_in_chromium(
        "approve",
        &[&base, OPS, &id, shot.to_str().unwrap()],
    );
    assert!(seen.is_object(), "{seen}");
    let v = approval(&s, &id);
    assert_eq!(v["status"], "approved", "{v}");
    assert_eq!(v["approver"], "token:ops");
    let _ = std::fs::remove_file(&shot);

    let q = as_agent(
        &s,
        "/tools/clarify",
        &json!({"question": "Which region?", "options": ["eu", "us"]}),
    );
    let q = q.json();
    let url = q["answer_url"].as_str().unwrap();
    toolgate_e2e::browser::inbox_in_chromium("choice", &[url, "neither, use ap-south-1"]);
    let r = s.get(&format!("/clarifications/{}", q["id"].as_str().unwrap()));
    assert_eq!(
        r.json()["answer"],
        "neither, use ap-south-1",
        "{}",
        r.json()
    );
}

/// The agent's own person: an approver token of its own, named as the
/// agent's caller token is (`token:agent` for the caller `agent`).
const AGENTS_PERSON: &str = "agents-person-token-0123456789";
const OTHER: &str = "other-agent-token-0123456789";

/// A 2026-07-28 `tools/call` of `tool` over `/mcp` with `token`, from a
/// client that opens links (`elicitation.url`), with a retry's `extra`
/// params; the JSON-RPC reply.
fn mcp_call(s: &Server, token: &str, tool: &str, args: &Value, extra: &Value) -> Value {
    mcp_call_at(&s.addr, token, tool, args, extra)
}

fn mcp_call_at(addr: &str, token: &str, tool: &str, args: &Value, extra: &Value) -> Value {
    let caps = json!({"elicitation": {"url": {}}});
    let body = toolgate_e2e::mcp::call_2026(tool, args, &caps, extra);
    let mut headers = toolgate_e2e::mcp::call_headers("2026-07-28", tool);
    headers.push(("Authorization", format!("Bearer {token}")));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = toolgate_e2e::raw_request(addr, "POST", "/mcp", &headers, body.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// Whether `path` exists on the sshd host, asked through `twin` (which
/// needs no approval).
fn present(s: &Server, path: &str) -> bool {
    let r = ssh_run(
        s,
        json!({"server_name": "twin", "command": format!("test -e {path} && echo yes || echo no")}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()["stdout"] == "yes\n"
}

/// The tool error (code, message) of an MCP reply.
fn mcp_error(reply: &Value) -> (String, String) {
    let r = &reply["result"];
    assert_eq!(r["isError"], true, "{reply}");
    let body: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    (
        body["error"]["code"].as_str().unwrap().to_owned(),
        body["error"]["message"].as_str().unwrap().to_owned(),
    )
}

/// The URL elicitation an MCP reply asks for, and its state.
fn asked_in_client(reply: &Value) -> (Value, String) {
    let r = &reply["result"];
    assert_eq!(r["resultType"], "input_required", "{reply}");
    let state = r["requestState"].as_str().unwrap().to_owned();
    toolgate_e2e::issued::record("request state", &state);
    (r["inputRequests"]["approval"]["params"].clone(), state)
}

/// The retry after the person opened the page (`accept`), or `action`.
fn opened(state: &str, action: &str) -> Value {
    json!({"requestState": state, "inputResponses": {"approval": {"action": action}}})
}

/// Approves or rejects `id` with an approver `token`: status and body.
fn decide_as(s: &Server, token: &str, id: &str, decision: &str) -> (u16, Value) {
    let r = with_token(
        s,
        token,
        "POST",
        &format!("/approvals/{id}/decision"),
        &json!({ "decision": decision }).to_string(),
    );
    (r.status, r.json())
}

/// Approvals in the agent's own MCP client (issue #57): a 2026-07-28 client
/// that opens links is sent to the approval's page (no capability in the
/// URL). Where the server's policy says `approvers = "client"`, the
/// caller's own person (an approver identity of the caller's name, never
/// the agent's token) may decide it; elsewhere only approvers, and the
/// request says so. The retry, on another server on the same store, waits
/// for the decision and runs the command once; replayed, from another
/// caller, or for another command it is refused; the audit line says it
/// came through MCP and who approved.
#[test]
fn an_mcp_clients_person_approves_in_the_client_where_policy_allows() {
    let d = Sshd::start();
    let db_dir = toolgate_e2e::launch::TempDir::new("toolgate-approvals-mcp");
    let db = db_dir.path().join("clarify.sqlite3");
    let db_path = db.to_str().unwrap().to_owned();
    let text = format!(
        "[[server.tokens]]\nname = \"agent\"\ntoken = \"{AGENT}\"\n\n\
         [[server.tokens]]\nname = \"other\"\ntoken = \"{OTHER}\"\n\n\
         [[approvals.approvers]]\nname = \"ops\"\ntoken = \"{OPS}\"\n\n\
         [[approvals.approvers]]\nname = \"agent\"\ntoken = \"{AGENTS_PERSON}\"\n\n\
         {}[servers.box.policy]\napprove_preset = \"all\"\napprovers = \"client\"\n\n\
         {}[servers.vault.policy]\napprove_preset = \"all\"\n\n{}",
        d.server_toml("box", ""),
        d.server_toml("vault", ""),
        d.server_toml("twin", "")
    );
    let env = [("TOOLGATE_CLARIFY_DB", db_path.as_str())];
    let (a, _cfg_a) = serve(&text, &env);
    let (b, _cfg_b) = serve(&text, &env);
    let dir = run_dir();
    let file = format!("{dir}/by-client");
    let args = json!({"server_name": "box", "command": format!("mkdir -p {dir} && touch {file}")});

    // Asked on a: the page, with nothing that decides it.
    let reply = mcp_call(&a, AGENT, "ssh_run", &args, &json!({}));
    let (params, state) = asked_in_client(&reply);
    assert_eq!(params["mode"], "url", "{reply}");
    let url = params["url"].as_str().unwrap();
    let id = url
        .strip_prefix(&format!("http://{}/inbox/", a.addr))
        .unwrap_or_else(|| panic!("{url}"))
        .to_owned();
    assert!(!reply.to_string().contains("cap="), "{reply}");
    let message = params["message"].as_str().unwrap();
    assert!(message.contains("decide it yourself"), "{message}");
    assert!(message.contains("Run a command on box"), "{message}");
    let shown = approval(&a, &id);
    assert_eq!(
        (&shown["status"], &shown["via"], &shown["approvers"]),
        (&json!("pending"), &json!("mcp"), &json!("client")),
        "{shown}"
    );

    // The agent's token decides nothing; its person's does, on b.
    let (status, _) = decide_as(&b, AGENT, &id, "approve");
    assert_eq!(status, 403);
    // A retry sent while it is pending waits for the decision (on b).
    let waiting = {
        let (b_addr, state) = (b.addr.clone(), state.clone());
        let args = args.clone();
        std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let reply = mcp_call_at(&b_addr, AGENT, "ssh_run", &args, &opened(&state, "accept"));
            (reply, started.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!present(&a, &file), "it ran before anyone decided");
    let decided = std::time::Instant::now();
    let (status, v) = decide_as(&b, AGENTS_PERSON, &id, "approve");
    assert_eq!(
        (status, &v["approver"]),
        (200, &json!("token:agent")),
        "{v}"
    );
    let (ran, took) = waiting.join().unwrap();
    eprintln!(
        "retry answered {:?} after the decision ({took:?} after it was sent)",
        decided.elapsed()
    );
    let out = &ran["result"]["structuredContent"];
    assert_eq!(
        (&out["exit_code"], &out["approval"]),
        (&json!(0), &json!(id)),
        "{ran}\n{}",
        b.logs()
    );
    assert!(present(&a, &file));

    // Replayed, from another caller, for another command: refused.
    let again = mcp_call(&a, AGENT, "ssh_run", &args, &opened(&state, "accept"));
    let (code, msg) = mcp_error(&again);
    assert_eq!(code, "forbidden", "{msg}");
    assert!(msg.contains("already been used"), "{msg}");
    let (code, msg) = mcp_error(&mcp_call(
        &a,
        OTHER,
        "ssh_run",
        &args,
        &opened(&state, "accept"),
    ));
    assert_eq!(
        (code.as_str(), msg.as_str()),
        ("forbidden", "\"requestState\" was issued to another caller")
    );
    let rm = json!({"server_name": "box", "command": format!("rm -rf {dir}")});
    let (code, msg) = mcp_error(&mcp_call(
        &a,
        AGENT,
        "ssh_run",
        &rm,
        &opened(&state, "accept"),
    ));
    assert_eq!(code, "invalid_input", "{msg}");
    assert!(msg.contains("another call"), "{msg}");
    let mut changed = state.clone();
    changed.insert(
        8,
        if changed.as_bytes()[8] == b'A' {
            'B'
        } else {
            'A'
        },
    );
    let (code, _) = mcp_error(&mcp_call(
        &a,
        AGENT,
        "ssh_run",
        &args,
        &opened(&changed, "accept"),
    ));
    assert_eq!(code, "invalid_input");
    // The receipt: approved by the agent's person, through MCP.
    let r_id = id_ref(&id);
    let lines = audit_once(&b, |l| {
        l["outcome"] == "ran" && l["approval"] == r_id.as_str()
    });
    let line = lines
        .iter()
        .find(|l| l["outcome"] == "ran" && l["approval"] == r_id.as_str())
        .unwrap_or_else(|| panic!("no run under {r_id}: {lines:#?}"));
    assert_eq!(
        (&line["approver"], &line["approved_via"], &line["caller"]),
        (&json!("token:agent"), &json!("mcp"), &json!("agent")),
        "{line}"
    );

    // Declined in the client: nothing runs, and the approval waits for
    // approvers as any pending one does.
    let reply = mcp_call(&a, AGENT, "ssh_run", &rm, &json!({}));
    let (params, declined) = asked_in_client(&reply);
    let (code, msg) = mcp_error(&mcp_call(
        &b,
        AGENT,
        "ssh_run",
        &rm,
        &opened(&declined, "decline"),
    ));
    assert_eq!(code, "approval_required", "{msg}");
    let rm_id = params["url"].as_str().unwrap().rsplit('/').next().unwrap();
    assert!(msg.contains(rm_id), "{msg}");
    assert!(present(&a, &file));

    // Where policy does not let the client's person approve: only an
    // approver decides, and the request says so.
    let vault = json!({"server_name": "vault", "command": format!("rm -rf {dir}")});
    let reply = mcp_call(&a, AGENT, "ssh_run", &vault, &json!({}));
    let (params, state) = asked_in_client(&reply);
    let message = params["message"].as_str().unwrap();
    assert!(message.contains("An approver decides it"), "{message}");
    let vault_id = params["url"].as_str().unwrap().rsplit('/').next().unwrap();
    let (status, v) = decide_as(&a, AGENTS_PERSON, vault_id, "approve");
    assert_eq!(status, 403, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot approve its own call"),
        "{v}"
    );
    // Dismissed meanwhile: still pending; then an approver approves, and a
    // retry whose person declined still runs nothing.
    let (code, _) = mcp_error(&mcp_call(
        &b,
        AGENT,
        "ssh_run",
        &vault,
        &opened(&state, "cancel"),
    ));
    assert_eq!(code, "approval_required");
    assert_eq!(decide_as(&a, OPS, vault_id, "approve").0, 200);
    let (code, msg) = mcp_error(&mcp_call(
        &b,
        AGENT,
        "ssh_run",
        &vault,
        &opened(&state, "decline"),
    ));
    assert_eq!(code, "forbidden", "{msg}");
    assert!(msg.contains("nothing ran; it is approved"), "{msg}");
    assert!(present(&a, &file));
    let ran = mcp_call(&b, AGENT, "ssh_run", &vault, &opened(&state, "accept"));
    assert_eq!(ran["result"]["structuredContent"]["exit_code"], 0, "{ran}");
    assert!(!present(&a, &file));

    // A client of an older revision: today's approval_required.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "ssh_run", "arguments": args}});
    let mut headers = toolgate_e2e::mcp::call_headers("2025-11-25", "ssh_run");
    headers.push(("Authorization", format!("Bearer {AGENT}")));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = a.request("POST", "/mcp", &headers, body.to_string().as_bytes());
    let (code, msg) = mcp_error(&r.json());
    assert_eq!(code, "approval_required", "{msg}");
}
