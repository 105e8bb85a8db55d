//! The public conformance cases for python.execute, through HTTP against the
//! real binary, under both the canonical and the exported tool name.
//! The cases live in `toolgate_e2e::conformance`.

use toolgate_e2e::Server;
use toolgate_e2e::conformance::{self, CASES, Group, check};
use toolgate_e2e::timing::{machine_lock, machine_share};

fn run_group(group: Group) {
    let env: Vec<(&str, String)> = match group {
        Group::Default => vec![],
        Group::Timeout(t) => vec![("TOOLGATE_PYTHON_TIMEOUT", t.to_string())],
        Group::Html => vec![("TOOLGATE_PYTHON_ALLOWED_MODULES", "html".to_string())],
    };
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start(&env);
    let (ran, failures) =
        conformance::run_group(group, |path, args| server.post_json(path, args), check);
    assert!(ran > 0, "no cases in {group:?}");
    conformance::assert_no_failures(&failures);
}

#[test]
fn conformance_default_config() {
    let _machine = machine_share();
    run_group(Group::Default);
}

#[test]
fn conformance_timeout_1s() {
    let _machine = machine_lock();
    run_group(Group::Timeout(1));
}

#[test]
fn conformance_timeout_2s() {
    let _machine = machine_lock();
    run_group(Group::Timeout(2));
}

#[test]
fn conformance_extra_module_from_config() {
    let _machine = machine_share();
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
