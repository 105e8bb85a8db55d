//! What the interpreter would tell a script about the machine, removed: the
//! binary's path and command line (which hold the zygote's configuration),
//! the build's paths, date and compiler, and the host's uptime through the
//! monotonic clocks, which start again from zero at each call instead.

use std::cell::RefCell;

use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine, builtins::PyInt, function::FuncArgs};

/// `sys` attributes that name paths of the host or of the build machine,
/// and what they become.
fn blank_sys(vm: &VirtualMachine) -> PyResult<()> {
    let sys = &vm.sys_module;
    let empty = || vm.ctx.new_str("");
    for name in [
        "executable",
        "_base_executable",
        "prefix",
        "base_prefix",
        "exec_prefix",
        "base_exec_prefix",
    ] {
        sys.set_attr(name, empty(), vm)?;
    }
    sys.set_attr("_stdlib_dir", vm.ctx.none(), vm)?;
    // A script run by `python -c` sees ['-c']; ours has no command line.
    sys.set_attr("argv", vm.ctx.new_list(vec![empty().into()]), vm)?;
    sys.set_attr("orig_argv", vm.ctx.new_list(vec![]), vm)?;
    sys.set_attr("path", vm.ctx.new_list(vec![]), vm)?;
    sys.set_attr("warnoptions", vm.ctx.new_list(vec![]), vm)?;
    sys.set_attr("_xoptions", vm.ctx.new_dict(), vm)?;
    // The version without the build's date and compiler.
    let info = sys.get_attr("version_info", vm)?;
    let part = |i: usize| -> PyResult<String> {
        Ok(info
            .get_item(&i, vm)?
            .str(vm)?
            .to_string_lossy()
            .into_owned())
    };
    let version = format!("{}.{}.{} (main) [RustPython]", part(0)?, part(1)?, part(2)?);
    sys.set_attr("version", vm.ctx.new_str(version), vm)?;
    if sys.get_attr("_git", vm).is_ok() {
        let git = vm.ctx.new_tuple(vec![
            vm.ctx.new_str("RustPython").into(),
            empty().into(),
            empty().into(),
        ]);
        sys.set_attr("_git", git, vm)?;
    }
    Ok(())
}

/// The monotonic clocks' originals and their readings as the current call
/// started. Only the wrappers and [`start_call`] see the originals.
struct Clocks {
    monotonic_ns: PyObjectRef,
    clock_gettime_ns: Option<PyObjectRef>,
    origin: [i128; MONOTONIC_IDS.len()],
}

thread_local! {
    static CLOCKS: RefCell<Option<Clocks>> = const { RefCell::new(None) };
}

/// The highest system clock id (CLOCK_TAI). Negative ids name other
/// processes' and threads' CPU clocks by pid; the wrappers refuse them and
/// the native sandbox's seccomp filter kills for them.
pub const MAX_CLOCK_ID: i32 = 11;

/// Linux's EINVAL (libc is not a dependency on the Worker's wasm32).
const EINVAL: i32 = 22;

/// Linux's clocks that count from boot: MONOTONIC, MONOTONIC_RAW,
/// MONOTONIC_COARSE, BOOTTIME. `monotonic()` and `perf_counter()` read the
/// first. Wall clocks (REALTIME, TAI) and CPU clocks stay as they are.
const MONOTONIC_IDS: [i64; 4] = [1, 4, 6, 7];

impl Clocks {
    /// Clock `id` (an index into [`MONOTONIC_IDS`]) in nanoseconds.
    fn read(&self, id: usize, vm: &VirtualMachine) -> PyResult<i128> {
        let v = match (&self.clock_gettime_ns, id) {
            (Some(c), id) if id > 0 => c.call((MONOTONIC_IDS[id],), vm)?,
            _ => self.monotonic_ns.call((), vm)?,
        };
        v.downcast_ref::<PyInt>()
            .and_then(|i| i128::try_from(i.as_bigint()).ok())
            .ok_or_else(|| vm.new_overflow_error("clock reading out of range"))
    }
}

