//! The sandbox's module set at run time: the closure of the allowlist over
//! the stdlib's import graph (recorded by `build.rs` from RustPython's `Lib`,
//! see [`super::imports`]), plus the interpreter's own modules
//! ([`imports::INTERPRETER_OWN`]). Nothing else exists in the interpreter:
//! its tables of native and frozen modules are cut to the closure when it is
//! built ([`keep_only`]), and the module wall ([`super::module_wall`]) is the
//! policy on top.

use std::collections::{BTreeMap, BTreeSet};

use rustpython_vm::{PyResult, VirtualMachine, builtins::PyStr};

use super::imports;

mod graph {
    include!(concat!(env!("OUT_DIR"), "/stdlib_graph.rs"));
}

/// Every module the stdlib's Python sources can import from the roots: the
/// allowlist, what the runner itself imports and what the interpreter
/// needs whatever the allowlist.
pub fn closure(allowed: &[String]) -> BTreeSet<String> {
    imports::closure(
        allowed
            .iter()
            .map(String::as_str)
            .chain(imports::RUNTIME_ROOTS.iter().copied())
            .chain(imports::INTERPRETER_OWN.iter().copied()),
        &graph(),
    )
}

fn graph() -> BTreeMap<&'static str, Vec<&'static str>> {
    graph::GRAPH
        .iter()
        .map(|(name, deps)| (*name, deps.to_vec()))
        .collect()
}

/// Cuts the interpreter's tables of native module definitions and frozen
/// modules to `set`, so that no route, whatever object or spec reaches the
/// engine, can create a module outside it. For an init hook: the tables
/// can change only before the interpreter's state is shared.
pub fn keep_only(vm: &mut VirtualMachine, set: &BTreeSet<String>) {
    let state = rustpython_vm::common::rc::PyRc::get_mut(&mut vm.state)
        .expect("init hooks run before the interpreter's state is shared");
    state.module_defs.retain(|name, _| set.contains(*name));
    state.frozen.retain(|name, _| set.contains(*name));
}

/// Every native module compiled into the engine, whether or not a module
/// set keeps it: what a probe of the module wall must try. (`sys` and
/// `builtins` have no definition to make another from.)
pub fn compiled_in_natives() -> BTreeSet<&'static str> {
    let ctx = rustpython_vm::Context::genesis();
    rustpython_vm::stdlib::builtin_module_defs(ctx)
        .into_iter()
        .chain(rustpython_stdlib::stdlib_module_defs(ctx))
        .map(|def| def.name.as_str())
        .chain(["sys", "builtins"])
        .collect()
}

/// The module set of an interpreter that has imported its allowlist: its
/// [`closure`], and every module loaded so far (the interpreter's own, and
/// any a native module imported that no source shows).
pub fn of(vm: &VirtualMachine, closure: BTreeSet<String>) -> PyResult<BTreeSet<String>> {
    let mut set = closure;
    let modules = vm.sys_module.get_attr("modules", vm)?;
    let names = vm.call_method(&modules, "keys", ())?;
    for name in names.try_to_value::<Vec<rustpython_vm::PyObjectRef>>(vm)? {
        if let Some(n) = name.downcast_ref::<PyStr>().and_then(|s| s.to_str()) {
            set.insert(n.to_owned());
        }
    }
    Ok(set)
}

