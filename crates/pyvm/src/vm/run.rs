//! One script in the warm interpreter: a fresh `__main__`, its files and
//! session state, its output and outcome.

use std::cell::Cell;

use rustpython_vm::builtins::PyDictRef;
use rustpython_vm::compiler::Mode;
use rustpython_vm::scope::Scope;
use rustpython_vm::{PyObjectRef, VirtualMachine};

use super::{RunOutcome, SCRIPT_NAME, Session, Stream, emit};
use crate::state::StateCarrier;
use crate::{result, traceback};
use toolgate_core::files::Files;

thread_local! {
    static SETTLED: Cell<Option<fn()>> = const { Cell::new(None) };
}

/// Has `hook` called on this thread as each run's outcome (output, result,
/// state) is taken, before the script's objects are dropped: a process
/// that runs one script and exits uses it to skip freeing their memory.
pub fn when_settled(hook: Option<fn()>) {
    SETTLED.with(|s| s.set(hook));
}

pub(super) fn run_in(
    vm: &VirtualMachine,
    source: &str,
    dumps: &PyObjectRef,
    session: Option<(&StateCarrier, Session<'_>)>,
) -> RunOutcome {
    let globals: PyDictRef = vm.ctx.new_dict();
    let _ = globals.set_item("__name__", vm.ctx.new_str("__main__").into(), vm);
    let scope = Scope::with_builtins(None, globals.clone(), vm);
    if let Some((carrier, s)) = session {
        for note in carrier.begin(vm, &globals, s.state) {
            emit(Stream::Stderr, &note);
        }
    }

    let ran = vm
        .compile(source, Mode::Exec, SCRIPT_NAME)
        .map_err(|e| traceback::with_source_line(vm, e.into_pyexception(vm, Some(source)), source))
        .and_then(|code| {
            if let Some((carrier, _)) = session {
                carrier.record_script(vm, source, SCRIPT_NAME, code.clone().into());
            }
            vm.run_code_obj(code, scope)
        });
    let exit_code = match ran {
        Ok(_) => 0,
        Err(exc) => traceback::exit_code_for(vm, &exc, source),
    };
    // A `result` the script never read is restored here (with the rest);
    // one that cannot be is no result.
    let result = match globals.get_item_opt("result", vm) {
        Ok(Some(v)) => {
            match rustpython_vm::lazy_globals::resolve(&v, vm.ctx.intern_str("result"), vm) {
                Ok(false) => Ok(Some(v)),
                Ok(true) => globals.get_item_opt("result", vm),
                Err(_) => Ok(None),
            }
        }
        other => other,
    };
    let result_json = match result {
        Ok(Some(v)) if !vm.is_none(&v) => Some(result::to_json(vm, &v, dumps, |note| {
            emit(Stream::Stderr, note)
        })),
        _ => None,
    };
    // As in one interpreter, what ran before an exception stays defined.
    let state = session.and_then(|(carrier, s)| match carrier.end(vm, &globals) {
        Ok(saved) => {
            for (name, why) in &saved.dropped {
                emit(
                    Stream::Stderr,
                    &format!("[session: {name:?} was not kept: {why}]\n"),
                );
            }
            if saved.blob.len() as u64 > s.cap {
                emit(
                    Stream::Stderr,
                    &format!(
                        "[session: the state was not saved: {} bytes, over the limit of {} \
                         (TOOLGATE_PYTHON_SESSION_MAX_STATE_MB); the session keeps its state \
                         from before this call]\n",
                        saved.blob.len(),
                        s.cap
                    ),
                );
                return None;
            }
            Some(saved.blob)
        }
        Err(why) => {
            emit(
                Stream::Stderr,
                &format!("[session: nothing was saved ({why}); the session keeps its state from before this call]\n"),
            );
            None
        }
    });
    if let Some(hook) = SETTLED.with(Cell::get) {
        hook();
    }
    RunOutcome {
        files: Files::new(),
        exit_code,
        result_json,
        state,
    }
}
