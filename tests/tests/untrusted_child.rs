//! The server never trusts a sandbox child: whatever a child sends back, the
//! call answers as the script's failure (exit code 1, a clear stderr, what
//! the script printed kept), never as a failure of the sandbox. The children
//! here are `toolgate-hostile-zygote`'s, which speak the real protocol and
//! lie on purpose (see that binary for why it is a stand-in).

use std::path::PathBuf;
use std::time::Duration;

use toolgate_python::sandbox::{Sandbox, SandboxConfig, ZygoteConfig};

const PRINTED: &str = "printed before the lie\n";

fn hostile_sandbox() -> Sandbox {
    Sandbox::start(SandboxConfig {
        exe: PathBuf::from(env!("CARGO_BIN_EXE_toolgate-hostile-zygote")),
        zygote: ZygoteConfig {
            allowed: vec![],
            memory_mb: 64,
            require_seccomp: false,
            files_cap: 1 << 20,
            state_cap: 1 << 20,
            frozen_between_calls: false,
        },
        spare_children: 1,
        max_concurrency: 2,
        max_per_caller: 2,
        recycle: toolgate_python::sandbox::Recycle::NEVER,
    })
    .expect("start the hostile zygote")
}

/// The call failed as the script's own failure, saying `reason`, with what
/// it printed kept and nothing of the lie (result, files, state) taken.
fn refused(out: &toolgate_shared::outcome::ExecOutput, reason: &str) -> bool {
    out.exit_code == 1
        && !out.timed_out
        && out.result.is_none()
        && out.files.is_none()
        && out.state.is_none()
        && out.stdout == PRINTED
        && out.stderr.contains("invalid report")
        && out.stderr.contains(reason)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lie_is_the_scripts_failure_with_its_output_kept() {
    let sandbox = hostile_sandbox();
    let cases: &[(&str, &str)] = &[
        ("garbage", "not a report"),
        ("not_utf8", "not a report"),
        ("unknown_kind", "not a report"),
        ("cut_body", "cut short"),
        ("cut_header", "cut short"),
        ("oversized", "over the limit"),
        ("big_int_result", "beyond 64 bits"),
        ("deep_result", "nested deeper"),
        ("surrogate_result", "surrogate"),
        ("invalid_result", "not valid JSON"),
    ];
    let mut failures = Vec::new();
    for (lie, reason) in cases {
        let out = sandbox
            .execute(lie, Duration::from_secs(5))
            .await
            .unwrap_or_else(|e| panic!("{lie}: a lying child failed the sandbox itself: {e}"));
        if !refused(&out, reason) {
            failures.push(format!("{lie}: {out:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_message_is_cut_and_a_silent_death_is_reported() {
    let sandbox = hostile_sandbox();
    let out = sandbox
        .execute("long_crash", Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(out.exit_code, 1);
    assert_eq!(out.stdout, PRINTED);
    assert!(
        out.stderr
            .starts_with("InternalError: the interpreter failed: mmm"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.chars().count() < 2_100,
        "the child's 200,000 characters are cut"
    );

    let out = sandbox
        .execute("silent", Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(out.exit_code, 1);
    assert_eq!(out.stdout, PRINTED);
    assert!(out.stderr.contains("without a report"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_lies_a_truthful_child_is_believed() {
    let sandbox = hostile_sandbox();
    for lie in ["garbage", "oversized", "cut_body"] {
        sandbox.execute(lie, Duration::from_secs(5)).await.unwrap();
    }
    let out = sandbox
        .execute("truthful", Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(
        (out.exit_code, out.result),
        (0, Some(serde_json::json!(42)))
    );
    assert_eq!(out.stdout, PRINTED);
    assert_eq!(out.stderr, "");
}

/// What a lying child claims to have written or saved is never taken: no
/// file of its report comes back, no state reaches the session, and the
/// answer says why, for files outside the folder, not base64 or over the
/// cap, and a state over the cap, cut short, or sent outside a session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lies_about_files_and_state_are_refused() {
    let sandbox = hostile_sandbox();
    let files = toolgate_shared::files::Files::new();
    let cases: &[(&str, bool, &str)] = &[
        ("file_outside", false, "its files: "),
        ("file_absolute", false, "its files: "),
        ("file_not_base64", false, "is not base64"),
        ("file_over_cap", false, "its files: "),
        ("state_over_cap", true, "its session state: a report"),
        ("state_cut", true, "its session state: a report"),
        (
            "state_outside_session",
            false,
            "a session state for a call outside a session",
        ),
        (
            "state_empty_outside_session",
            false,
            "a session state for a call outside a session",
        ),
    ];
    let mut failures = Vec::new();
    for (lie, in_session, reason) in cases {
        let session = in_session.then_some(&b""[..]);
        let out = sandbox
            .execute_for("anonymous", lie, &files, session, Duration::from_secs(5))
            .await
            .unwrap_or_else(|e| panic!("{lie}: a lying child failed the sandbox itself: {e}"));
        if !refused(&out, reason) {
            failures.push(format!("{lie}: {out:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The same child, honest, with a session: its state is taken.
    let out = sandbox
        .execute_for(
            "anonymous",
            "truthful",
            &files,
            Some(b""),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(
        (out.exit_code, out.result),
        (0, Some(serde_json::json!(42)))
    );
}

/// The walls' probe reads what the children do, not what they were meant
/// to do: children that answer every script at once with the same result
/// (42) keep no state between calls and run one call each, but an
/// interpreter's state cannot be seen to be fresh (the probe's `result = 1`
/// came back 42), and nothing was stopped or killed at a deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_walls_probe_reads_false_where_children_break_them() {
    let sandbox = hostile_sandbox();
    let walls = sandbox
        .probed_walls(Duration::from_secs(20))
        .await
        .expect("the zygote's walls");
    assert_eq!(walls.probe_error, None, "{walls:?}");
    assert_eq!(
        (
            walls.process_per_call,
            walls.instance_per_call,
            walls.stop_at_deadline,
            walls.kill_at_deadline
        ),
        (true, false, false, false),
        "{walls:?}"
    );
}

/// A child killed from outside after it took the script (a spare killed
/// while it waited can be taken in the moment its last thread still
/// exits) is not the script's timeout: the call runs it in another child
/// at once. Killed every time, the answer says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_killed_from_outside_is_tried_again_not_timed_out() {
    let sandbox = hostile_sandbox();
    let started = std::time::Instant::now();
    let out = sandbox
        .execute("killed_once", Duration::from_secs(20))
        .await
        .expect("answered");
    assert_eq!(
        (out.timed_out, out.result.clone()),
        (false, Some(serde_json::json!(42))),
        "{out:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let out = sandbox
        .execute("killed_always", Duration::from_secs(20))
        .await
        .expect("answered");
    assert_eq!((out.exit_code, out.timed_out), (1, false), "{out:?}");
    assert!(
        out.stderr
            .ends_with("[the sandbox process was killed from outside before it reported]\n")
            && out.stdout == PRINTED,
        "{out:?}"
    );
    for zygote in toolgate_e2e::children_of(std::process::id()) {
        let _ = std::fs::remove_file(
            std::env::temp_dir().join(format!("toolgate-killed-once-{zygote}")),
        );
    }
}
