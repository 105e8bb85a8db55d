//! `python.execute` on the process sandbox: the contract's parsing and
//! output (`toolgate_shared::tools::python_execute`), the backlog, sessions,
//! and a runtime deadline over one call of the sandbox.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use toolgate_sandbox::Sandbox;
use toolgate_shared::clock::Instant;
use toolgate_shared::config::PythonConfig;
use toolgate_shared::error::ToolError;
use toolgate_shared::files::Files;
use toolgate_shared::sessions::{SessionArg, Sessions};
use toolgate_shared::tool::{CallContext, Tool, ToolFuture, ToolSpec, effective_timeout};
use toolgate_shared::tools::python_execute::{ExecOutput, max_body_bytes, parse_input, spec};

use crate::backlog;

/// `python.execute` on the process sandbox.
pub struct PythonExecute {
    spec: ToolSpec,
    timeout: Duration,
    files_cap: u64,
    state_cap: u64,
    sandbox: Arc<Sandbox>,
    sessions: Option<Sessions>,
    quotas: toolgate_shared::sessions::Quotas,
    backlog: backlog::Backlog,
}

impl PythonExecute {
    /// The tool on a started `sandbox`, with `cfg`'s name, timeout and allowed
    /// imports.
    pub fn new(cfg: &PythonConfig, sandbox: Arc<Sandbox>) -> Self {
        let one_call = toolgate_shared::tool::MAX_BODY_BYTES as u64
            + cfg.max_files_bytes()
            + cfg.max_state_bytes();
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
            .unwrap_or(toolgate_sandbox::pool::ANONYMOUS);
        let bytes = code.len() as u64
            + files.values().map(|f| f.len() as u64).sum::<u64>()
            + session.map_or(0, |s| s.len() as u64);
        let _held = self.backlog.reserve(caller, bytes)?;
        let mut out = self
            .sandbox
            .execute_for(caller, code, files, session, timeout)
            .await
            .map_err(|e| {
                tracing::error!(error = %toolgate_shared::logging::field(&e.to_string()), "sandbox failure");
                ToolError::internal(format!("sandbox unavailable: {e}"))
            })?;
        if lowered {
            out.stderr = toolgate_shared::truncate::truncate(&format!(
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
            .ok_or_else(toolgate_shared::sessions::unavailable)?;
        let owner = ctx.caller.as_deref().unwrap_or("");
        let limits = toolgate_shared::sessions::Limits {
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
