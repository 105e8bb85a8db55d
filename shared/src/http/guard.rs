//! The first layer every request meets, on every route and every runtime
//! (`/mcp` and the answer routes included): for a server bound to loopback,
//! the `Host` check (`host`); then the cross-site check (`origin`).

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    http::header,
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::origin::{Origins, cross_site};
use crate::error::{ErrorCode, ToolError};

/// What the guard checks against.
pub(super) struct Guard {
    /// Only loopback authorities (`AppState::loopback_hosts_only`).
    pub loopback_hosts_only: bool,
    /// The origins whose pages may call.
    pub origins: Origins,
    /// Whether tool routes need a caller's token here.
    pub has_callers: bool,
}

/// A request that reached a loopback-bound server under the public URL's
/// name (through a reverse proxy): not the local user, so `/healthz`
/// tells it only that the server is up.
#[derive(Clone, Copy, Debug)]
pub struct ViaPublicName;

/// Tool routes under the public URL's name on a server with no caller
/// token: anyone who reaches the proxy could run them.
pub const NO_TOKEN_BEHIND_PROXY: &str = "This server has no caller token, so its tools answer only \
     on loopback names; the public URL serves answer links and approvals. Give it a caller token \
     (--token, TOOLGATE_TOKEN) to serve its tools there";

pub(super) async fn guard(State(g): State<Arc<Guard>>, mut req: Request, next: Next) -> Response {
    if g.loopback_hosts_only
        && let Some(why) = super::host::loopback_problem(req.uri(), req.headers())
    {
        let public = super::host::loopback_problem_but(req.uri(), req.headers(), |a| {
            g.origins.is_public_authority(a)
        })
        .is_none();
        let tool_route = super::identity::Route::of(req.method(), req.uri().path())
            == super::identity::Route::Tool;
        let refusal = match (public, tool_route && !g.has_callers) {
            (true, false) => None,
            (true, true) => Some(NO_TOKEN_BEHIND_PROXY),
            (false, _) => Some(why),
        };
        if let Some(why) = refusal {
            crate::logging::refused(403, req.method().as_str(), req.uri().path(), None);
            return ToolError::new(ErrorCode::Forbidden, why).into_response();
        }
        req.extensions_mut().insert(ViaPublicName);
    }
    // Where the request was sent: the URI's authority wins over `Host`
    // (absolute-form targets, HTTP/2).
    let authority = req
        .uri()
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            req.headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_owned)
        });
    if let Some(why) = cross_site(
        req.method(),
        req.uri().path(),
        req.headers(),
        authority.as_deref(),
        &g.origins,
    ) {
        // For the operator whose own page is refused: the message names the
        // setting that allows it.
        tracing::info!(
            status = 403,
            method = %crate::logging::field(req.method().as_str()),
            path = %crate::logging::field(&crate::logging::redact_ids(req.uri().path())),
            reason = %crate::logging::field(&why),
            "request refused"
        );
        return ToolError::new(ErrorCode::Forbidden, why).into_response();
    }
    next.run(req).await
}
