//! The module wall: no module outside the sandbox's module set (see
//! [`super::imports`]) can be created, whatever the route: an import
//! statement, `__import__` with a library module's globals, importlib's
//! finders and loaders called by hand, `BuiltinImporter.load_module`.
//!
//! Its floor is below every Python-visible object: the interpreter holds
//! no module outside the set at all (`module_set::keep_only` cuts its
//! tables when it is built). On top of that, every route creates a native
//! module through `_imp.create_builtin` and a frozen one through
//! `_imp.find_frozen`/`get_frozen_object`, looked up on the `_imp` module at
//! call time; those functions are replaced here by wrappers that answer "no
//! such module" for any other name.
//!
//! Each native module exists once. `sys.modules` is a plain dict that a
//! script can edit, and the engine's `create_builtin` makes a fresh module
//! from its definition whenever the name is missing there: a second `_imp`
//! without these wrappers, a `gc` or `marshal` without the scrub. So the
//! wrapper keeps every native module made so far (those of the warm-up
//! first, which the scrub and the engine fixes changed) and hands that one
//! back, whatever `sys.modules` holds; it calls the engine's only for a
//! module not made yet.
//!
//! A frozen module can also be *retired* once it is imported
//! ([`Retired`]): its frozen code is then treated as absent, so that the
//! Worker can leave the code of its warm image's modules out of the
//! snapshot (they are in `sys.modules` already; a script that removes one
//! from there cannot import it again).
//!
//! The originals live only inside the wrappers' Rust closures, which Python
//! cannot reach. The module names a script passes are copied before they are
//! checked, so that an object cannot show one name to the check and another
//! to the original.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use rustpython_vm::{
    AsObject, PyObjectRef, PyResult, VirtualMachine,
    builtins::{PyDictRef, PyModule, PyStr},
    common::{lock::PyMutex, rc::PyRc},
    function::FuncArgs,
};

/// How a wrapped function of `_imp` says that a module does not exist.
#[derive(Clone, Copy)]
enum Absent {
    /// `is_builtin`: 0.
    Zero,
    /// `is_frozen`: False.
    False,
    /// `find_frozen`: None.
    None,
    /// The rest: ModuleNotFoundError.
    Raise,
}

/// Where the wrapped function takes the module name from.
#[derive(Clone, Copy)]
enum NameIn {
    /// The first argument, a `str`.
    Name,
    /// The first argument's `name` attribute (a module spec).
    Spec,
}

/// The functions of `_imp` that find or create a module.
const CREATORS: &[(&str, NameIn, Absent)] = &[
    ("is_builtin", NameIn::Name, Absent::Zero),
    ("create_builtin", NameIn::Spec, Absent::Raise),
    ("is_frozen", NameIn::Name, Absent::False),
    ("is_frozen_package", NameIn::Name, Absent::Raise),
    ("find_frozen", NameIn::Name, Absent::None),
    ("get_frozen_object", NameIn::Name, Absent::Raise),
    ("init_frozen", NameIn::Name, Absent::Raise),
];

/// The frozen modules whose code is no longer read: set once, after
/// warm-up. For these names the frozen functions answer as for a module
/// that does not exist, before anything reads the code.
pub type Retired = Arc<OnceLock<BTreeSet<String>>>;

/// Whether `name`'s frozen code is retired, for the functions that read it
/// or say it exists (`is_builtin`/`create_builtin` are about native ones).
fn retired(retired: &Retired, function: &str, name: &str) -> bool {
    function.contains("frozen") && retired.get().is_some_and(|r| r.contains(name))
}

/// The native modules made so far, by name.
type Made = PyRc<PyMutex<BTreeMap<String, PyObjectRef>>>;

/// Installs the wall: from now on only modules in `set` can be created,
/// and each native module that exists now is the only one of its name.
pub fn install(vm: &VirtualMachine, set: Arc<BTreeSet<String>>) -> PyResult<Retired> {
    let imp = vm.import("_imp", 0)?;
    let gone = Retired::default();
    let made: Made = PyRc::new(PyMutex::new(natives_made(vm)?));
    for &(name, takes, absent) in CREATORS {
        let Ok(original) = imp.get_attr(name, vm) else {
            continue;
        };
        let set = set.clone();
        let gone = gone.clone();
        let made = (name == "create_builtin").then(|| made.clone());
        let wrapper = vm.new_function(
            name,
            move |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
                let module = module_name(&args, takes, vm)?;
                if !set.contains(&module) || retired(&gone, name, &module) {
                    return match absent {
                        Absent::Zero => Ok(vm.ctx.new_int(0).into()),
                        Absent::False => Ok(vm.ctx.new_bool(false).into()),
                        Absent::None => Ok(vm.ctx.none()),
                        Absent::Raise => Err(not_found(vm, &module)),
                    };
                }
                if name == "get_frozen_object" && has_frozen_data(&args, vm) {
                    // Marshalled code of the caller's making: crafted
                    // bytecode is undefined behaviour in the engine.
                    return Err(vm.new_import_error(
                        format!("Frozen object named '{module}' is invalid"),
                        vm.ctx.new_str(module),
                    ));
                }
                let args = trusted_args(args, takes, &module, vm)?;
                match &made {
                    Some(made) => create_once(made, &original, args, &module, vm),
                    None => original.call(args, vm),
                }
            },
        );
        imp.set_attr(name, wrapper, vm)?;
    }
    // Extension modules are shared libraries: there are none to load here.
    for name in ["create_dynamic", "exec_dynamic"] {
        if imp.get_attr(name, vm).is_ok() {
            let refuse =
                vm.new_function(name, |_args: FuncArgs, vm: &VirtualMachine| -> PyResult {
                    Err(vm.new_import_error(
                        "extension modules cannot be loaded in the sandbox",
                        vm.ctx.new_str("_imp"),
                    ))
                });
            imp.set_attr(name, refuse, vm)?;
        }
    }
    // The list of frozen modules shows only those that can be imported.
    if let Ok(original) = imp.get_attr("_frozen_module_names", vm) {
        let listed = vm.new_function(
            "_frozen_module_names",
            move |vm: &VirtualMachine| -> PyResult<Vec<PyObjectRef>> {
                let all = original.call((), vm)?;
                let names: Vec<PyObjectRef> = all.try_to_value(vm)?;
                Ok(names
                    .into_iter()
                    .filter(|n| {
                        n.downcast_ref::<PyStr>()
                            .and_then(|s| s.to_str())
                            .is_some_and(|s| set.contains(s))
                    })
                    .collect())
            },
        );
        imp.set_attr("_frozen_module_names", listed, vm)?;
    }
    Ok(gone)
}

