//! The Python layer of the sandbox: a warm RustPython interpreter with the
//! import guard and the scrub installed, and the run of one script in it.
//!
//! Nothing here touches processes or the OS. Isolation (fork, rlimits,
//! seccomp, the kill at the deadline) is layered around it by `zygote` and
//! `child`, so that the same runner can serve a runtime without fork.

use std::cell::RefCell;

use rustpython_vm::{
    Interpreter, InterpreterBuilder, PyObjectRef, PyResult, VirtualMachine,
    builtins::PyBaseExceptionRef, frozen::FrozenModule,
};

use super::files::FileStore;
use super::stand_ins;
use super::state::StateCarrier;
use super::{engine_fixes, guard, host_facts, module_set, module_wall, scrub};
use toolgate_core::files::Files;

mod run;
use run::run_in;
pub use run::when_settled;

/// The filename user code is compiled under; tracebacks name it.
pub const SCRIPT_NAME: &str = "<agent_script>";

/// A script's output stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// `sys.stdout`.
    Stdout,
    /// `sys.stderr`, where tracebacks go too.
    Stderr,
}

type Sink = Box<dyn FnMut(Stream, &str)>;

thread_local! {
    /// Where `sys.stdout`/`sys.stderr` writes go during a run.
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// Sends text to the current run's sink; text written outside a run is dropped.
pub(super) fn emit(stream: Stream, text: &str) {
    SINK.with(|s| {
        if let Some(sink) = s.borrow_mut().as_mut() {
            sink(stream, text);
        }
    });
}

/// A session call's state going in.
#[derive(Debug, Clone, Copy)]
pub struct Session<'a> {
    /// The state saved by the session's last call; empty when new.
    pub state: &'a [u8],
    /// The most state that may be saved, in bytes.
    pub cap: u64,
}

/// How one script ended, apart from its output streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// The files the script created or changed.
    pub files: Files,
    /// 0 when the script ran to its end, `SystemExit`'s code when it raised
    /// that, else 1 (the traceback is on stderr).
    pub exit_code: i64,
    /// `json.dumps(result, allow_nan=False)`, or the JSON string of its repr.
    pub result_json: Option<String>,
    /// A session call's globals, saved after the script (`None` outside a
    /// session, or when they could not be saved: stderr says why).
    pub state: Option<Vec<u8>>,
}

/// The warm interpreter: every allowlisted module imported, stdout and stderr
/// captured, the guard installed and the scrub done.
pub struct WarmVm {
    interp: Interpreter,
    dumps: PyObjectRef,
    files: FileStore,
    state: StateCarrier,
    reseed: Option<PyObjectRef>,
    retired: module_wall::Retired,
    /// The VM's user-signal channel: a closure sent here runs on the
    /// interpreter's thread at the next bytecode boundary (see `child`).
    #[cfg(feature = "process")]
    stop: rustpython_vm::signal::UserSignalSender,
}

const PREFAULT_PY: &str = r#"
def _f(n):
    return [str(i) + "x" for i in range(n)]
print("warm", len(_f(3)), {"k": 1.5}, end="")
result = {"a": [1, 2.5, "s", None, True], "b": _f(2)}
"#;

const PREFAULT_SESSION_PY: &str = r#"
def _f(n):
    return n
_s = [{"k": _f(1), "v": 2.5, "s": "x"}, (None, True)]
"#;

pub(super) fn settings() -> rustpython_vm::Settings {
    let mut s = rustpython_vm::Settings::default();
    s.install_signal_handlers = false;
    s.import_site = false;
    s.isolated = true;
    s.ignore_environment = true;
    s.user_site_directory = false;
    s.write_bytecode = false;
    s.safe_path = true;
    s.allow_external_library = false;
    s
}

/// The stdlib as the process sandbox freezes it: RustPython's `Lib` with
/// `crates/pyvm/python`'s versions of some modules, less the packages no module
/// set can hold (build.rs).
#[cfg(feature = "process")]
static STDLIB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/stdlib.bin"));

/// [`STDLIB`], decoded.
#[cfg(feature = "process")]
pub fn frozen_stdlib() -> impl Iterator<Item = (&'static str, FrozenModule)> {
    rustpython_vm::frozen::FrozenLib::from_ref(STDLIB).decode()
}

impl WarmVm {
    /// Builds the interpreter on the frozen stdlib and warms it.
    /// `allowed` is the full allowlist; a module that cannot be imported is
    /// an error naming it.
    #[cfg(feature = "process")]
    pub fn new(allowed: &[String]) -> Result<Self, String> {
        Self::with_stdlib(allowed, frozen_stdlib(), &[], |_| Ok(()))
    }

