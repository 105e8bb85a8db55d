//! The HTTP API of docs/contracts.md#http-api as one axum router, shared by every runtime.

use std::sync::Arc;

use axum::{
    Json, Router,
    body::{Body, to_bytes},
    extract::{Extension, Path, Query, Request, State},
    http::{HeaderMap, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ErrorCode, ToolError};
use crate::invoke::{Transport, invoke};
use crate::registry::Registry;
use crate::spec_export::{Format, export};
use crate::tool::CallContext;

/// Whether this build serves `/mcp`: rmcp's server needs tokio's runtime,
/// which the Worker does not have.
pub const SERVES_MCP: bool = cfg!(feature = "native");

/// Request bodies over this size get 413 `too_large`.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// `/healthz`'s extra fields, asked for on each request: a runtime may
/// have to ask another process (the Worker asks its sandbox Worker).
pub type HealthFn = Arc<dyn Fn() -> HealthFuture + Send + Sync>;
pub type HealthFuture = std::pin::Pin<Box<dyn Future<Output = Value> + Send>>;

#[derive(Clone)]
pub struct AppState {
    pub registry: Arc<Registry>,
    /// When set, every route but `/healthz` needs `Authorization: Bearer`.
    pub token: Option<Arc<str>>,
    /// Extra fields for `/healthz` (the sandbox's walls).
    pub health: HealthFn,
    /// Refuse requests whose `Host` is not a loopback name: a server bound to
    /// 127.0.0.1 must not be reachable through DNS rebinding from a browser.
    pub loopback_hosts_only: bool,
    /// The answer routes, when this runtime serves `clarify`.
    pub clarify: Option<Arc<crate::clarify::Clarify>>,
}

impl IntoResponse for ToolError {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(self.body())).into_response()
    }
}

pub fn router(state: AppState) -> Router {
    let clarify = match &state.clarify {
        Some(c) => crate::clarify::http::routes(c.clone()),
        None => Router::new(),
    };
    let router = Router::new()
        .merge(clarify)
        .route("/tools", get(list_tools))
        .route("/tools/{name}", post(call_tool))
        .route("/healthz", get(healthz))
        .route("/openapi.json", get(openapi));
    // rmcp's server needs tokio's runtime; the Worker serves the rest.
    #[cfg(feature = "native")]
    let router = router.nest_service("/mcp", crate::mcp::service(state.registry.clone()));
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn(json_errors))
        .layer(middleware::from_fn_with_state(state.clone(), auth))
        .with_state(state)
}

/// Every error outside `/mcp` is the contract's JSON, including rejections
/// that axum's extractors produce as plain text (a malformed query string or
/// path). `/mcp` keeps rmcp's own answers: MCP clients read those statuses.
async fn json_errors(req: Request, next: Next) -> Response {
    let is_mcp = req.uri().path().starts_with("/mcp");
    let res = next.run(req).await;
    let status = res.status();
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_mcp || is_json || !(status.is_client_error() || status.is_server_error()) {
        return res;
    }
    let code = match status.as_u16() {
        401 => ErrorCode::Unauthorized,
        403 => ErrorCode::Forbidden,
        404 => ErrorCode::UnknownTool,
        413 => ErrorCode::TooLarge,
        502 => ErrorCode::UpstreamUnavailable,
        s if s >= 500 => ErrorCode::Internal,
        _ => ErrorCode::InvalidInput,
    };
    let text = to_bytes(res.into_body(), 64 * 1024)
        .await
        .unwrap_or_default();
    let message = String::from_utf8_lossy(&text).trim().to_owned();
    let message = if message.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        message
    };
    ToolError::new(code, message).into_response()
}

/// Compares without an early exit, so response time does not reveal how
/// much of a guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// True for `localhost`, `127.x.x.x` and `[::1]`, with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

