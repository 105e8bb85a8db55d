//! `python.execute` on Workers. The contract (spec, input rules, output)
//! is the shared one; the script runs in the sandbox Worker (service
//! binding `SANDBOX`), in a fresh wasm instance per call.
//!
//! A script that never yields pins the sandbox isolate's thread, so this
//! Worker races the call against a timer and answers the timeout itself. In
//! production the sandbox's `limits.cpu_ms` then ends the stuck request;
//! under `wrangler dev`, which does not enforce it, the tests restart the
//! sandbox process.

use std::pin::pin;
use std::time::Duration;

use futures_util::future::{Either, select};
use serde_json::{Value, json};
use worker::send::{SendFuture, SendWrapper};
use worker::{Delay, Fetcher, Method, RequestInit};

use toolgate_shared::config::PythonConfig;
use toolgate_shared::error::ToolError;
use toolgate_shared::files::Files;
use toolgate_shared::sessions::{Limits, Sessions};
use toolgate_shared::tool::{CallContext, Tool, ToolFuture, ToolSpec};
use toolgate_shared::tools::python_execute::{self, ExecOutput};
use toolgate_shared::walls::Walls;

pub const BINDING: &str = "SANDBOX";

/// Past the timeout, how long the sandbox has to report its own timeout
/// (a sleep past the deadline) before this Worker answers for it.
const GRACE: Duration = Duration::from_millis(500);

/// The sandbox's answer is the contract's output plus room for its JSON.
const MAX_REPLY_BYTES: usize = 4 << 20;

pub struct SandboxedPython {
    spec: ToolSpec,
    timeout: Duration,
    memory_mb: u64,
    files_cap: u64,
    state_cap: u64,
    sandbox: SendWrapper<Fetcher>,
    sessions: Sessions,
}

impl SandboxedPython {
    pub fn new(cfg: &PythonConfig, sandbox: Fetcher, sessions: Sessions) -> Self {
        Self {
            spec: python_execute::spec(cfg),
            timeout: Duration::from_secs(cfg.timeout_secs),
            memory_mb: cfg.memory_mb,
            files_cap: cfg.max_files_bytes(),
            // A session's row holds its state and files: the state alone
            // never needs more.
            state_cap: cfg
                .max_state_bytes()
                .min(crate::d1_sessions::ROW_LIMIT as u64),
            sandbox: SendWrapper::new(sandbox),
            sessions: sessions.with_quotas(cfg.session_quotas()),
        }
    }

    /// `/healthz`'s `sandbox`, in the native server's shape. The capability
    /// gap, the scrub and the fresh instance are checked now, by the sandbox
    /// Worker in an instance taken as a call takes one; what it cannot
    /// answer reads false. The rest is what this runtime has by design.
    pub async fn health(&self) -> Value {
        let checked = self.ask_walls().await;
        let (checked, error) = match checked {
            Ok(v) => (v, None),
            Err(why) => {
                tracing::error!(reason = %why, "sandbox walls unreadable");
                (Value::Null, Some(why))
            }
        };
        let flag = |k: &str| checked.get(k).and_then(Value::as_bool).unwrap_or(false);
        let walls = Walls {
            capability_gap: flag("capability_gap"),
            scrub: flag("scrub"),
            instance_per_call: flag("fresh_instance"),
            process_per_call: false,
            rlimits: false,
            seccomp: false,
            seccomp_error: None,
            stop_at_deadline: false,
            // The dispatcher answers at the timeout; in production the
            // sandbox Worker's limits.cpu_ms ends the script.
            kill_at_deadline: false,
            memory_mb: self.memory_mb,
            sandbox_error: error,
        };
        json!({"sandbox": {"walls": walls}})
    }

    async fn ask_walls(&self) -> Result<Value, String> {
        let reply = self
            .sandbox
            .fetch("https://sandbox/walls", None)
            .await
            .map_err(|e| format!("the sandbox Worker did not answer: {e}"))?;
        let (status, bytes) = read_reply(reply, 64 << 10).await?;
        if !status.is_success() {
            return Err(format!("the sandbox Worker answered {status}"));
        }
        let v: Value = serde_json::from_slice(&bytes).map_err(|e| format!("sandbox reply: {e}"))?;
        match v.get("error") {
            Some(e) => Err(format!("the sandbox Worker failed: {e}")),
            None => Ok(v),
        }
    }

