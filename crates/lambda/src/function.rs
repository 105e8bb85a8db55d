//! AWS Lambda glue shared by every function binary. One handler takes:
//! - API Gateway HTTP API (payload v2), REST API (v1) and Function URL
//!   events, served by the same axum router as `toolgate serve`;
//! - direct invocations (Step Functions, the SDK), whose payload is the
//!   tool's arguments (single-tool functions) or `{"tool", "arguments"}`.
//!   A bad call fails as a function error whose `errorType` names the code
//!   (`InvalidInput`, ...), so a state machine can `Catch` it; a tool's own
//!   outcome, even `exit_code: 1`, is a normal return.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use lambda_http::lambda_runtime::{self, Diagnostic, LambdaEvent};
use lambda_http::request::LambdaRequest;
use lambda_http::{Adapter, Context, Service};
use serde_json::{Value, json};

use crate::envelope::Envelope;
use toolgate_shared::config::{ApprovalsConfig, Config};
use toolgate_shared::error::{ErrorCode, ToolError};
use toolgate_shared::invoke::{Transport, invoke, log};
use toolgate_shared::registry::Registry;
use toolgate_shared::response_limit::{LAMBDA_RESPONSE_BYTES, fit_answer};
use toolgate_shared::tasks::rows::TaskRows;
use toolgate_shared::tool::CallContext;
use toolgate_shared::toolset::Toolset;

pub use crate::envelope::{DESCRIBE, SETTLED, SWEEP};

mod context;
mod task_route;
use context::call_context;
#[cfg(test)]
use context::claim_values;

/// One function's tools and its HTTP router.
pub struct Function {
    registry: Arc<Registry>,
    router: Router,
    clarify: Option<Arc<toolgate_shared::clarify::Clarify>>,
    /// Where the tasks sent to this function are kept, and the name its
    /// runs are kept under.
    tasks: Option<(Arc<dyn TaskRows>, String)>,
}

impl Function {
    /// API Gateway authenticates (JWT or IAM authorizer), so the router has
    /// no bearer token of its own and answers any `Host`. No one is an
    /// approver: see [`Self::with_approvals`].
    pub fn new(tools: &Toolset) -> Self {
        Self::with_approvals(tools, &ApprovalsConfig::default())
    }

    /// As [`Self::new`], with the authorizer's identities that are approvers
    /// (`[approvals] jwt_group`, `iam_approvers`).
    pub fn with_approvals(tools: &Toolset, approvals: &ApprovalsConfig) -> Self {
        Self::with_origins(tools, approvals, toolgate_shared::http::Origins::default())
    }

    /// As [`Self::with_approvals`], with the web origins whose pages may
    /// call (`TOOLGATE_ALLOWED_ORIGINS`, the public URL's).
    pub fn with_origins(
        tools: &Toolset,
        approvals: &ApprovalsConfig,
        origins: toolgate_shared::http::Origins,
    ) -> Self {
        let state = tools.app_state(toolgate_shared::http::Tokens::default(), false);
        let registry = state.registry.clone();
        let router = toolgate_shared::http::router(state, origins).layer(
            axum::middleware::from_fn_with_state(Arc::new(approvals.clone()), call_context),
        );
        Self {
            registry,
            router,
            clarify: tools.clarify().cloned(),
            tasks: None,
        }
    }

    /// As it is, running the tasks sent to it (an envelope's `task`) kept
    /// in `rows`, as function `runner`.
    pub fn with_task_rows(mut self, rows: Arc<dyn TaskRows>, runner: String) -> Self {
        self.tasks = Some((rows, runner));
        self
    }

    /// As it is, sending a call that prefers an asynchronous answer to the
    /// tool's task route, which the gateway serves (`task_route`): for a
    /// function that runs tasks but starts none.
    pub fn with_task_route(mut self) -> Self {
        self.router = self
            .router
            .layer(axum::middleware::from_fn(task_route::to_task_route));
        self
    }