async fn auth(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if state.loopback_hosts_only
        && let Some(host) = req.headers().get(header::HOST)
        && !host.to_str().is_ok_and(is_loopback_host)
    {
        return ToolError::new(
            ErrorCode::Forbidden,
            "This server is bound to loopback and only answers Host: localhost or 127.0.0.1",
        )
        .into_response();
    }
    let Some(token) = state.token.as_deref() else {
        return next.run(req).await;
    };
    // A clarification's unguessable id is its capability: the person who
    // answers holds a link, not the agent's token.
    let path = req.uri().path();
    if path == "/healthz" || path.starts_with("/clarifications/") {
        return next.run(req).await;
    }
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match given {
        Some(g) if constant_time_eq(g.as_bytes(), token.as_bytes()) => next.run(req).await,
        Some(_) => ToolError::new(ErrorCode::Unauthorized, "Invalid bearer token").into_response(),
        None => ToolError::new(
            ErrorCode::Unauthorized,
            "Missing bearer token: send Authorization: Bearer <token>",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn loopback_hosts() {
        for h in [
            "localhost",
            "LOCALHOST:8080",
            "127.0.0.1",
            "127.0.0.1:9",
            "127.1.2.3:80",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(super::is_loopback_host(h), "{h}");
        }
        for h in [
            "evil.com",
            "evil.com:8080",
            "localhost.evil.com",
            "10.0.0.1:80",
            "[::2]",
            "",
            "127.0.0.1.nip.io",
        ] {
            assert!(!super::is_loopback_host(h), "{h}");
        }
    }
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

async fn healthz(State(state): State<AppState>) -> Json<Value> {
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

async fn openapi(State(state): State<AppState>) -> Json<Value> {
    Json(crate::openapi::document(
        &state.registry,
        state.token.is_some(),
    ))
}

async fn not_found(req: Request) -> ToolError {
    ToolError::new(
        ErrorCode::UnknownTool,
        format!(
            "No endpoint {} {}. Endpoints: GET /tools, POST /tools/{{name}}, GET /openapi.json, {}GET /healthz",
            req.method(),
            req.uri().path(),
            if SERVES_MCP { "POST /mcp, " } else { "" }
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

/// Reads and parses a JSON body, with the contract's errors for each failure.
pub async fn read_json_body(headers: &HeaderMap, body: Body) -> Result<Value, ToolError> {
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
        let mime = ct.split(';').next().unwrap_or("").trim();
        if mime != "application/json" && !mime.ends_with("+json") {
            return Err(ToolError::invalid_input(format!(
                "Content-Type must be application/json, got {mime:?}"
            )));
        }
    }
    let too_large = || {
        ToolError::new(
            ErrorCode::TooLarge,
            format!("Request body is larger than {MAX_BODY_BYTES} bytes"),
        )
    };
    if let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        && len > MAX_BODY_BYTES
    {
        return Err(too_large());
    }
    let bytes = to_bytes(body, MAX_BODY_BYTES).await.map_err(|e| {
        let mut src: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(s) = src {
            if s.is::<http_body_util::LengthLimitError>() {
                return too_large();
            }
            src = s.source();
        }
        ToolError::invalid_input(format!("Cannot read request body: {e}"))
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        // No body means no arguments, for tools that take none.
        return Ok(json!({}));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| ToolError::invalid_input(format!("Request body is not valid JSON: {e}")))
}

async fn call_tool(
    State(state): State<AppState>,
    Path(name): Path<String>,
    ctx: Option<Extension<CallContext>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let ctx = call_context(ctx.map(|Extension(c)| c), &headers);
    let args = read_json_body(&headers, body);
    match invoke(&state.registry, Transport::Http, &name, args, &ctx).await {
        Ok(v) => (StatusCode::OK, Json(v)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// The call's context: what a runtime (Lambda) put in the request's
/// extensions (deadline, caller, the claims' scope), else the scope header.
pub fn call_context(from_runtime: Option<CallContext>, headers: &HeaderMap) -> CallContext {
    from_runtime.unwrap_or_else(|| CallContext {
        servers: header_scope(headers),
        ..Default::default()
    })
}

/// The `X-Toolgate-Servers` header's scope, when present.
pub fn header_scope(headers: &HeaderMap) -> Option<Vec<String>> {
    let raw = headers.get(crate::scope::HEADER)?;
    // A header that is not text narrows to nothing rather than to everything.
    Some(
        raw.to_str()
            .ok()
            .and_then(crate::scope::parse)
            .unwrap_or_default(),
    )
}
