//! What a session call's restore makes lives until the call ends (its
//! process ends with it), so it is frozen out of the cycle collector, as
//! the warm image is: left young, the next collection walked it all (17% of
//! the child's time for 2,200 rows). The script's garbage is collected
//! first, not frozen with it; after many objects of the script's own,
//! nothing is frozen. The collector's counts are the process's, so this is
//! a binary of its own, one test, nothing else running beside it.
#![cfg(feature = "process")]

use std::sync::{Arc, Mutex};

use rustpython_vm::gc_state::gc_state;
use toolgate_core::files::Files;
use toolgate_pyvm::vm::{Session, WarmVm};

#[test]
fn what_a_restore_makes_is_frozen_and_the_scripts_garbage_is_not() {
    let allowed: Vec<String> = toolgate_core::allowlist::DEFAULT_MODULES
        .map(String::from)
        .to_vec();
    let session = |state| {
        Some(Session {
            state,
            cap: 1 << 30,
        })
    };
    let vm = WarmVm::new(&allowed).expect("warm");
    let make = "rows = [{'id': i, 'tags': [i]} for i in range(25_000)]";
    let saved = vm
        .run(make, &Files::new(), 0, session(&[]), |_, _| {})
        .state
        .expect("a state");
    drop(vm);
    // Objects frozen by a call from `saved`, read at the script's first
    // print, while it runs.
    let frozen_by = |code: &str| {
        let vm = WarmVm::new(&allowed).expect("warm");
        let before = gc_state().get_freeze_count();
        let seen = Arc::new(Mutex::new(None));
        let at_print = seen.clone();
        let o = vm.run(code, &Files::new(), 0, session(&saved), move |_, _| {
            at_print
                .lock()
                .unwrap()
                .get_or_insert(gc_state().get_freeze_count());
        });
        assert_eq!(o.exit_code, 0, "{code}");
        let at = seen.lock().unwrap().expect("the script printed");
        at.saturating_sub(before)
    };
    let read = frozen_by("print(len(rows))");
    assert!(read >= 50_000, "only {read} objects frozen by the restore");
    // 300 lists in cycles, garbage before the read: collected, not frozen.
    let garbage =
        "g = [[] for _ in range(300)]\nfor x in g:\n    x.append(x)\ndel g, x\nprint(len(rows))";
    let with_garbage = frozen_by(garbage);
    assert!(
        with_garbage < read + 100,
        "{with_garbage} frozen with the script's garbage, {read} without"
    );
    let after_many = frozen_by("junk = [[i] for i in range(10_000)]\nprint(len(rows))");
    assert!(
        after_many < 1_000,
        "{after_many} frozen after the script's own 10,000"
    );
}
