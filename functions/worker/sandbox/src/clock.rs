//! `time` for a host without a usable clock in-process.
//!
//! On wasm32-unknown-unknown RustPython's `monotonic`, `perf_counter`,
//! `time_ns`, `sleep`, `localtime` (and through them `datetime.now()`)
//! panic. Here they read the Worker's `Date.now()` instead. Workers freeze
//! that clock while a request computes, so `sleep` cannot wait: it moves a
//! per-call offset forward, and sleeping past the call's timeout ends the
//! call as a timeout, as the native sandbox's kill would. Local time is UTC,
//! as on Workers. `datetime` uses its pure-Python implementation, which
//! reads the clock through `time`. `gmtime`'s weekday is corrected: RustPython
//! counts it from Sunday on this target (`strftime` and `asctime` recompute
//! it from the date, so they were right).

use std::sync::atomic::{AtomicU64, Ordering};

use rustpython_vm::{
    AsObject, PyResult, VirtualMachine, compiler::Mode, function::ArgIntoFloat, scope::Scope,
};

use crate::host;

/// Milliseconds slept so far in this call, as f64 bits.
static SLEPT_MS: AtomicU64 = AtomicU64::new(0);
/// The call's timeout in milliseconds, as f64 bits.
static TIMEOUT_MS: AtomicU64 = AtomicU64::new(0);

pub fn start_call(timeout_secs: u64) {
    SLEPT_MS.store(0f64.to_bits(), Ordering::Relaxed);
    TIMEOUT_MS.store((timeout_secs as f64 * 1000.0).to_bits(), Ordering::Relaxed);
}

fn slept_ms() -> f64 {
    f64::from_bits(SLEPT_MS.load(Ordering::Relaxed))
}

fn now_ns() -> u64 {
    ((host::now_ms() + slept_ms()) * 1e6) as u64
}

fn sleep(secs: ArgIntoFloat, vm: &VirtualMachine) -> PyResult<()> {
    let secs = secs.into_float();
    if secs.is_nan() || secs < 0.0 {
        return Err(vm.new_value_error("sleep length must be non-negative"));
    }
    let slept = slept_ms() + secs * 1000.0;
    if slept > f64::from_bits(TIMEOUT_MS.load(Ordering::Relaxed)) {
        host::deadline();
    }
    SLEPT_MS.store(slept.to_bits(), Ordering::Relaxed);
    Ok(())
}

const CLOCK_PY: &str = r#"
_gmtime = _t.gmtime
_strftime = _t.strftime
_asctime = _t.asctime

def time():
    return _now_ns() / 1e9

def time_ns():
    return _now_ns()

monotonic = perf_counter = process_time = thread_time = time
monotonic_ns = perf_counter_ns = process_time_ns = thread_time_ns = time_ns

def sleep(secs):
    _sleep(secs)

def gmtime(secs=None):
    t = _gmtime(time() if secs is None else secs)
    # RustPython on wasm32 counts tm_wday from Sunday; Python, from Monday.
    return _t.struct_time((t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min,
                           t.tm_sec, (t.tm_wday + 6) % 7, t.tm_yday, t.tm_isdst,
                           t.tm_zone, t.tm_gmtoff))

localtime = gmtime

def strftime(format, t=None):
    return _strftime(format, gmtime() if t is None else t)

def asctime(t=None):
    return _asctime(gmtime() if t is None else t)

def ctime(secs=None):
    return _asctime(gmtime(secs))

def mktime(t):
    # UTC, days from the civil calendar (H. Hinnant's algorithm).
    y, m, d, H, M, S = t[:6]
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return float((era * 146097 + doe - 719468) * 86400 + H * 3600 + M * 60 + S)
"#;

const REPLACED: &[&str] = &[
    "time",
    "time_ns",
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "process_time",
    "process_time_ns",
    "thread_time",
    "thread_time_ns",
    "sleep",
    "gmtime",
    "localtime",
    "strftime",
    "asctime",
    "ctime",
    "mktime",
];

/// Native modules this sandbox does not have: `_datetime` reads std's
/// clock for `now()`/`today()`; without it `datetime` falls back to
/// `_pydatetime`, which reads `time` below. Withheld from the
/// interpreter's tables, not masked in `sys.modules`, so that no route
/// (deleting the entry, then creating the module) brings it back.
pub const WITHHELD: &[&str] = &["_datetime"];

/// Installs the definitions in `time` before anything imports it.
pub fn adapt(vm: &VirtualMachine) -> PyResult<()> {
    let time = vm.import("time", 0)?;
    let ns = vm.ctx.new_dict();
    ns.set_item("__name__", vm.ctx.new_str("time").into(), vm)?;
    ns.set_item("_t", time.clone(), vm)?;
    ns.set_item("_now_ns", vm.new_function("_now_ns", now_ns).into(), vm)?;
    ns.set_item("_sleep", vm.new_function("_sleep", sleep).into(), vm)?;
    let code = vm
        .compile(CLOCK_PY, Mode::Exec, "<toolgate-clock>")
        .map_err(|e| e.into_pyexception(vm, Some(CLOCK_PY)))?;
    vm.run_code_obj(code, Scope::with_builtins(None, ns.clone(), vm))?;
    for name in REPLACED {
        time.set_attr(*name, ns.get_item(*name, vm)?, vm)?;
    }
    for (name, value) in [("timezone", 0), ("altzone", 0), ("daylight", 0)] {
        time.set_attr(name, vm.ctx.new_int(value), vm)?;
    }
    let utc = vm.ctx.new_str("UTC");
    time.set_attr(
        "tzname",
        vm.ctx.new_tuple(vec![utc.clone().into(), utc.into()]),
        vm,
    )?;
    let _ = time.as_object();
    Ok(())
}
