//! One id per request, on every line the request logs (a `request` span
//! with `request_id`) and returned as `X-Request-Id`, so an operator can
//! find a caller's report in the log. A client's own `X-Request-Id` (a
//! proxy's) is kept when it is a short token of safe characters; anything
//! else is replaced, never logged. A W3C `traceparent` rides on the span
//! too, so a trace (`traces`) continues the caller's.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

/// The header, both ways.
pub const HEADER: &str = "x-request-id";

/// A client's id, if it can be kept: 1 to 64 of `A-Za-z0-9._-`.
fn given(req: &Request) -> Option<String> {
    let v = req.headers().get(HEADER)?.to_str().ok()?;
    let ok = (1..=64).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    ok.then(|| v.to_owned())
}

/// A new id: 16 hex characters (64 random bits), or a clock's when the
/// system has no randomness to give.
fn new_id() -> String {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        b = crate::clock::unix_ms().to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(super) async fn request_id(req: Request, next: Next) -> Response {
    let id = given(&req).unwrap_or_else(new_id);
    // A caller's trace, continued (`traces`) and named on its lines: only a
    // valid one, and in its canonical form (not the caller's text).
    let traceparent = super::traceparent::of(req.headers()).map(|p| p.header());
    let span = tracing::info_span!(
        target: "toolgate::request",
        "request",
        request_id = %id,
        traceparent = traceparent.as_deref(),
        status = tracing::field::Empty,
    );
    let mut res = next.run(req).instrument(span.clone()).await;
    span.record("status", res.status().as_u16());
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(HEADER, v);
    }
    res
}
