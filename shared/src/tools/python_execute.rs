//! `python.execute` (docs/contracts.md#pythonexecute): runs Python source in the sandbox.
//!
//! The contract (spec, input rules, output shape, the notes added to
//! stderr) and the one flow over a [`Runner`] (`runner`: sessions, the
//! deadline, the backlog) compile everywhere; the runners are the process
//! sandbox's (`toolgate-python`) and the sandbox Worker's
//! (`functions/worker`).

mod backlog;
pub mod code_mode;
mod runner;

pub use runner::{PythonExecute, Run, RunFuture, Runner};

use serde_json::{Value, json};

use crate::config::PythonConfig;
use crate::error::ToolError;
use crate::files::Files;
use crate::sessions::SessionArg;
use crate::tool::ToolSpec;

pub use crate::tool::{DEADLINE_MARGIN, NOT_AN_OBJECT, effective_timeout};
/// The answer to a `code` that is missing, not a string, or blank.
pub const CODE_REQUIRED: &str = "\"code\" is required and must be a non-empty string";
/// The answer to a `resume` that is not a non-empty string.
pub const RESUME_SHAPE: &str = "\"resume\" must be the `resume` id a waiting script's answer gave";
/// The answer to `resume` with `session`.
pub const RESUME_NO_SESSION: &str =
    "\"resume\" goes on with a script that waited outside a session; it does not take \"session\"";

pub use crate::outcome::ExecOutput;

/// The tool's description, stating `cfg`'s timeout and allowed imports.
pub fn description(cfg: &PythonConfig) -> String {
    format!(
        "Execute Python code in a secure sandbox and return stdout, stderr, exit_code, timed_out \
         and `result` (the value of a variable named `result`, as JSON when serializable, \
         otherwise its repr). Each call starts from a clean interpreter. Timeout: {}s. \
         Allowed imports: {}. All other imports will raise ImportError.",
        cfg.timeout_secs,
        cfg.allowed_modules().join(", ")
    )
}

/// The tool's spec, named `<namespace>.execute`.
pub fn spec(cfg: &PythonConfig) -> ToolSpec {
    ToolSpec {
        name: cfg.tool_name(),
        description: description(cfg),
        input_schema: json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Python 3 source to run. Print output or assign `result`."
                },
                "session": {
                    "type": "string",
                    "minLength": 1,
                    "description": format!(
                        "\"new\" to start a session, or the `session` id a call returned, to \
                         continue from the globals and files that call left (as if the scripts \
                         ran one after the other). A session ends {} minutes after its last call.",
                        cfg.session_idle_secs / 60
                    )
                },
                "resume": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The `resume` id of an answer whose script waits for a person \
                         (code mode: an approval, or an answer to a question): runs the same \
                         `code` (and `files`) again, its earlier tool calls answered from their \
                         recorded results, and goes on from the call it waited on."
                },
                "files": {
                    "type": "object",
                    "description": format!(
                        "Files the script can open(), by relative path (like data/in.csv): text, \
                         or {{\"base64\": \"...\"}} for bytes. At most {} MiB in all. Files the \
                         script creates or changes come back in the output's `files`.",
                        cfg.max_files_mb
                    ),
                    "additionalProperties": {
                        "anyOf": [
                            {"type": "string"},
                            {
                                "type": "object",
                                "properties": {"base64": {"type": "string"}},
                                "required": ["base64"],
                                "additionalProperties": false
                            }
                        ]
                    }
                }
            },
            "required": ["code"],
            "additionalProperties": false
        }),
        output_schema: json!({
            "type": "object",
            "properties": {
                "stdout": {"type": "string"},
                "stderr": {"type": "string"},
                "exit_code": {"type": "integer", "description": "0 on success, 1 on an exception, -1 on timeout; SystemExit(n) gives n"},
                "timed_out": {"type": "boolean"},
                "result": {"description": "The script's `result` variable; absent when unset or None"},
                "session": {"type": "string", "description": "The session's id, when the call ran in one: pass it as `session` to continue"},
                "waiting": {"type": "object", "description": "Code mode: what the script waits for (`for`: approval or answer, `tool`, and the approval or question); the script stopped at that call"},
                "resume": {"type": "string", "description": "Code mode: pass it as `resume`, with the same code, once a person has acted, to go on from the call the script waits on"},
                "files": {
                    "type": "object",
                    "description": "Files the script created or changed: text when valid UTF-8, else {\"base64\": \"...\"}; absent when none",
                    "additionalProperties": {
                        "anyOf": [
                            {"type": "string"},
                            {"type": "object", "properties": {"base64": {"type": "string"}}, "required": ["base64"]}
                        ]
                    }
                }
            },
            "required": ["stdout", "stderr", "exit_code", "timed_out"]
        }),
        // A session keeps what a call leaves; nothing reaches outside.
        hints: crate::tool::Hints::writes(false, false, false),
        mcp_result: false,
    }
}

