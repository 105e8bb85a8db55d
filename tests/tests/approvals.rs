//! Approval gates for `ssh_run` end to end: `toolgate serve` against a real
//! OpenSSH sshd on loopback. A command the policy marks waits for a
//! person; the approval is a clarification (answered through its page's
//! route), bound to the exact command, server, host key and caller, used
//! once, and audited with its receipt.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::peer::run_ok as run_tool;
use toolgate_e2e::sshd::Sshd;
use toolgate_e2e::webhook::{receiver, seen};
use toolgate_e2e::{Response, Server, TempPath, error_of as error, temp_file};

const SECRET: &str = "a-webhook-secret-of-32-characters";

fn serve(text: &str, env: &[(&str, &str)]) -> (Server, TempPath) {
    let cfg = temp_file("toolgate-approvals", text);
    let s = Server::start_with_args(env, &["--config", cfg.0.to_str().unwrap()]);
    (s, cfg)
}

fn ssh_run(s: &Server, args: Value) -> Response {
    s.post_json("/tools/ssh_run", &args)
}

/// Asks to run `command` on `server`; the pending approval's id.
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
    let id = a["id"].as_str().unwrap().to_owned();
    assert!(
        a["answer_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/clarifications/{id}/answer"))
    );
    assert!(msg.contains(&id) && msg.contains("\"approval\""), "{msg}");
    id
}

