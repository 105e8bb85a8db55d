//! The headers a request must carry, as rmcp checks them: Host, Accept,
//! the protocol version (header, body and `_meta` agreeing), and the
//! `Mcp-Method` / `Mcp-Name` standard headers.

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header, request::Parts};
use axum::response::Response;
use rmcp::ErrorData;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, GetMeta, ProtocolVersion, RequestId};

use super::{
    MCP_METHOD, MCP_NAME, PROTOCOL_VERSION, header_mismatch, invalid_request, jsonrpc_error,
    response, text,
};

/// The Host header must parse (any host is allowed: the bearer token is the
/// guard, as in `server::service`).
pub(super) fn host(parts: &Parts) -> Result<(), Box<Response>> {
    let bad = |m: &str| {
        Err(Box::new(
            response(StatusCode::BAD_REQUEST)
                .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
                .body(Body::from(m.to_owned()))
                .expect("a static response"),
        ))
    };
    match parts.headers.get(header::HOST) {
        Some(h) => match h.to_str() {
            Err(_) => bad("Bad Request: Invalid Host header encoding"),
            Ok(s) if axum::http::uri::Authority::try_from(s).is_err() => {
                bad("Bad Request: Invalid Host header")
            }
            Ok(_) => Ok(()),
        },
        None if parts.uri.authority().is_none() => bad("Bad Request: missing Host header"),
        None => Ok(()),
    }
}

/// The media types `Accept` names with a weight above zero.
pub(super) fn accepted_media_types(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| split_unquoted(v, ','))
        .filter_map(|entry| {
            let mut parts = split_unquoted(entry, ';');
            let essence = parts.next()?.trim();
            parts
                .all(|p| {
                    let Some((name, value)) = p.split_once('=') else {
                        return true;
                    };
                    !name.trim().eq_ignore_ascii_case("q") || quality_is_acceptable(value.trim())
                })
                .then_some(essence)
        })
}

fn split_unquoted(value: &str, delimiter: char) -> impl Iterator<Item = &str> {
    let (mut quoted, mut escaped) = (false, false);
    value.split(move |c| {
        if escaped {
            escaped = false;
        } else if quoted && c == '\\' {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if !quoted && c == delimiter {
            return true;
        }
        false
    })
}

/// A malformed weight does not exclude; only a well-formed zero does.
fn quality_is_acceptable(q: &str) -> bool {
    let (whole, fraction) = q.split_once('.').unwrap_or((q, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|d| d.is_ascii_digit()) {
        return true;
    }
    whole != "0" || fraction.bytes().any(|d| d != b'0')
}

pub(super) fn per_request_version(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(r) if r.request.get_meta().protocol_version().is_some())
}

/// A header naming a version must name a known one (unless the body names
/// its own); no header means 2025-03-26.
pub(super) fn protocol_version_header(
    headers: &HeaderMap,
    allow_unknown: bool,
) -> Result<(), Box<Response>> {
    let Some(value) = headers.get(PROTOCOL_VERSION) else {
        return Ok(());
    };
    let Ok(version) = value.to_str() else {
        return Err(Box::new(text(
            StatusCode::BAD_REQUEST,
            "Bad Request: Invalid MCP-Protocol-Version header encoding",
        )));
    };
    let known = ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .any(|v| v.as_str() == version);
    if !allow_unknown && !known {
        return Err(Box::new(text(
            StatusCode::BAD_REQUEST,
            &format!("Bad Request: Unsupported MCP-Protocol-Version: {version}"),
        )));
    }
    Ok(())
}

pub(super) fn header_matches_init_body(
    headers: &HeaderMap,
    body_version: &str,
    id: &RequestId,
) -> Result<(), Box<Response>> {
    let Some(value) = headers.get(PROTOCOL_VERSION) else {
        return Ok(());
    };
    let Ok(header) = value.to_str() else {
        return Err(Box::new(invalid_request(
            Some(id.clone()),
            "Invalid Request: MCP-Protocol-Version header is not valid UTF-8".into(),
        )));
    };
    if header != body_version {
        return Err(Box::new(invalid_request(
            Some(id.clone()),
            format!(
                "Invalid Request: MCP-Protocol-Version header ({header}) does not match initialize params.protocolVersion ({body_version})"
            ),
        )));
    }
    Ok(())
}

/// SEP-2243: from 2026-07-28 on, `Mcp-Method` (and `Mcp-Name` for a call)
/// repeat the body, so that middleboxes can route on them. rmcp checks
/// `Mcp-Param-*` only against a schema `ServerHandler::get_tool` returns,
/// and `server::McpServer` keeps its default (none), so none is checked.
pub(super) fn standard_headers(
    headers: &HeaderMap,
    message: &ClientJsonRpcMessage,
) -> Result<(), Box<Response>> {
    let required = headers
        .get(PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v >= ProtocolVersion::STANDARD_HEADERS.as_str());
    if !required {
        return Ok(());
    }
    let id = match message {
        ClientJsonRpcMessage::Request(r) => {
            if matches!(r.request, ClientRequest::InitializeRequest(_)) {
                let mut values = headers.get_all(MCP_METHOD).iter();
                let Some(first) = values.next() else {
                    return Ok(());
                };
                if values.next().is_some() {
                    return Err(Box::new(header_mismatch(
                        Some(r.id.clone()),
                        "multiple Mcp-Method header values supplied; initialize requires exactly one".into(),
                    )));
                }
                if first != "initialize" {
                    return Err(Box::new(header_mismatch(
                        Some(r.id.clone()),
                        format!(
                            "Mcp-Method header `{}` does not match body method `initialize`",
                            String::from_utf8_lossy(first.as_bytes())
                        ),
                    )));
                }
                return Ok(());
            }
            Some(r.id.clone())
        }
        ClientJsonRpcMessage::Notification(_) => None,
        _ => return Ok(()),
    };
    let Ok(value) = serde_json::to_value(message) else {
        return Ok(());
    };
    request_headers(headers, &value).map_err(|reason| Box::new(header_mismatch(id, reason)))
}

fn request_headers(headers: &HeaderMap, request: &serde_json::Value) -> Result<(), String> {
    let Some(method) = request.get("method").and_then(|m| m.as_str()) else {
        return Ok(());
    };
    match header_str(headers, MCP_METHOD)? {
        None => return Err("missing required Mcp-Method header".to_owned()),
        Some(v) if v != method => {
            return Err(format!(
                "Mcp-Method header `{v}` does not match body method `{method}`"
            ));
        }
        Some(_) => {}
    }
    let key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return Ok(()),
    };
    let Some(expected) = request
        .get("params")
        .and_then(|p| p.get(key))
        .and_then(|v| v.as_str())
    else {
        return Ok(());
    };
    match header_str(headers, MCP_NAME)? {
        None => Err(format!("missing required Mcp-Name header for `{method}`")),
        Some(raw) => {
            let decoded = decode_header_value(raw).ok_or("Mcp-Name header is not valid Base64")?;
            if decoded != expected {
                return Err(format!(
                    "Mcp-Name header `{decoded}` does not match body value `{expected}`"
                ));
            }
            Ok(())
        }
    }
}

