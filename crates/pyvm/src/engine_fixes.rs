//! Where RustPython 0.6 crashes on ordinary Python, the fix, applied from
//! outside the engine when the interpreter warms up. Each one answers as
//! CPython 3.13 does and names what to send upstream.

use std::sync::OnceLock;

use rustpython_vm::{
    AsObject, PyObject, PyObjectRef, PyResult, VirtualMachine,
    builtins::{PyByteArray, PyFloat},
    function::FuncArgs,
    protocol::BufferResizeGuard,
};

pub fn apply(vm: &VirtualMachine) -> PyResult<()> {
    sleep_range(vm)?;
    bytearray_init(vm)?;
    Ok(())
}

/// The longest sleep CPython can represent: its clock is a 64-bit count of
/// nanoseconds.
const MAX_SLEEP_SECS: f64 = i64::MAX as f64 / 1e9;

/// `time.sleep(2**63)` panics in RustPython (`Instant + Duration`
/// overflows), and so does an object whose `__index__` returns it; CPython
/// raises OverflowError. The argument is converted once, as CPython's
/// `_PyTime_FromSecondsObject` does, and only the converted number reaches
/// the engine's `sleep` (the Worker's too): a second conversion would call
/// the object again. Upstream: `stdlib/time.rs` `sleep` should use
/// `checked_add`, and `Duration`'s conversion CPython's range.
fn sleep_range(vm: &VirtualMachine) -> PyResult<()> {
    let time = vm.import("time", 0)?;
    let original = time.get_attr("sleep", vm)?;
    let sleep = vm.new_function(
        "sleep",
        move |mut args: FuncArgs, vm: &VirtualMachine| -> PyResult {
            if !args.kwargs.is_empty() {
                return Err(vm.new_type_error("sleep() takes no keyword arguments"));
            }
            if let Some(secs) = args.args.first_mut() {
                *secs = sleep_seconds(secs, vm)?;
            }
            original.call(args, vm)
        },
    );
    time.set_attr("sleep", sleep, vm)
}

/// `secs` as a plain float or int in CPython's range (its clock is a 64-bit
/// count of nanoseconds); anything else unchanged, for the engine's
/// TypeError. Negative numbers are the engine's to refuse.
fn sleep_seconds(secs: &PyObjectRef, vm: &VirtualMachine) -> PyResult {
    let too_large = || vm.new_overflow_error("timestamp too large to convert to C PyTime_t");
    if let Some(f) = secs.downcast_ref::<PyFloat>() {
        let f = f.to_f64();
        if f.is_nan() {
            return Err(vm.new_value_error("Invalid value NaN (not a number)"));
        }
        if f > MAX_SLEEP_SECS {
            return Err(too_large());
        }
        return Ok(vm.ctx.new_float(f).into());
    }
    // An int's value (a subclass's too, as CPython reads it), else what
    // `__index__` returns, called here once.
    let int = match secs.try_index_opt(vm) {
        Some(index) => index?,
        None => return Ok(secs.clone()),
    };
    match i64::try_from(int.as_bigint()) {
        Ok(s) if s.checked_mul(1_000_000_000).is_some() => Ok(vm.ctx.new_int(s).into()),
        _ => Err(too_large()),
    }
}

/// `bytearray.__init__` replaces the buffer while a `memoryview` of it is
/// alive; the view then reads freed memory (RustPython panics later, or
/// worse). CPython raises `BufferError: Existing exports of data: object
/// cannot be re-sized`. The fix does what CPython's init does: it empties
/// the bytearray first (refused while it is exported), builds the new
/// contents in a fresh bytearray (running whatever iterator or buffer the
/// arguments name), and moves them in only if nothing exported it
/// meanwhile. The contents move, never copied: `bytearray(n)` holds n
/// bytes, as in CPython. Upstream: `builtins/bytearray.rs`
/// `Initializer::init` should use `try_resizable` rather than `inner_mut`.
fn bytearray_init(vm: &VirtualMachine) -> PyResult<()> {
    let ty = vm.ctx.types.bytearray_type;
    // The engine's own init, kept to fill the fresh bytearray. Set once per
    // process: every VM shares the static type.
    if let Some(original) = ty.slots.init.load() {
        let _ = ORIGINAL_INIT.set(original);
    }
    let init = vm.new_method(
        "__init__",
        ty,
        |zelf: PyObjectRef, args: FuncArgs, vm: &VirtualMachine| -> PyResult<()> {
            set_from_fresh(zelf, args, vm)
        },
    );
    ty.slots.init.store(Some(|zelf, args, vm| {
        set_from_fresh(zelf.to_owned(), args, vm)
    }));
    ty.set_attr(vm.ctx.intern_str("__init__"), init.into());
    let _ = ty.as_object();
    Ok(())
}

/// The init slot `bytearray` had before [`bytearray_init`] replaced it.
static ORIGINAL_INIT: OnceLock<InitSlot> = OnceLock::new();

type InitSlot = fn(&PyObject, FuncArgs, &VirtualMachine) -> PyResult<()>;

fn set_from_fresh(zelf: PyObjectRef, args: FuncArgs, vm: &VirtualMachine) -> PyResult<()> {
    let Some(target) = zelf.downcast_ref::<PyByteArray>() else {
        return Err(vm.new_type_error("descriptor '__init__' requires a 'bytearray' object"));
    };
    let original = ORIGINAL_INIT
        .get()
        .ok_or_else(|| vm.new_runtime_error("bytearray.__init__ is unavailable"))?;
    // "Empty previous contents (yes, do this first of all!)", as CPython's
    // bytearray___init__ says: a resize, refused while exported.
    if !target.borrow_buf().is_empty() {
        drop(std::mem::take(&mut *target.try_resizable(vm)?));
    }
    let fresh = vm.ctx.new_bytearray(Vec::new());
    original(fresh.as_object(), args, vm)?;
    if fresh.borrow_buf().is_empty() {
        return Ok(());
    }
    // Nothing outside this function holds `fresh`, so only the target can
    // be exported here (by the arguments, while they were read).
    let mut contents = fresh.try_resizable(vm)?;
    std::mem::swap(&mut *target.try_resizable(vm)?, &mut *contents);
    Ok(())
}
