//! `python.execute` (docs/contracts.md#pythonexecute): runs Python source in the sandbox.

//!
//! The contract (spec, input rules, output shape, the notes added to
//! stderr) compiles everywhere; the tool itself runs on the process sandbox
//! (feature `python`). The Worker runs the same contract on wasm32.
//! What calls may hold at the sandbox at once: `backlog`.

#[cfg(feature = "python")]
mod backlog;

#[cfg(feature = "python")]
use std::sync::Arc;
#[cfg(feature = "python")]
use std::time::Duration;

#[cfg(feature = "python")]
use crate::clock::Instant;
use serde_json::{Value, json};

use crate::config::PythonConfig;
use crate::error::ToolError;
use crate::files::Files;
#[cfg(feature = "python")]
use crate::sandbox::Sandbox;
use crate::sessions::SessionArg;
#[cfg(feature = "python")]
use crate::sessions::Sessions;
use crate::tool::ToolSpec;
#[cfg(feature = "python")]
use crate::tool::{CallContext, Tool, ToolFuture};

pub use crate::tool::{DEADLINE_MARGIN, NOT_AN_OBJECT, effective_timeout};
/// The answer to a `code` that is missing, not a string, or blank.
pub const CODE_REQUIRED: &str = "\"code\" is required and must be a non-empty string";

pub use crate::outcome::ExecOutput;

/// `python.execute` on the process sandbox.
#[cfg(feature = "python")]
pub struct PythonExecute {
    spec: ToolSpec,
    timeout: Duration,
    files_cap: u64,
    state_cap: u64,
    sandbox: Arc<Sandbox>,
    sessions: Option<Sessions>,
    quotas: crate::sessions::Quotas,
    backlog: backlog::Backlog,
}

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
}

/// Validates the input (the exact messages in
/// docs/contracts.md#pythonexecute); `files_cap` bounds the files in bytes.
pub fn parse_input(args: &Value, files_cap: u64) -> Result<Input<'_>, ToolError> {
    let obj = args
        .as_object()
        .ok_or_else(|| ToolError::invalid_input(NOT_AN_OBJECT))?;
    crate::tool::only_keys(obj, &["code", "files", "session"], &[])?;
    let code = match obj.get("code").and_then(Value::as_str) {
        Some(code) if !code.trim().is_empty() => code,
        _ => return Err(ToolError::invalid_input(CODE_REQUIRED)),
    };
    let files = crate::files::parse_input(obj.get("files"), files_cap)?;
    let session = crate::sessions::parse(obj.get("session"))?;
    Ok(Input {
        code,
        files,
        session,
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

#[cfg(feature = "python")]
impl PythonExecute {
    /// The tool on a started `sandbox`, with `cfg`'s name, timeout and allowed
    /// imports.
    pub fn new(cfg: &PythonConfig, sandbox: Arc<Sandbox>) -> Self {
        let one_call =
            crate::tool::MAX_BODY_BYTES as u64 + cfg.max_files_bytes() + cfg.max_state_bytes();
        Self {
            spec: spec(cfg),
            timeout: Duration::from_secs(cfg.timeout_secs),
            files_cap: cfg.max_files_bytes(),
            state_cap: cfg.max_state_bytes(),
            sandbox,
            sessions: None,
            quotas: cfg.session_quotas(),
            backlog: backlog::Backlog::new(cfg.max_queued_bytes(), one_call),
        }
    }

    /// The tool with `sessions` to keep state between calls in, under the
    /// configured session quotas.
    pub fn with_sessions(mut self, sessions: Sessions) -> Self {
        self.sessions = Some(sessions.with_quotas(self.quotas));
        self
    }

    /// Runs `code` with `files` for the caller in `ctx`, the timeout
    /// lowered to fit a runtime deadline (stderr then says so). `Err` only
    /// when the sandbox itself fails.
    pub async fn run(
        &self,
        code: &str,
        files: &Files,
        session: Option<&[u8]>,
        ctx: &CallContext,
    ) -> Result<ExecOutput, ToolError> {
        let (timeout, lowered) = effective_timeout(self.timeout, ctx.deadline, Instant::now());
        let caller = ctx
            .caller
            .as_deref()
            .unwrap_or(crate::sandbox::pool::ANONYMOUS);
        let bytes = code.len() as u64
            + files.values().map(|f| f.len() as u64).sum::<u64>()
            + session.map_or(0, |s| s.len() as u64);
        let _held = self.backlog.reserve(caller, bytes)?;
        let mut out = self
            .sandbox
            .execute_for(caller, code, files, session, timeout)
            .await
            .map_err(|e| {
                tracing::error!(error = %crate::logging::field(&e.to_string()), "sandbox failure");
                ToolError::internal(format!("sandbox unavailable: {e}"))
            })?;
        if lowered {
            out.stderr = crate::truncate::truncate(&format!(
                "{}{}[timeout lowered to {}s to fit the runtime's remaining time]\n",
                out.stderr,
                if out.stderr.is_empty() || out.stderr.ends_with('\n') {
                    ""
                } else {
                    "\n"
                },
                timeout.as_secs()
            ));
        }
        Ok(out)
    }
}

#[cfg(feature = "python")]
impl Tool for PythonExecute {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn max_body_bytes(&self) -> usize {
        max_body_bytes(self.files_cap)
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a CallContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let input = parse_input(&args, self.files_cap)?;
            let out = match &input.session {
                None => self.run(input.code, &input.files, None, ctx).await?,
                Some(arg) => {
                    self.run_in_session(arg, input.code, input.files, ctx)
                        .await?
                }
            };
            serde_json::to_value(&out).map_err(|e| ToolError::internal(e.to_string()))
        })
    }
}

#[cfg(feature = "python")]
impl PythonExecute {
    /// Runs a call in the session `arg` names: its files under the call's,
    /// its state restored in the child; then stores what the call left.
    async fn run_in_session(
        &self,
        arg: &SessionArg,
        code: &str,
        given: Files,
        ctx: &CallContext,
    ) -> Result<ExecOutput, ToolError> {
        let sessions = self
            .sessions
            .as_ref()
            .ok_or_else(crate::sessions::unavailable)?;
        let owner = ctx.caller.as_deref().unwrap_or("");
        let limits = crate::sessions::Limits {
            timeout: self.timeout,
            files_cap: self.files_cap,
            state_cap: self.state_cap,
        };
        sessions
            .call(arg, owner, given, limits, |files, state| async move {
                self.run(code, &files, Some(&state), ctx).await
            })
            .await
    }
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