    /// Builds the interpreter on `stdlib` (the Worker freezes only what the
    /// allowlist needs), runs `adapt` for the runtime's own definitions
    /// before anything else is imported, and warms it.
    pub fn with_stdlib(
        allowed: &[String],
        stdlib: impl IntoIterator<Item = (&'static str, FrozenModule)>,
        withheld: &[&str],
        adapt: impl FnOnce(&VirtualMachine) -> PyResult<()>,
    ) -> Result<Self, String> {
        // Scripts are written for CPython 3.13: its grammar, not 3.14's
        // (the frozen stdlib was compiled at build time and is not affected).
        rustpython_vm::compiler::use_python_3_13_grammar(true);
        let mut s = settings();
        // A fixed hash seed where there is no entropy while warming (the
        // Worker's snapshot); randomness that matters is reseeded per call.
        if cfg!(target_arch = "wasm32") {
            s.hash_seed = Some(0);
        }
        let builder = InterpreterBuilder::new().settings(s);
        #[cfg(feature = "process")]
        let (stop, stop_rx) = rustpython_vm::signal::user_signal_channel();
        #[cfg(feature = "process")]
        let builder = builder.init_hook(move |vm| vm.set_user_signal_channel(stop_rx));
        // The module wall's floor: no module outside the set exists in this
        // interpreter, so no route can create one.
        // `withheld`: modules of the set a runtime must not have (the
        // Worker's native `_datetime` reads the host's clock).
        let mut closure = module_set::closure(allowed);
        closure.retain(|m| !withheld.contains(&m.as_str()));
        let kept = closure.clone();
        let builder = builder.init_hook(move |vm| module_set::keep_only(vm, &kept));
        let defs = rustpython_stdlib::stdlib_module_defs(&builder.ctx);
        let interp = builder
            .add_native_modules(&defs)
            .add_frozen_modules(stdlib)
            .build();
        let Warmed {
            dumps,
            reseed,
            files,
            state,
            retired,
        } = interp.enter(|vm| {
            adapt(vm)
                .and_then(|()| warm(vm, allowed, closure))
                .map_err(|e| format!("sandbox warm-up failed: {}", describe(vm, &e)))
        })?;
        Ok(Self {
            interp,
            dumps,
            files,
            state,
            reseed,
            retired,
            #[cfg(feature = "process")]
            stop,
        })
    }

    /// The interpreter, for tests that look inside it.
    #[cfg(test)]
    pub(crate) fn interp(&self) -> &Interpreter {
        &self.interp
    }

    /// Retires the frozen code of the modules among `frozen` that are
    /// imported now (see [`module_wall::Retired`]) and returns their names:
    /// nothing reads that code afterwards, so the caller may drop it. Once
    /// per interpreter; a second call retires nothing.
    pub fn retire_imported<'a>(
        &self,
        frozen: impl IntoIterator<Item = &'a str>,
    ) -> Result<std::collections::BTreeSet<String>, String> {
        let loaded = self.interp.enter(|vm| -> PyResult<Vec<String>> {
            let modules = vm.sys_module.get_attr("modules", vm)?;
            let names: Vec<PyObjectRef> = vm.call_method(&modules, "keys", ())?.try_to_value(vm)?;
            Ok(names
                .iter()
                .filter_map(|n| n.downcast_ref::<rustpython_vm::builtins::PyStr>())
                .filter_map(|s| s.to_str().map(str::to_owned))
                .collect())
        });
        let loaded: std::collections::BTreeSet<String> = loaded
            .map_err(|_| "sys.modules could not be read".to_owned())?
            .into_iter()
            .collect();
        let retired: std::collections::BTreeSet<String> = frozen
            .into_iter()
            .filter(|n| loaded.contains(*n))
            .map(str::to_owned)
            .collect();
        self.retired
            .set(retired.clone())
            .map_err(|_| "the frozen code was retired already".to_owned())?;
        Ok(retired)
    }

    /// The walls this interpreter can vouch for, checked now: no host module
    /// is compiled in (the capability gap, also no `_io.FileIO`), and the
    /// scrub holds. What `/healthz` reports for them.
    pub fn check_walls(&self) -> (bool, bool) {
        self.interp.enter(|vm| {
            // Unreadable names vouch for nothing.
            let no_host_module = vm
                .sys_module
                .get_attr("builtin_module_names", vm)
                .and_then(|names| names.try_into_value::<Vec<String>>(vm))
                .is_ok_and(|names| super::scrub::capability_gap(&names));
            let no_file_io = super::scrub::loaded(vm, "_io")
                .is_some_and(|io| io.get_attr("FileIO", vm).is_err());
            (no_host_module && no_file_io, super::scrub::verify(vm))
        })
    }

