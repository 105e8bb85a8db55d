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

use toolgate_shared::clock::Instant;
use toolgate_shared::config::PythonConfig;
use toolgate_shared::error::ToolError;
use toolgate_shared::sessions::Sessions;
use toolgate_shared::tools::python_execute::{
    self, ExecOutput, PythonExecute, Run, RunFuture, Runner,
};
use toolgate_shared::walls::Walls;
use toolgate_shared::wire::{self, Exchange, RunRequest, ToolRequest};

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
    /// One call: the script runs in the sandbox Worker; in code mode,
    /// again after each tool request it stops at, with the requests so
    /// far answered ([`Replayed`]), until it ends or a call waits for a
    /// person. Within the script's timeout in all.
    async fn call(&self, run: Run<'_>) -> Result<ExecOutput, ToolError> {
        let timed_out = || {
            Ok(ExecOutput::timed_out(
                String::new(),
                String::new(),
                run.timeout,
            ))
        };
        let all = pin!(self.replayed(&run));
        let timer = pin!(Delay::from(run.timeout + GRACE));
        match select(all, timer).await {
            Either::Left((out, _)) => out,
            Either::Right(_) => {
                tracing::warn!(
                    timeout_secs = run.timeout.as_secs(),
                    "script ran past its timeout"
                );
                timed_out()
            }
        }
    }

    async fn replayed(&self, run: &Run<'_>) -> Result<ExecOutput, ToolError> {
        let started = Instant::now();
        let seed = run
            .tools
            .and_then(|t| t.seed())
            .map(|s| format!("{s:032x}"));
        let mut exchanges: Vec<Exchange> = Vec::new();
        let mut carried = 0usize;
        loop {
            let left = run.timeout.saturating_sub(started.elapsed());
            let (mut out, ran) = self.once(run, left, seed.clone(), &mut exchanges).await?;
            let Some(host) = run.tools else {
                return Ok(out);
            };
            let Some(at) = ran.tool_request else {
                // It ended before the requests it made on earlier runs.
                if let Some(n) = ran.tool_requests.filter(|n| *n < exchanges.len()) {
                    stopped(&mut out, &diverged(n));
                }
                return Ok(out);
            };
            if at.index < exchanges.len() {
                stopped(&mut out, &diverged(at.index));
                return Ok(out);
            }
            // Each tool request runs the script again: within the
            // platform's invocations per request (service bindings: 32).
            if exchanges.len() + 2 > MAX_RUNS {
                stopped(
                    &mut out,
                    &format!(
                        "[A script on the Worker makes at most {} tool requests (each one runs it again, and a request may run the sandbox {MAX_RUNS} times)]\n",
                        MAX_RUNS - 1
                    ),
                );
                return Ok(out);
            }
            let request_len = encoded_len(&at.request);
            if carried + request_len > MAX_CARRIED {
                stopped(&mut out, &too_much());
                return Ok(out);
            }
            let left = run.timeout.saturating_sub(started.elapsed());
            let Some(answer) = SendFuture::new(host.serve(at.request.as_bytes(), left)).await
            else {
                // The call waits for a person: the script stops here.
                return Ok(out);
            };
            let answer = String::from_utf8_lossy(&answer).into_owned();
            carried += request_len + encoded_len(&answer);
            if carried > MAX_CARRIED {
                // The call ran; its answer cannot be carried to the script.
                stopped(&mut out, &too_much());
                return Ok(out);
            }
            exchanges.push(Exchange {
                request: at.request,
                answer,
            });
        }
    }

    /// One run in the sandbox Worker: its output, and the tool request it
    /// stopped at (code mode).
    async fn once(
        &self,
        run: &Run<'_>,
        left: Duration,
        seed: Option<String>,
        exchanges: &mut Vec<Exchange>,
    ) -> Result<(ExecOutput, Ran), ToolError> {
        // The exchanges go into the request and back: no copy per run.
        let mut body = RunRequest {
            version: wire::VERSION,
            code: run.code.to_owned(),
            timeout_secs: left.as_secs().max(1),
            memory_mb: self.memory_mb,
            files: toolgate_shared::files::to_wire(run.files),
            files_cap: run.files_cap,
            session: run.session.map(toolgate_shared::files::encode),
            state_cap: run.state_cap,
            tools: run.tools.is_some(),
            seed,
            exchanges: std::mem::take(exchanges),
        };
        let text = serde_json::to_string(&body);
        *exchanges = std::mem::take(&mut body.exchanges);
        let body = text.map_err(|e| ToolError::internal(e.to_string()))?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post).with_body(Some(body.into()));
        let reply = match self.sandbox.fetch("https://sandbox/run", Some(init)).await {
            Ok(reply) => reply,
            // The sandbox request itself failed: in production, the CPU
            // limit ending a runaway script.
            Err(e) => {
                tracing::warn!(error = %e, "sandbox request failed; answering as a timeout");
                let out = ExecOutput::timed_out(String::new(), String::new(), run.timeout);
                return Ok((out, Ran::default()));
            }
        };
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
        let out =
            ExecOutput::from_reply(&bytes, run.files_cap, run.state_cap).unwrap_or_else(|why| {
                tracing::error!(reason = %why, "invalid sandbox reply");
                let mut out = ExecOutput::failed();
                out.add_note(&format!("[the sandbox sent an invalid reply ({why})]\n"));
                out
            });
        let ran = run
            .tools
            .and_then(|_| serde_json::from_slice::<Ran>(&bytes).ok())
            .unwrap_or_default();
        Ok((out, ran))
    }
}

/// What a reply says of the run's tool requests (code mode): where the
/// script stopped, or how many recorded ones it used.
#[derive(serde::Deserialize, Default)]
struct Ran {
    tool_request: Option<ToolRequest>,
    tool_requests: Option<usize>,
}

/// A call ended by the Worker's code mode: its output so far, with why.
fn stopped(out: &mut ExecOutput, why: &str) {
    out.exit_code = 1;
    out.finished = false;
    out.add_note(why);
}

fn diverged(at: usize) -> String {
    format!(
        "[The script took another path when the Worker ran it again after its tool request {at}: on the Worker a script runs again from the start after each tool request, with the same answers and module-level random seed, so its requests may not depend on the clock, random.Random() or SystemRandom, or object addresses]\n"
    )
}

fn too_much() -> String {
    format!(
        "[The script's tool requests and answers passed {} MiB in all: on the Worker each is carried again on every run of the script]\n",
        MAX_CARRIED >> 20
    )
}

/// `text`'s length as JSON carries it (escapes included).
fn encoded_len(text: &str) -> usize {
    serde_json::to_string(text).map_or(text.len(), |s| s.len())
}

/// The most a script's tool requests and answers may weigh in all, as JSON,
/// as each run of it carries them again.
const MAX_CARRIED: usize = 8 << 20;

/// The most runs of the sandbox one call makes: the first and one per tool
/// request, under Workers' 32 invocations per request through service
/// bindings.
const MAX_RUNS: usize = 30;
