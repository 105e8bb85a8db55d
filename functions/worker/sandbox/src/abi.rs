//! The exports the sandbox Worker calls.
//!
//! Per call the Worker instantiates the (pre-initialized) module, writes the
//! request JSON into memory obtained from `tg_alloc`, and calls `tg_run`,
//! which returns the contract's output JSON as `ptr << 32 | len`. When the
//! instance traps instead (memory limit, a panic, the stack, the sleep
//! deadline, a halt at a tool request), the Worker calls `tg_abort` on the
//! same instance for the answer, with the output captured so far.
//! `tg_walls` reports the walls for `/healthz`, checked in an instance
//! taken as a call would take it.
//!
//! Code mode: the script's tool requests are answered from the request's
//! `exchanges` (an earlier run's, in order); at the first one past them,
//! or one that differs, the script stops there (`host::halt`) and the
//! answer's `tool_request` holds it: the dispatcher answers it and runs
//! the script again with one exchange more.

use std::cell::{RefCell, UnsafeCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustpython_vm::frozen::FrozenLib;
use toolgate_core::allowlist::DEFAULT_MODULES;
use toolgate_core::code::MAX_REQUEST;
use toolgate_core::outcome::{ExecOutput, memory_note, parse_result, timeout_note};
use toolgate_core::truncate::OwnedHeadTail;
use toolgate_core::wire::{Exchange, ToolRequest};
use toolgate_pyvm::vm::{Session, Stream, WarmVm};

use crate::{RunRequest, budget, clock, host};

const STDLIB_LEN: usize = include_bytes!(concat!(env!("OUT_DIR"), "/stdlib.bin")).len();

/// The stdlib subset frozen by build.rs, in writable memory: once the
/// interpreter is warm, the code of every module it imported is zeroed
/// (`drop_imported_code`), and Wizer's snapshot leaves zeroed memory out.
struct Stdlib(UnsafeCell<[u8; STDLIB_LEN]>);

// SAFETY: this wasm32 module has one thread; the bytes are written once,
// inside `wizer.initialize`, and only where no reader remains (see
// `drop_imported_code`).
unsafe impl Sync for Stdlib {}

static STDLIB: Stdlib = Stdlib(UnsafeCell::new(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/stdlib.bin"
))));

fn stdlib() -> &'static [u8] {
    // SAFETY: a shared view of the static; the one write (in
    // `drop_imported_code`) is to code that no view reads afterwards.
    unsafe { &*STDLIB.0.get() }
}

#[derive(Default)]
struct Call {
    stdout: OwnedHeadTail,
    stderr: OwnedHeadTail,
    timeout_secs: u64,
    memory_mb: u64,
}

thread_local! {
    static WARM: RefCell<Option<WarmVm>> = const { RefCell::new(None) };
    static CALL: RefCell<Call> = RefCell::new(Call::default());
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The tool request the script stopped at (code mode).
    static PENDING: RefCell<Option<ToolRequest>> = const { RefCell::new(None) };
    /// How many of the recorded exchanges answered the script (code mode).
    static ANSWERED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The link of a run whose earlier requests `exchanges` answer: the next
/// request is answered from them while it is the recorded one; else the
/// run stops there.
fn replaying(exchanges: Vec<Exchange>) -> toolgate_pyvm::code_mode::Link {
    let mut next = 0usize;
    Box::new(move |request: &[u8]| {
        // Refused here, unread, as the server would: the dispatcher never
        // carries it (each run sends every exchange again).
        if request.len() > MAX_REQUEST {
            return format!(
                r#"{{"error": {{"code": "too_large", "message": "A tool request is at most {MAX_REQUEST} bytes"}}}}"#
            )
            .into_bytes();
        }
        let index = next;
        next += 1;
        match exchanges.get(index) {
            Some(x) if x.request.as_bytes() == request => {
                ANSWERED.with(|a| a.set(index + 1));
                x.answer.clone().into_bytes()
            }
            _ => {
                let request = String::from_utf8_lossy(request).into_owned();
                PENDING.with(|p| *p.borrow_mut() = Some(ToolRequest { index, request }));
                host::halt()
            }
        }
    })
}

/// Set by the first call into this instance. The Worker makes a fresh
/// instance for each call; one that finds this set was handed out twice.
static USED: AtomicBool = AtomicBool::new(false);

fn warm_up() {
    if WARM.with(|w| w.borrow().is_some()) {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let message = info.to_string();
        PANIC.with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                *p = Some(message);
            }
        });
    }));
    let allowed: Vec<String> = DEFAULT_MODULES.iter().map(|s| s.to_string()).collect();
    let stdlib = FrozenLib::from_ref(stdlib());
    let vm = WarmVm::with_stdlib(&allowed, stdlib.decode(), clock::WITHHELD, clock::adapt)
        .unwrap_or_else(|e| panic!("{e}"));
    WARM.with(|w| *w.borrow_mut() = Some(vm));
}

