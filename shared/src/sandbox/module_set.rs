//! The sandbox's module set at run time: the closure of the allowlist over
//! the stdlib's import graph (recorded by `build.rs` from RustPython's `Lib`,
//! see [`super::imports`]), plus the interpreter's own modules, loaded
//! before any of it. Nothing else can be created ([`super::module_wall`]).

use std::collections::{BTreeMap, BTreeSet};

use rustpython_vm::{PyResult, VirtualMachine, builtins::PyStr};

use super::imports;

mod graph {
    include!(concat!(env!("OUT_DIR"), "/stdlib_graph.rs"));
}

/// Every module the stdlib's Python sources can import from the roots: the
/// allowlist and what the runner itself imports.
pub fn closure(allowed: &[String]) -> BTreeSet<String> {
    let graph: BTreeMap<&str, Vec<&str>> = graph::GRAPH
        .iter()
        .map(|(name, deps)| (*name, deps.to_vec()))
        .collect();
    imports::closure(
        allowed
            .iter()
            .map(String::as_str)
            .chain(imports::RUNTIME_ROOTS.iter().copied()),
        &graph,
    )
}

/// The module set of an interpreter that has imported its allowlist: the
/// closure, and every module loaded so far (the interpreter's own, and any a
/// native module imported that no source shows).
pub fn of(vm: &VirtualMachine, allowed: &[String]) -> PyResult<BTreeSet<String>> {
    let mut set = closure(allowed);
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

    /// What the process sandbox freezes is every module a set can hold
    /// (the graph), each once, and none of the excluded packages.
    #[cfg(feature = "python")]
    #[test]
    fn the_frozen_stdlib_is_every_module_a_set_can_hold() {
        let mut frozen: Vec<&str> = super::super::vm::frozen_stdlib().map(|(n, _)| n).collect();
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