    /// Gives the process fresh randomness; forked children call this so that
    /// they do not share the zygote's `random` state. The seed comes from
    /// getrandom, not from `random.seed()`: that draws on a thread-local RNG
    /// whose state fork copies too.
    pub fn reseed(&self) {
        // `random.Random()` and `random.seed()` seed from rand's thread RNG,
        // whose state fork (and the Worker's snapshot) copies as well.
        let _ = rand::rng().reseed();
        if self.reseed.is_none() {
            return;
        }
        let mut bytes = [0u8; 16];
        if getrandom::fill(&mut bytes).is_err() {
            return;
        }
        self.seed_random(u128::from_le_bytes(bytes));
    }

    /// Seeds `random` with `value`: the server's seed for a script that
    /// may be run again from its journal (code mode), so that it draws the
    /// same numbers again.
    pub fn seed_random(&self, value: u128) {
        let Some(seed) = &self.reseed else { return };
        self.interp.enter(|vm| {
            let _ = seed.call((vm.ctx.new_int(value),), vm);
        });
    }

    /// Moves where a call's first objects land. RustPython keeps freed
    /// lists, dicts, tuples, floats and ints on per-type free lists that
    /// fork copies, so each call's first `[]` would reuse the same object at
    /// the same address. Taking (and keeping) a random number, 0–31, of each
    /// kind from its list (filled first) changes that; the heap below is
    /// varied by the child (`child::vary_heap`).
    pub fn vary_layout(&self) {
        let mut r = [0u8; 5];
        if getrandom::fill(&mut r).is_err() {
            return;
        }
        self.interp.enter(|vm| {
            let ctx = &vm.ctx;
            // Fill each list first with 32 objects (freed, they go on top):
            // a list the warm-up left short would otherwise run dry, and the
            // next object come from the same heap address every call (the
            // Worker, whose heap does not move: 4 of 6 `id([])` alike).
            let fill =
                |make: &dyn Fn() -> PyObjectRef| drop((0..32).map(|_| make()).collect::<Vec<_>>());
            fill(&|| ctx.new_list(Vec::new()).into());
            fill(&|| ctx.new_dict().into());
            fill(&|| ctx.new_tuple(vec![ctx.none()]).into());
            fill(&|| ctx.new_float(0.5).into());
            fill(&|| ctx.new_int(1_000_000).into());
            let mut kept: Vec<PyObjectRef> = Vec::new();
            for _ in 0..r[0] % 32 {
                kept.push(ctx.new_list(Vec::new()).into());
            }
            for _ in 0..r[1] % 32 {
                kept.push(ctx.new_dict().into());
            }
            for _ in 0..r[2] % 32 {
                kept.push(ctx.new_tuple(vec![ctx.none()]).into());
            }
            for _ in 0..r[3] % 32 {
                kept.push(ctx.new_float(0.5).into());
            }
            for _ in 0..r[4] % 32 {
                kept.push(ctx.new_int(1_000_000).into());
            }
            // Never freed, so never back on a free list; the child's exit
            // reclaims them.
            std::mem::forget(kept);
        });
    }

    /// Runs a throwaway script whose output is discarded. A forked child calls
    /// this while it waits for its call: the pages that every run writes
    /// (refcounts of builtins, the compiler, the json encoder) are copied
    /// then, not on the call's critical path. It leaves nothing behind: the
    /// namespace is dropped, and the script changes no shared object.
    pub fn prefault(&self) {
        let _ = self.run(PREFAULT_PY, &Files::new(), 0, None, |_, _| {});
        // A session's save, restore and lazy save touch pages of their own.
        let session = |state| {
            Some(Session {
                state,
                cap: u64::MAX,
            })
        };
        let first = self.run(
            PREFAULT_SESSION_PY,
            &Files::new(),
            0,
            session(&[]),
            |_, _| {},
        );
        if let Some(state) = first.state {
            for script in ["_n = 1", "_n = _s"] {
                let _ = self.run(script, &Files::new(), 0, session(&state), |_, _| {});
            }
        }
    }

    /// A handle that interrupts a running script: `f` sent through it runs
    /// on the interpreter's thread at the next bytecode boundary. Native
    /// built-ins do not reach one until they return.
    #[cfg(feature = "process")]
    pub fn stopper(&self) -> rustpython_vm::signal::UserSignalSender {
        self.stop.clone()
    }