/// Wizer's snapshot point: the module is saved with the warm interpreter.
#[unsafe(export_name = "wizer.initialize")]
pub extern "C" fn wizer_initialize() {
    host::WARMING.store(true, Ordering::Relaxed);
    warm_up();
    drop_imported_code();
    // Free space at the top of the heap, in the snapshot: a call's usual
    // allocations (`print(1)`'s are 1.1 MB, mostly its output buffers)
    // then fit without growing the memory, and the runner can wipe that
    // memory and give it to the next instance (runner.mjs). The block comes
    // from growing the memory and goes back to the allocator's top chunk,
    // zeroed: the snapshot's data grows by nothing.
    // black_box: an allocation nothing uses may be optimized away.
    drop(std::hint::black_box(Vec::<u8>::with_capacity(HEADROOM)));
    host::WARMING.store(false, Ordering::Relaxed);
}

/// The heap's free space at the snapshot. Calls that allocate more grow
/// the memory, and the runner then makes the next instance a fresh one.
const HEADROOM: usize = 8 << 20;

/// Zeroes the frozen code of the modules the warm interpreter has imported:
/// about half of the frozen stdlib, which would otherwise ship twice in the
/// snapshot (as code and as the objects made from it). The interpreter
/// retires those names first, so that nothing reads that code again: they
/// stay in `sys.modules`, which no script can edit, and the module wall
/// answers "no such module" for their frozen code.
fn drop_imported_code() {
    let lib = FrozenLib::from_ref(stdlib());
    let retired = WARM
        .with(|w| {
            w.borrow()
                .as_ref()
                .map(|vm| vm.retire_imported(lib.decode().map(|(name, _)| name)))
        })
        .unwrap_or_else(|| Err("no warm interpreter".into()))
        .unwrap_or_else(|e| panic!("retiring the imported modules' code: {e}"));
    let base = stdlib().as_ptr() as usize;
    let spans: Vec<(usize, usize)> = lib
        .decode()
        .filter(|(name, _)| retired.contains(*name))
        .map(|(_, m)| (m.code.bytes.as_ptr() as usize - base, m.code.bytes.len()))
        .collect();
    let bytes = STDLIB.0.get().cast::<u8>();
    for (offset, len) in spans {
        // SAFETY: `offset..offset + len` is a module's code inside the
        // static (from its own decoding). The interpreter's table still
        // holds a view of it, but the module wall now refuses every route
        // to it for a retired name (`module_wall::Retired`), so that view
        // is never read again; names and other modules' code are untouched.
        unsafe { std::ptr::write_bytes(bytes.add(offset), 0, len) };
    }
}

/// Memory for the request, `len` bytes, handed to `tg_run`.
#[unsafe(no_mangle)]
pub extern "C" fn tg_alloc(len: usize) -> *mut u8 {
    Box::into_raw(vec![0u8; len].into_boxed_slice()).cast()
}

fn hand_out(json: String) -> u64 {
    let bytes = json.into_bytes().into_boxed_slice();
    let len = bytes.len() as u64;
    let ptr = Box::into_raw(bytes) as *mut u8 as usize as u64;
    (ptr << 32) | len
}

fn streams() -> (String, String) {
    CALL.with(|c| match c.try_borrow_mut() {
        Ok(mut c) => (c.stdout.render(), c.stderr.render()),
        // A trap in the middle of a write: the streams are not readable.
        Err(_) => (String::new(), String::new()),
    })
}

fn output(exit_code: i64, result_json: Option<String>) -> ExecOutput {
    let (stdout, stderr) = streams();
    let mut out = ExecOutput {
        stdout,
        stderr,
        exit_code,
        ..ExecOutput::failed()
    };
    if let Some(r) = result_json {
        match parse_result(&r) {
            Ok(v) => out.result = Some(v),
            Err(why) => out.add_note(&format!("[result {why}; it was dropped]\n")),
        }
    }
    out
}

/// The output as the dispatcher reads it (`ExecOutput::from_reply`): the
/// contract's fields, a session's state as `session_state`, and code
/// mode's `extra` fields (`tool_request`, `tool_requests`).
fn to_json(out: &ExecOutput, extra: Option<(&str, serde_json::Value)>) -> String {
    let mut v = serde_json::to_value(out);
    if let (Ok(serde_json::Value::Object(o)), Some(state)) = (&mut v, &out.state) {
        o.insert(
            "session_state".into(),
            toolgate_core::files::encode(state).into(),
        );
    }
    if let (Ok(serde_json::Value::Object(o)), Some((key, value))) = (&mut v, extra) {
        o.insert(key.into(), value);
    }
    v.and_then(|v| serde_json::to_string(&v))
        .unwrap_or_else(|e| {
            format!(
                r#"{{"stdout":"","stderr":"InternalError: {e}","exit_code":1,"timed_out":false}}"#
            )
        })
}

