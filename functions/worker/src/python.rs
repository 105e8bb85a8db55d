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
use toolgate_shared::tool::{CallContext, Tool, ToolFuture, ToolSpec};
use toolgate_shared::tools::python_execute::{self, ExecOutput};

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
    sandbox: SendWrapper<Fetcher>,
}

impl SandboxedPython {
    pub fn new(cfg: &PythonConfig, sandbox: Fetcher) -> Self {
        Self {
            spec: python_execute::spec(cfg),
            timeout: Duration::from_secs(cfg.timeout_secs),
            memory_mb: cfg.memory_mb,
            sandbox: SendWrapper::new(sandbox),
        }
    }

    /// `/healthz`'s `walls`: what stands around each call here.
    pub fn health(&self) -> Value {
        json!({"walls": {
            "capability_gap": true,
            "scrub": true,
            "instance_per_call": true,
            "process_per_call": false,
            "rlimits": false,
            "seccomp": false,
            "memory_mb": self.memory_mb,
            "stop_at_deadline": false,
            "kill_at_deadline": "the dispatcher answers at the timeout; the sandbox Worker's limits.cpu_ms ends the script",
        }})
    }

    async fn run(&self, code: &str) -> Result<Value, ToolError> {
        let body = json!({
            "code": code,
            "timeout_secs": self.timeout.as_secs(),
            "memory_mb": self.memory_mb,
        });
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_body(Some(body.to_string().into()));
        let call = pin!(self.sandbox.fetch("https://sandbox/run", Some(init)));
        let timer = pin!(Delay::from(self.timeout + GRACE));
        let timed_out = || {
            serde_json::to_value(ExecOutput::timed_out(
                String::new(),
                String::new(),
                self.timeout,
            ))
            .map_err(|e| ToolError::internal(e.to_string()))
        };
        match select(call, timer).await {
            Either::Left((Ok(reply), _)) => {
                let status = reply.status();
                let bytes =
                    axum::body::to_bytes(axum::body::Body::new(reply.into_body()), MAX_REPLY_BYTES)
                        .await
                        .map_err(|e| ToolError::internal(format!("sandbox reply: {e}")))?;
                if !status.is_success() {
                    tracing::error!(%status, body = %String::from_utf8_lossy(&bytes), "sandbox failed");
                    return Err(ToolError::internal(format!(
                        "sandbox unavailable: it answered {status}"
                    )));
                }
                // The sandbox Worker runs the script: its reply is checked as
                // the native server checks a child's report, and one that is
                // not the contract's output is the script's failure.
                let out = ExecOutput::from_reply(&bytes).unwrap_or_else(|why| {
                    tracing::error!(reason = %why, "invalid sandbox reply");
                    let mut out = ExecOutput::failed();
                    out.add_note(&format!("[the sandbox sent an invalid reply ({why})]\n"));
                    out
                });
                serde_json::to_value(out).map_err(|e| ToolError::internal(e.to_string()))
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

impl Tool for SandboxedPython {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, _ctx: &'a CallContext) -> ToolFuture<'a> {
        Box::pin(SendFuture::new(async move {
            let code = python_execute::parse_input(&args)?;
            self.run(code).await
        }))
    }
}
