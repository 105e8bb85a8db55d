//! `list_servers` and `ssh_run` end to end: `toolgate serve` against a real
//! OpenSSH sshd on loopback (its own config, host key and non-root user),
//! with the inventory from the config file or from moto's SSM.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_e2e::peer::moto;
use toolgate_e2e::sshd::Sshd;
use toolgate_e2e::{Response, Server, TempPath, temp_file};

fn serve(text: &str) -> (Server, TempPath) {
    let cfg = temp_file("toolgate-ssh", text);
    let s = Server::start_with_args(&[], &["--config", cfg.0.to_str().unwrap()]);
    (s, cfg)
}

fn run(s: &Server, args: Value) -> Response {
    s.post_json("/tools/ssh_run", &args)
}

fn run_ok(s: &Server, args: Value) -> Value {
    let r = run(s, args);
    assert_eq!(
        r.status,
        200,
        "{}\n{}",
        String::from_utf8_lossy(&r.body),
        s.logs()
    );
    r.json()
}

fn error(r: &Response) -> (String, String) {
    let v = r.json();
    (
        v["error"]["code"].as_str().unwrap_or_default().to_owned(),
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// How many SSH logins sshd accepted.
fn logins(d: &Sshd) -> usize {
    d.peer.logs().matches("Accepted publickey").count()
}

fn wait_until(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    toolgate_e2e::timing::poll(within, || done().then_some(())).is_some()
}

#[test]
fn runs_a_command_with_streams_and_exit_code_apart_and_audits_it() {
    let d = Sshd::start();
    let (s, _cfg) = serve(&d.server_toml("box", ""));

    let list = s.post_json("/tools/list_servers", &json!({}));
    assert_eq!(list.status, 200);
    assert_eq!(
        list.json(),
        json!({"servers": [{"name": "box", "address": format!("{}@127.0.0.1:{}", d.user, d.port), "tags": ["test", "loopback"]}]})
    );

    let v = run_ok(
        &s,
        json!({"server_name": "box", "command": "echo out; echo err >&2; whoami; exit 3", "intent": "check streams"}),
    );
    assert_eq!(v["stdout"], format!("out\n{}\n", d.user));
    assert_eq!(v["stderr"], "err\n");
    assert_eq!(v["exit_code"], 3);
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["truncated"], false);
    assert!(v["duration_ms"].as_u64().is_some());
    assert_ne!(d.user, "root", "the test user must not be root");

    // Shell syntax and quotes reach the login shell intact.
    let v = run_ok(
        &s,
        json!({"server_name": "box", "command": "printf '%s|' \"a b\" 'c'\"'\"'d'; echo"}),
    );
    assert_eq!(v["stdout"], "a b|c'd|\n");

    // The audit line: server, command, intent, caller, exit code, bytes,
    // duration; and never the key.
    let is_audit = |l: &Value| l["target"] == "toolgate::audit";
    let lines = s.json_logs_when(Duration::from_secs(5), |ls| {
        ls.iter().filter(|l| is_audit(l)).count() >= 2
    });
    let logs = s.logs();
    let audit: Vec<&Value> = lines.iter().filter(|l| is_audit(l)).collect();
    assert_eq!(audit.len(), 2, "{logs}");
    let a = &audit[0];
    assert_eq!(a["server"], "box");
    assert_eq!(a["command"], "echo out; echo err >&2; whoami; exit 3");
    assert_eq!(a["intent"], "check streams");
    assert_eq!(a["caller"], "-");
    assert_eq!(a["exit_code"], 3);
    assert_eq!(a["timed_out"], false);
    assert_eq!(a["connection"], "new");
    assert_eq!(audit[1]["connection"], "reused");
    assert!(a["bytes_out"].as_u64().unwrap() >= 8);
    assert!(a["duration_ms"].as_u64().is_some());
    assert!(!logs.contains("PRIVATE KEY"), "a key reached the log");
    assert_eq!(logins(&d), 1, "the second call reused the connection");
}

#[test]
fn a_wrong_host_key_is_refused_before_authentication() {
    let d = Sshd::start();
    let other = Sshd::start();
    // Pinned to another server's key.
    let text = d
        .server_toml("box", "")
        .replace(&d.host_key_line(), &other.host_key_line());
    let (s, _cfg) = serve(&text);
    let r = run(
        &s,
        json!({"server_name": "box", "command": "touch /tmp/should-not-exist"}),
    );
    assert_eq!(r.status, 502);
    let (code, msg) = error(&r);
    assert_eq!(code, "upstream_unavailable");
    assert!(msg.contains("\"box\""), "{msg}");
    assert!(
        msg.contains(&d.host_fingerprint()),
        "names the key seen: {msg}"
    );
    assert!(
        msg.contains(&other.host_fingerprint()),
        "names the pin: {msg}"
    );
    assert_eq!(
        logins(&d),
        0,
        "no authentication happened:\n{}",
        d.peer.logs()
    );
    drop(s);

    // A SHA256: fingerprint pins as well as the key line.
    let text = d
        .server_toml("box", "")
        .replace(&d.host_key_line(), &d.host_fingerprint());
    let (s, _cfg) = serve(&text);
    assert_eq!(
        run_ok(&s, json!({"server_name": "box", "command": "echo ok"}))["stdout"],
        "ok\n"
    );
}

#[test]
fn unknown_servers_scopes_and_policy_are_refused_before_connecting() {
    let d = Sshd::start();
    let text = format!(
        "{}{}",
        d.server_toml("box", ""),
        d.server_toml(
            "ro",
            "[servers.ro.policy]\npreset = \"readonly\"\ndeny = [\"/etc/shadow\"]\n"
        )
    );
    let (s, _cfg) = serve(&text);

    let r = run(&s, json!({"server_name": "nope", "command": "ls"}));
    assert_eq!(r.status, 400);
    let (code, msg) = error(&r);
    assert_eq!(code, "invalid_input");
    assert!(msg.contains("nope") && msg.contains("box, ro"), "{msg}");

    // The scope header narrows; out of scope is forbidden, even for a
    // name that does not exist (a scope reveals nothing else).
    let scoped = |body: Value, scope: &str| {
        s.request(
            "POST",
            "/tools/ssh_run",
            &[
                ("Content-Type", "application/json"),
                ("X-Toolgate-Servers", scope),
            ],
            body.to_string().as_bytes(),
        )
    };
    for name in ["box", "nope"] {
        let r = scoped(json!({"server_name": name, "command": "id"}), "ro");
        assert_eq!(r.status, 403, "{name}");
        let (code, msg) = error(&r);
        assert_eq!(code, "forbidden");
        assert!(msg.contains("scope"), "{msg}");
    }
    let r = s.request(
        "POST",
        "/tools/list_servers",
        &[("X-Toolgate-Servers", "ro")],
        b"",
    );
    let names: Vec<String> = r.json()["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["ro"]);
    let r = s.request(
        "POST",
        "/tools/list_servers",
        &[("X-Toolgate-Servers", "elsewhere")],
        b"",
    );
    assert_eq!(r.json()["servers"], json!([]));
    assert!(r.json()["message"].as_str().unwrap().contains("scope"));

    // Policy: the rule that matched is named. The readonly preset passes
    // only commands known to be read-only, so the ways a shell spells a
    // write (issue #50's red team) are refused too, with the reason.
    for (cmd, says) in [
        ("rm -rf /tmp/x", "readonly preset"),
        ("cat /etc/shadow", "deny rule `/etc/shadow`"),
        ("echo hi > /tmp/f", "redirection"),
        ("env touch /tmp/x", "`env` is not on the read-only list"),
        ("'touch' /tmp/x", "a quote (')"),
        ("\\touch /tmp/x", "a backslash"),
        (
            "python3 -c 'import os'",
            "`python3` is not on the read-only list",
        ),
        ("A=1 touch /tmp/x", "`A=1` is an assignment"),
        ("uptime\ntouch /tmp/x", "a line break"),
        ("systemctl --now status x", "`systemctl --now`"),
    ] {
        let r = run(&s, json!({"server_name": "ro", "command": cmd}));
        assert_eq!(r.status, 403, "{cmd}");
        let (code, msg) = error(&r);
        assert_eq!(code, "forbidden");
        assert!(msg.contains(says) && msg.contains("\"ro\""), "{cmd}: {msg}");
    }
    // Every refusal above happened before any connection.
    assert_eq!(logins(&d), 0, "{}", d.peer.logs());
    assert_eq!(
        run_ok(&s, json!({"server_name": "ro", "command": "uptime"}))["exit_code"],
        0
    );
    // A list of read-only commands runs as one.
    let v = run_ok(
        &s,
        json!({"server_name": "ro", "command": "uptime; df -h / | tail -n 1 && echo read-only"}),
    );
    assert!(
        v["stdout"].as_str().unwrap().ends_with("read-only\n"),
        "{v}"
    );

    // Refusals are audited too.
    let logs = s.logs();
    assert!(logs.contains("\"outcome\":\"forbidden\""), "{logs}");

    // Hostile input: a clear 400, never a 500.
    for bad in [
        json!({"server_name": "box"}),
        json!({"server_name": "box", "command": ""}),
        json!({"server_name": ["box"], "command": "ls"}),
        json!({"server_name": "box", "command": "ls", "timeout": -1}),
        json!({"server_name": "box", "command": "ls", "timeout": "soon"}),
        json!("ls"),
    ] {
        let r = run(&s, bad.clone());
        assert_eq!(r.status, 400, "{bad}");
        assert_eq!(error(&r).0, "invalid_input");
    }
}

#[test]
fn a_timeout_kills_the_remote_command_and_its_children() {
    let d = Sshd::start();
    let (s, _cfg) = serve(&d.server_toml("box", "[ssh]\nmax_timeout = 30\n"));
    let started = Instant::now();
    let v = run_ok(
        &s,
        json!({"server_name": "box", "command": "echo started; (sleep 3107 &); sleep 3108", "timeout": 2}),
    );
    let took = started.elapsed();
    assert_eq!(v["timed_out"], true, "{v}");
    assert_eq!(v["exit_code"], -1);
    assert_eq!(v["stdout"], "started\n", "partial output is kept");
    assert!(
        v["stderr"]
            .as_str()
            .unwrap()
            .contains("timed out after 2 s"),
        "{v}"
    );
    assert!(took < Duration::from_secs(6), "took {took:?}");
    for marker in ["sleep 3107", "sleep 3108"] {
        assert!(
            wait_until(Duration::from_secs(4), || d
                .remote_processes(marker)
                .is_empty()),
            "{marker} still runs on the server: {:?}",
            d.remote_processes(marker)
        );
    }

    // A timeout above the configured maximum is lowered, and says so.
    let v = run_ok(
        &s,
        json!({"server_name": "box", "command": "echo hi", "timeout": 100}),
    );
    assert_eq!(v["stdout"], "hi\n");
    assert!(
        v["stderr"]
            .as_str()
            .unwrap()
            .contains("[timeout lowered to 30s by configuration]"),
        "{v}"
    );
}

#[test]
fn an_output_flood_is_truncated_stopped_and_bounded() {
    let d = Sshd::start();
    let (s, _cfg) = serve(&d.server_toml("box", "[ssh]\nmax_output_bytes = 1048576\n"));
    let rss_before = toolgate_e2e::rss_kib(s.pid()).unwrap();

    // 10 MB in one burst: head and tail kept, the rest counted.
    let v = run_ok(
        &s,
        json!({"server_name": "box", "command": "head -c 10000000 /dev/zero | tr '\\0' a; echo END", "timeout": 60}),
    );
    let out = v["stdout"].as_str().unwrap();
    assert!(out.chars().count() <= 51_200, "{}", out.len());
    assert!(out.starts_with("aaaa"));
    assert!(out.contains("[truncated \u{2014} "), "the marker is there");
    assert_eq!(v["truncated"], true);
    assert_eq!(v["timed_out"], false);
    assert!(
        v["stderr"]
            .as_str()
            .unwrap()
            .contains("output passed 1048576 bytes"),
        "{v}"
    );

    // An endless flood is stopped at the cap, not at the timeout.
    let started = Instant::now();
    let v = run_ok(
        &s,
        json!({"server_name": "box", "command": "yes flood", "timeout": 60}),
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(v["truncated"], true);
    assert!(
        wait_until(Duration::from_secs(5), || d
            .remote_processes("yes flood")
            .is_empty()),
        "the flooding command still runs"
    );
    let rss_after = toolgate_e2e::rss_kib(s.pid()).unwrap();
    assert!(
        rss_after < rss_before + 64 * 1024,
        "memory grew from {rss_before} KiB to {rss_after} KiB"
    );
    // The connection is still good for the next call.
    assert_eq!(
        run_ok(&s, json!({"server_name": "box", "command": "echo next"}))["stdout"],
        "next\n"
    );
}

#[test]
fn fifty_parallel_calls_share_one_connection() {
    let d = Sshd::start();
    let (s, _cfg) = serve(&d.server_toml("box", ""));
    let s = std::sync::Arc::new(s);
    let threads: Vec<_> = (0..50)
        .map(|i| {
            let s = s.clone();
            std::thread::spawn(move || {
                let r = run(
                    &s,
                    json!({"server_name": "box", "command": format!("sleep 0.2; echo {i}")}),
                );
                (i, r.status, r.json())
            })
        })
        .collect();
    for t in threads {
        let (i, status, v) = t.join().unwrap();
        assert_eq!(status, 200, "call {i}: {v}");
        assert_eq!(v["stdout"], format!("{i}\n"), "call {i}: {v}");
        assert_eq!(v["exit_code"], 0);
    }
    assert_eq!(logins(&d), 1, "{}", d.peer.logs());
}

#[test]
fn a_dropped_connection_is_reestablished() {
    let d = Sshd::start();
    let (s, _cfg) = serve(&d.server_toml("box", ""));
    assert_eq!(
        run_ok(&s, json!({"server_name": "box", "command": "echo one"}))["stdout"],
        "one\n"
    );
    let conns = d.connection_pids();
    assert!(!conns.is_empty());
    for pid in conns {
        // SAFETY: signalling a process of the sshd this test started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    assert!(wait_until(Duration::from_secs(5), || d
        .connection_pids()
        .is_empty()));
    assert_eq!(
        run_ok(&s, json!({"server_name": "box", "command": "echo two"}))["stdout"],
        "two\n"
    );
    assert_eq!(logins(&d), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_inventory_comes_from_ssm_through_the_sdk() {
    let d = Sshd::start();
    let (mut moto, endpoint) = moto();
    let ssm = toolgate_e2e::peer::moto_ssm(&endpoint).await;
    let key = std::fs::read_to_string(d.client_key_path()).unwrap();
    let doc = json!({
        "host": "127.0.0.1", "port": d.port, "username": d.user,
        "tags": ["ssm"], "host_key": d.host_fingerprint(),
        "policy": {"deny": ["^reboot"]}
    });
    use aws_sdk_ssm::types::ParameterType::{SecureString, String as Plain};
    for (name, value, kind) in [
        ("/toolgate/servers/box", doc.to_string(), Plain),
        ("/toolgate/servers/box/private-key", key, SecureString),
        ("/toolgate/servers/broken", "{not json".to_owned(), Plain),
        ("/toolgate/servers/keyless", doc.to_string(), Plain),
    ] {
        ssm.put_parameter()
            .name(name)
            .value(value)
            .r#type(kind)
            .send()
            .await
            .expect("put_parameter");
    }
    let endpoint2 = endpoint.clone();
    let s = tokio::task::spawn_blocking(move || {
        Server::start(&[
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL", &endpoint2),
            ("TOOLGATE_SSH_SSM_PREFIX", "/toolgate/servers"),
            ("TOOLGATE_SSH_TTL_SECS", "1"),
        ])
    })
    .await
    .unwrap();
    let list = s.post_json("/tools/list_servers", &json!({}));
    assert_eq!(list.status, 200);
    let servers = list.json()["servers"].clone();
    assert_eq!(
        servers.as_array().unwrap().len(),
        1,
        "{servers}\n{}",
        s.logs()
    );
    assert_eq!(servers[0]["name"], "box");
    assert_eq!(servers[0]["tags"], json!(["ssm"]));
    let v = run_ok(
        &s,
        json!({"server_name": "box", "command": "echo from-ssm"}),
    );
    assert_eq!(v["stdout"], "from-ssm\n");
    let r = run(&s, json!({"server_name": "box", "command": "reboot"}));
    assert_eq!(r.status, 403);
    let logs = s.logs();
    assert!(
        logs.contains("broken") && logs.contains("not a valid server document"),
        "{logs}"
    );
    assert!(logs.contains("keyless/private-key is missing"), "{logs}");
    assert!(!logs.contains("PRIVATE KEY"), "a key reached the log");

    // SSM goes away: once the 1 s TTL has passed, a refresh fails, and the
    // last good listing (and its key) still serves, with the failure logged.
    moto.kill();
    tokio::task::spawn_blocking(move || {
        toolgate_e2e::timing::poll_until(
            Duration::from_secs(30),
            "a failed refresh logged",
            || {
                let list = s.post_json("/tools/list_servers", &json!({}));
                assert_eq!(list.status, 200, "{}", String::from_utf8_lossy(&list.body));
                assert_eq!(list.json()["servers"][0]["name"], "box", "{}", list.json());
                s.logs()
                    .contains("server inventory refresh failed; serving the last listing")
                    .then_some(())
            },
        );
        let v = run_ok(&s, json!({"server_name": "box", "command": "echo still"}));
        assert_eq!(v["stdout"], "still\n");
    })
    .await
    .unwrap();
}

#[test]
fn the_remote_timeout_holds_when_toolgate_dies_mid_command() {
    let d = Sshd::start();
    let (s, _cfg) = serve(&d.server_toml("box", ""));
    let addr_pid = s.pid();
    let s = std::sync::Arc::new(s);
    let caller = {
        let s = s.clone();
        std::thread::spawn(move || {
            let _ = run(
                &s,
                json!({"server_name": "box", "command": "sleep 3109", "timeout": 2}),
            );
        })
    };
    assert!(
        wait_until(Duration::from_secs(10), || !d
            .remote_processes("sleep 3109")
            .is_empty()),
        "the command never started"
    );
    // SAFETY: killing the toolgate server this test started.
    unsafe { libc::kill(addr_pid as i32, libc::SIGKILL) };
    let _ = caller.join(); // its request dies with the server
    // No client is left to stop it: the remote `timeout` must.
    assert!(
        wait_until(Duration::from_secs(6), || d
            .remote_processes("sleep 3109")
            .is_empty()),
        "the command outlived its timeout on the server: {:?}",
        d.remote_processes("sleep 3109")
    );
}

/// A key the server refuses, a port nobody listens on, and a listener that
/// never speaks SSH: each is a 502 `upstream_unavailable` naming the server
/// and the cause, none waits past the connect timeout, and a good server
/// beside them keeps working.
#[test]
fn a_refused_key_a_closed_port_and_a_silent_host_are_clear_errors() {
    const CONNECT_TIMEOUT_S: u64 = 2;
    let d = Sshd::start();
    let other = Sshd::start();
    let port_line = format!("port = {}", d.port);
    // Bound, then dropped: nothing listens there now.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    // Bound and never accepted: the kernel completes the TCP handshake, and
    // no SSH banner ever comes.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let text = [
        d.server_toml("good", ""),
        d.server_toml("refused", "").replace(
            &d.client_key_path().display().to_string(),
            &other.client_key_path().display().to_string(),
        ),
        d.server_toml("closed", "")
            .replace(&port_line, &format!("port = {closed_port}")),
        d.server_toml("silent", "")
            .replace(&port_line, &format!("port = {silent_port}")),
        format!("[ssh]\nconnect_timeout = {CONNECT_TIMEOUT_S}\n"),
    ]
    .concat();
    let (s, _cfg) = serve(&text);
    for (name, cause) in [
        ("refused", "refused key authentication"),
        ("closed", "cannot connect"),
        ("silent", "did not complete the SSH handshake within 2 s"),
    ] {
        let started = Instant::now();
        let r = run(&s, json!({"server_name": name, "command": "echo hi"}));
        let took = started.elapsed();
        assert_eq!(
            r.status,
            502,
            "{name}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let (code, msg) = error(&r);
        assert_eq!(code, "upstream_unavailable", "{name}");
        assert!(msg.contains(&format!("{name:?}")), "{name}: {msg}");
        assert!(msg.contains(cause), "{name}: {msg}");
        assert!(
            took < toolgate_e2e::timing::stop_bound(CONNECT_TIMEOUT_S),
            "{name}: answered after {took:?}"
        );
        assert_eq!(
            run_ok(&s, json!({"server_name": "good", "command": "echo ok"}))["stdout"],
            "ok\n",
            "after {name}"
        );
    }
    drop(silent);
}

/// `list_servers` takes no input, and an input that is not an object is the
/// contract's `invalid_input`; `{}` and an empty body are no input.
#[test]
fn list_servers_refuses_input_that_is_not_an_object() {
    let d = Sshd::start();
    let (s, _cfg) = serve(&d.server_toml("box", ""));
    for body in [
        json!([1]),
        json!("box"),
        json!(42),
        json!(true),
        json!(null),
    ] {
        let r = s.post_json("/tools/list_servers", &body);
        assert_eq!(r.status, 400, "{body}");
        assert_eq!(
            error(&r),
            (
                "invalid_input".to_owned(),
                "Tool input must be a JSON object (dict)".to_owned()
            ),
            "{body}"
        );
    }
    for body in [&b"{}"[..], b""] {
        let r = s.request(
            "POST",
            "/tools/list_servers",
            &[("Content-Type", "application/json")],
            body,
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(body));
        assert_eq!(r.json()["servers"][0]["name"], "box");
    }
}

#[test]
fn a_callers_words_cannot_forge_an_audit_line_in_the_text_log() {
    let d = Sshd::start();
    let cfg = temp_file("toolgate-ssh", &d.server_toml("box", ""));
    // TOOLGATE_LOG unset: the default text log an operator reads.
    let s = Server::start_with_args(
        &[("TOOLGATE_LOG", "text")],
        &["--config", cfg.0.to_str().unwrap()],
    );
    let forged = "\nFORGED toolgate::audit: audit event=\"ssh_run\" server=\"box\" outcome=\"ran\"\r\u{1b}]0;owned\u{7}\u{202e}";
    run_ok(
        &s,
        json!({"server_name": "box", "command": format!("true # cmd-1{forged}"), "intent": format!("intent-1{forged}")}),
    );
    let r = run(
        &s,
        json!({"server_name": "box-2\nFORGED toolgate::audit\u{1b}]0;x\u{7}", "command": format!("true{forged}"), "intent": "x"}),
    );
    assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
    let logs = toolgate_e2e::timing::poll(Duration::from_secs(5), || {
        let l = s.logs();
        (l.contains("cmd-1") && l.contains("box-2")).then_some(l)
    })
    .unwrap_or_else(|| s.logs());
    assert!(logs.contains("cmd-1") && logs.contains("box-2"), "{logs}");
    // The test reads the log line by line: let the rest of a (forged)
    // line arrive.
    std::thread::sleep(Duration::from_secs(1));
    let logs = s.logs();
    for line in logs.lines() {
        assert!(!line.starts_with("FORGED"), "a forged line: {line}");
        assert!(line.len() < 8 << 10, "a {}-byte line", line.len());
        for bad in ["\u{1b}]", "\r", "\u{7}", "\u{202e}"] {
            assert!(!line.contains(bad), "{bad:?} reached the log: {line:?}");
        }
    }
}