/// Runs the request at `ptr` (from `tg_alloc`) and returns the output JSON.
///
/// # Safety
/// `ptr`/`len` must be exactly what `tg_alloc(len)` returned, filled once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tg_run(ptr: *mut u8, len: usize) -> u64 {
    // SAFETY: the caller passes back tg_alloc's own allocation of `len`.
    let bytes = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) };
    let req: RunRequest = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(e) => {
            let mut out = output(1, None);
            out.add_note(&format!("InternalError: bad sandbox request: {e}\n"));
            return hand_out(to_json(&out, None));
        }
    };
    drop(bytes);
    if let Some(why) = req.refusal() {
        let mut out = output(1, None);
        out.add_note(&format!("InternalError: {why}\n"));
        return hand_out(to_json(&out, None));
    }
    if USED.swap(true, Ordering::Relaxed) {
        // Instance-per-call is a wall: a second call would see the first
        // one's objects, so it is refused rather than run.
        let mut out = output(1, None);
        out.add_note("InternalError: this sandbox instance already ran a call\n");
        return hand_out(to_json(&out, None));
    }
    warm_up();
    CALL.with(|c| {
        *c.borrow_mut() = Call {
            timeout_secs: req.timeout_secs,
            memory_mb: req.memory_mb,
            ..Call::default()
        }
    });
    clock::start_call(req.timeout_secs);
    let seed = req
        .seed
        .as_deref()
        .and_then(|s| u128::from_str_radix(s, 16).ok());
    toolgate_pyvm::code_mode::set_link(req.tools.then(|| replaying(req.exchanges)));
    let outcome = WARM.with(|w| {
        let w = w.borrow();
        let vm = w.as_ref().expect("warmed above");
        vm.reseed();
        // Every run of one call draws the same numbers (code mode runs it
        // again after each tool request).
        if let Some(seed) = seed {
            vm.seed_random(seed);
        }
        vm.vary_layout();
        budget::limit_growth(req.memory_mb);
        let files = toolgate_core::files::from_wire(req.files, u64::MAX).unwrap_or_default();
        let saved = req
            .session
            .map(|s| toolgate_core::files::decode(&s).unwrap_or_default());
        let session = saved.as_deref().map(|state| Session {
            state,
            cap: req.state_cap,
        });
        vm.run(&req.code, &files, req.files_cap, session, |stream, text| {
            CALL.with(|c| {
                let mut c = c.borrow_mut();
                match stream {
                    Stream::Stdout => c.stdout.push_str(text),
                    Stream::Stderr => c.stderr.push_str(text),
                }
            })
        })
    });
    budget::lift();
    let mut out = output(outcome.exit_code, outcome.result_json);
    if !outcome.files.is_empty() {
        out.files = Some(toolgate_core::files::to_json(&outcome.files));
    }
    out.state = outcome.state;
    // How many recorded exchanges this run used: fewer than were sent
    // means it took another path (the dispatcher says so).
    let used = req
        .tools
        .then(|| ("tool_requests", ANSWERED.with(|a| a.get()).into()));
    hand_out(to_json(&out, used))
}

/// `/healthz`'s walls, checked in this instance as a call would get it:
/// whether it is fresh (no call ran in it), and the capability gap and the
/// scrub as the warm interpreter holds them.
#[unsafe(no_mangle)]
pub extern "C" fn tg_walls() -> u64 {
    let fresh = !USED.swap(true, Ordering::Relaxed);
    warm_up();
    let (capability_gap, scrub) = WARM.with(|w| {
        w.borrow()
            .as_ref()
            .map(|vm| vm.check_walls())
            .unwrap_or_default()
    });
    hand_out(
        serde_json::json!({
            "fresh_instance": fresh,
            "capability_gap": capability_gap,
            "scrub": scrub,
        })
        .to_string(),
    )
}

/// The answer after a trap. `why` is 1 when the Worker's deadline import
/// threw (a sleep past the timeout), 2 when its halt import did (a tool
/// request to answer); `stack` is non-zero when the engine's stack ran out.
#[unsafe(no_mangle)]
pub extern "C" fn tg_abort(why: u32, stack: u32) -> u64 {
    budget::lift();
    let (timeout_secs, memory_mb) = CALL.with(|c| {
        c.try_borrow()
            .map(|c| (c.timeout_secs, c.memory_mb))
            .unwrap_or_default()
    });
    let mut out = output(1, None);
    if why == 2 {
        // Stopped at a tool request: not the script's end.
        out.exit_code = -1;
        let pending = PENDING.with(|p| p.try_borrow_mut().ok().and_then(|mut p| p.take()));
        let pending = pending.and_then(|t| serde_json::to_value(t).ok());
        return hand_out(to_json(&out, pending.map(|t| ("tool_request", t))));
    }
    if why == 1 {
        out.exit_code = -1;
        out.timed_out = true;
        out.add_note(&timeout_note(Duration::from_secs(timeout_secs)));
    } else if budget::OOM.load(Ordering::Relaxed) {
        out.add_note(&memory_note(memory_mb));
    } else if stack != 0 {
        out.add_note(
            "RecursionError: maximum recursion depth exceeded (the Worker's stack ran out)\n",
        );
    } else {
        let why = PANIC
            .with(|p| p.try_borrow().ok().and_then(|p| p.clone()))
            .unwrap_or_else(|| "the interpreter trapped".to_owned());
        out.add_note(&format!("InternalError: the interpreter failed: {why}\n"));
    }
    hand_out(to_json(&out, None))
}