    /// Handles one invocation: an HTTP event or a direct call.
    pub async fn handle(&self, event: LambdaEvent<Value>) -> Result<Value, Diagnostic> {
        let LambdaEvent { payload, context } = event;
        if is_http_event(&payload) {
            return self.http(payload, context).await;
        }
        if payload == json!({ "toolgate": DESCRIBE }) {
            // A gateway function asking for this function's tools.
            let tools: Vec<_> = self
                .registry
                .own_tools()
                .iter()
                .map(|t| t.spec().clone())
                .collect();
            return Ok(json!({ "tools": tools }));
        }
        if payload == json!({ "toolgate": SWEEP }) {
            return self.sweep().await;
        }
        if payload["toolgate"] == SETTLED {
            return self.settled(&payload).await.map_err(|e| diagnostic(&e));
        }
        let ctx = CallContext {
            deadline: deadline(&context),
            response_limit: Some(LAMBDA_RESPONSE_BYTES),
            ..Default::default()
        };
        // A script's call (an envelope naming its script): its outcome is
        // the answer, error details and all.
        if payload["tool"].is_string() && payload["script"].is_string() {
            return Ok(crate::envelope::tagged(self.direct(payload, &ctx).await));
        }
        self.direct(payload, &ctx).await.map_err(|e| diagnostic(&e))
    }

    /// What a script's waited call answers once its person settled it
    /// (`{"toolgate": "settled", "tool", "id"}`): `{"settled": answer}`,
    /// `null` while it still waits.
    async fn settled(&self, payload: &Value) -> Result<Value, ToolError> {
        let (Some(tool), Some(id)) = (payload["tool"].as_str(), payload["id"].as_str()) else {
            return Err(ToolError::invalid_input(
                "send {\"toolgate\": \"settled\", \"tool\": NAME, \"id\": ID}",
            ));
        };
        let tool = self.registry.get(tool)?;
        if tool.runs_in().is_some() {
            // Another function's: asked there, never forwarded.
            return Err(ToolError::unknown_tool(tool.spec().name.as_str()));
        }
        let started = Instant::now();
        let outcome = tool.settled(id).await.map(|v| json!({ "settled": v }));
        let ctx = CallContext::default();
        log(
            "clarify.settled",
            true,
            Transport::Lambda,
            &ctx,
            started,
            &outcome,
        );
        outcome
    }

    /// The scheduled sweep: `{"expired": N, "resent": M}`, or a function error (so the
    /// schedule's failure metrics see it) when the table cannot be read.
    async fn sweep(&self) -> Result<Value, Diagnostic> {
        let Some(clarify) = &self.clarify else {
            return Err(logged(diagnostic(&ToolError::new(
                ErrorCode::NotConfigured,
                "this function does not serve clarify: nothing to sweep",
            ))));
        };
        let started = Instant::now();
        let outcome = clarify
            .sweep()
            .await
            .map(|n| json!({ "expired": n.expired, "resent": n.resent }))
            .map_err(|e| ToolError::new(ErrorCode::UpstreamUnavailable, e));
        let ctx = CallContext::default();
        log(
            "clarify.sweep",
            true,
            Transport::Lambda,
            &ctx,
            started,
            &outcome,
        );
        outcome.map_err(|e| diagnostic(&e))
    }

    async fn http(&self, payload: Value, context: Context) -> Result<Value, Diagnostic> {
        let mut request: LambdaRequest = serde_json::from_value(payload).map_err(|e| {
            logged(Diagnostic {
                error_type: "InvalidEvent".into(),
                error_message: format!("unreadable HTTP event: {e}"),
            })
        })?;
        drop_stage(&mut request);
        let mut adapter = Adapter::from(self.router.clone());
        let response = match adapter.call(LambdaEvent::new(request, context)).await {
            Ok(r) => r,
            Err(never) => match never {},
        };
        serde_json::to_value(response).map_err(|e| {
            logged(Diagnostic {
                error_type: "Internal".into(),
                error_message: format!("cannot encode the response: {e}"),
            })
        })
    }

