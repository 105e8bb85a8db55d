//! `python.execute` on Workers: the shared tool (contract, sessions,
//! limits) over [`SandboxWorker`], which runs each script in the sandbox
//! Worker (service binding `SANDBOX`), in a fresh wasm instance per call.
//!
//! A script that never yields pins the sandbox isolate's thread, so this
//! Worker races the call against a timer and answers the timeout itself. In
//! production the sandbox's `limits.cpu_ms` then ends the stuck request;
//! under `wrangler dev`, which does not enforce it, the tests restart the
//! sandbox process.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{Either, select};
use serde_json::{Value, json};
use worker::send::{SendFuture, SendWrapper};
use worker::{Delay, Fetcher, Method, RequestInit};

use toolgate_shared::config::PythonConfig;
use toolgate_shared::error::ToolError;
use toolgate_shared::sessions::Sessions;
use toolgate_shared::tools::python_execute::{
    self, ExecOutput, PythonExecute, Run, RunFuture, Runner,
};
use toolgate_shared::walls::Walls;
use toolgate_shared::wire::{self, RunRequest};

pub const BINDING: &str = "SANDBOX";

/// Past the timeout, how long the sandbox has to report its own timeout
/// (a sleep past the deadline) before this Worker answers for it.
const GRACE: Duration = Duration::from_millis(500);

/// The sandbox's answer is the contract's output plus room for its JSON.
const MAX_REPLY_BYTES: usize = 4 << 20;

/// The sandbox Worker as python.execute's runner; clones share the binding.
#[derive(Clone)]
pub struct SandboxWorker {
    sandbox: Arc<SendWrapper<Fetcher>>,
    memory_mb: u64,
}

/// python.execute on the sandbox Worker behind `sandbox`, its sessions in
/// `sessions` (whose rows bound the state), and the runner for `/healthz`.
pub fn tool(
    cfg: &PythonConfig,
    sandbox: Fetcher,
    sessions: Sessions,
) -> (PythonExecute, SandboxWorker) {
    let runner = SandboxWorker {
        sandbox: Arc::new(SendWrapper::new(sandbox)),
        memory_mb: cfg.memory_mb,
    };
    let tool = PythonExecute::new(cfg, runner.clone())
        // A session's row holds its state and files: the state alone
        // never needs more.
        .with_state_cap(crate::d1_sessions::ROW_LIMIT as u64)
        .with_sessions(sessions);
    (tool, runner)
}

impl SandboxWorker {
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
            probe_error: None,
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

impl Runner for SandboxWorker {
    fn run<'a>(&'a self, run: Run<'a>) -> RunFuture<'a> {
        Box::pin(SendFuture::new(self.call(run)))
    }
}

impl SandboxWorker {
    async fn call(&self, run: Run<'_>) -> Result<ExecOutput, ToolError> {
        let body = RunRequest {
            version: wire::VERSION,
            code: run.code.to_owned(),
            timeout_secs: run.timeout.as_secs(),
            memory_mb: self.memory_mb,
            files: toolgate_shared::files::to_wire(run.files),
            files_cap: run.files_cap,
            session: run.session.map(toolgate_shared::files::encode),
            state_cap: run.state_cap,
        };
        let body = serde_json::to_string(&body).map_err(|e| ToolError::internal(e.to_string()))?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post).with_body(Some(body.into()));
        let call = pin!(self.sandbox.fetch("https://sandbox/run", Some(init)));
        let timer = pin!(Delay::from(run.timeout + GRACE));
        let timed_out = || {
            Ok(ExecOutput::timed_out(
                String::new(),
                String::new(),
                run.timeout,
            ))
        };
        match select(call, timer).await {
            Either::Left((Ok(reply), _)) => {
                let limit = MAX_REPLY_BYTES
                    + python_execute::max_body_bytes(run.files_cap)
                    + run.state_cap as usize * 2;
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
                let out = ExecOutput::from_reply(&bytes, run.files_cap, run.state_cap)
                    .unwrap_or_else(|why| {
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
                    timeout_secs = run.timeout.as_secs(),
                    "script ran past its timeout"
                );
                timed_out()
            }
        }
    }
}
