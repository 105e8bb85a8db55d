//! The `toolgate` command line as an operator meets it: no panic when the
//! reader of its output goes away, `init` writing a file that `check`
//! reads back, `check` against a real sshd (a good pin, a wrong one, a
//! server that is down), and the warnings start-up gives for values the
//! contract clamps and for misspelt variables.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::launch::{Launch, TempDir};
use toolgate_e2e::sshd::Sshd;
use toolgate_e2e::temp_file;

/// Runs `toolgate args` with its stdout a pipe whose reader is already
/// gone (as under `| head -c1` once head has its byte): its exit code and
/// stderr. Python closes the read end before it starts the child.
fn with_stdout_closed(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    const RUN: &str = "import json, os, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
print(json.dumps([p.returncode, p.stderr.decode(errors='replace')]))";
    let out = Launch::new("python3")
        .args(["-c", RUN])
        .arg(toolgate_e2e::toolgate_bin())
        .args(args)
        .envs(env)
        .within(Duration::from_secs(60))
        .output();
    let said: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (
        said[0].as_i64().unwrap() as i32,
        said[1].as_str().unwrap().to_owned(),
    )
}

#[test]
fn no_command_panics_when_its_reader_goes_away() {
    let call = r#"{"code": "print('x' * 100000)"}"#;
    let commands: &[&[&str]] = &[
        &["--help"],
        &["--version"],
        &["help", "call"],
        &["serve", "--help"],
        &["tools"],
        &["tools", "--format", "openai"],
        &["init", "-"],
        &["check"],
        &["check", "--json"],
        &["call", "python.execute", "--json", call],
        &["approvals", "list"],
        &["clarifications", "list"],
    ];
    let mut failures = Vec::new();
    for args in commands {
        let (code, stderr) = with_stdout_closed(args, &[]);
        if code != 0 || stderr.contains("panicked") {
            failures.push(format!("{args:?}: exit {code}\n{stderr}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn help_lists_values_variables_and_examples() {
    let out = Launch::toolgate(&["--help"]).output();
    let top = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "toolgate init",
        "toolgate check",
        "TOOLGATE_DATA_DIR",
        "TOOLGATE_TOKEN",
    ] {
        assert!(top.contains(needle), "--help lacks {needle}:\n{top}");
    }
    for (cmd, needle) in [
        ("call", "toolgate call python.execute --json"),
        ("tools", "[possible values: native, openai, anthropic, mcp]"),
        ("serve", "TOOLGATE_ADDR"),
        ("init", "--force"),
        ("check", "Exit status"),
    ] {
        let out = Launch::toolgate(&["help", cmd]).output();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "help {cmd}: {out:?}");
        assert!(
            text.contains(needle),
            "help {cmd} lacks {needle:?}:\n{text}"
        );
    }
}

#[test]
fn init_writes_a_private_file_that_check_reads_back() {
    let dir = TempDir::new("toolgate-init");
    let file = dir.path().join("toolgate.toml");
    let path = file.to_str().unwrap();
    let out = Launch::toolgate(&["init", path]).output();
    assert!(out.status.success(), "{out:?}");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "tokens may go in it");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with("# toolgate.toml: written by `toolgate init`"));

    // Never over a file, unless told.
    std::fs::write(&file, "# mine\n").unwrap();
    let out = Launch::toolgate(&["init", path]).output();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        format!("toolgate: {path} already exists: left as it is (--force replaces it)")
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# mine\n");
    let out = Launch::toolgate(&["init", "--force", path]).output();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), written);

    let out = Launch::toolgate(&["--config", path, "check"]).output();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        format!("ok    config: {path} and the TOOLGATE_* variables"),
        "ok    python.execute: ran a script in ".to_owned(),
        "ok    clarify: its store answers; answer links start http://127.0.0.1:8080".to_owned(),
        "ok    clarify notifications: none".to_owned(),
        "ok    data folder: ".to_owned(),
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(&line)),
            "no {line:?} in:\n{text}"
        );
    }
    assert!(text.ends_with(" 0 failed\n"), "{text}");
}

/// One sshd, pinned right; the same sshd pinned to another's key; and a
/// port nothing listens on: `check` connects to each and says which fail,
/// and why, with exit code 1.
#[test]
fn check_connects_to_each_ssh_server_and_names_those_that_fail() {
    let d = Sshd::start();
    let other = Sshd::start();
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let text = format!(
        "{}{}{}[ssh]\nconnect_timeout = 5\n",
        d.server_toml("good", ""),
        d.server_toml("wrongpin", "")
            .replace(&d.host_key_line(), &other.host_key_line()),
        d.server_toml("down", "")
            .replace(&format!("port = {}", d.port), &format!("port = {down}")),
    );
    let cfg = temp_file("toolgate-check-ssh", &text);
    let out = Launch::toolgate(&["--config", cfg.0.to_str().unwrap(), "check", "--json"]).output();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false);
    let of = |what: &str| finding(&report, what);
    let good = of("ssh good");
    assert_eq!(good["status"], "ok", "{good}");
    assert!(
        good["detail"]
            .as_str()
            .unwrap()
            .contains(&d.host_fingerprint()),
        "{good}"
    );
    let wrong = of("ssh wrongpin");
    assert_eq!(wrong["status"], "fail", "{wrong}");
    assert!(
        wrong["detail"]
            .as_str()
            .unwrap()
            .contains(&d.host_fingerprint()),
        "names the key it saw: {wrong}"
    );
    let down = of("ssh down");
    assert_eq!(down["status"], "fail", "{down}");
    assert_eq!(of("python.execute")["status"], "ok");
}

