//! Errors as responses: the contract's `{"error": {...}}` with its status
//! (`ToolError`'s `IntoResponse` is toolgate-core's, feature `axum`).

use axum::{
    body::to_bytes,
    extract::Request,
    http::header,
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::error::{ErrorCode, ToolError};

/// Every error outside `/mcp` is the contract's JSON, including rejections
/// that axum's extractors produce as plain text (a malformed query string or
/// path). `/mcp` keeps rmcp's own answers: MCP clients read those statuses.
pub(super) async fn json_errors(req: Request, next: Next) -> Response {
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