/// A call's input, checked.
#[derive(Debug)]
pub struct Input<'a> {
    /// The Python source.
    pub code: &'a str,
    /// The files the script may open.
    pub files: Files,
    /// The session to run in, if any.
    pub session: Option<SessionArg>,
    /// The waiting script to go on with (code mode), if any.
    pub resume: Option<&'a str>,
}

/// Validates the input (the exact messages in
/// docs/contracts.md#pythonexecute); `files_cap` bounds the files in bytes.
pub fn parse_input(args: &Value, files_cap: u64) -> Result<Input<'_>, ToolError> {
    let obj = args
        .as_object()
        .ok_or_else(|| ToolError::invalid_input(NOT_AN_OBJECT))?;
    crate::tool::only_keys(obj, &["code", "files", "session", "resume"], &[])?;
    let code = match obj.get("code").and_then(Value::as_str) {
        Some(code) if !code.trim().is_empty() => code,
        _ => return Err(ToolError::invalid_input(CODE_REQUIRED)),
    };
    let files = crate::files::parse_input(obj.get("files"), files_cap)?;
    let session = crate::sessions::parse(obj.get("session"))?;
    let resume = match obj.get("resume") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) if !r.is_empty() => Some(r.as_str()),
        Some(_) => return Err(ToolError::invalid_input(RESUME_SHAPE)),
    };
    if resume.is_some() && session.is_some() {
        return Err(ToolError::invalid_input(RESUME_NO_SESSION));
    }
    Ok(Input {
        code,
        files,
        session,
        resume,
    })
}

/// The largest request body a call takes: the contract's 1 MiB for the
/// code, plus twice `files_cap` for the files (base64 is 4/3 of the bytes;
/// text that JSON escapes, such as CJK sent as `\uXXXX`, up to twice) and
/// their names.
pub fn max_body_bytes(files_cap: u64) -> usize {
    crate::tool::MAX_BODY_BYTES
        + files_cap as usize * 2
        + crate::files::MAX_COUNT * (crate::files::MAX_NAME_BYTES + 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Instant;
    use std::time::Duration;

    #[test]
    fn input_errors_use_the_contract_strings() {
        for bad in [json!([1]), json!("x"), json!(null), json!(3)] {
            assert_eq!(
                parse_input(&bad, 1 << 20).unwrap_err().message,
                NOT_AN_OBJECT
            );
        }
        for bad in [
            json!({}),
            json!({"code": ""}),
            json!({"code": "  \n"}),
            json!({"code": 5}),
            json!({"code": null}),
        ] {
            let e = parse_input(&bad, 1 << 20).unwrap_err();
            assert_eq!(e.message, CODE_REQUIRED);
            assert_eq!(e.code, crate::error::ErrorCode::InvalidInput);
        }
        assert_eq!(
            parse_input(&json!({"code": "print(1)"}), 1 << 20)
                .unwrap()
                .code,
            "print(1)"
        );
    }

    #[test]
    fn description_lists_timeout_and_modules() {
        let cfg = PythonConfig::default();
        let d = description(&cfg);
        assert!(d.contains("Timeout: 20s."));
        assert!(d.contains("Allowed imports: array, base64, bisect,"));
        assert!(d.ends_with("All other imports will raise ImportError."));
    }

    #[test]
    fn runtime_deadline_lowers_the_timeout() {
        let now = Instant::now();
        let cfg = Duration::from_secs(20);
        assert_eq!(effective_timeout(cfg, None, now), (cfg, false));
        let far = now + Duration::from_secs(100);
        assert_eq!(effective_timeout(cfg, Some(far), now), (cfg, false));
        let near = now + Duration::from_millis(5_900);
        assert_eq!(
            effective_timeout(cfg, Some(near), now),
            (Duration::from_secs(5), true)
        );
        let past = now;
        assert_eq!(
            effective_timeout(cfg, Some(past), now),
            (Duration::from_secs(1), true)
        );
    }
}
