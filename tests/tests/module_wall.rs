//! The module wall (`crates/pyvm/src/module_wall.rs`): a script reaches
//! no module outside the sandbox's module set, by any route, and the set
//! holds none of the modules that only test or break the interpreter.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use toolgate_e2e::Server;
use toolgate_python::sandbox::module_set;
use toolgate_shared::allowlist::DEFAULT_MODULES;

/// Modules that build arbitrary bytecode, start threads or sub-interpreters,
/// or exist only to test CPython: reachable through the old guard, and
/// never again.
const NEVER: &[&str] = &[
    "_testinternalcapi",
    "_interpreters",
    "_interpchannels",
    "_interpqueues",
    "pyexpat",
    "_testcapi",
    "test",
    "test.support",
    "unittest",
    "pdb",
    "doctest",
];

/// Tries every route to every candidate name; returns the names reached,
/// and the modules loaded before the script ran.
const PROBE: &str = r#"
import json, typing
dumps = json.dumps
sys_ = typing.sys
loaded = sorted(sys_.modules)
imp = sys_.modules["_imp"]
boot = sys_.modules["_frozen_importlib"]
ns = vars(typing)
reached = set()
subclasses = ().__class__.__base__.__subclasses__()
importers = [c for c in subclasses if c.__name__ in ("BuiltinImporter", "FrozenImporter")]
class Spec:
    """A spec whose name changes each time it is read."""
    def __init__(self, first, then):
        self.names = [first, then]
    @property
    def name(self):
        return self.names.pop(0) if len(self.names) > 1 else self.names[0]
def recreate(name):
    """`name` made again with its `sys.modules` entry gone (#51)."""
    saved = dict(sys_.modules)
    sys_.modules.pop(name, None)
    try:
        return imp.create_builtin(type("S", (), {"name": name})())
    finally:
        sys_.modules.clear()
        sys_.modules.update(saved)
def routes(name):
    yield lambda: sys_.modules[name]
    yield lambda: __import__(name, ns)
    yield lambda: __import__(name, ns, None, ["*"], 0)
    yield lambda: __import__(name)
    yield lambda: exec("import " + name + " as _probe", ns) or ns.pop("_probe")
    yield lambda: imp.create_builtin(type("S", (), {"name": name})())
    yield lambda: imp.create_builtin(Spec("json", name))
    yield lambda: imp.init_frozen(name)
    yield lambda: imp.get_frozen_object(name)
    yield lambda: boot._builtin_from_name(name)
    yield lambda: recreate(name)
    yield lambda: recreate("_imp").create_builtin(type("S", (), {"name": name})())
    for c in importers:
        yield lambda c=c: c.load_module(name)
        yield lambda c=c: c.create_module(c.find_spec(name))
for name in CANDIDATES:
    for route in routes(name):
        try:
            m = route()
        except BaseException:
            continue
        # A route may hand back another module (the Spec whose name
        # changes gets the name read first): only `name` itself counts.
        kind = type(m).__name__
        if kind == "code" or (kind == "module" and getattr(m, "__name__", None) == name):
            reached.add(name)
# Printed with the encoder taken before the probe ran: imports into a
# library namespace can disturb the module it belongs to.
print(dumps({"reached": sorted(reached), "loaded": loaded}))
"#;

