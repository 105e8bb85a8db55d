//! What a runtime can send back, and fitting a tool's answer into it.
//! Lambda takes at most 6 MB per synchronous response (API Gateway's
//! included), below the tools' own caps (10 MiB of returned files). An
//! answer past it would end as a Lambda error; instead its returned files
//! are left out, largest first, each named on stderr as the tool names the
//! files past its own cap, and an answer that still does not fit is the
//! error `too_large`, saying why.

use serde_json::Value;

use crate::error::{ErrorCode, ToolError};

/// Lambda's synchronous response limit, less room for what wraps a body
/// (status, headers, the JSON-RPC envelope).
pub const LAMBDA_RESPONSE_BYTES: usize = 6 * 1024 * 1024 - 8 * 1024;

/// The length of `s` as a JSON string literal, quotes included: what it
/// takes inside another JSON document (API Gateway's `body`, MCP's text).
pub fn string_literal_len(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// `v` as compact JSON, as its length.
pub fn json_len(v: &Value) -> usize {
    serde_json::to_vec(v).map_or(usize::MAX, |b| b.len())
}

/// Leaves returned files out of `result` (an answer with `files`), largest
/// first, until `size(result)` is at most `limit`; each one left out is
/// named on its `stderr`. `Err` (`too_large`) when it still does not fit.
pub fn fit(
    result: &mut Value,
    limit: usize,
    size: &dyn Fn(&Value) -> usize,
) -> Result<(), ToolError> {
    loop {
        let now = size(result);
        if now <= limit {
            return Ok(());
        }
        let largest = result
            .get("files")
            .and_then(Value::as_object)
            .and_then(|files| {
                files
                    .iter()
                    .map(|(name, f)| (name.clone(), file_len(f)))
                    .max_by_key(|(_, len)| *len)
            });
        let Some((name, len)) = largest else {
            return Err(too_large(now, limit));
        };
        if let Some(files) = result.get_mut("files").and_then(Value::as_object_mut) {
            files.remove(&name);
        }
        let note = format!(
            "[file {} ({len} bytes) not returned: the answer would pass this runtime's response limit of {limit} bytes]\n",
            crate::files::shown(&name)
        );
        match result.get_mut("stderr") {
            Some(Value::String(s)) => {
                if !s.is_empty() && !s.ends_with('\n') {
                    s.push('\n');
                }
                s.push_str(&note);
            }
            _ => result["stderr"] = Value::String(note),
        }
    }
}

/// The error for an answer of `size` bytes past `limit`.
pub fn too_large(size: usize, limit: usize) -> ToolError {
    ToolError::new(
        ErrorCode::TooLarge,
        format!(
            "The answer takes {size} bytes, past this runtime's response limit of {limit} bytes \
             (Lambda's 6 MB): ask for less"
        ),
    )
}

/// [`fit`], with a log line when it left something out or refused.
pub fn fit_answer(
    result: &mut Value,
    limit: usize,
    size: &dyn Fn(&Value) -> usize,
) -> Result<(), ToolError> {
    let files = |r: &Value| {
        r.get("files")
            .and_then(Value::as_object)
            .map_or(0, |f| f.len())
    };
    let before = files(result);
    let outcome = fit(result, limit, size);
    let left_out = before - files(result);
    if left_out > 0 || outcome.is_err() {
        tracing::warn!(
            limit,
            left_out,
            fits = outcome.is_ok(),
            "answer past the response limit"
        );
    }
    outcome
}

/// A returned file's size in bytes: a text file's, or a `{"base64"}` one's
/// decoded.
fn file_len(f: &Value) -> usize {
    match f {
        Value::String(s) => s.len(),
        _ => f.get("base64").and_then(Value::as_str).map_or(0, |b| {
            let padding = b.bytes().rev().take_while(|&c| c == b'=').count();
            (b.len() / 4 * 3).saturating_sub(padding)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_literals_length_is_serde_jsons() {
        for s in [
            "",
            "plain",
            "quote \" and \\ back",
            "lines\n\r\ttabs\u{8}\u{c}",
            "\u{0}\u{1f}\u{7f}",
            "caf\u{e9} \u{2028} \u{1f680}",
        ] {
            assert_eq!(
                string_literal_len(s),
                serde_json::to_string(s).unwrap().len(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn the_largest_files_go_first_each_named() {
        let mut r = json!({
            "stdout": "",
            "stderr": "warned",
            "exit_code": 0,
            "files": {
                "big.bin": {"base64": "A".repeat(4000)},
                "mid.txt": "m".repeat(2000),
                "small.txt": "s",
                "pad.bin": {"base64": "AAE="},
            }
        });
        fit(&mut r, 2600, &json_len).unwrap();
        assert_eq!(
            r["files"],
            json!({"mid.txt": "m".repeat(2000), "small.txt": "s", "pad.bin": {"base64": "AAE="}})
        );
        assert_eq!(file_len(&json!({"base64": "AAE="})), 2);
        assert_eq!(
            r["stderr"],
            "warned\n[file \"big.bin\" (3000 bytes) not returned: the answer would pass this runtime's response limit of 2600 bytes]\n"
        );
        fit(&mut r, 500, &json_len).unwrap();
        assert_eq!(
            r["files"],
            json!({"small.txt": "s", "pad.bin": {"base64": "AAE="}})
        );
        // Nothing left to leave out: the error says why.
        let e = fit(&mut r, 10, &json_len).unwrap_err();
        assert_eq!(e.code, ErrorCode::TooLarge);
        assert!(
            e.message
                .contains("past this runtime's response limit of 10 bytes"),
            "{}",
            e.message
        );
    }

    #[test]
    fn an_answer_that_fits_is_untouched() {
        let r = json!({"stdout": "x", "files": {"a.txt": "a"}});
        let mut same = r.clone();
        fit(&mut same, LAMBDA_RESPONSE_BYTES, &json_len).unwrap();
        assert_eq!(same, r);
    }
}
