//! A call's context from its request. A leaf: the router and MCP use it.

use axum::http::HeaderMap;

use crate::tool::CallContext;

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