/// The native modules in `sys.modules` now, by name: each one made from
/// its definition under that name.
fn natives_made(vm: &VirtualMachine) -> PyResult<BTreeMap<String, PyObjectRef>> {
    let modules: PyDictRef = vm.sys_module.get_attr("modules", vm)?.try_into_value(vm)?;
    Ok(modules
        .into_iter()
        .filter_map(|(name, module)| {
            let name = name.downcast_ref::<PyStr>()?.to_str()?.to_owned();
            made_as(&module, &name).then_some((name, module))
        })
        .collect())
}

/// Whether `module` is a native module made from the definition `name`.
fn made_as(module: &PyObjectRef, name: &str) -> bool {
    module
        .downcast_ref::<PyModule>()
        .and_then(|m| m.def)
        .is_some_and(|def| def.name.as_str() == name)
}

/// `_imp.create_builtin`: the instance of `module` made before, else the
/// engine's, kept for next time.
fn create_once(
    made: &Made,
    original: &PyObjectRef,
    args: FuncArgs,
    module: &str,
    vm: &VirtualMachine,
) -> PyResult {
    if let Some(kept) = made.lock().get(module) {
        return Ok(kept.clone());
    }
    // The engine's own unwraps `sys.modules`, which a script can delete.
    // Read from the dict: the engine's error path for a missing module
    // attribute reads `sys.modules` again, without end. No Python code runs
    // between this read and the original's.
    if vm.sys_module.dict().get_item_opt("modules", vm)?.is_none() {
        return Err(vm.new_runtime_error("unable to get sys.modules"));
    }
    let created = original.call(args, vm)?;
    if !made_as(&created, module) {
        // `None` (no such module), or what the script put in `sys.modules`.
        return Ok(created);
    }
    Ok(made
        .lock()
        .entry(module.to_owned())
        .or_insert(created)
        .clone())
}

/// Whether a `get_frozen_object` call passes `data` other than None.
fn has_frozen_data(args: &FuncArgs, vm: &VirtualMachine) -> bool {
    args.args
        .get(1)
        .or_else(|| args.kwargs.get("data"))
        .is_some_and(|data| !vm.is_none(data))
}

/// `ModuleNotFoundError: No module named ...`, as CPython says of a module
/// that does not exist.
pub fn not_found(vm: &VirtualMachine, module: &str) -> rustpython_vm::builtins::PyBaseExceptionRef {
    let exc = vm.new_import_error(
        format!("No module named '{module}'"),
        vm.ctx.new_str(module),
    );
    // ModuleNotFoundError, as CPython raises for a module that does not exist.
    let cls = vm.ctx.exceptions.module_not_found_error.to_owned();
    vm.new_exception(cls, exc.args().to_vec())
}

/// The module name a call asks about, as a plain copy.
fn module_name(args: &FuncArgs, takes: NameIn, vm: &VirtualMachine) -> PyResult<String> {
    let first = args
        .args
        .first()
        .cloned()
        .or_else(|| args.kwargs.get("name").cloned())
        .or_else(|| args.kwargs.get("spec").cloned())
        .ok_or_else(|| vm.new_type_error("a module name is required"))?;
    let name = match takes {
        NameIn::Name => first,
        NameIn::Spec => first.get_attr("name", vm)?,
    };
    name.downcast_ref::<PyStr>()
        .and_then(|s| s.to_str())
        .map(str::to_owned)
        .ok_or_else(|| vm.new_type_error("module name must be str"))
}

/// The arguments the original is called with: the checked name as a fresh
/// `str` (or a fresh spec holding it), and no frozen `data` (a marshalled
/// code object of the caller's making).
fn trusted_args(
    mut args: FuncArgs,
    takes: NameIn,
    module: &str,
    vm: &VirtualMachine,
) -> PyResult<FuncArgs> {
    let name: PyObjectRef = vm.ctx.new_str(module).into();
    let first = match takes {
        NameIn::Name => name,
        NameIn::Spec => {
            let ns = vm.ctx.types.namespace_type.as_object().call((), vm)?;
            ns.set_attr("name", name, vm)?;
            ns.set_attr("origin", vm.ctx.new_str("built-in"), vm)?;
            ns
        }
    };
    args.kwargs.swap_remove("name");
    args.kwargs.swap_remove("spec");
    args.kwargs.swap_remove("data");
    args.args.truncate(1);
    if args.args.is_empty() {
        args.args.push(first);
    } else {
        args.args[0] = first;
    }
    Ok(args)
}
