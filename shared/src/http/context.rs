//! A call's context from its request. A leaf: the router and MCP use it.

use axum::http::HeaderMap;

use crate::tool::CallContext;

/// The call's context: what a runtime (Lambda: deadline, caller, the
/// claims' scope) or the auth layer (a caller's token: `call_context_of`)
/// put in the request's extensions, else an anonymous call with the scope
/// header's servers.
pub fn call_context(from_runtime: Option<CallContext>, headers: &HeaderMap) -> CallContext {
    from_runtime.unwrap_or_else(|| call_context_of(None, headers))
}

/// The context of a call by `caller` (a token's name) where the runtime
/// gave none: no deadline, the scope header's servers.
pub fn call_context_of(caller: Option<String>, headers: &HeaderMap) -> CallContext {
    CallContext {
        caller,
        servers: header_scope(headers),
        ..Default::default()
    }
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
