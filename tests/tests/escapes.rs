//! The escape suite on `toolgate serve` (routes and scripts in
//! `toolgate_e2e::escapes`; `tests/worker.rs` runs them on the Worker).

use serde_json::json;
use toolgate_e2e::Server;
use toolgate_e2e::escapes::{
    COMPILED_IN, CRAFTED_REGEX, Canaries, ENV_NAME, HOST_MODULES, RECREATED, ROUTES, SCRUBBED,
};
use toolgate_e2e::timing::machine_share;

#[test]
fn no_route_reaches_files_or_environment() {
    let _machine = machine_share();
    let c = Canaries::new("escape");
    let s = Server::start(&[(ENV_NAME, &c.env_value)]);
    assert!(ROUTES.len() >= 30, "the suite covers at least 30 routes");
    let found = c.run_routes(|code| {
        let r = s.post_json("/tools/python.execute", &json!({ "code": code }));
        (
            r.status,
            String::from_utf8_lossy(&r.body).into_owned(),
            r.json(),
        )
    });
    assert!(found.is_empty(), "escapes:\n{}", found.join("\n"));
    // The server is healthy afterwards.
    assert_eq!(s.exec("result = 6 * 7")["result"], 42);
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

/// Every `sys.modules` entry deleted, cleared, replaced or set to None,
/// then every route that creates a module (#51): only the warm, scrubbed
/// instances come back, and nothing outside the set.
#[test]
fn recreated_modules_are_the_warm_ones_by_every_route() {
    let _machine = machine_share();
    let s = Server::start(&[("TOOLGATE_PYTHON_TIMEOUT", "300")]);
    let started = std::time::Instant::now();
    let out = s.exec(RECREATED);
    eprintln!("RECREATED ran in {:.1} s", started.elapsed().as_secs_f64());
    assert_eq!(out["exit_code"], 0, "{out}");
    assert_eq!(out["result"], json!([]), "{out}");
    assert_eq!(s.exec("result = 6 * 7")["result"], 42);
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
