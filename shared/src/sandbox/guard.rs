//! The import guard: `builtins.__import__` replaced by a native function that
//! admits user imports by the allowlist and a stdlib module's own imports.
//!
//! This is policy, not a wall: allowlisted modules expose others through
//! attributes (`typing.sys`). The walls are the capability gap, the scrub,
//! and the process isolation around the VM.

use rustpython_vm::{
    AsObject, PyObjectRef, PyResult, VirtualMachine,
    builtins::{PyDict, PyStr},
    function::FuncArgs,
};

/// The contract's message for a refused import.
pub fn refusal(name: &str, allowed: &[String]) -> String {
    format!(
        "Import of '{name}' is not allowed. Allowed modules: {}",
        allowed.join(", ")
    )
}

pub fn install(vm: &VirtualMachine, allowed: &[String]) -> PyResult<()> {
    let original = vm.builtins.get_attr("__import__", vm)?;
    let mut allowed = allowed.to_vec();
    allowed.sort();
    allowed.dedup();
    let guard = vm.new_function(
        "__import__",
        move |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
            check(vm, &args, &allowed)?;
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

fn check(vm: &VirtualMachine, args: &FuncArgs, allowed: &[String]) -> PyResult<()> {
    let name_obj = arg(args, 0, "name")
        .ok_or_else(|| vm.new_type_error("__import__() missing required argument 'name'"))?;
    let name = name_obj
        .downcast_ref::<PyStr>()
        .ok_or_else(|| vm.new_type_error("module name must be str"))?
        .to_string_lossy()
        .into_owned();
    if let Some(globals) = arg(args, 1, "globals")
        && is_stdlib_namespace(vm, &globals)
    {
        return Ok(());
    }
    let level = match arg(args, 4, "level") {
        Some(l) => l.try_index(vm)?.as_bigint().clone(),
        None => 0.into(),
    };
    let top = name.split('.').next().unwrap_or("");
    if level != 0.into() || !allowed.iter().any(|m| m == top) {
        return Err(vm.new_import_error(refusal(&name, allowed), vm.ctx.new_str(name.as_str())));
    }
    Ok(())
}

/// True when `globals` is the namespace of a loaded module other than
/// `__main__`: the import comes from library code, not from the script.
/// Checking identity with `sys.modules[name].__dict__` keeps a script from
/// passing a made-up `{'__name__': 'json'}`. The module is looked up by
/// `__name__`, then by `__spec__.name` (`_pydatetime` calls itself
/// `datetime`).
fn is_stdlib_namespace(vm: &VirtualMachine, globals: &PyObjectRef) -> bool {
    let Some(dict) = globals.downcast_ref::<PyDict>() else {
        return false;
    };
    let Ok(modules) = vm.sys_module.get_attr("modules", vm) else {
        return false;
    };
    let by_name = dict.get_item_opt("__name__", vm).ok().flatten();
    let by_spec = dict
        .get_item_opt("__spec__", vm)
        .ok()
        .flatten()
        .and_then(|spec| spec.get_attr("name", vm).ok());
    [by_name, by_spec].into_iter().flatten().any(|name| {
        let Some(name) = name
            .downcast_ref::<PyStr>()
            .and_then(|s| s.to_str().map(str::to_owned))
        else {
            return false;
        };
        if name == "__main__" {
            return false;
        }
        let Ok(module) = modules.get_item(name.as_str(), vm) else {
            return false;
        };
        module.get_attr("__dict__", vm).is_ok_and(|d| d.is(globals))
    })
}
