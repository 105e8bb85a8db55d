//! The routes every runtime serves, their handlers, and the state they share.

use std::sync::Arc;

use axum::{
    Json, Router,
    body::Body,
    extract::{Extension, Path, Query, Request, State},
    http::{HeaderMap, StatusCode},
    middleware,
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::body::read_json_body;
use super::context::call_context;
use super::guard::{Guard, guard};
use super::identity::{Approver, Caller};
use super::origin::Origins;
use super::{auth::auth, errors::json_errors};
use crate::error::{ErrorCode, ToolError};
use crate::invoke::{Transport, invoke};
use crate::registry::Registry;
use crate::spec_export::{Format, export};
use crate::tool::CallContext;

/// `/healthz`'s extra fields, asked for on each request: a runtime may
/// have to ask another process (the Worker asks its sandbox Worker).
pub type HealthFn = Arc<dyn Fn() -> HealthFuture + Send + Sync>;
/// What a [`HealthFn`] returns: the fields to add.
pub type HealthFuture = std::pin::Pin<Box<dyn Future<Output = Value> + Send>>;

/// `/metrics`'s text, made at each scrape.
pub type MetricsFn =
    Arc<dyn Fn() -> std::pin::Pin<Box<dyn Future<Output = String> + Send>> + Send + Sync>;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The tools served.
    pub registry: Arc<Registry>,
    /// The callers' and the approvers' bearer tokens. With any caller's,
    /// the tool routes need one; approver routes always need an
    /// approver's (`identity::Route`).
    pub tokens: Arc<super::identity::Tokens>,
    /// Extra fields for `/healthz` (the sandbox's walls).
    pub health: HealthFn,
    /// `GET /metrics`, where the process lives on between requests
    /// (`toolgate serve`); no such route elsewhere.
    pub metrics: Option<MetricsFn>,
    /// Refuse requests addressed to a name that is not loopback (`Host`, the
    /// URI's authority; `host`): a server bound to 127.0.0.1 must not be
    /// reachable through DNS rebinding from a browser.
    pub loopback_hosts_only: bool,
    /// The answer routes, when this runtime serves `clarify`.
    pub clarify: Option<Arc<crate::clarify::Clarify>>,
    /// The approvers' routes (inbox, decisions, Slack), where clarify is
    /// served.
    pub approvals: Option<crate::approvals::http::Routes>,
    /// What `/.well-known/oauth-protected-resource` says (RFC 9728).
    pub resource: Arc<super::resource::ProtectedResource>,
    /// Where long calls run on as tasks (`Prefer: respond-async`, MCP's
    /// tasks extension); `None` where this runtime offers none.
    pub tasks: Option<Arc<dyn crate::tasks::TaskHost>>,
}

/// Every route (`/tools`, `/tools/{name}`, `/healthz`, `/openapi.json`, `/mcp`
/// where this build serves it, and the answer routes with `clarify`), behind
/// the guard (the loopback `Host` check, pages of other sites than
/// `origins`'), then the bearer token check, with errors as the contract's
/// JSON.
pub fn router(state: AppState, origins: Origins) -> Router {
    let checks = Arc::new(Guard {
        loopback_hosts_only: state.loopback_hosts_only,
        origins,
        has_callers: state.tokens.has_callers(),
    });
    let clarify = match &state.clarify {
        Some(c) => crate::clarify::http::routes(c.clone()),
        None => Router::new(),
    };
    let approvals = match &state.approvals {
        Some(a) => crate::approvals::http::routes(a.clone()),
        None => Router::new(),
    };
    let metrics = match &state.metrics {
        Some(_) => Router::new().route("/metrics", get(metrics)),
        None => Router::new(),
    };
    #[cfg(not(target_arch = "wasm32"))]
    let tasks = match &state.tasks {
        Some(t) => crate::tasks::http::routes(t.clone()),
        None => no_tasks(),
    };
    #[cfg(target_arch = "wasm32")]
    let tasks = no_tasks();
    let router = Router::new()
        .merge(clarify)
        .merge(approvals)
        .merge(metrics)
        .merge(tasks)
        .route("/tools", get(list_tools))
        .route("/tools/{name}", post(call_tool))
        .route("/tools/{name}/task", post(call_task))
        .route("/healthz", get(healthz))
        .route("/openapi.json", get(openapi))
        .route(super::resource::WELL_KNOWN, get(super::resource::metadata))
        .route(
            &format!("{}/mcp", super::resource::WELL_KNOWN),
            get(super::resource::metadata),
        );
    // rmcp's server needs tokio's runtime; the Worker answers the same way
    // without it.
    #[cfg(not(target_arch = "wasm32"))]
    let router = router.nest_service(
        "/mcp",
        crate::mcp::service(state.registry.clone(), state.tasks.clone()),
    );
    #[cfg(target_arch = "wasm32")]
    let router = router.nest_service(
        "/mcp",
        axum::routing::any(mcp_stateless).with_state(state.clone()),
    );
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn(mcp_refusals))
        .layer(middleware::from_fn(json_errors))
        .layer(middleware::from_fn_with_state(state.clone(), auth))
        .layer(middleware::from_fn_with_state(checks, guard))
        .layer(middleware::from_fn(super::request_id::request_id))
        .with_state(state)
}