    /// Runs `source` in a fresh `__main__` namespace with `files` to
    /// `open`, sending output to `sink`. In a session (`session` is its
    /// saved state, empty when new) the namespace starts from the state and
    /// is saved after.
    pub fn run(
        &self,
        source: &str,
        files: &Files,
        files_cap: u64,
        session: Option<Session<'_>>,
        sink: impl FnMut(Stream, &str) + 'static,
    ) -> RunOutcome {
        SINK.with(|s| *s.borrow_mut() = Some(Box::new(sink)));
        // A fresh process (or Worker instance) starts with an empty store.
        if !files.is_empty() {
            let given = self
                .interp
                .enter(|vm| self.files.reset(vm, files).map_err(|e| describe(vm, &e)));
            if let Err(why) = given {
                emit(
                    Stream::Stderr,
                    &format!("InternalError: the files could not be given: {why}\n"),
                );
                SINK.with(|s| *s.borrow_mut() = None);
                return RunOutcome {
                    files: Files::new(),
                    exit_code: 1,
                    result_json: None,
                    state: None,
                };
            }
            // What giving them freed would be the script's first objects
            // of their kinds, at the same place on every call.
            self.vary_layout();
        }
        let outcome = self.interp.enter(|vm| {
            host_facts::start_call(vm);
            let session = session.map(|s| (&self.state, s));
            let mut o = run_in(vm, source, &self.dumps, session);
            let (files, unnamed) = self.files.collect(vm);
            o.files = files;
            if unnamed > 0 {
                emit(
                    Stream::Stderr,
                    &format!("[{unnamed} files not returned: their names are not UTF-8]\n"),
                );
            }
            emit(
                Stream::Stderr,
                &toolgate_core::files::keep_returnable(&mut o.files, files_cap),
            );
            o
        });
        SINK.with(|s| *s.borrow_mut() = None);
        outcome
    }
}

struct Warmed {
    dumps: PyObjectRef,
    reseed: Option<PyObjectRef>,
    files: FileStore,
    state: StateCarrier,
    retired: module_wall::Retired,
}

fn warm(
    vm: &VirtualMachine,
    allowed: &[String],
    closure: std::collections::BTreeSet<String>,
) -> PyResult<Warmed> {
    stand_ins::install(vm)?;
    let files = FileStore::install(vm)?;
    let state = StateCarrier::install(vm)?;
    super::code_mode::install(vm)?;

    for m in allowed {
        let name = vm.ctx.new_str(m.as_str());
        vm.import(&*name, 0).map_err(|e| {
            vm.new_import_error(
                format!(
                    "allowed module {m:?} cannot be imported in the sandbox: {}",
                    describe(vm, &e)
                ),
                vm.ctx.new_str(m.as_str()),
            )
        })?;
    }
    let json = vm.import("json", 0)?;
    let dumps = json.get_attr("dumps", vm)?;
    let reseed = if allowed.iter().any(|m| m == "random") {
        Some(vm.import("random", 0)?.get_attr("seed", vm)?)
    } else {
        None
    };

    // The module set is what is loaded by now and what the allowlist can
    // still import; the scrub and the host facts import only from it.
    let set = std::sync::Arc::new(module_set::of(vm, closure)?);
    host_facts::hide(vm)?;
    engine_fixes::apply(vm)?;
    scrub::apply(vm)?;
    let retired = module_wall::install(vm, set.clone())?;
    guard::install(vm, allowed, set)?;
    StateCarrier::know_modules(vm, allowed)?;
    // What warm-up made lives as long as the process: out of the cycle
    // collector's reach (CPython's `gc.freeze()` before fork), a script's
    // collections walk only its own objects. Without it, a full collection
    // walked the whole warm image and wrote to its pages, which each forked
    // child then copied: 35-145 ms stalls in a one-shot call. The Worker's
    // snapshot is frozen too (its bundle is no larger since the warm-up's
    // freed memory is zeroed before the snapshot).
    vm.state.gc.collect(2);
    vm.state.gc.freeze();
    Ok(Warmed {
        dumps,
        reseed,
        files,
        state,
        retired,
    })
}

/// A one-line description of an exception, for start-up errors.
pub(super) fn describe(vm: &VirtualMachine, exc: &PyBaseExceptionRef) -> String {
    let mut s = String::new();
    let _ = vm.write_exception(&mut s, exc);
    s.trim_end()
        .lines()
        .last()
        .unwrap_or("unknown error")
        .to_owned()
}

#[cfg(test)]
#[path = "vm_tests.rs"]
mod tests;