fn answer(s: &Server, id: &str, choice: usize) {
    let r = s.post_json(
        &format!("/clarifications/{id}/answer"),
        &json!({"choice": choice}),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

fn exists(s: &Server, path: &str) -> bool {
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

fn sha256(text: &str) -> String {
    run_tool(
        Command::new("python3").args([
            "-c",
            "import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest())",
            text,
        ]),
        "sha256",
    )
    .trim()
    .to_owned()
}

#[test]
fn a_risky_command_waits_for_a_person_and_runs_once_exactly_as_approved() {
    let d = Sshd::start();
    let (_rx, hooks) = receiver(SECRET);
    let hook = format!("{hooks}/hook");
    let db =
        std::env::temp_dir().join(format!("toolgate-approvals-{}.sqlite3", std::process::id()));
    let db_path = db.to_str().unwrap().to_owned();
    let text = format!(
        "{}[servers.box.policy]\napprove_preset = \"readonly\"\n{}",
        d.server_toml("box", ""),
        d.server_toml("twin", "")
    );
    let env = [
        ("TOOLGATE_CLARIFY_DB", db_path.as_str()),
        ("TOOLGATE_CLARIFY_WEBHOOK_URL", hook.as_str()),
        ("TOOLGATE_CLARIFY_WEBHOOK_SECRET", SECRET),
    ];
    let (s, _cfg) = serve(&text, &env);
    // A folder of this run's own (the test user's home outlives runs),
    // made and removed on `twin`, which needs no approval.
    let dir = format!(
        "~/tg-approvals-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
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
    // The person hears of it (the webhook), with the command and the key.
    let q = toolgate_e2e::webhook::wait_for(&hooks, "the approval's notification", |v| {
        toolgate_e2e::webhook::events(v, &id) == ["clarification.created"]
    });
    let question = q["hook"][0]["body"]["question"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        question.contains(cmd) && question.contains(&d.host_fingerprint()),
        "{question}"
    );
    assert_eq!(
        q["hook"][0]["body"]["options"],
        json!(["Approve", "Reject"])
    );

    // Before anyone answers, the approval does not run the command.
    let with = |command: &str, server: &str| {
        ssh_run(
            &s,
            json!({"server_name": server, "command": command, "approval": id}),
        )
    };
    let (status, code, msg) = error(&with(cmd, "box"));
    assert_eq!((status, code.as_str()), (428, "approval_required"), "{msg}");
    answer(&s, &id, 0);

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

    // The receipt: the run's audit line has every field. The log is read
    // until the refusal that came after the run is in it (the server writes
    // its log on its own time).
    let lines = audit_once(&s, |l| {
        l["outcome"] == "forbidden"
            && l["approval"] == id
            && l["reason"]
                .as_str()
                .is_some_and(|r| r.contains("already been used"))
    });
    let ran = lines
        .iter()
        .find(|l| l["outcome"] == "ran" && l["command"] == cmd)
        .unwrap_or_else(|| panic!("no audit line of the run: {lines:#?}"));
    assert_eq!(ran["approval"], id);
    assert_eq!(ran["approver"], "link holder");
    assert!(ran["approved_at"].as_str().unwrap().ends_with('Z'), "{ran}");
    assert_eq!(ran["command_sha256"], sha256(cmd));
    assert_eq!(ran["host_key"], d.host_fingerprint());
    // Refusals are audited with the approval they named.
    assert!(
        lines.iter().any(|l| l["outcome"] == "forbidden"
            && l["approval"] == id
            && l["reason"].as_str().unwrap().contains("already been used")),
        "{lines:#?}"
    );

    // Rejected: refused, and nothing ran.
    let rm = format!("rm -f {}", f(1));
    let rm = rm.as_str();
    let no = pending(&s, "box", rm);
    answer(&s, &no, 1);
    let (status, _, msg) = error(&ssh_run(
        &s,
        json!({"server_name": "box", "command": rm, "approval": no}),
    ));
    assert_eq!(status, 403);
    assert!(
        msg.contains("not approved") && msg.contains("Reject"),
        "{msg}"
    );
    assert!(exists(&s, &f(1)));
    // Each decision is audited when it is made, with what it was for.
    let decisions: Vec<(String, String)> = audit_once(&s, |l| {
        l["approval"] == no.as_str() && l["decision"] == "rejected"
    })
    .iter()
    .filter(|l| l["event"] == "approval")
    .map(|l| {
        (
            l["approval"].as_str().unwrap().to_owned(),
            l["decision"].as_str().unwrap().to_owned(),
        )
    })
    .collect();
    assert!(
        decisions.contains(&(id.clone(), "approved".into())),
        "{decisions:?}"
    );
    assert!(
        decisions.contains(&(no.clone(), "rejected".into())),
        "{decisions:?}"
    );
    let rejected = audit(&s)
        .into_iter()
        .find(|l| l["event"] == "approval" && l["approval"] == no)
        .unwrap();
    assert_eq!(rejected["command_sha256"], sha256(rm));
    assert_eq!(rejected["server"], "box");

    // `wait`: the call blocks until a person approves, then runs.
    let approver = {
        let hooks = hooks.clone();
        let marker = f(3);
        let base = format!("http://{}", s.addr);
        std::thread::spawn(move || {
            let v = toolgate_e2e::webhook::wait_for(&hooks, "the waiting approval", |v| {
                v["hook"].as_array().unwrap().iter().any(|e| {
                    e["body"]["question"]
                        .as_str()
                        .unwrap_or_default()
                        .contains(&marker)
                })
            });
            let id = v["hook"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| {
                    e["body"]["question"]
                        .as_str()
                        .unwrap_or_default()
                        .contains(&marker)
                })
                .unwrap()["body"]["id"]
                .as_str()
                .unwrap()
                .to_owned();
            run_tool(
                Command::new("python3").args([
                    "-c",
                    "import sys, urllib.request; urllib.request.urlopen(urllib.request.Request(sys.argv[1], data=b'{\"choice\": 0}', headers={'Content-Type': 'application/json'})).read()",
                    &format!("{base}/clarifications/{id}/answer"),
                ]),
                "approve",
            );
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
    answer(&s, &later, 0);
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
    let _ = std::fs::remove_file(&db);
    let _ = std::fs::remove_file(&other);
    let _ = std::fs::remove_file(other.with_extension("pub"));
}

#[test]
fn an_approval_expires_and_bad_or_foreign_ids_are_refused_and_rules_apply_by_tag() {
    let d = Sshd::start();
    let text = format!(
        "{}[servers.box.policy]\napprove = [\"^reboot\"]\n",
        d.server_toml("box", "")
    );
    let (s, _cfg) = serve(&text, &[("TOOLGATE_CLARIFY_EXPIRY_SECS", "2")]);
    let id = pending(&s, "box", "reboot --dry-run");
    std::thread::sleep(Duration::from_millis(2_500));
    let r = s.post_json(
        &format!("/clarifications/{id}/answer"),
        &json!({"choice": 0}),
    );
    assert_eq!(r.status, 410, "too late to approve");
    let expired = |l: &Value| {
        l["event"] == "approval" && l["approval"] == id.as_str() && l["decision"] == "expired"
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
    // An ordinary clarification is not an approval.
    let c = s.post_json(
        "/tools/clarify",
        &json!({"question": "ok?", "options": ["Approve"]}),
    );
    let cid = c.json()["id"].as_str().unwrap().to_owned();
    answer(&s, &cid, 0);
    let (status, _, msg) = error(&ssh_run(
        &s,
        json!({"server_name": "box", "command": "reboot --dry-run", "approval": cid}),
    ));
    assert_eq!(status, 403);
    assert!(msg.contains("is not an approval"), "{msg}");

    // `[ssh] approve_preset = "all"` for servers tagged `prod`: this one is
    // tagged `test`, so only its own rule applies.
    let text = format!(
        "[ssh]\napprove_preset = \"all\"\napprove_tags = [\"test\"]\n{}",
        d.server_toml("box", "")
    );
    let (s2, _cfg2) = serve(&text, &[]);
    let r = ssh_run(&s2, json!({"server_name": "box", "command": "uptime"}));
    assert_eq!(error(&r).0, 428, "every command on a tagged server");
    let text = format!(
        "[ssh]\napprove_preset = \"all\"\napprove_tags = [\"prod\"]\n{}",
        d.server_toml("box", "")
    );
    let (s3, _cfg3) = serve(&text, &[]);
    let r = ssh_run(&s3, json!({"server_name": "box", "command": "uptime"}));
    assert_eq!(r.status, 200, "untagged servers are not gated");
}

/// Cloud tools by name: a gated tool of the MCP reference server waits for
/// a person; the approval binds the account, the tool and the arguments.
#[test]
fn a_gated_cloud_tool_runs_once_with_exactly_the_approved_arguments() {
    let (_mcp, port) = toolgate_e2e::peer::everything();
    let text =
        format!("[clouds.demo]\nurl = \"http://127.0.0.1:{port}/mcp\"\napprove = [\"ech*\"]\n");
    let (s, _cfg) = serve(&text, &[]);
    let tools = s.get("/tools").json();
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
    let over_mcp = s
        .request(
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ],
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "demo__echo", "arguments": {"message": "hi"}}})
            .to_string()
            .as_bytes(),
        )
        .json();
    assert_eq!(over_mcp["result"]["isError"], true, "{over_mcp}");
    let text: Value =
        serde_json::from_str(over_mcp["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["error"]["code"], "approval_required", "{text}");
    assert_eq!(text["error"]["approval"]["status"], "pending", "{text}");

    let call = |args: Value| s.post_json("/tools/demo__echo", &args);
    let r = call(json!({"message": "hi"}));
    let (status, code, msg) = error(&r);
    assert_eq!((status, code.as_str()), (428, "approval_required"), "{msg}");
    let id = r.json()["error"]["approval"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    answer(&s, &id, 0);
    let (status, _, msg) = error(&call(json!({"message": "bye", "toolgate_approval": id})));
    assert_eq!(status, 403);
    assert!(msg.contains("another command"), "{msg}");
    // The same arguments in another order are the same call.
    let r = call(json!({"toolgate_approval": id, "message": "hi"}));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json().to_string().contains("hi"), "{}", r.json());
    let (status, _, msg) = error(&call(json!({"message": "hi", "toolgate_approval": id})));
    assert_eq!(status, 403);
    assert!(msg.contains("already been used"), "{msg}");
    let approved = |l: &Value| l["event"] == "cloud_call" && l["outcome"] == "approved";
    let lines = audit_once(&s, approved);
    let ran = lines
        .iter()
        .find(|l| approved(l))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert_eq!(ran["approval"], id);
    assert_eq!(ran["account"], "demo");
    assert_eq!(ran["arguments_sha256"], sha256(r#"{"message":"hi"}"#));
    assert_eq!(ran["endpoint"], format!("http://127.0.0.1:{port}/mcp"));
}