/// Every Python module of the stdlib outside the excluded packages, by name.
pub fn stdlib_modules() -> impl Iterator<Item = &'static str> {
    graph::GRAPH.iter().map(|(name, _)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engines_native_lazy_imports_are_in_the_set() {
        let set = closure(&["time".to_owned(), "datetime".to_owned()]);
        for m in ["_strptime", "copyreg", "encodings.utf_16_le", "_pycodecs"] {
            assert!(set.contains(m), "{m} missing");
        }
        for m in ["pdb", "unittest", "_testinternalcapi", "pyexpat", "socket"] {
            assert!(!set.contains(m), "{m} in the set");
        }
    }

    /// The names in `sys.modules` and `sys.builtin_module_names`.
    #[cfg(feature = "process")]
    fn modules_of(interp: &rustpython_vm::Interpreter) -> (Vec<String>, Vec<String>) {
        interp.enter(|vm| {
            let names = |attr: &'static str| -> Vec<String> {
                let list = rustpython_vm::AsObject::as_object(vm.ctx.types.list_type);
                vm.sys_module
                    .get_attr(attr, vm)
                    .and_then(|o| list.call((o,), vm))
                    .and_then(|l| l.try_into_value(vm))
                    .expect(attr)
            };
            (names("modules"), names("builtin_module_names"))
        })
    }

    /// The interpreter starts on [`imports::INTERPRETER_OWN`] alone (and
    /// what they import): with its tables cut to them it builds, and loads
    /// nothing else. A missing name fails the build of the interpreter.
    #[cfg(feature = "process")]
    #[test]
    fn the_interpreter_starts_on_its_own_modules() {
        let own = imports::closure(imports::INTERPRETER_OWN.iter().copied(), &graph());
        let builder = rustpython_vm::InterpreterBuilder::new().settings(crate::vm::settings());
        let defs = rustpython_stdlib::stdlib_module_defs(&builder.ctx);
        let kept = own.clone();
        let interp = builder
            .init_hook(move |vm| keep_only(vm, &kept))
            .add_native_modules(&defs)
            .add_frozen_modules(crate::vm::frozen_stdlib())
            .build();
        let (loaded, _) = modules_of(&interp);
        assert!(loaded.iter().any(|m| m == "_imp"), "{loaded:?}");
        let outside: Vec<&String> = loaded.iter().filter(|m| !own.contains(*m)).collect();
        assert!(outside.is_empty(), "loaded at start: {outside:?}");
    }

    /// With its tables cut to the set, the warm interpreter of a small and
    /// of the default allowlist loads nothing outside the set, and lists no
    /// native module outside it: those the engine compiles in but no set
    /// holds are gone.
    #[cfg(feature = "process")]
    #[test]
    fn the_interpreter_loads_nothing_outside_the_set() {
        use crate::vm::WarmVm;
        let default: Vec<String> = toolgate_core::allowlist::DEFAULT_MODULES
            .iter()
            .map(|m| m.to_string())
            .collect();
        for allowed in [vec![], vec!["math".to_owned()], default] {
            let set = closure(&allowed);
            let vm = WarmVm::new(&allowed).expect("warm");
            let (loaded, native) = modules_of(vm.interp());
            let outside: Vec<&String> = loaded.iter().filter(|m| !set.contains(*m)).collect();
            assert!(
                outside.is_empty(),
                "{allowed:?}: loaded outside the set: {outside:?}"
            );
            let outside: Vec<&String> = native.iter().filter(|m| !set.contains(*m)).collect();
            assert!(
                outside.is_empty(),
                "{allowed:?}: natives outside the set: {outside:?}"
            );
            for m in [
                "_testinternalcapi",
                "_interpreters",
                "pyexpat",
                "_asyncio",
                "sys",
            ] {
                assert!(compiled_in_natives().contains(m), "{m} is not compiled in");
            }
            for m in ["_testinternalcapi", "_interpreters", "pyexpat", "_asyncio"] {
                assert!(!native.iter().any(|n| n == m), "{allowed:?}: {m} exists");
            }
        }
    }

    /// What the process sandbox freezes is every module a set can hold
    /// (the graph), each once, and none of the excluded packages.
    #[cfg(feature = "process")]
    #[test]
    fn the_frozen_stdlib_is_every_module_a_set_can_hold() {
        let mut frozen: Vec<&str> = crate::vm::frozen_stdlib().map(|(n, _)| n).collect();
        frozen.sort_unstable();
        let mut graph: Vec<&str> = stdlib_modules().collect();
        graph.sort_unstable();
        assert_eq!(frozen, graph);
        assert!(frozen.contains(&"encodings.gbk") && frozen.contains(&"csv"));
        for m in ["asyncio", "email.message", "idlelib", "xml.dom"] {
            assert!(!frozen.contains(&m), "{m} is frozen");
        }
    }
}
