//! The script's `result` variable as the contract's JSON (python.execute's
//! "result"): `json.dumps(result, allow_nan=False)` when it accepts the
//! value and the JSON reads back exactly, else the value's `repr` as a JSON
//! string, with a note on stderr saying why.
//!
//! "Reads back exactly" is what every transport needs: the server, MCP and
//! Lambda hold the result as parsed JSON, which cannot hold an integer
//! beyond 64 bits (it would become an inexact float), a lone surrogate, or
//! nesting deeper than 128 levels. The child checks this; the server checks
//! again with the same function ([`crate::outcome::parse_result`]),
//! as it trusts no child.

use rustpython_vm::{
    PyObjectRef, VirtualMachine,
    builtins::PyStr,
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
        let cut = crate::truncate::cut_long(&s, total as u64);
        return serde_json::to_string(&cut).expect("a string serializes");
    }
    let kwargs = KwArgs::from_iter([("allow_nan".to_owned(), vm.ctx.new_bool(false).into())]);
    let args = FuncArgs::new(vec![value.clone()], kwargs);
    if let Ok(s) = dumps.call(args, vm)
        && let Some(text) = s.downcast_ref::<PyStr>().and_then(|s| s.to_str())
    {
        match crate::outcome::result_problem(text) {
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
    serde_json::to_string(&crate::truncate::truncate(&repr)).expect("a string serializes")
}
