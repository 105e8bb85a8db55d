//! The hostile scripts of `toolgate_e2e::hostile` against `toolgate serve`
//! (the Worker runs them in tests/worker.rs), and what must differ on every
//! call.

use toolgate_e2e::timing::machine_share;
use toolgate_e2e::{Server, conformance, hostile};

#[test]
fn hostile_scripts_get_clean_answers_with_their_output_kept() {
    let _machine = machine_share();
    let s = Server::start(&[("TOOLGATE_PYTHON_TIMEOUT", "30")]);
    let (ran, failures) =
        conformance::run_cases(hostile::CASES, |p, a| s.post_json(p, a), conformance::check);
    assert_eq!(ran, 2 * hostile::CASES.len());
    conformance::assert_no_failures(&failures);
    assert_eq!(s.exec("result = 6 * 7")["result"], 42, "the server is fine");
}

#[test]
fn randomness_and_heap_addresses_are_fresh_each_call() {
    let _machine = machine_share();
    let s = Server::start(&[]);
    hostile::assert_fresh_each_call(|code| s.exec(code), hostile::Addresses::FreeListsAndHeap);
}