/// The module set as reviewed: `tests/fixtures/module_set.txt`, one module a
/// line, written down apart from the function the sandbox computes it with.
fn reviewed() -> BTreeSet<String> {
    let path = toolgate_e2e::workspace().join("tests/fixtures/module_set.txt");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// The set the sandbox computes from the allowlist (the stdlib's import
/// graph, closed) is the reviewed one, both ways: a module that joins it
/// (a new allowlist entry, a changed graph, an override in python/) or
/// leaves it is a change someone must look at and write down.
#[test]
fn the_module_set_is_the_reviewed_one() {
    let computed = module_set::closure(&DEFAULT_MODULES.map(String::from));
    let reviewed = reviewed();
    let joined: Vec<&String> = computed.difference(&reviewed).collect();
    let left: Vec<&String> = reviewed.difference(&computed).collect();
    assert!(
        joined.is_empty() && left.is_empty(),
        "the module set changed: review, then write it into tests/fixtures/module_set.txt.\n\
         joined: {joined:?}\nleft: {left:?}"
    );
    for m in NEVER {
        assert!(!reviewed.contains(*m), "{m} is in the reviewed set");
    }
}

#[test]
fn no_module_outside_the_set_is_reachable_by_any_route() {
    // The reviewed set, not the sandbox's own computation of it.
    let intended = reviewed();
    let mut candidates: BTreeSet<String> = module_set::stdlib_modules().map(String::from).collect();
    candidates.extend(NEVER.iter().map(|s| s.to_string()));
    // Every native module compiled in: the interpreter lists only those the
    // set keeps.
    candidates.extend(
        module_set::compiled_in_natives()
            .into_iter()
            .map(String::from),
    );
    let s = Server::start(&[("TOOLGATE_PYTHON_TIMEOUT", "300")]);
    // Native modules have no source; the interpreter lists them.
    let names = s.exec("import typing\nresult = list(typing.sys.builtin_module_names)");
    candidates.extend(
        names["result"]
            .as_array()
            .expect("builtin module names")
            .iter()
            .filter_map(Value::as_str)
            .map(String::from),
    );
    let code = format!("CANDIDATES = {}\n{PROBE}", json!(candidates));
    let out = s.exec(&code);
    assert_eq!(out["exit_code"], 0, "{out}");
    let found: Value = serde_json::from_str(out["stdout"].as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("the probe's output is not JSON ({e}): {out}"));
    let listed = |key: &str| -> BTreeSet<String> {
        found[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key}: {found}"))
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    };
    let reached = listed("reached");
    let loaded = listed("loaded");
    let outside: Vec<&String> = reached
        .iter()
        .filter(|m| !intended.contains(*m) && !loaded.contains(*m))
        .collect();
    assert!(outside.is_empty(), "reached outside the set: {outside:?}");
    for m in NEVER {
        assert!(!intended.contains(*m), "{m} is in the module set");
        assert!(!reached.contains(*m), "{m} was reached");
    }
    // The probe does reach modules: a wall that let nothing through would pass
    // the checks above too.
    for m in ["json", "re", "_strptime", "encodings.utf_16_le", "copyreg"] {
        assert!(
            reached.contains(m),
            "{m} should be reachable; reached {reached:?}"
        );
    }
    eprintln!(
        "{} candidates, {} reached, {} in the set, {} loaded at start",
        candidates.len(),
        reached.len(),
        intended.len(),
        loaded.len()
    );
}

/// The contract's import rules on top of the wall: an `import` statement
/// admits the allowlist only; library code and the interpreter's own lazy
/// imports work (`time.strptime` loads `_strptime`, a codec lookup loads
/// `encodings.*`).
#[test]
fn the_guard_admits_lazy_library_imports_but_not_the_scripts_own() {
    let s = Server::start(&[]);
    for (code, ok) in [
        ("import _strptime", false),
        ("from _strptime import _strptime_time", false),
        ("import copyreg", false),
        ("__import__('os')", false),
        ("__import__('sys')", false),
        ("import json.decoder\nresult = 1", true),
        (
            "import time\nresult = time.strptime('2026-12-01', '%Y-%m-%d').tm_yday",
            true,
        ),
        (
            "import datetime\nresult = datetime.datetime.strptime('01/12/2026', '%d/%m/%Y').isoformat()",
            true,
        ),
        ("result = 'é'.encode('utf-16-le').hex()", true),
        ("import copy\nresult = copy.deepcopy({'a': [1]})", true),
    ] {
        let out = s.exec(code);
        if ok {
            assert_eq!(out["exit_code"], 0, "{code}: {out}");
        } else {
            assert_eq!(out["exit_code"], 1, "{code}: {out}");
            assert!(
                out["stderr"].as_str().unwrap().contains("is not allowed"),
                "{code}: {out}"
            );
        }
    }
}
