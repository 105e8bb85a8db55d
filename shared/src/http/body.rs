//! A JSON request body, read with the contract's errors: no or wrong
//! content type, over the size limit (by `Content-Length` or as it
//! streams), too slow, not JSON. A leaf: the router, the answer routes and
//! MCP all read bodies.

use std::time::Duration;

use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use crate::error::{ErrorCode, ToolError};

pub use crate::tool::MAX_BODY_BYTES;

/// A non-empty body sent without any `Content-Type`.
pub const CONTENT_TYPE_REQUIRED: &str =
    "Content-Type: application/json is required for a JSON body";

/// A request body that did not arrive in time (`toolgate serve`'s body
/// deadline, `http::serve`): the error its body yields, found by
/// [`read_json_body`] in the read error's sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTimeout {
    /// The time allowed.
    pub after: Duration,
    /// The body stalled (no byte for `after`), rather than took longer
    /// than `after` in all.
    pub stalled: bool,
}

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.after.as_secs();
        if self.stalled {
            write!(
                f,
                "Request body stalled: no bytes for {secs} s (TOOLGATE_BODY_TIMEOUT_SECS)"
            )
        } else {
            write!(
                f,
                "Request body did not arrive within {secs} s (TOOLGATE_BODY_TIMEOUT_SECS)"
            )
        }
    }
}

impl std::error::Error for BodyTimeout {}

/// Reads and parses a JSON body of at most `limit` bytes, with the
/// contract's errors for each failure. A body that is empty or blank is
/// `{}`; any other needs `Content-Type: application/json` (or `*+json`):
/// a web page's `no-cors` fetch cannot send that without a preflight.
pub async fn read_json_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Value, ToolError> {
    let content_type = headers.get(header::CONTENT_TYPE);
    if let Some(ct) = content_type {
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
            if let Some(t) = s.downcast_ref::<BodyTimeout>() {
                return ToolError::invalid_input(t.to_string());
            }
            src = s.source();
        }
        ToolError::invalid_input(format!("Cannot read request body: {e}"))
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        // No body means no arguments, for tools that take none.
        return Ok(json!({}));
    }
    if content_type.is_none() {
        return Err(ToolError::invalid_input(CONTENT_TYPE_REQUIRED));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| ToolError::invalid_input(format!("Request body is not valid JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn read(ct: Option<&str>, body: &'static [u8]) -> Result<Value, ToolError> {
        let mut h = HeaderMap::new();
        if let Some(ct) = ct {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(read_json_body(&h, Body::from(body), 1024))
    }

    #[test]
    fn a_json_body_needs_its_content_type() {
        let e = read(None, br#"{"code": "print(1)"}"#).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::InvalidInput, CONTENT_TYPE_REQUIRED)
        );
        assert_eq!(read(None, b"").unwrap(), json!({}));
        assert_eq!(read(None, b" \n").unwrap(), json!({}));
        assert_eq!(
            read(Some("application/json; charset=utf-8"), br#"{"a": 1}"#).unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            read(Some("application/merge-patch+json"), br#"{"a": 1}"#).unwrap(),
            json!({"a": 1})
        );
        let e = read(Some("text/plain"), br#"{"a": 1}"#).unwrap_err();
        assert!(e.message.contains("got \"text/plain\""), "{}", e.message);
    }

    #[test]
    fn a_late_body_names_its_setting() {
        let late = BodyTimeout {
            after: Duration::from_secs(60),
            stalled: false,
        };
        assert_eq!(
            late.to_string(),
            "Request body did not arrive within 60 s (TOOLGATE_BODY_TIMEOUT_SECS)"
        );
        let stalled = BodyTimeout {
            after: Duration::from_secs(20),
            stalled: true,
        };
        assert!(stalled.to_string().contains("no bytes for 20 s"));
    }
}