/// Clock `id` since the call started, in nanoseconds.
fn since_start(id: usize, vm: &VirtualMachine) -> PyResult<i128> {
    let clocks = CLOCKS.with(|c| {
        c.borrow().as_ref().map(|c| {
            (
                c.monotonic_ns.clone(),
                c.clock_gettime_ns.clone(),
                c.origin[id],
            )
        })
    });
    let Some((monotonic_ns, clock_gettime_ns, origin)) = clocks else {
        return Err(vm.new_runtime_error("the sandbox's clocks are not set up"));
    };
    let now = Clocks {
        monotonic_ns,
        clock_gettime_ns,
        origin: [0; MONOTONIC_IDS.len()],
    }
    .read(id, vm)?;
    Ok(now - origin)
}

/// Hides the host's paths and build, and wraps the monotonic clocks of
/// `time` so that each call's clocks start at zero ([`start_call`]).
pub fn hide(vm: &VirtualMachine) -> PyResult<()> {
    blank_sys(vm)?;
    let time = vm.import("time", 0)?;
    let clocks = Clocks {
        monotonic_ns: time.get_attr("monotonic_ns", vm)?,
        clock_gettime_ns: time.get_attr("clock_gettime_ns", vm).ok(),
        origin: [0; MONOTONIC_IDS.len()],
    };
    CLOCKS.with(|c| *c.borrow_mut() = Some(clocks));
    start_call(vm);
    let ns = |name: &'static str| vm.new_function(name, |vm: &VirtualMachine| since_start(0, vm));
    let secs = |name: &'static str| {
        vm.new_function(name, |vm: &VirtualMachine| {
            since_start(0, vm).map(|n| n as f64 / 1e9)
        })
    };
    time.set_attr("monotonic_ns", ns("monotonic_ns"), vm)?;
    time.set_attr("perf_counter_ns", ns("perf_counter_ns"), vm)?;
    time.set_attr("monotonic", secs("monotonic"), vm)?;
    time.set_attr("perf_counter", secs("perf_counter"), vm)?;
    // `clock_getres` reads no time (`as_float` None) but takes the same
    // ids, which seccomp checks the same way.
    for (name, as_float) in [
        ("clock_gettime_ns", Some(false)),
        ("clock_gettime", Some(true)),
        ("clock_getres", None),
    ] {
        let Ok(original) = time.get_attr(name, vm) else {
            continue;
        };
        let wrapper = move |args: FuncArgs, vm: &VirtualMachine| -> PyResult {
            if args.args.len() != 1 || !args.kwargs.is_empty() {
                return original.call(args, vm);
            }
            // Converted once (`__index__` may answer differently each time),
            // and only the converted id goes on.
            let clk = args.args[0].try_index(vm)?;
            let Ok(clk) = i32::try_from(clk.as_bigint()) else {
                return Err(vm.new_overflow_error("Python int too large to convert to C int"));
            };
            // Negative ids are other processes' CPU clocks (seccomp kills
            // the child for them too): CPython's answer for a bad id.
            if !(0..=MAX_CLOCK_ID).contains(&clk) {
                let args = vec![
                    vm.ctx.new_int(EINVAL).into(),
                    vm.ctx.new_str("Invalid argument").into(),
                ];
                return Err(vm.new_exception(vm.ctx.exceptions.os_error.to_owned(), args));
            }
            let monotonic = MONOTONIC_IDS.iter().position(|&m| m == i64::from(clk));
            let (Some(id), Some(as_float)) = (monotonic, as_float) else {
                return original.call((clk,), vm);
            };
            let n = since_start(id, vm)?;
            Ok(if as_float {
                vm.ctx.new_float(n as f64 / 1e9).into()
            } else {
                vm.ctx.new_int(n).into()
            })
        };
        time.set_attr(name, vm.new_function(name, wrapper), vm)?;
    }
    Ok(())
}

/// Restarts the monotonic clocks at zero: called as each script starts.
pub fn start_call(vm: &VirtualMachine) {
    CLOCKS.with(|c| {
        if let Some(clocks) = c.borrow_mut().as_mut() {
            for id in 0..MONOTONIC_IDS.len() {
                clocks.origin[id] = clocks.read(id, vm).unwrap_or(0);
            }
        }
    });
}
