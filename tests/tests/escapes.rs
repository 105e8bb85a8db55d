//! The escape suite on `toolgate serve` (routes and scripts in
//! `toolgate_e2e::escapes`; `tests/worker.rs` runs them on the Worker).

use serde_json::json;
use toolgate_e2e::Server;
use toolgate_e2e::escapes::{
    COMPILED_IN, CRAFTED_REGEX, HOST_MODULES, ROUTES, SCRUBBED, leaks, route_script,
};

#[test]
fn no_route_reaches_files_or_environment() {
    let dir = std::env::temp_dir().join(format!("toolgate-escape-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let canary = dir.join("canary.txt");
    let canary_text = format!("CANARY-FILE-{}", std::process::id());
    std::fs::write(&canary, &canary_text).unwrap();
    let marker = dir.join("marker");
    let env_value = format!("CANARY-ENV-{}", std::process::id());

    let s = Server::start(&[("TOOLGATE_ESCAPE_CANARY", &env_value)]);
    assert!(ROUTES.len() >= 30, "the suite covers at least 30 routes");
    let mut found = Vec::new();
    for (name, code) in ROUTES {
        let full = route_script(code, &marker, &canary, "TOOLGATE_ESCAPE_CANARY");
        let r = s.post_json("/tools/python.execute", &json!({ "code": full }));
        assert_eq!(
            r.status,
            200,
            "{name}: {}",
            String::from_utf8_lossy(&r.body)
        );
        let body = String::from_utf8_lossy(&r.body).into_owned();
        found.extend(leaks(
            name,
            &body,
            &r.json(),
            &canary_text,
            &env_value,
            &marker,
        ));
    }
    assert!(found.is_empty(), "escapes:\n{}", found.join("\n"));
    // The server is healthy afterwards.
    assert_eq!(s.exec("result = 6 * 7")["result"], 42);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dangerous_interpreter_functions_are_gone_by_every_route() {
    let out = Server::start(&[]).exec(SCRUBBED);
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(out["result"], json!([]), "{out}");
}

#[test]
fn host_modules_are_absent_from_the_interpreter() {
    let out = Server::start(&[]).exec(HOST_MODULES);
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(out["result"], json!([]), "{out}");
}

/// tests/module_wall.rs checks every module by every route.
#[test]
fn compiled_in_modules_outside_the_set_are_unreachable() {
    let out = Server::start(&[]).exec(COMPILED_IN);
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(out["result"], json!([]), "{out}");
}

/// Crafted regex code ends the call as the interpreter's failure, exit 1
/// with the output kept, never the server's.
#[test]
fn crafted_regex_code_fails_the_call_only() {
    let s = Server::start(&[]);
    let out = s.exec(CRAFTED_REGEX);
    assert_eq!(out["exit_code"], 1, "{out}");
    assert_eq!(out["stdout"], "kept\n", "{out}");
    let err = out["stderr"].as_str().unwrap_or_default();
    assert!(
        err.contains("InternalError") || err.contains("Error"),
        "no error named: {out}"
    );
    assert_eq!(s.exec("result = 6 * 7")["result"], 42);
}
