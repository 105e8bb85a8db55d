//! Globals restored on first use (Toolgate, PATCHES.md 12).
//!
//! An embedder may fill a namespace with one placeholder object per name
//! and restore the real values only when a script first needs them. Every
//! frame read of a global or a module-level name passes its value through
//! [`resolve`], and every reader of a whole namespace (`globals()`,
//! `locals()`, `vars()`, `dir()`, `eval`/`exec` without a namespace, a
//! frame's `f_globals`/`f_locals`, a function's `__globals__`) calls
//! [`materialize`] first. The hook, called with `None`, restores every
//! placeholder; called with a name while a restore runs (code the restore
//! runs read that name), it restores what holds that name, and answers
//! whether it did.

use crate::{AsObject, Py, PyObjectRef, PyResult, VirtualMachine, builtins::PyStr};
use core::cell::{Cell, RefCell};

thread_local! {
    /// The placeholder's address while one is installed; 0 otherwise.
    static PLACEHOLDER: Cell<usize> = const { Cell::new(0) };
    /// How many hook calls are running: above 0, a restore is under way.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// The placeholder, the hook, and the `__import__` that reads no
    /// namespace (the embedder's own).
    static HOOK: RefCell<Option<(PyObjectRef, PyObjectRef, PyObjectRef)>> = const { RefCell::new(None) };
}

/// Installs `placeholder` and the `hook` that replaces it, for this thread.
/// An `__import__` other than `import` (a script's own) is handed the
/// namespace whole.
pub fn install(placeholder: PyObjectRef, hook: PyObjectRef, import: PyObjectRef) {
    PLACEHOLDER.with(|p| p.set(placeholder.as_raw() as usize));
    HOOK.with(|h| *h.borrow_mut() = Some((placeholder, hook, import)));
}

/// Before an import statement calls `func` with the namespace: restores
/// first unless `func` is the installed `__import__`.
pub fn before_import(func: &PyObjectRef, vm: &VirtualMachine) -> PyResult<()> {
    let own = HOOK.with(|h| h.borrow().as_ref().is_none_or(|(_, _, import)| import.is(func)));
    if own { Ok(()) } else { materialize(vm) }
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

/// Calls the hook with `arg`, at the bottom of the frame budget: a restore
/// must not fail because the script that first needed it was deep in a
/// recursion (the native stack stays guarded by its own check).
fn call_hook(arg: PyObjectRef, vm: &VirtualMachine) -> Option<PyResult> {
    let hook = HOOK.with(|h| h.borrow().as_ref().map(|(_, hook, _)| hook.clone()))?;
    DEPTH.with(|d| d.set(d.get() + 1));
    let depth = vm.current_recursion_depth();
    vm.set_recursion_depth(0);
    let r = hook.call((arg,), vm);
    vm.set_recursion_depth(depth);
    DEPTH.with(|d| d.set(d.get() - 1));
    Some(r)
}

/// Restores every placeholder, if one is installed. The hook stays
/// installed when it fails (its restore is undone), to be tried again.
pub fn materialize(vm: &VirtualMachine) -> PyResult<()> {
    let Some(r) = call_hook(vm.ctx.none(), vm) else {
        return Ok(());
    };
    r?;
    if DEPTH.with(Cell::get) == 0 {
        clear();
    }
    Ok(())
}

/// `Ok(true)` when `value`, read for `name`, was the placeholder: the hook
/// has run and the caller reads the name again. While a restore runs, a
/// name the hook could not restore is not defined, as it would not be yet.
#[inline]
pub fn resolve(value: &PyObjectRef, name: &Py<PyStr>, vm: &VirtualMachine) -> PyResult<bool> {
    let p = PLACEHOLDER.with(Cell::get);
    if p == 0 || value.as_raw() as usize != p {
        return Ok(false);
    }
    if DEPTH.with(Cell::get) == 0 {
        materialize(vm)?;
        return Ok(true);
    }
    let restored = match call_hook(name.to_owned().into(), vm) {
        Some(r) => r?.try_to_bool(vm)?,
        None => false,
    };
    if restored {
        Ok(true)
    } else {
        Err(vm.new_name_error(format!("name '{name}' is not defined"), name.to_owned()))
    }
}
