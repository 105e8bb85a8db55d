//! python.execute's one flow over a [`Runner`]: the input checked, the
//! session's lease held, the timeout fitted to the runtime's deadline, the
//! backlog bounded, then the script handed to wherever scripts run (the
//! process sandbox natively, the sandbox Worker on Cloudflare).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

mod in_client;
mod waiting;

use super::backlog::Backlog;
use super::{ExecOutput, max_body_bytes, parse_input, spec};
use crate::clock::Instant;
use crate::config::{CodeModeConfig, PythonConfig};
use crate::error::ToolError;
use crate::files::Files;
use crate::registry::Registry;
use crate::sessions::{Limits, Quotas, SessionArg, Sessions};
use crate::tool::{CallContext, MAX_BODY_BYTES, Tool, ToolFuture, ToolSpec, effective_timeout};
use toolgate_core::code::ToolHost;

/// The backlog's share of calls no runtime identified (the process
/// sandbox's admission names its share the same).
const ANONYMOUS: &str = "anonymous";

/// One script as a runner gets it.
pub struct Run<'a> {
    /// The source.
    pub code: &'a str,
    /// The call's files (a session's under them).
    pub files: &'a Files,
    /// A session's saved state (empty: a new session); `None` outside one.
    pub session: Option<&'a [u8]>,
    /// The time it may take, already fitted to the runtime's deadline.
    pub timeout: Duration,
    /// The caller, for per-caller admission; `None`: anonymous.
    pub caller: Option<&'a str>,
    /// The files the script may return, in bytes in all.
    pub files_cap: u64,
    /// The most state a session may save, in bytes.
    pub state_cap: u64,
    /// Code mode: the script's tool requests go here; `None` when it may
    /// not call tools (a runner that cannot carry them ignores it, and
    /// the script cannot import `toolgate`).
    pub tools: Option<&'a dyn ToolHost>,
}

/// What a [`Runner`] returns: the contract's output, or `Err` when the
/// runner itself failed (never for the script's own failure).
pub type RunFuture<'a> = Pin<Box<dyn Future<Output = Result<ExecOutput, ToolError>> + Send + 'a>>;

/// Where scripts run.
pub trait Runner: Send + Sync {
    /// Runs one script.
    fn run<'a>(&'a self, run: Run<'a>) -> RunFuture<'a>;
}

/// `python.execute` over a runner.
pub struct PythonExecute {
    spec: ToolSpec,
    timeout: Duration,
    files_cap: u64,
    state_cap: u64,
    runner: Box<dyn Runner>,
    sessions: Option<Sessions>,
    quotas: Quotas,
    backlog: Option<Backlog>,
    code_mode: CodeModeConfig,
    /// Where a waiting script's person is sent from the caller's MCP
    /// client (`in_client`): the clarify service, when this runtime has one.
    clarify: Option<std::sync::Arc<crate::clarify::Clarify>>,
}

impl PythonExecute {
    /// The tool on `runner`, with `cfg`'s name, timeout, limits and
    /// allowed imports.
    pub fn new(cfg: &PythonConfig, runner: impl Runner + 'static) -> Self {
        Self {
            spec: spec(cfg),
            timeout: Duration::from_secs(cfg.timeout_secs),
            files_cap: cfg.max_files_bytes(),
            state_cap: cfg.max_state_bytes(),
            runner: Box::new(runner),
            sessions: None,
            quotas: cfg.session_quotas(),
            backlog: None,
            code_mode: CodeModeConfig {
                enabled: false,
                ..CodeModeConfig::default()
            },
            clarify: None,
        }
    }

    /// A script that waits for a person asks in the caller's MCP client
    /// (URL mode), through `clarify`'s pages and sealed states.
    pub fn with_clarify(mut self, clarify: std::sync::Arc<crate::clarify::Clarify>) -> Self {
        self.clarify = Some(clarify);
        self
    }

