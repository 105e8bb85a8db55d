//! Code mode's `toolgate` module (`toolgate.py`): `tools.<name>(**kw)` in a
//! script sends a request through the run's link (the sandbox child's
//! socket to the server) and waits for the answer. Without a link (code
//! mode off, or a runtime without it) every request is answered
//! `forbidden`, and the script cannot import the module (`guard`).

use std::cell::RefCell;

use rustpython_vm::{PyResult, VirtualMachine, builtins::PyStrRef, compiler::Mode, scope::Scope};

const TOOLGATE_PY: &str = include_str!("toolgate.py");

/// The module's name: what a script imports.
pub const MODULE: &str = "toolgate";

/// Sends a request (JSON) and returns the answer (JSON); it never returns
/// when the run is to stop instead.
pub type Link = Box<dyn FnMut(&[u8]) -> Vec<u8>>;

thread_local! {
    static LINK: RefCell<Option<Link>> = const { RefCell::new(None) };
}

/// Gives this thread's runs `link` (a sandbox child runs one script).
pub fn set_link(link: Option<Link>) {
    LINK.with(|l| *l.borrow_mut() = link);
}

/// Whether runs on this thread may call tools.
pub fn enabled() -> bool {
    LINK.with(|l| l.borrow().is_some())
}

const OFF: &str = r#"{"error": {"code": "forbidden", "message": "Code mode is off for this call: the operator has not enabled it for this caller, or this runtime has no code mode"}}"#;

fn ask(request: PyStrRef, vm: &VirtualMachine) -> PyResult<String> {
    // A lone surrogate cannot be sent as it is: the server reads UTF-8.
    let request = request.to_string_lossy();
    let answer = LINK.with(|l| l.borrow_mut().as_mut().map(|link| link(request.as_bytes())));
    match answer {
        Some(bytes) => String::from_utf8(bytes)
            .map_err(|_| vm.new_runtime_error("the server's answer is not UTF-8")),
        None => Ok(OFF.to_owned()),
    }
}

/// Defines the module; during warm-up, before the module set is taken.
pub(super) fn install(vm: &VirtualMachine) -> PyResult<()> {
    let ns = vm.ctx.new_dict();
    ns.set_item("__name__", vm.ctx.new_str(MODULE).into(), vm)?;
    ns.set_item("_link", vm.new_function("_link", ask).into(), vm)?;
    let code = vm
        .compile(TOOLGATE_PY, Mode::Exec, "<toolgate>")
        .map_err(|e| e.into_pyexception(vm, Some(TOOLGATE_PY)))?;
    let module = vm.new_module(MODULE, ns.clone(), None);
    vm.sys_module
        .get_attr("modules", vm)?
        .set_item(MODULE, module.into(), vm)?;
    vm.run_code_obj(code, Scope::with_builtins(None, ns, vm))?;
    Ok(())
}