/// What the task routes answer where this runtime runs no tasks.
fn no_tasks_here() -> ToolError {
    ToolError::new(
        ErrorCode::NotConfigured,
        "This runtime does not run calls as tasks: call the tool directly (toolgate serve runs them)",
    )
}

/// The task routes where this runtime runs no tasks: said, not a 404.
fn no_tasks<S: Clone + Send + Sync + 'static>() -> Router<S> {
    async fn refuse() -> ToolError {
        no_tasks_here()
    }
    Router::new()
        .route("/tasks/{id}", get(refuse))
        .route("/tasks/{id}/cancel", post(refuse))
}

#[cfg(target_arch = "wasm32")]
async fn mcp_stateless(State(state): State<AppState>, req: Request) -> Response {
    crate::mcp::stateless::handle(state.registry.clone(), req).await
}

#[derive(Deserialize)]
struct ToolsQuery {
    format: Option<String>,
}

async fn list_tools(
    State(state): State<AppState>,
    Query(q): Query<ToolsQuery>,
) -> Result<Json<Value>, ToolError> {
    let format = Format::parse(q.format.as_deref().unwrap_or("native"))?;
    Ok(Json(export(&state.registry, format)))
}

/// `{"status": "ok"}`, and what the tools report (names, the sandbox's
/// walls, accounts and their errors) only to whoever may call them: a
/// caller or an approver, or anyone where tool routes need no token.
async fn healthz(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    approver: Option<Extension<Approver>>,
    ctx: Option<Extension<CallContext>>,
    proxied: Option<Extension<super::guard::ViaPublicName>>,
) -> Json<Value> {
    let known = caller.is_some()
        || approver.is_some()
        || ctx.is_some_and(|Extension(c)| c.caller.is_some());
    // Only a token-less `toolgate serve` on loopback shows all to anyone
    // on this machine: whoever reaches it may call its tools anyway.
    // Elsewhere (a gateway route without an authorizer, a Worker or server
    // without tokens, the public URL's proxy) a caller without credentials
    // learns nothing of accounts or walls.
    let open = !state.tokens.has_callers() && state.loopback_hosts_only && proxied.is_none();
    if !known && !open {
        return Json(json!({"status": "ok"}));
    }
    let tools: Vec<String> = state
        .registry
        .tools()
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    let mut body = json!({"status": "ok", "tools": tools});
    if let (Some(obj), Value::Object(extra)) = (body.as_object_mut(), (state.health)().await) {
        obj.extend(extra);
    }
    Json(body)
}

/// `/mcp`'s refusals of requests a client sent wrong (no `Accept` of both
/// types, another content type, a bad protocol header): logged as the
/// refusals before them are (`auth`). A tool's failure is a 200 there, so
/// each status of 400 and up is a refusal.
async fn mcp_refusals(req: Request, next: middleware::Next) -> Response {
    if !req.uri().path().starts_with("/mcp") {
        return next.run(req).await;
    }
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let caller = req.extensions().get::<Caller>().map(|c| c.0.clone());
    let res = next.run(req).await;
    if res.status().as_u16() >= 400 {
        crate::logging::refused(
            res.status().as_u16(),
            method.as_str(),
            &path,
            caller.as_deref(),
        );
    }
    res
}