    /// Lets scripts call the other tools (`from toolgate import tools`)
    /// as `cfg` says.
    pub fn with_code_mode(mut self, cfg: &CodeModeConfig) -> Self {
        self.code_mode = cfg.clone();
        self
    }

    /// Bounds the bytes of calls held at once, in all and per caller
    /// (`cfg.max_queued_bytes()`): a runtime whose calls queue in its
    /// memory.
    pub fn with_backlog(mut self, cfg: &PythonConfig) -> Self {
        let one_call = MAX_BODY_BYTES as u64 + self.files_cap + self.state_cap;
        self.backlog = Some(Backlog::new(cfg.max_queued_bytes(), one_call));
        self
    }

    /// The tool with `sessions` to keep state between calls in, under the
    /// configured session quotas.
    pub fn with_sessions(mut self, sessions: Sessions) -> Self {
        self.sessions = Some(sessions.with_quotas(self.quotas));
        self
    }

    /// Lowers the state a session may save (a store whose rows are
    /// smaller than the configured cap).
    pub fn with_state_cap(mut self, most: u64) -> Self {
        self.state_cap = self.state_cap.min(most);
        self
    }

    /// Runs `code` with `files` for the caller in `ctx`, the timeout
    /// lowered to fit a runtime deadline (stderr then says so). `Err` only
    /// when the runner itself fails.
    pub async fn run(
        &self,
        code: &str,
        files: &Files,
        session: Option<&[u8]>,
        ctx: &CallContext,
    ) -> Result<ExecOutput, ToolError> {
        self.run_with(code, files, session, ctx, None).await
    }

    /// [`Self::run`], the script's tool requests answered by `tools`.
    async fn run_with(
        &self,
        code: &str,
        files: &Files,
        session: Option<&[u8]>,
        ctx: &CallContext,
        tools: Option<&dyn ToolHost>,
    ) -> Result<ExecOutput, ToolError> {
        let (timeout, lowered) = effective_timeout(self.timeout, ctx.deadline, Instant::now());
        let caller = ctx.caller.as_deref();
        let bytes = code.len() as u64
            + files.values().map(|f| f.len() as u64).sum::<u64>()
            + session.map_or(0, |s| s.len() as u64);
        let _held = match &self.backlog {
            Some(b) => Some(b.reserve(caller.unwrap_or(ANONYMOUS), bytes)?),
            None => None,
        };
        let span = tracing::info_span!(
            target: "toolgate::trace",
            "sandbox run",
            timeout_s = timeout.as_secs(),
            code_bytes = code.len(),
            timed_out = tracing::field::Empty,
        );
        let mut out = self
            .runner
            .run(Run {
                code,
                files,
                session,
                timeout,
                caller,
                files_cap: self.files_cap,
                state_cap: if session.is_some() { self.state_cap } else { 0 },
                tools,
            })
            .instrument(span.clone())
            .await?;
        span.record("timed_out", out.timed_out);
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

    /// Runs a call in the session `arg` names: its files under the call's,
    /// its state restored in the script; then stores what the call left.
    async fn run_in_session(
        &self,
        arg: &SessionArg,
        code: &str,
        given: Files,
        ctx: &CallContext,
        tools: Option<&dyn ToolHost>,
    ) -> Result<ExecOutput, ToolError> {
        let sessions = self
            .sessions
            .as_ref()
            .ok_or_else(crate::sessions::unavailable)?;
        let owner = ctx.caller.as_deref().unwrap_or("");
        let limits = Limits {
            timeout: self.timeout,
            files_cap: self.files_cap,
            state_cap: self.state_cap,
        };
        sessions
            .call(arg, owner, given, limits, |files, state| async move {
                self.run_with(code, &files, Some(&state), ctx, tools).await
            })
            .await
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
        self.call_with(args, ctx, None)
    }

    fn call_in<'a>(
        &'a self,
        args: Value,
        ctx: &'a CallContext,
        registry: &'a (dyn std::any::Any + Send + Sync),
    ) -> ToolFuture<'a> {
        self.call_with(args, ctx, registry.downcast_ref::<Registry>())
    }
}

