//! The script's `result` variable as the contract's JSON (python.execute's
//! "result"): `json.dumps(result, allow_nan=False)` when it accepts the
//! value and the JSON reads back exactly, else the value's `repr` as a JSON
//! string, with a note on stderr saying why.
//!
//! "Reads back exactly" is what every transport needs: the server, MCP and
//! Lambda hold the result as parsed JSON, which cannot hold an integer
//! beyond 64 bits (it would become an inexact float), a lone surrogate, or
//! nesting deeper than 128 levels. The child checks this; the server checks
//! again with the same function ([`toolgate_core::outcome::parse_result`]),
//! as it trusts no child.

use num_traits::ToPrimitive;
use rustpython_vm::{
    AsObject, PyObject, PyObjectRef, VirtualMachine,
    builtins::{PyDict, PyFloat, PyInt, PyList, PyStr, PyTuple},
    function::{FuncArgs, KwArgs},
};

/// A result larger than this (as JSON) is replaced by a truncated repr.
pub const LIMIT_BYTES: usize = 1 << 20;

/// The result as JSON text; `note` receives the stderr lines explaining a
/// fallback.
pub fn to_json(
    vm: &VirtualMachine,
    value: &PyObjectRef,
    dumps: &PyObjectRef,
    mut note: impl FnMut(&str),
) -> String {
    // A huge string would be copied twice (dumps, then repr) before being cut:
    // cut it first, from the original.
    if let Some(text) = value.downcast_ref::<PyStr>()
        && text.byte_len() > LIMIT_BYTES
    {
        let total = text.char_len();
        note(&format!(
            "[result was a string of {total} chars, over the {LIMIT_BYTES} byte limit; returning it truncated]\n"
        ));
        let s = text.to_string_lossy();
        let cut = toolgate_core::truncate::cut_long(&s, total as u64);
        return serde_json::to_string(&cut).expect("a string serializes");
    }
    let dumped = plain_json(vm, value).or_else(|| {
        let kwargs = KwArgs::from_iter([("allow_nan".to_owned(), vm.ctx.new_bool(false).into())]);
        let args = FuncArgs::new(vec![value.clone()], kwargs);
        let s = dumps.call(args, vm).ok()?;
        s.downcast_ref::<PyStr>()
            .and_then(|s| s.to_str())
            .map(str::to_owned)
    });
    if let Some(text) = dumped.as_deref() {
        match toolgate_core::outcome::result_problem(text) {
            None if text.len() <= LIMIT_BYTES => return text.to_owned(),
            None => note(&format!(
                "[result was {} bytes of JSON, over the {LIMIT_BYTES} byte limit; returning a truncated repr]\n",
                text.len()
            )),
            Some(why) => note(&format!("[result {why}; returning its repr]\n")),
        }
    }
    let repr = match value.repr(vm) {
        Ok(r) => r.to_string_lossy().into_owned(),
        Err(e) => {
            let mut s = String::new();
            let _ = vm.write_exception(&mut s, &e);
            let last = s
                .trim_end()
                .lines()
                .last()
                .unwrap_or("unknown error")
                .to_owned();
            format!("<unrepresentable result: {last}>")
        }
    };
    serde_json::to_string(&toolgate_core::truncate::truncate(&repr)).expect("a string serializes")
}

/// Plain values nest no deeper than this here; deeper ones (and cycles) go
/// to `json.dumps`, which judges them as before.
const PLAIN_DEPTH: usize = 64;

/// `json.dumps(value, allow_nan=False)`, byte for byte, for a value built
/// only of `None`, `bool`, `int` within 64 bits, finite `float`, `str`, and
/// `list`, `tuple` and `dict` of those (exact types, keys `str`, `int`,
/// `float`, `bool` or `None`), without running the json module's Python
/// code: for a small result that was most of the call's own cost (cold
/// caches: `result = 3` took ~0.2 ms in a child). `None` for anything else,
/// which `json.dumps` then encodes, or refuses, as before.
pub(super) fn plain_json(vm: &VirtualMachine, value: &PyObject) -> Option<String> {
    let mut out = String::new();
    write_plain(vm, value, 0, &mut out).then_some(out)
}

fn write_plain(vm: &VirtualMachine, v: &PyObject, depth: usize, out: &mut String) -> bool {
    if depth > PLAIN_DEPTH || out.len() > LIMIT_BYTES {
        return false;
    }
    if let Some(scalar) = plain_scalar(vm, v) {
        return match scalar {
            Some(text) => {
                out.push_str(&text);
                true
            }
            None => false,
        };
    }
    if let Some(s) = v.downcast_ref_if_exact::<PyStr>(vm) {
        return push_json_str(s, out);
    }
    if let Some(list) = v.downcast_ref_if_exact::<PyList>(vm) {
        let items = list.borrow_vec().to_vec();
        return write_seq(vm, &items, depth, out);
    }
    if let Some(tuple) = v.downcast_ref_if_exact::<PyTuple>(vm) {
        return write_seq(vm, tuple.as_slice(), depth, out);
    }
    if let Some(dict) = v.downcast_ref_if_exact::<PyDict>(vm) {
        out.push('{');
        for (i, (k, val)) in dict.items_vec().iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let keyed = match k.downcast_ref_if_exact::<PyStr>(vm) {
                Some(s) => push_json_str(s, out),
                // json.dumps turns these keys into strings of their JSON.
                None => match plain_scalar(vm, k) {
                    Some(Some(text)) => {
                        out.push('"');
                        out.push_str(&text);
                        out.push('"');
                        true
                    }
                    _ => false,
                },
            };
            if !keyed {
                return false;
            }
            out.push_str(": ");
            if !write_plain(vm, val, depth + 1, out) {
                return false;
            }
        }
        out.push('}');
        return true;
    }
    false
}

/// `Some(Some(json))` for `None`, a bool, an exact int within 64 bits or
/// an exact finite float; `Some(None)` for an int or float json.dumps must
/// judge (beyond 64 bits, NaN, infinities); `None` for anything else.
fn plain_scalar(vm: &VirtualMachine, v: &PyObject) -> Option<Option<String>> {
    if vm.is_none(v) {
        return Some(Some("null".into()));
    }
    if v.is(&vm.ctx.true_value) {
        return Some(Some("true".into()));
    }
    if v.is(&vm.ctx.false_value) {
        return Some(Some("false".into()));
    }
    if let Some(i) = v.downcast_ref_if_exact::<PyInt>(vm) {
        let n = i.as_bigint();
        let text = n
            .to_i64()
            .map(|n| n.to_string())
            .or_else(|| n.to_u64().map(|n| n.to_string()));
        return Some(text);
    }
    if let Some(f) = v.downcast_ref_if_exact::<PyFloat>(vm) {
        let x = f.to_f64();
        // float.__repr__, as json.dumps writes it.
        return Some(
            x.is_finite()
                .then(|| rustpython_vm::literal::float::to_string(x)),
        );
    }
    None
}

fn write_seq(vm: &VirtualMachine, items: &[PyObjectRef], depth: usize, out: &mut String) -> bool {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if !write_plain(vm, item, depth + 1, out) {
            return false;
        }
    }
    out.push(']');
    true
}

/// json.dumps's `ensure_ascii` string, which is ASCII (lone surrogates
/// escaped, as `result_problem` then reports).
fn push_json_str(s: &PyStr, out: &mut String) -> bool {
    match rustpython_vm::common::json::encode_string(s.as_wtf8(), true).into_string() {
        Ok(text) => {
            out.push_str(&text);
            true
        }
        Err(_) => false,
    }
}