/// Prometheus's text format (docs/http-api.md#metrics): callers only, as the
/// tool routes.
async fn metrics(State(state): State<AppState>) -> Response {
    let text = match &state.metrics {
        Some(m) => m().await,
        None => String::new(),
    };
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

async fn openapi(State(state): State<AppState>) -> Json<Value> {
    Json(crate::openapi::document(
        &state.registry,
        state.tokens.has_callers(),
        state.tasks.is_some(),
    ))
}

async fn not_found(req: Request) -> ToolError {
    ToolError::new(
        ErrorCode::UnknownTool,
        format!(
            "No endpoint {} {}. Endpoints: GET /tools, POST /tools/{{name}}, GET /openapi.json, POST /mcp, GET /healthz",
            req.method(),
            req.uri().path(),
        ),
    )
}

async fn method_not_allowed(req: Request) -> ToolError {
    ToolError::invalid_input(format!(
        "Method {} is not allowed on {}",
        req.method(),
        req.uri().path()
    ))
}

/// `POST /tools/{name}/task`: the call as a task, with or without
/// `Prefer` (whose `wait` it takes): the route that starts one where the
/// tool's own route cannot (on AWS it goes to the gateway, the tool's to
/// its function).
async fn call_task(
    State(state): State<AppState>,
    Path(name): Path<String>,
    ctx: Option<Extension<CallContext>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    #[cfg(not(target_arch = "wasm32"))]
    {
        let ctx = call_context(ctx.map(|Extension(c)| c), &headers);
        let wait = crate::tasks::http::prefers_async(&headers).unwrap_or_default();
        call_as_task(&state, &name, &ctx, &headers, body, wait).await
    }
    #[cfg(target_arch = "wasm32")]
    {
        let _ = (state, name, ctx, headers, body);
        no_tasks_here().into_response()
    }
}

async fn call_tool(
    State(state): State<AppState>,
    Path(name): Path<String>,
    ctx: Option<Extension<CallContext>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let ctx = call_context(ctx.map(|Extension(c)| c), &headers);
    #[cfg(not(target_arch = "wasm32"))]
    if let (Some(_), Some(wait)) = (&state.tasks, crate::tasks::http::prefers_async(&headers)) {
        return call_as_task(&state, &name, &ctx, &headers, body, wait).await;
    }
    let args = |limit| read_json_body(&headers, body, limit);
    let outcome = invoke(&state.registry, Transport::Http, &name, args, &ctx)
        .await
        .and_then(|mut v| {
            // The answer travels as a JSON string (API Gateway's body).
            if let Some(limit) = ctx.response_limit {
                crate::response_limit::fit_answer(&mut v, limit, &|v| {
                    crate::response_limit::string_literal_len(&v.to_string())
                })?;
            }
            Ok(v)
        });
    match outcome {
        Ok(v) => (StatusCode::OK, Json(v)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// A call as a task (`Prefer: respond-async`, or the task route): the
/// call's answer if it ends within `wait`, else 202 with its task; where
/// this runtime runs no tasks, `not_configured`. The body is read first (a
/// bad one is refused at once), to the tool's own limit.
#[cfg(not(target_arch = "wasm32"))]
async fn call_as_task(
    state: &AppState,
    name: &str,
    ctx: &CallContext,
    headers: &HeaderMap,
    body: Body,
    wait: std::time::Duration,
) -> Response {
    let Some(tasks) = &state.tasks else {
        return no_tasks_here().into_response();
    };
    let registry = &state.registry;
    let limit = match registry.get(name) {
        Ok(t) => t.max_body_bytes(),
        // Answered (and logged) as any call of an unknown name.
        Err(_) => {
            let args = |_| std::future::ready(Ok(Value::Null));
            return match invoke(registry, Transport::Http, name, args, ctx).await {
                Ok(v) => (StatusCode::OK, Json(v)).into_response(),
                Err(e) => e.into_response(),
            };
        }
    };
    let args = match read_json_body(headers, body, limit).await {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    match tasks.start(name, args, ctx, Transport::Http, wait).await {
        Ok(crate::tasks::Started::Done(Ok(v))) => (StatusCode::OK, Json(v)).into_response(),
        Ok(crate::tasks::Started::Done(Err(e))) | Err(e) => e.into_response(),
        Ok(crate::tasks::Started::Task(t)) => crate::tasks::http::accepted(&t),
    }
}
