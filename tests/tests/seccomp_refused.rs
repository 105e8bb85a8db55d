//! Hosts that refuse seccomp: the call still runs, `/healthz` says seccomp is
//! off, and `TOOLGATE_PYTHON_REQUIRE_SECCOMP=1` refuses to start.
//!
//! No real kernel here refuses seccomp, so the test makes one that does: the
//! server is started under a parent filter that fails the `seccomp` syscall
//! with EPERM, as a restricted container would. Filters are inherited by exec
//! and by every fork, so the zygote's probe meets the refusal for real.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::time::Duration;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};
use toolgate_e2e::launch::Launch;

fn refusing_filter() -> BpfProgram {
    let arch = if cfg!(target_arch = "aarch64") {
        TargetArch::aarch64
    } else {
        TargetArch::x86_64
    };
    let mut rules = BTreeMap::new();
    rules.insert(libc::SYS_seccomp, vec![]);
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .unwrap()
    .try_into()
    .unwrap()
}

/// `toolgate` with `args` and `env` under the refusing filter, through
/// the harness's launcher (bounded, hermetic, its group killed on drop).
fn toolgate_without_seccomp(args: &[&str], env: &[(&str, &str)]) -> Launch {
    let prog = refusing_filter();
    let mut l = Launch::toolgate(args).envs(env);
    // SAFETY: between fork and exec the closure only calls prctl and the
    // seccomp syscall through seccompiler, on a program built before fork.
    unsafe {
        l.command().pre_exec(move || {
            seccompiler::apply_filter(&prog).map_err(|e| std::io::Error::other(e.to_string()))
        });
    }
    l
}

#[test]
fn without_seccomp_calls_run_and_health_says_so() {
    let out = toolgate_without_seccomp(
        &[
            "call",
            "python.execute",
            "--json",
            r#"{"code": "result = 2 + 2"}"#,
        ],
        &[],
    )
    .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"], 4);

    let mut server = toolgate_without_seccomp(
        &["serve", "--addr", "127.0.0.1:0"],
        &[("TOOLGATE_LOG", "json")],
    )
    .spawn();
    let addr = server.listening_addr(Duration::from_secs(60));
    let h = toolgate_e2e::raw_request(&addr, "GET", "/healthz", &[], b"").json();
    drop(server);
    let walls = &h["sandbox"]["walls"];
    assert_eq!(walls["seccomp"], false, "{h}");
    assert!(
        walls["seccomp_error"].as_str().unwrap().contains("refused"),
        "{h}"
    );
    assert_eq!(walls["rlimits"], true);
}

#[test]
fn require_seccomp_refuses_to_start_where_the_kernel_refuses() {
    let out = toolgate_without_seccomp(
        &["serve", "--addr", "127.0.0.1:0"],
        &[("TOOLGATE_PYTHON_REQUIRE_SECCOMP", "1")],
    )
    .within(Duration::from_secs(30))
    .output();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("seccomp is required"), "{err}");
    // Said once: the zygote sends the kind, the server the words.
    assert_eq!(err.matches("seccomp is required").count(), 1, "{err}");
}
