//! The import guard: `builtins.__import__` replaced by a native function that
//! applies the contract's allowlist to the script's imports.
//!
//! Which modules can exist at all is the module wall's job
//! ([`super::module_wall`]): nothing outside the sandbox's module set can be
//! created by any route. The guard is the policy on top of it:
//! - an `import` statement of the script, or of code the script compiles,
//!   admits the allowlist only, with the contract's `ImportError`;
//! - a library module's own imports (its globals are that module's
//!   namespace) admit the module set;
//! - any other call (the interpreter's native code importing on the
//!   script's behalf, as `time.strptime` loads `_strptime` and a codec lookup
//!   loads `encodings`) admits the module set except the forbidden host
//!   modules. A script's own `__import__(...)` call is such a call too: the
//!   two cannot be told apart, and it gains nothing that
//!   `typing.sys.modules` does not already show.

use std::collections::BTreeSet;
use std::sync::Arc;

use rustpython_vm::{
    AsObject, PyObjectRef, PyResult, VirtualMachine,
    builtins::{PyDict, PyStr},
    bytecode::Instruction,
    function::FuncArgs,
};

use toolgate_core::allowlist::FORBIDDEN_MODULES;

/// The contract's message for a refused import.
pub fn refusal(name: &str, allowed: &[String]) -> String {
    format!(
        "Import of '{name}' is not allowed. Allowed modules: {}",
        allowed.join(", ")
    )
}

/// Installs the guard. `allowed` is the allowlist; `set` the module set.
pub fn install(
    vm: &VirtualMachine,
    allowed: &[String],
    set: Arc<BTreeSet<String>>,
) -> PyResult<()> {
    let original = vm.builtins.get_attr("__import__", vm)?;
    let mut allowed = allowed.to_vec();
    allowed.sort();
    allowed.dedup();
    let guard = vm.new_function(
        "__import__",
        move |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
            check(vm, &args, &allowed, &set)?;
            original.call(args, vm)
        },
    );
    vm.builtins.set_attr("__import__", guard, vm)
}

fn arg(args: &FuncArgs, pos: usize, name: &str) -> Option<PyObjectRef> {
    args.args
        .get(pos)
        .cloned()
        .or_else(|| args.kwargs.get(name).cloned())
}

fn check(
    vm: &VirtualMachine,
    args: &FuncArgs,
    allowed: &[String],
    set: &BTreeSet<String>,
) -> PyResult<()> {
    let name_obj = arg(args, 0, "name")
        .ok_or_else(|| vm.new_type_error("__import__() missing required argument 'name'"))?;
    let name = name_obj
        .downcast_ref::<PyStr>()
        .ok_or_else(|| vm.new_type_error("module name must be str"))?
        .to_string_lossy()
        .into_owned();
    let level = match arg(args, 4, "level") {
        Some(l) => l.try_index(vm)?.as_bigint().clone(),
        None => 0.into(),
    };
    let refuse = || vm.new_import_error(refusal(&name, allowed), vm.ctx.new_str(name.as_str()));
    let library = arg(args, 1, "globals").and_then(|g| library_package(vm, &g));
    if let Some(package) = library {
        // Library code: relative imports resolve against its package; what
        // the name resolves to must be in the set (the wall says the same,
        // later, for the modules it would create).
        let Ok(level) = usize::try_from(&level) else {
            return Err(refuse());
        };
        return match resolve(&name, &package, level) {
            Some(abs) if in_set(set, &abs) => Ok(()),
            // As if the module did not exist, as the wall would answer.
            Some(abs) => Err(super::module_wall::not_found(vm, &abs)),
            None => Err(vm.new_import_error(
                "attempted relative import beyond top-level package",
                vm.ctx.new_str(name.as_str()),
            )),
        };
    }
    if level != 0.into() {
        return Err(refuse());
    }
    let top = name.split('.').next().unwrap_or("");
    // Code mode's module, only for a call that may call tools, whichever
    // way it is imported.
    if top == super::code_mode::MODULE && !super::code_mode::enabled() {
        return Err(refuse());
    }
    if allowed.iter().any(|m| m == top)
        || (top == super::code_mode::MODULE && super::code_mode::enabled())
    {
        return Ok(());
    }
    if !is_import_statement(vm) && in_set(set, &name) && !FORBIDDEN_MODULES.contains(&top) {
        return Ok(());
    }
    Err(refuse())
}

/// `name` and every package above it are in the set.
fn in_set(set: &BTreeSet<String>, name: &str) -> bool {
    let mut prefix = String::new();
    name.split('.').all(|part| {
        if !prefix.is_empty() {
            prefix.push('.');
        }
        prefix.push_str(part);
        set.contains(&prefix)
    })
}