impl PythonExecute {
    /// A call; with code mode when `registry` is given and the caller may.
    fn call_with<'a>(
        &'a self,
        args: Value,
        ctx: &'a CallContext,
        registry: Option<&'a Registry>,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            let input = parse_input(&args, self.files_cap)?;
            let registry = registry.filter(|_| self.code_mode.allows(ctx.caller.as_deref()));
            // The caller's MCP client, where a waiting script's person is
            // sent (code mode), and its retry's resume.
            let client = match (registry, &self.clarify) {
                (Some(_), Some(c)) => in_client::InClient::of(c, ctx, &self.spec.name),
                _ => None,
            };
            if client.is_none() && ctx.elicit.as_ref().is_some_and(|e| e.state.is_some()) {
                // A retry this call cannot take: running the script afresh
                // would run its calls before the wait again.
                return Err(in_client::untakeable(registry.is_some()));
            }
            let retry = match (&client, &self.clarify) {
                (Some(client), Some(c)) => client.retry(c, &args).await?,
                _ => None,
            };
            if let Some(r) = retry.as_ref().filter(|r| r.declined) {
                return in_client::declined(&r.resume);
            }
            // The state is bound to these arguments: its id is the one to
            // go on from (a `resume` in them may have been spent since).
            let resume = retry
                .as_ref()
                .map(|r| r.resume.clone())
                .or_else(|| input.resume.map(str::to_owned));
            if let Some(id) = resume {
                let answer = self.resume(&id, &input, ctx, registry).await?;
                return Ok(self
                    .asked(
                        client.as_ref(),
                        retry.as_ref(),
                        &args,
                        answer,
                        ctx.cancel.is_some(),
                    )
                    .await);
            }
            // A script outside a session may stop to wait for a person,
            // where its journal can be kept.
            let host = registry.map(|r| {
                let host = self.host(r, ctx);
                if input.session.is_none() && self.sessions.is_some() {
                    host.stopping_to_wait(self.journal_cap())
                } else {
                    host
                }
            });
            let tools = host.as_ref().map(|h| h as &dyn ToolHost);
            let (out, files) = match input.session {
                None => {
                    let out = self
                        .run_with(input.code, &input.files, None, ctx, tools)
                        .await?;
                    (out, input.files)
                }
                // A session's script never stops to wait: no journal.
                Some(arg) => {
                    let out = self
                        .run_in_session(&arg, input.code, input.files, ctx, tools)
                        .await?;
                    (out, Files::new())
                }
            };
            match host {
                Some(h) => {
                    let answer = self.answered(out, h.end(), input.code, &files, ctx).await?;
                    let may_be_task = ctx.cancel.is_some();
                    Ok(self
                        .asked(client.as_ref(), None, &args, answer, may_be_task)
                        .await)
                }
                None => to_value(&out),
            }
        })
    }

    /// `answer` to the call with `args`, asked in the caller's MCP client
    /// when the script waits (unless its person declined the page).
    async fn asked(
        &self,
        client: Option<&in_client::InClient>,
        retry: Option<&in_client::Retry>,
        args: &Value,
        answer: Value,
        may_be_task: bool,
    ) -> Value {
        match (client, &self.clarify) {
            // A call that may become a task (its client declared them)
            // answers `waiting`: a task's result cannot ask for input.
            (Some(client), Some(c)) if !retry.is_some_and(|r| r.declined) && !may_be_task => {
                let ttl = Duration::from_secs(self.code_mode.resume_ttl_secs);
                client.ask(c, args, answer, ttl).await
            }
            _ => answer,
        }
    }
}

fn to_value(out: &ExecOutput) -> Result<Value, ToolError> {
    serde_json::to_value(out).map_err(|e| ToolError::internal(e.to_string()))
}