/// A value the contract clamps, one it replaces by the default, and a
/// misspelt variable are each named once at start-up, with what is used.
#[test]
fn start_up_warns_of_clamped_values_and_unknown_variables() {
    let cfg = temp_file("toolgate-clamped", "[python]\ntimeout = 99999\n");
    let out = Launch::toolgate(&["--config", cfg.0.to_str().unwrap(), "tools"])
        .env("TOOLGATE_PYTHN_MEMORY_MB", "512")
        .output();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for said in [
        "python.timeout = 99999 is outside 1–1200 seconds: using 1200",
        "TOOLGATE_PYTHN_MEMORY_MB is set but no setting has that name: did you mean TOOLGATE_PYTHON_MEMORY_MB?",
    ] {
        assert_eq!(
            stderr.matches(said).count(),
            1,
            "{said:?} once in:\n{stderr}"
        );
    }
    let out = Launch::toolgate(&["tools"])
        .env("TOOLGATE_PYTHON_TIMEOUT", "abc")
        .output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "TOOLGATE_PYTHON_TIMEOUT=\"abc\" is not a whole number of seconds: using the default, 20"
        ),
        "{stderr}"
    );
    // Written to a pipe, the log has no colour codes.
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}

/// `toolgate check` reaches each notification channel's endpoint (a
/// connection, no message) and names it by scheme, host and port only.
#[test]
fn check_reaches_notification_channels_without_sending() {
    let (_receiver, base) = toolgate_e2e::webhook::receiver("a-webhook-secret-of-32-characters");
    let closed_port = toolgate_e2e::peer::ClosedPort::bind();
    let closed = closed_port.port;
    let text = format!(
        "[[clarify.notify]]\nkind = \"webhook\"\nname = \"up\"\nurl = \"{base}/hook\"\n\
         secret = \"a-webhook-secret-of-32-characters\"\n\n\
         [[clarify.notify]]\nkind = \"webhook\"\nname = \"down\"\n\
         url = \"http://127.0.0.1:{closed}/hook\"\nsecret = \"a-webhook-secret-of-32-characters\"\n\n\
         [[clarify.notify]]\nkind = \"slack\"\nname = \"team\"\n\
         url = \"{base}/slack/T000/B000/credential-in-path\"\n"
    );
    let cfg = temp_file("toolgate-check-notify", &text);
    let out = Launch::toolgate(&["--config", cfg.0.to_str().unwrap(), "check", "--json"]).output();
    assert_eq!(out.status.code(), Some(1), "one channel is down: {out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let of = |what: &str| finding(&report, what);
    let port = base.rsplit(':').next().unwrap();
    assert_eq!(
        of("notify up"),
        json!({"what": "notify up", "status": "ok", "detail": format!("http://127.0.0.1:{port} takes a connection (no message sent)")})
    );
    let down = of("notify down");
    assert_eq!(down["status"], "fail", "{down}");
    assert!(
        down["detail"]
            .as_str()
            .unwrap()
            .starts_with(&format!("http://127.0.0.1:{closed}: cannot connect")),
        "{down}"
    );
    assert_eq!(of("notify team")["status"], "ok");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("credential-in-path"));
    let seen = toolgate_e2e::webhook::seen(&base);
    assert_eq!(seen["hook"], json!([]), "nothing was sent: {seen}");
    assert_eq!(seen["slack"], json!([]), "nothing was sent: {seen}");
}

/// The finding of `toolgate check --json`'s `report` about `what`.
fn finding(report: &Value, what: &str) -> Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["what"] == what)
        .unwrap_or_else(|| panic!("no {what} in {report}"))
        .clone()
}

/// `scripts/release local` packs the binary under its version with its
/// checksum, and refuses a binary of another version. It packs the test
/// run's build (`TOOLGATE_RELEASE_BINARY`): an optimised RustPython takes
/// minutes to build.
#[test]
fn release_packs_the_versioned_binary_with_its_checksum() {
    let out_dir = TempDir::new("toolgate-release");
    let release = |binary: &std::path::Path| {
        Launch::new("bash")
            .arg(toolgate_e2e::workspace().join("scripts/release"))
            .arg("local")
            .env("TOOLGATE_RELEASE_DIR", out_dir.path())
            .env("TOOLGATE_RELEASE_BINARY", binary)
            .output()
    };
    // A binary that is not this version is not packed as it.
    let other = out_dir.path().join("other");
    std::fs::write(&other, "#!/bin/sh\necho toolgate 9.9.9\n").unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o755)).unwrap();
    let refused = release(&other);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("toolgate 9.9.9"));
    let out = release(&toolgate_e2e::toolgate_bin());
    assert!(out.status.success(), "{out:?}");
    let manifest =
        std::fs::read_to_string(toolgate_e2e::workspace().join("functions/local/Cargo.toml"))
            .unwrap();
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("toolgate's version");
    let dir = out_dir.path().join(format!("toolgate-{version}"));
    let arch = std::env::consts::ARCH;
    let binary = dir.join(format!("toolgate-{version}-linux-{arch}"));
    let said = Launch::new(&binary).arg("--version").output();
    assert_eq!(
        String::from_utf8_lossy(&said.stdout).trim(),
        format!("toolgate {version}")
    );
    let mut check = std::process::Command::new("sha256sum");
    check.args(["-c", "SHA256SUMS"]).current_dir(&dir);
    let checked = Launch::from_command(check).output();
    assert!(checked.status.success(), "{checked:?}");
    assert_eq!(
        String::from_utf8_lossy(&checked.stdout).trim(),
        format!("toolgate-{version}-linux-{arch}: OK")
    );
}
