//! A session's globals inside the sealed child (docs/contracts.md#sessions):
//! restored before the script, saved after it, by `state.py`. Saved state
//! is untrusted (a script made it), so it is read only here, under the
//! same walls as the script.
//!
//! Functions travel as the place of their code in a source the session
//! compiled. While a session call runs, `compile`, `exec` and `eval` of
//! source text record it (outside sessions they are the interpreter's own,
//! untouched); a restore compiles it again, so no code object is ever built
//! from saved bytes.

use std::cell::Cell;

use rustpython_vm::{
    PyObjectRef, PyResult, VirtualMachine,
    builtins::{PyBytes, PyCode, PyDictRef, PyList, PyStr, PyTuple},
    compiler::Mode,
    function::FuncArgs,
    lazy_globals,
    scope::Scope,
};

const STATE_PY: &str = include_str!("state.py");

/// The module's name in `sys.modules`: the pickler names its restorers by it.
const MODULE: &str = "_toolgate_state";

thread_local! {
    /// A session call is running: compiled sources are recorded.
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}

/// What a save gives back.
pub struct Saved {
    /// The state, for the server to store.
    pub blob: Vec<u8>,
    /// Globals not carried, with why: (name, reason).
    pub dropped: Vec<(String, String)>,
}

/// `state.py`'s entry points, kept from warm-up.
pub(super) struct StateCarrier {
    register_script: PyObjectRef,
    start: PyObjectRef,
    save: PyObjectRef,
    load: PyObjectRef,
    should_compact: PyObjectRef,
    /// What an unrestored name holds, and the hook that restores them all.
    placeholder: PyObjectRef,
    restore: PyObjectRef,
}

fn arg(args: &FuncArgs, pos: usize, name: &str) -> Option<PyObjectRef> {
    args.args
        .get(pos)
        .cloned()
        .or_else(|| args.kwargs.get(name).cloned())
}

fn is_source(o: &PyObjectRef) -> bool {
    o.downcast_ref::<PyStr>().is_some() || o.downcast_ref::<PyBytes>().is_some()
}

impl StateCarrier {
    /// Defines the module and wraps `compile`, `exec` and `eval` so that a
    /// session call's sources are recorded.
    pub fn install(vm: &VirtualMachine) -> PyResult<Self> {
        let ns = vm.ctx.new_dict();
        ns.set_item("__name__", vm.ctx.new_str(MODULE).into(), vm)?;
        let code = vm
            .compile(STATE_PY, Mode::Exec, "<toolgate-state>")
            .map_err(|e| e.into_pyexception(vm, Some(STATE_PY)))?;
        let module = vm.new_module(MODULE, ns.clone(), None);
        vm.sys_module
            .get_attr("modules", vm)?
            .set_item(MODULE, module.into(), vm)?;
        vm.run_code_obj(code, Scope::with_builtins(None, ns.clone(), vm))?;
        let register = ns.get_item("_register", vm)?;
        wrap_compilers(vm, &register)?;
        let materialize = ns.get_item("_materialize", vm)?;
        // `lazy_globals`'s hook: restores all (None) or, during a restore,
        // what holds one name; says whether that name has its value.
        let restore = vm.new_function(
            "_toolgate_restore",
            move |name: PyObjectRef, vm: &VirtualMachine| -> PyResult<bool> {
                let out = materialize.call((name,), vm)?;
                let out = out
                    .downcast_ref::<PyTuple>()
                    .filter(|t| t.len() == 2)
                    .ok_or_else(|| vm.new_type_error("the restore returned no pair"))?;
                for note in lost_notes(vm, &out.as_slice()[0]) {
                    super::vm::emit(super::vm::Stream::Stderr, &note);
                }
                out.as_slice()[1].clone().try_to_bool(vm)
            },
        );
        Ok(Self {
            register_script: ns.get_item("_register_script", vm)?,
            start: ns.get_item("_start", vm)?,
            save: ns.get_item("_save", vm)?,
            load: ns.get_item("_load", vm)?,
            should_compact: ns.get_item("_should_compact", vm)?,
            placeholder: ns.get_item("_PENDING", vm)?.get_item(&0, vm)?,
            restore: restore.into(),
        })
    }

    /// Indexes every object the loaded modules expose, so that the state
    /// names them instead of copying them, and takes the allowlist (the
    /// modules a state may hold as values). Runs last in the warm-up, after
    /// the scrub and the walls: the table must hold nothing they removed.
    pub fn know_modules(vm: &VirtualMachine, allowed: &[String]) -> PyResult<()> {
        let list = |names: &mut dyn Iterator<Item = &str>| {
            vm.ctx
                .new_list(names.map(|n| vm.ctx.new_str(n).into()).collect())
        };
        let allowed = list(&mut allowed.iter().map(String::as_str));
        let forbidden = list(&mut toolgate_core::allowlist::FORBIDDEN_MODULES.iter().copied());
        vm.sys_module
            .get_attr("modules", vm)?
            .get_item(MODULE, vm)?
            .get_attr("_know_modules", vm)?
            .call((allowed, forbidden), vm)
            .map(drop)
    }

