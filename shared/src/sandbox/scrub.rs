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
