//! OAuth 2.0 Protected Resource Metadata (RFC 9728), as MCP's
//! authorization asks of a server. Every 401 on a caller's route carries
//! `WWW-Authenticate: Bearer` (RFC 6750). Where this deployment takes JWTs
//! (`TOOLGATE_OAUTH_ISSUER`), it also names the metadata
//! (`resource_metadata=…`), and `/.well-known/oauth-protected-resource`
//! names the issuer as the authorization server. With static tokens there
//! is no authorization server to name: no metadata (404), and clients send
//! the token they were given.

use axum::{
    Json,
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Uri, header},
    response::{IntoResponse, Response},
};
use serde_json::json;

use super::router::AppState;

/// The metadata's path; a resource's own path follows it (RFC 9728 §3.1).
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// What the metadata says besides the resource itself.
#[derive(Debug, Clone, Default)]
pub struct ProtectedResource {
    /// The deployment's public base URL; else the request's own.
    pub public_url: Option<String>,
    /// The issuer of the JWTs this deployment takes, if any.
    pub issuer: Option<String>,
}

/// The base URL a request reached: the public URL when configured, else
/// its scheme (the URI's, `X-Forwarded-Proto`, or http) and `Host`.
fn base_url(resource: &ProtectedResource, uri: &Uri, headers: &HeaderMap) -> Option<String> {
    if let Some(u) = &resource.public_url {
        return Some(u.trim_end_matches('/').to_owned());
    }
    let host = uri.authority().map(|a| a.as_str().to_owned()).or_else(|| {
        headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_owned)
    })?;
    // Only a host name and port: never a path or anything a client could
    // slip into the header value.
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
    {
        return None;
    }
    let scheme = uri
        .scheme_str()
        .or_else(|| {
            headers
                .get("x-forwarded-proto")
                .and_then(|h| h.to_str().ok())
        })
        .filter(|s| *s == "https" || *s == "http")
        .unwrap_or("http");
    Some(format!("{scheme}://{host}"))
}

/// The `WWW-Authenticate` value of a 401 on a caller's route; `invalid`
/// when a token was sent and is not one.
pub fn challenge(resource: &ProtectedResource, req: &Request, invalid: bool) -> HeaderValue {
    let mut value = "Bearer realm=\"toolgate\"".to_owned();
    if invalid {
        value.push_str(", error=\"invalid_token\"");
    }
    if resource.issuer.is_some()
        && let Some(base) = base_url(resource, req.uri(), req.headers())
    {
        value.push_str(&format!(", resource_metadata=\"{base}{WELL_KNOWN}/mcp\""));
    }
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`: the metadata of the
/// resource whose path follows the well-known one, where JWTs are taken.
pub async fn metadata(State(state): State<AppState>, req: Request) -> Response {
    let Some(issuer) = &state.resource.issuer else {
        return crate::error::ToolError::new(
            crate::error::ErrorCode::NotFound,
            "This deployment signs callers in with static bearer tokens: no authorization server to name",
        )
        .into_response();
    };
    let suffix = req.uri().path().strip_prefix(WELL_KNOWN).unwrap_or("");
    let Some(base) = base_url(&state.resource, req.uri(), req.headers()) else {
        return crate::error::ToolError::invalid_input("The request names no usable Host")
            .into_response();
    };
    // Built from the request's Host: never kept by a cache for others.
    (
        [(header::CACHE_CONTROL, "no-store")],
        Json(json!({
            "resource": format!("{base}{suffix}"),
            "resource_name": "Toolgate",
            "authorization_servers": [issuer],
            "bearer_methods_supported": ["header"],
        })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(public: Option<&str>, uri: &str, headers: &[(&str, &str)]) -> Option<String> {
        let r = ProtectedResource {
            public_url: public.map(str::to_owned),
            issuer: None,
        };
        let mut h = HeaderMap::new();
        for (k, v) in headers {
            h.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        base_url(&r, &uri.parse().unwrap(), &h)
    }

    #[test]
    fn the_base_is_the_public_url_or_the_host_reached() {
        assert_eq!(
            base(Some("https://api.example/"), "/mcp", &[("host", "x")]).as_deref(),
            Some("https://api.example")
        );
        assert_eq!(
            base(None, "/mcp", &[("host", "127.0.0.1:8080")]).as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(
            base(
                None,
                "/mcp",
                &[("host", "a.example"), ("x-forwarded-proto", "https")]
            )
            .as_deref(),
            Some("https://a.example")
        );
        assert_eq!(
            base(None, "https://w.example/mcp", &[]).as_deref(),
            Some("https://w.example")
        );
        // Nothing a client sends gets into the header but a host and port.
        for hostile in ["a\"b", "a/b", "a b", "", "a,resource_metadata=x"] {
            assert_eq!(base(None, "/mcp", &[("host", hostile)]), None, "{hostile}");
        }
        assert_eq!(
            base(
                None,
                "/mcp",
                &[("host", "a"), ("x-forwarded-proto", "javascript")]
            )
            .as_deref(),
            Some("http://a")
        );
    }
}