/// CPython's `importlib._bootstrap._resolve_name`, for a level-`level`
/// import of `name` from `package`.
fn resolve(name: &str, package: &str, level: usize) -> Option<String> {
    if level == 0 {
        return Some(name.to_owned());
    }
    let parts: Vec<&str> = package.split('.').collect();
    if package.is_empty() || level > parts.len() {
        return None;
    }
    let base = parts[..parts.len() + 1 - level].join(".");
    Some(if name.is_empty() {
        base
    } else {
        format!("{base}.{name}")
    })
}

/// True when the import comes from an `import` statement running in the
/// current frame, rather than from a call.
fn is_import_statement(vm: &VirtualMachine) -> bool {
    let Some(frame) = vm.current_frame() else {
        return false;
    };
    // The frame's own `lasti()` is a copy taken when the frame object was
    // made (RustPython 0.6); `f_lasti` reads the running frame's, as the
    // byte offset of the instruction that is running. Its inline cache
    // units hold data, not opcodes, so the instruction is found by walking
    // from the start, one instruction and its caches at a time.
    let Some(target) = frame
        .as_object()
        .get_attr("f_lasti", vm)
        .and_then(|v| v.try_to_value::<usize>(vm))
        .ok()
        .map(|offset| offset / 2)
    else {
        return false;
    };
    let units = &frame.f_code().code.instructions;
    let mut at = 0;
    let mut running = None;
    while at <= target && at < units.len() {
        let op = units.read_op(at);
        running = Some(op);
        at += 1 + op.cache_entries();
    }
    matches!(
        running.map(|op| op.deoptimize()),
        Some(Instruction::ImportName { .. })
    )
}

/// The package a library module's namespace belongs to, when `globals` is
/// the namespace of a loaded module other than `__main__`: the import comes
/// from library code, not from the script. Checking identity with
/// `sys.modules[name].__dict__` keeps a script from passing a made-up
/// `{'__name__': 'json'}`. The module is looked up by `__name__`, then by
/// `__spec__.name` (`_pydatetime` calls itself `datetime`).
fn library_package(vm: &VirtualMachine, globals: &PyObjectRef) -> Option<String> {
    let dict = globals.downcast_ref::<PyDict>()?;
    let modules = vm.sys_module.get_attr("modules", vm).ok()?;
    let text = |o: PyObjectRef| {
        o.downcast_ref::<PyStr>()
            .and_then(|s| s.to_str().map(str::to_owned))
    };
    let by_name = dict.get_item_opt("__name__", vm).ok().flatten();
    let by_spec = dict
        .get_item_opt("__spec__", vm)
        .ok()
        .flatten()
        .and_then(|spec| spec.get_attr("name", vm).ok());
    let name = [by_name, by_spec]
        .into_iter()
        .flatten()
        .filter_map(text)
        .find(|name| {
            name != "__main__"
                && modules
                    .get_item(name.as_str(), vm)
                    .and_then(|m| m.get_attr("__dict__", vm))
                    .is_ok_and(|d| d.is(globals))
        })?;
    // `__package__`, else: a package is its own package, a module's is the
    // one above it.
    if let Some(package) = dict
        .get_item_opt("__package__", vm)
        .ok()
        .flatten()
        .and_then(text)
    {
        return Some(package);
    }
    let is_package = dict.get_item_opt("__path__", vm).ok().flatten().is_some();
    Some(if is_package {
        name
    } else {
        name.rsplit_once('.')
            .map(|(p, _)| p.to_owned())
            .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_relative_names_as_importlib_does() {
        assert_eq!(resolve("x", "p.q", 1).as_deref(), Some("p.q.x"));
        assert_eq!(resolve("x", "p.q", 2).as_deref(), Some("p.x"));
        assert_eq!(resolve("", "p.q", 1).as_deref(), Some("p.q"));
        assert_eq!(resolve("x", "p", 2), None);
        assert_eq!(resolve("x", "", 1), None);
        assert_eq!(resolve("a.b", "", 0).as_deref(), Some("a.b"));
    }

    #[test]
    fn a_name_is_in_the_set_with_its_packages() {
        let set: BTreeSet<String> = ["json", "json.decoder", "x.y"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(in_set(&set, "json"));
        assert!(in_set(&set, "json.decoder"));
        assert!(!in_set(&set, "json.tool"));
        assert!(!in_set(&set, "x.y"), "a submodule without its package");
    }
}