    /// Starts a session call from `blob` (empty: a new session) and
    /// records the script's own source. The names are bound to a
    /// placeholder, restored all at once when the script first needs one
    /// (`lazy_globals`); when restoring would run the script's code, or the
    /// state holds a dunder the interpreter reads itself, they are restored
    /// now. Returns notes for stderr: what could not be restored, or that
    /// nothing could.
    pub fn begin(&self, vm: &VirtualMachine, globals: &PyDictRef, blob: &[u8]) -> Vec<String> {
        lazy_globals::clear();
        RECORDING.with(|r| r.set(true));
        let _ = self.start.call((), vm);
        if blob.is_empty() {
            return Vec::new();
        }
        match self
            .load
            .call((globals.clone(), vm.ctx.new_bytes(blob.to_vec())), vm)
        {
            Ok(lost) if vm.is_none(&lost) => {
                // The import guard reads no namespace; a script's own `__import__` would.
                let import = vm
                    .builtins
                    .get_attr("__import__", vm)
                    .unwrap_or_else(|_| vm.ctx.none());
                lazy_globals::install(self.placeholder.clone(), self.restore.clone(), import);
                Vec::new()
            }
            Ok(lost) => lost_notes(vm, &lost),
            Err(e) => vec![format!(
                "[session: the saved state could not be restored ({}); this call started without it]\n",
                super::vm::describe(vm, &e)
            )],
        }
    }

    /// Records the script's source, compiled to `code` under `filename`.
    pub fn record_script(
        &self,
        vm: &VirtualMachine,
        source: &str,
        filename: &str,
        code: PyObjectRef,
    ) {
        let _ = self
            .register_script
            .call((vm.ctx.new_str(source), vm.ctx.new_str(filename), code), vm);
    }

    /// Ends a session call: saves `globals`. `Err` when the state could not
    /// be written at all (the session then keeps its state from before).
    pub fn end(&self, vm: &VirtualMachine, globals: &PyDictRef) -> Result<Saved, String> {
        if lazy_globals::active()
            && self
                .should_compact
                .call((), vm)
                .is_ok_and(|c| c.try_to_bool(vm).unwrap_or(true))
        {
            let _ = lazy_globals::materialize(vm);
        }
        RECORDING.with(|r| r.set(false));
        // The hook stays while saving: code the save runs may read a name.
        let out = self.save.call((globals.clone(),), vm);
        lazy_globals::clear();
        let out = out.map_err(|e| super::vm::describe(vm, &e))?;
        let _ = self.start.call((), vm);
        let t = out
            .downcast_ref::<PyTuple>()
            .filter(|t| t.len() == 2)
            .ok_or("the saver returned no state")?;
        let blob = t.as_slice()[0]
            .downcast_ref::<PyBytes>()
            .ok_or("the saver returned no bytes")?
            .as_bytes()
            .to_vec();
        Ok(Saved {
            blob,
            dropped: pairs(vm, &t.as_slice()[1]),
        })
    }
}

/// What a restore lost, as notes for stderr.
fn lost_notes(vm: &VirtualMachine, lost: &PyObjectRef) -> Vec<String> {
    pairs(vm, lost)
        .into_iter()
        .map(|(name, why)| {
            format!("[session: {name:?} could not be restored, and is gone: {why}]\n")
        })
        .collect()
}

/// A Python list of (str, str) pairs; anything else in it is skipped.
fn pairs(vm: &VirtualMachine, list: &PyObjectRef) -> Vec<(String, String)> {
    let Some(list) = list.downcast_ref::<PyList>() else {
        return Vec::new();
    };
    list.borrow_vec()
        .iter()
        .filter_map(|p| {
            let t = p.downcast_ref::<PyTuple>()?;
            let s = |i: usize| {
                t.as_slice()
                    .get(i)
                    .and_then(|o| o.str(vm).ok())
                    .map(|s| s.to_string_lossy().into_owned())
            };
            Some((s(0)?, s(1)?))
        })
        .collect()
}

