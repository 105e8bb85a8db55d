//! The public conformance cases for python.execute, through HTTP against the
//! real binary, under both the canonical and the exported tool name.
//! The cases live in `toolgate_e2e::conformance`.

use std::time::Instant;

use serde_json::json;
use toolgate_e2e::Server;
use toolgate_e2e::conformance::{CASES, Group, check};

fn run_group(group: Group) {
    let env: Vec<(&str, String)> = match group {
        Group::Default => vec![],
        Group::Timeout(t) => vec![("TOOLGATE_PYTHON_TIMEOUT", t.to_string())],
        Group::Html => vec![("TOOLGATE_PYTHON_ALLOWED_MODULES", "html".to_string())],
    };
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start(&env);
    let mut failures = Vec::new();
    let mut ran = 0;
    for name in ["python.execute", "python__execute"] {
        for case in CASES.iter().filter(|c| c.group == group) {
            let started = Instant::now();
            let r = server.post_json(&format!("/tools/{name}"), &json!({"code": case.code}));
            let wall = started.elapsed().as_secs_f64();
            ran += 1;
            if r.status != 200 {
                failures.push(format!(
                    "{} via {name}: HTTP {} {}",
                    case.name,
                    r.status,
                    String::from_utf8_lossy(&r.body)
                ));
                continue;
            }
            for e in check(case, &r.json(), wall) {
                failures.push(format!("{} via {name}: {e}", case.name));
            }
        }
    }
    assert!(ran > 0, "no cases in {group:?}");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn conformance_default_config() {
    run_group(Group::Default);
}

#[test]
fn conformance_timeout_1s() {
    run_group(Group::Timeout(1));
}

#[test]
fn conformance_timeout_2s() {
    run_group(Group::Timeout(2));
}

#[test]
fn conformance_extra_module_from_config() {
    run_group(Group::Html);
}

#[test]
fn every_case_belongs_to_a_tested_group() {
    for c in CASES {
        assert!(
            matches!(
                c.group,
                Group::Default | Group::Html | Group::Timeout(1) | Group::Timeout(2)
            ),
            "{} has an untested group {:?}",
            c.name,
            c.group
        );
    }
    assert!(CASES.len() >= 80);
}