    /// A direct invocation: the envelope decoded, then the one call path.
    pub async fn direct(&self, payload: Value, ctx: &CallContext) -> Result<Value, ToolError> {
        let tools = self.registry.tools();
        let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
        let call = match Envelope::decode(payload, &names) {
            Ok(c) => c,
            Err(e) => {
                // No tool is named: the line says "-".
                let outcome = Err(e);
                log("-", false, Transport::Lambda, ctx, Instant::now(), &outcome);
                return outcome;
            }
        };
        let mut ctx = ctx.clone();
        // The forwarding function's caller stops waiting then: the tools
        // answer before it (a timeout, with what ran so far).
        if let Some(d) = call.deadline() {
            ctx.deadline = Some(ctx.deadline.map_or(d, |own| own.min(d)));
        }
        if call.servers.is_some() {
            ctx.servers = call.servers;
        }
        if call.caller.is_some() {
            ctx.caller = call.caller;
        }
        if call.elicit.is_some() {
            ctx.elicit = call.elicit;
        }
        if call.traceparent.is_some() {
            ctx.traceparent = call.traceparent;
        }
        // The script's call: its line names the script, as the script's
        // own function's line does.
        if call.script.is_some() {
            ctx.parent = call.script;
        }
        if let Some(id) = &call.task {
            let Some((rows, runner)) = &self.tasks else {
                return Err(ToolError::new(
                    ErrorCode::NotConfigured,
                    "This function keeps no tasks (TOOLGATE_TASKS_TABLE is not set)",
                ));
            };
            let (tool, args) = (&call.tool, call.arguments);
            let registry = &self.registry;
            return crate::tasks::run::run(rows.as_ref(), runner, registry, id, tool, args, &ctx)
                .await;
        }
        let args = |_| std::future::ready(Ok(call.arguments));
        let mut out = invoke(&self.registry, Transport::Lambda, &call.tool, args, &ctx).await?;
        if let Some(limit) = ctx.response_limit {
            fit_answer(&mut out, limit, &toolgate_shared::response_limit::json_len)?;
        }
        Ok(out)
    }
}

/// Events from API Gateway (v1 and v2) and Function URLs carry a
/// `requestContext` and a path; a tool's arguments never need one.
fn is_http_event(payload: &Value) -> bool {
    payload.get("requestContext").is_some_and(Value::is_object)
        && (payload.get("rawPath").is_some() || payload.get("httpMethod").is_some())
}

/// The function error a direct call fails with: `errorType` is the error
/// code in PascalCase (`InvalidInput`, `Forbidden`, `Internal`, ...). The
/// message is the error's whole, ids included (a workflow passes the id
/// back as `approval`); lambda_runtime's log line of it is dropped
/// ([`toolgate_shared::logging::init`]), and the call's own line says what failed.
pub fn diagnostic(e: &ToolError) -> Diagnostic {
    Diagnostic {
        error_type: crate::envelope::error_type(e.code).into(),
        error_message: e.message.clone(),
    }
}

/// `d`, once logged: a failure no tool call's line reports (lambda_runtime's
/// own line of it is dropped, [`toolgate_shared::logging::init`]), ids as refs.
fn logged(d: Diagnostic) -> Diagnostic {
    tracing::warn!(
        error_type = %d.error_type,
        error = %toolgate_shared::logging::field(&toolgate_shared::logging::redact_ids(&d.error_message)),
        "invocation failed"
    );
    d
}

/// Deadlines below this (2001-09-09 in ms since the epoch) are not wall-clock
/// times: `cargo lambda watch` sends a fixed 600000, which would otherwise
/// read as "already expired" and cut every call to the minimum timeout.
const PLAUSIBLE_DEADLINE_MS: u64 = 1_000_000_000_000;

/// Lambda's deadline (wall clock) as an `Instant`, for the tools' timeouts.
fn deadline(context: &Context) -> Option<Instant> {
    if context.deadline < PLAUSIBLE_DEADLINE_MS {
        return None;
    }
    let left = context
        .deadline()
        .duration_since(SystemTime::now())
        .unwrap_or(Duration::ZERO);
    Some(Instant::now() + left)
}

/// Routes are the API's own paths, but lambda_http puts a named stage in
/// front of them (`/prod/tools/...`): a REST API always has one, an HTTP
/// API unless it is `$default`. The stage is taken out before routing.
fn drop_stage(request: &mut LambdaRequest) {
    match request {
        // `path` is the resource's path; only the stage would be added.
        LambdaRequest::ApiGatewayV1(r) => r.request_context.stage = None,
        // `rawPath` already starts with a named stage.
        LambdaRequest::ApiGatewayV2(r) => {
            let Some(stage) = r.request_context.stage.take() else {
                return;
            };
            let prefix = format!("/{stage}");
            let rest = r
                .raw_path
                .as_deref()
                .and_then(|p| p.strip_prefix(&prefix))
                .filter(|rest| rest.is_empty() || rest.starts_with('/'));
            if stage != "$default"
                && let Some(rest) = rest
            {
                r.raw_path = Some(if rest.is_empty() {
                    "/".into()
                } else {
                    rest.into()
                });
            }
        }
        _ => {}
    }
}