/// The sole value of a singleton header.
fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(format!("duplicate {name} header"));
    }
    value
        .to_str()
        .map(Some)
        .map_err(|_| format!("{name} header contains invalid characters"))
}

/// `=?base64?…?=` decoded, anything else as it is.
fn decode_header_value(value: &str) -> Option<String> {
    use base64::Engine;
    match value
        .strip_prefix("=?base64?")
        .and_then(|inner| inner.strip_suffix("?="))
    {
        Some(inner) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(inner)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_owned()),
    }
}

/// A request whose `_meta` names a version must agree with the header; from
/// 2026-07-28 (or for `server/discover`) the `_meta` is required.
pub(super) fn request_version_meta(
    headers: &HeaderMap,
    message: &ClientJsonRpcMessage,
) -> Result<(), Box<Response>> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return Ok(());
    };
    if matches!(request.request, ClientRequest::InitializeRequest(_)) {
        return Ok(());
    }
    let discover = matches!(request.request, ClientRequest::DiscoverRequest(_));
    let meta = request.request.get_meta();
    let header = headers.get(PROTOCOL_VERSION).and_then(|v| v.to_str().ok());
    let Some(meta_version) = meta.protocol_version() else {
        if discover || header.is_some_and(|v| v >= ProtocolVersion::V_2026_07_28.as_str()) {
            let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
            return Err(Box::new(jsonrpc_error(
                ErrorData::invalid_params(
                    format!(
                        "Invalid params: request _meta is missing or has malformed required fields: {}",
                        missing.join(", ")
                    ),
                    None,
                ),
                Some(request.id.clone()),
            )));
        }
        return Ok(());
    };
    let Some(header) = header else {
        return Err(Box::new(header_mismatch(
            Some(request.id.clone()),
            "request _meta protocolVersion requires MCP-Protocol-Version header".into(),
        )));
    };
    if header != meta_version.as_str() {
        return Err(Box::new(header_mismatch(
            Some(request.id.clone()),
            format!(
                "MCP-Protocol-Version header ({header}) does not match request _meta protocolVersion ({meta_version})"
            ),
        )));
    }
    Ok(())
}
