//! A JSON request body, read with the contract's errors: wrong content
//! type, over the size limit (by `Content-Length` or as it streams), not
//! JSON. A leaf: the router, the answer routes and MCP all read bodies.

use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use crate::error::{ErrorCode, ToolError};

pub use crate::tool::MAX_BODY_BYTES;

/// Reads and parses a JSON body of at most `limit` bytes, with the
/// contract's errors for each failure.
pub async fn read_json_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Value, ToolError> {
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
            format!("Request body is larger than {limit} bytes"),
        )
    };
    if let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        && len > limit
    {
        return Err(too_large());
    }
    let bytes = to_bytes(body, limit).await.map_err(|e| {
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