/// Replaces `compile`, `exec` and `eval` by native functions that call the
/// originals, recording source text during a session call. Native, so that
/// `exec` and `eval` still find the caller's frame for their defaults.
fn wrap_compilers(vm: &VirtualMachine, register: &PyObjectRef) -> PyResult<()> {
    let compile = vm.builtins.get_attr("compile", vm)?;
    {
        let (original, register) = (compile.clone(), register.clone());
        let f = vm.new_function(
            "compile",
            move |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
                let source = arg(&args, 0, "source");
                let filename = arg(&args, 1, "filename");
                let mode = arg(&args, 2, "mode");
                let flags = arg(&args, 3, "flags").unwrap_or_else(|| vm.ctx.new_int(0).into());
                let optimize =
                    arg(&args, 5, "optimize").unwrap_or_else(|| vm.ctx.new_int(-1).into());
                let code = original.call(args, vm)?;
                if RECORDING.with(Cell::get)
                    && code.downcast_ref::<PyCode>().is_some()
                    && let (Some(s), Some(f), Some(m)) = (source, filename, mode)
                    && is_source(&s)
                    && f.downcast_ref::<PyStr>().is_some()
                {
                    register.call((s, f, m, code.clone(), flags, optimize), vm)?;
                }
                Ok(code)
            },
        );
        vm.builtins.set_attr("compile", f, vm)?;
    }
    for (name, mode) in [("exec", "exec"), ("eval", "eval")] {
        let original = vm.builtins.get_attr(name, vm)?;
        let (compile, register) = (compile.clone(), register.clone());
        let f = vm.new_function(
            name,
            move |mut args: FuncArgs, vm: &VirtualMachine| -> PyResult {
                if RECORDING.with(Cell::get)
                    && let Some(s) = args.args.first().cloned()
                    && is_source(&s)
                {
                    // eval() drops leading spaces and tabs first, as CPython's does.
                    let s = if mode == "eval" {
                        strip_indent(vm, s)
                    } else {
                        s
                    };
                    let filename: PyObjectRef = vm.ctx.new_str("<string>").into();
                    let code = compile.call((s.clone(), filename.clone(), mode), vm)?;
                    register.call((s, filename, mode, code.clone()), vm)?;
                    args.args[0] = code;
                }
                original.call(args, vm)
            },
        );
        vm.builtins.set_attr(name, f, vm)?;
    }
    Ok(())
}

fn strip_indent(vm: &VirtualMachine, s: PyObjectRef) -> PyObjectRef {
    if let Some(t) = s.downcast_ref::<PyStr>()
        && let Some(text) = t.to_str()
    {
        return vm.ctx.new_str(text.trim_start_matches([' ', '\t'])).into();
    }
    if let Some(b) = s.downcast_ref::<PyBytes>() {
        let bytes = b.as_bytes();
        let start = bytes
            .iter()
            .position(|c| *c != b' ' && *c != b'\t')
            .unwrap_or(bytes.len());
        return vm.ctx.new_bytes(bytes[start..].to_vec()).into();
    }
    s
}

/// For a traceback during a session call: the source line of each frame
/// of `exc` that an earlier call's script defined, in print order, as
/// (line number, function name, the line's text). Empty outside sessions.
pub(super) fn earlier_lines(
    vm: &VirtualMachine,
    exc: &rustpython_vm::builtins::PyBaseExceptionRef,
    filename: &str,
) -> Vec<(usize, String, String)> {
    if !RECORDING.with(Cell::get) {
        return Vec::new();
    }
    let Ok(line_of) = vm
        .sys_module
        .get_attr("modules", vm)
        .and_then(|m| m.get_item(MODULE, vm))
        .and_then(|m| m.get_attr("_source_line", vm))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut tb = exc.__traceback__().map(PyObjectRef::from);
    while let Some(t) = tb.take() {
        let code = t
            .get_attr("tb_frame", vm)
            .and_then(|f| f.get_attr("f_code", vm));
        let lineno = t.get_attr("tb_lineno", vm);
        if let (Ok(code), Ok(lineno)) = (code, lineno) {
            let ours = code
                .get_attr("co_filename", vm)
                .ok()
                .and_then(|f| {
                    f.downcast_ref::<PyStr>()
                        .map(|s| s.to_string_lossy() == filename)
                })
                .unwrap_or(false);
            if ours {
                let name = code
                    .get_attr("co_name", vm)
                    .ok()
                    .and_then(|n| {
                        n.downcast_ref::<PyStr>()
                            .map(|s| s.to_string_lossy().into_owned())
                    })
                    .unwrap_or_default();
                let n = lineno.try_index(vm).ok().and_then(|i| {
                    use num_traits::ToPrimitive;
                    i.as_bigint().to_usize()
                });
                if let (Some(n), Ok(text)) = (n, line_of.call((code, lineno), vm))
                    && let Some(text) = text.downcast_ref::<PyStr>()
                {
                    out.push((n, name, text.to_string_lossy().into_owned()));
                }
            }
        }
        tb = t.get_attr("tb_next", vm).ok().filter(|n| !vm.is_none(n));
    }
    out
}