/// A function binary's `main`: logs, config, the tools (built during
/// Lambda's init phase, so the sandbox is warm before the first event) on
/// a set with `backends` (`toolgate_aws::Aws`'s), then the Runtime API
/// loop.
pub fn main<F, Fut>(
    backends: std::sync::Arc<dyn toolgate_shared::backends::Backends>,
    assemble: F,
) -> ExitCode
where
    F: FnOnce(Config, Toolset) -> Fut,
    Fut: std::future::Future<Output = Result<Toolset, String>>,
{
    toolgate_shared::logging::init("info");
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    rt.block_on(async move {
        let cfg = match Config::from_env_and_file(None) {
            Ok(c) => c,
            Err(e) => return fail(&e.to_string()),
        };
        for warning in &cfg.warnings {
            tracing::warn!(target: "toolgate::config", "{warning}");
        }
        let approvals = cfg.approvals.clone();
        let origins = toolgate_shared::http::Origins::from_config(&cfg);
        let http = cfg.clone();
        let set = Toolset::new().with_backends(backends.clone());
        let tools = match assemble(cfg, set).await {
            Ok(t) => t,
            Err(e) => {
                report_init_error(&e).await;
                return fail(&e);
            }
        };
        let tools = tools.with_http(&http);
        let mut function = Function::with_origins(&tools, &approvals, origins);
        if let Some(table) = &http.server.tasks_table {
            match backends.task_rows(table).await {
                // Set by Lambda (and `cargo lambda watch`).
                Ok(rows) => {
                    let runner = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_default();
                    function = function.with_task_rows(rows, runner);
                    // The gateway starts tasks; the others send their
                    // callers to it.
                    if !tools.runs_tasks() {
                        function = function.with_task_route();
                    }
                }
                Err(e) => return fail(&e),
            }
        }
        let function = Arc::new(function);
        tracing::info!(
            tools = ?tools.registry.tools().iter().map(|t| t.spec().name.clone()).collect::<Vec<_>>(),
            "function ready"
        );
        let handler = lambda_runtime::service_fn(move |event: LambdaEvent<Value>| {
            let function = function.clone();
            async move {
                let deadline = event.context.deadline;
                let answer = function.handle(event).await;
                // Lambda freezes the instance once the answer is sent: the
                // call's spans go first, within what is left of the
                // invocation's time (less a margin for the answer itself).
                let left = deadline
                    .saturating_sub(toolgate_shared::clock::unix_ms() as u64)
                    .saturating_sub(200);
                toolgate_shared::traces::flush(std::time::Duration::from_millis(left)).await;
                answer
            }
        });
        match lambda_runtime::run(handler).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&format!("Lambda runtime loop failed: {e}")),
        }
    })
}

/// Tells Lambda why this instance cannot start (`/runtime/init/error`), so
/// that the invocation waiting on it fails at once with the reason (a
/// gateway's listing shows it) rather than with a bare exit.
async fn report_init_error(msg: &str) {
    // Set by Lambda (and `cargo lambda watch`) for the runtime's own use.
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_none() {
        return;
    }
    let client = match lambda_runtime_api_client::Client::builder().build() {
        Ok(c) => c,
        Err(e) => return tracing::warn!(error = %e, "cannot reach the Runtime API"),
    };
    let body = json!({"errorType": "InitError", "errorMessage": msg}).to_string();
    let request = lambda_runtime_api_client::build_request()
        .method("POST")
        .uri("/2018-06-01/runtime/init/error")
        .header("lambda-runtime-function-error-type", "Runtime.InitError")
        .body(body.into());
    let sent = match request {
        Ok(r) => client.call(r).await.map(drop),
        Err(e) => Err(e.into()),
    };
    if let Err(e) = sent {
        tracing::warn!(error = %e, "the init error was not reported");
    }
}

fn fail(msg: &str) -> ExitCode {
    tracing::error!(error = msg, "function cannot start");
    ExitCode::from(2)
}

#[cfg(test)]
mod tests;
