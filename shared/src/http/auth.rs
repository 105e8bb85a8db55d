//! Who may call: the bearer token (compared in constant time) and, for a
//! server bound to loopback, only loopback `Host` names.

use axum::{
    extract::{Request, State},
    http::header,
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::router::AppState;
use crate::error::{ErrorCode, ToolError};

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

pub(super) async fn auth(State(state): State<AppState>, req: Request, next: Next) -> Response {
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