    async fn run(
        &self,
        code: &str,
        files: &Files,
        session: Option<&[u8]>,
    ) -> Result<ExecOutput, ToolError> {
        let mut body = json!({
            "code": code,
            "timeout_secs": self.timeout.as_secs(),
            "memory_mb": self.memory_mb,
            "files": toolgate_shared::files::to_wire(files),
            "files_cap": self.files_cap,
        });
        if let Some(state) = session {
            body["session"] = toolgate_shared::files::encode(state).into();
            body["state_cap"] = self.state_cap.into();
        }
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_body(Some(body.to_string().into()));
        let call = pin!(self.sandbox.fetch("https://sandbox/run", Some(init)));
        let timer = pin!(Delay::from(self.timeout + GRACE));
        let timed_out = || {
            Ok(ExecOutput::timed_out(
                String::new(),
                String::new(),
                self.timeout,
            ))
        };
        match select(call, timer).await {
            Either::Left((Ok(reply), _)) => {
                let limit = MAX_REPLY_BYTES
                    + python_execute::max_body_bytes(self.files_cap)
                    + self.state_cap as usize * 2;
                let (status, bytes) = read_reply(reply, limit)
                    .await
                    .map_err(ToolError::internal)?;
                if !status.is_success() {
                    tracing::error!(
                        %status,
                        body = %toolgate_shared::logging::field(&String::from_utf8_lossy(&bytes)),
                        "sandbox failed"
                    );
                    return Err(ToolError::internal(format!(
                        "sandbox unavailable: it answered {status}"
                    )));
                }
                // The sandbox Worker runs the script: its reply is checked as
                // the native server checks a child's report, and one that is
                // not the contract's output is the script's failure.
                let cap = if session.is_some() { self.state_cap } else { 0 };
                let out =
                    ExecOutput::from_reply(&bytes, self.files_cap, cap).unwrap_or_else(|why| {
                        tracing::error!(reason = %why, "invalid sandbox reply");
                        let mut out = ExecOutput::failed();
                        out.add_note(&format!("[the sandbox sent an invalid reply ({why})]\n"));
                        out
                    });
                Ok(out)
            }
            // The sandbox request itself failed: in production, the CPU
            // limit ending a runaway script.
            Either::Left((Err(e), _)) => {
                tracing::warn!(error = %e, "sandbox request failed; answering as a timeout");
                timed_out()
            }
            Either::Right(_) => {
                tracing::warn!(
                    timeout_secs = self.timeout.as_secs(),
                    "script ran past its timeout"
                );
                timed_out()
            }
        }
    }
}

/// The sandbox Worker's status and body, at most `limit` bytes of it.
async fn read_reply(
    reply: worker::HttpResponse,
    limit: usize,
) -> Result<(axum::http::StatusCode, axum::body::Bytes), String> {
    let status = reply.status();
    let bytes = axum::body::to_bytes(axum::body::Body::new(reply.into_body()), limit)
        .await
        .map_err(|e| format!("sandbox reply: {e}"))?;
    Ok((status, bytes))
}

impl Tool for SandboxedPython {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn max_body_bytes(&self) -> usize {
        python_execute::max_body_bytes(self.files_cap)
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a CallContext) -> ToolFuture<'a> {
        Box::pin(SendFuture::new(async move {
            let input = python_execute::parse_input(&args, self.files_cap)?;
            let out = match &input.session {
                None => self.run(input.code, &input.files, None).await?,
                Some(arg) => {
                    let limits = Limits {
                        timeout: self.timeout,
                        files_cap: self.files_cap,
                        state_cap: self.state_cap,
                    };
                    let owner = ctx.caller.as_deref().unwrap_or("");
                    let code = input.code;
                    self.sessions
                        .call(arg, owner, input.files, limits, |files, state| async move {
                            self.run(code, &files, Some(&state)).await
                        })
                        .await?
                }
            };
            serde_json::to_value(out).map_err(|e| ToolError::internal(e.to_string()))
        }))
    }
}
