//! Globals restored on first use (Toolgate, PATCHES.md 12).
//!
//! An embedder may fill a namespace with one placeholder object per name
//! and restore the real values only when a script first needs them. Every
//! frame read of a global or a module-level name passes its value through
//! [`resolve`], and every reader of a whole namespace (`globals()`,
//! `locals()`, `vars()`, `dir()`, `eval`/`exec` without a namespace, a
//! frame's `f_globals`/`f_locals`, a function's `__globals__`) calls
//! [`materialize`] first: the hook then replaces every placeholder, once.

use crate::{Py, PyObjectRef, PyResult, VirtualMachine, builtins::PyStr};
use core::cell::{Cell, RefCell};

thread_local! {
    /// The placeholder's address while one is installed; 0 otherwise.
    static PLACEHOLDER: Cell<usize> = const { Cell::new(0) };
    /// The hook is running: a placeholder read now is a name not restored yet.
    static RUNNING: Cell<bool> = const { Cell::new(false) };
    static HOOK: RefCell<Option<(PyObjectRef, PyObjectRef)>> = const { RefCell::new(None) };
}

/// Installs `placeholder` and the `hook` that replaces it, for this thread.
pub fn install(placeholder: PyObjectRef, hook: PyObjectRef) {
    PLACEHOLDER.with(|p| p.set(placeholder.as_raw() as usize));
    HOOK.with(|h| *h.borrow_mut() = Some((placeholder, hook)));
}

/// Removes the placeholder and the hook.
pub fn clear() {
    PLACEHOLDER.with(|p| p.set(0));
    HOOK.with(|h| h.borrow_mut().take());
}

/// Whether a placeholder is installed.
pub fn active() -> bool {
    PLACEHOLDER.with(Cell::get) != 0
}

/// Runs the hook, once, if one is installed.
pub fn materialize(vm: &VirtualMachine) -> PyResult<()> {
    let hook = HOOK.with(|h| h.borrow().as_ref().map(|(_, hook)| hook.clone()));
    let Some(hook) = hook else {
        return Ok(());
    };
    if RUNNING.with(|r| r.replace(true)) {
        return Ok(());
    }
    let r = hook.call((), vm);
    RUNNING.with(|r| r.set(false));
    clear();
    r.map(drop)
}

/// `Ok(true)` when `value`, read for `name`, was the placeholder: the hook
/// has run and the caller reads the name again. While the hook runs, a
/// placeholder is a name not restored yet: not defined, as it would be.
#[inline]
pub fn resolve(value: &PyObjectRef, name: &Py<PyStr>, vm: &VirtualMachine) -> PyResult<bool> {
    let p = PLACEHOLDER.with(Cell::get);
    if p == 0 || value.as_raw() as usize != p {
        return Ok(false);
    }
    if RUNNING.with(Cell::get) {
        return Err(vm.new_name_error(format!("name '{name}' is not defined"), name.to_owned()));
    }
    materialize(vm)?;
    Ok(true)
}
