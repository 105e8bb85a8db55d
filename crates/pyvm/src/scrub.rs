//! The interpreter scrub: functions that reach the host or the interpreter's
//! own machinery are deleted from the warm interpreter, so that no route
//! (`typing.sys`, `exec` into a module's namespace) finds them afterwards.

use rustpython_vm::{AsObject, PyResult, VirtualMachine, builtins::PyTypeRef, function::FuncArgs};

/// (module, attributes) removed before any script runs.
pub const REMOVED: &[(&str, &[&str])] = &[
    (
        "sys",
        &[
            "settrace",
            "setprofile",
            "gettrace",
            "getprofile",
            "setrecursionlimit",
            "_getframe",
            "_getframemodulename",
            "_current_frames",
            "_current_exceptions",
            "setswitchinterval",
            "addaudithook",
            "call_tracing",
            "_settraceallthreads",
            "_setprofileallthreads",
            "set_asyncgen_hooks",
            "setdlopenflags",
            "activate_stack_trampoline",
            "_clear_type_cache",
            // Instruments bytecode: tracing by another name, and it hides
            // an `import` statement from the guard.
            "monitoring",
        ],
    ),
    (
        "time",
        &[
            "clock_settime",
            "clock_settime_ns",
            "tzset",
            "pthread_getcpuclockid",
        ],
    ),
    (
        "gc",
        &["get_objects", "get_referrers", "get_referents", "get_stats"],
    ),
    ("marshal", &["loads", "load"]),
];

/// Deletes [`REMOVED`] and seals the code type, in the warm interpreter before
/// any script runs.
pub fn apply(vm: &VirtualMachine) -> PyResult<()> {
    for (module, attrs) in REMOVED {
        let m = vm.import(*module, 0)?;
        for a in *attrs {
            if m.get_attr(*a, vm).is_ok() {
                m.del_attr(*a, vm)?;
            }
        }
    }
    seal_code_type(vm);
    Ok(())
}

/// Whether the scrub holds in `vm`: every removed attribute is gone and code
/// objects cannot be built or replaced. What `/healthz` reports.
pub fn verify(vm: &VirtualMachine) -> bool {
    let removed = REMOVED.iter().all(|(module, attrs)| {
        loaded(vm, module).is_some_and(|m| attrs.iter().all(|a| m.get_attr(*a, vm).is_err()))
    });
    let code = vm.ctx.types.code_type;
    let sealed = ["replace", "__replace__"]
        .iter()
        .all(|n| !code.has_attr(vm.ctx.intern_str(*n)));
    removed && sealed
}

/// A module as `sys.modules` holds it (no import: after warm-up the guard
/// would refuse some of these to anyone but the engine).
pub fn loaded(vm: &VirtualMachine, name: &str) -> Option<rustpython_vm::PyObjectRef> {
    vm.sys_module
        .get_attr("modules", vm)
        .ok()?
        .get_item(name, vm)
        .ok()
}

/// Modules whose code reaches the host: the capability gap is that none is
/// compiled in (RustPython's `host_env` is off).
pub const HOST_MODULES: &[&str] = &[
    "posix",
    "nt",
    "_socket",
    "_posixsubprocess",
    "fcntl",
    "mmap",
    "select",
    "_ctypes",
    "termios",
    "resource",
    "grp",
    "pwd",
    "_multiprocessing",
    "_posixshmem",
    "syslog",
    "_ssl",
];

/// Whether `builtin` (the interpreter's built-in module names) holds none
/// of [`HOST_MODULES`].
pub fn capability_gap(builtin: &[String]) -> bool {
    !builtin.iter().any(|m| HOST_MODULES.contains(&m.as_str()))
}

fn refuse_new(cls: PyTypeRef, _args: FuncArgs, vm: &VirtualMachine) -> PyResult {
    Err(vm.new_type_error(format!(
        "cannot create '{}' instances in the sandbox",
        cls.name()
    )))
}

/// Crafted bytecode panics RustPython and may be undefined behaviour, so code
/// objects can only come from the compiler: no constructor, no `replace`.
fn seal_code_type(vm: &VirtualMachine) {
    let code = vm.ctx.types.code_type;
    code.modified();
    for name in ["replace", "__replace__", "__new__"] {
        code.attributes.remove(vm.ctx.intern_str(name));
    }
    code.slots.new.store(Some(refuse_new));
    let _ = code.as_object();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `/healthz` says of these walls is measured: off reads false.
    #[test]
    fn a_wall_that_is_off_reads_false() {
        assert!(!capability_gap(&["sys".into(), "posix".into()]));
        assert!(capability_gap(&["sys".into(), "_io".into()]));
        let builder = rustpython_vm::InterpreterBuilder::new();
        let defs = rustpython_stdlib::stdlib_module_defs(&builder.ctx);
        let interp = builder
            .add_native_modules(&defs)
            .add_frozen_modules(crate::vm::frozen_stdlib())
            .build();
        interp.enter(|vm| {
            assert!(!verify(vm), "a fresh interpreter is not scrubbed");
            apply(vm).expect("scrub");
            assert!(verify(vm));
        });
    }
}
