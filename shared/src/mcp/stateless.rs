//! `/mcp` without rmcp's service loop, for the Worker: rmcp's server spawns
//! tokio tasks and sets tokio timers, and wasm32 has no tokio runtime.
//!
//! This is the path rmcp 3.11.0's `StreamableHttpService` takes with the
//! settings `server::service` uses (stateless, JSON responses, any host):
//! `handle` and `handle_post` in `transport/streamable_http_server/tower.rs`,
//! then its `ServerHandler` dispatch (`handler/server.rs`) for a server whose
//! only capability is tools, on rmcp's own message types. Each check keeps
//! rmcp's order and its words. `tests::answers_as_rmcp_does` sends the same
//! requests to both and compares status, content type and body; when rmcp is
//! upgraded, that test says what moved.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method, StatusCode, header, request::Parts};
use axum::response::Response;
use rmcp::ErrorData;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, DiscoverResult, ErrorCode, GetMeta, JsonRpcError,
    JsonRpcRequest, PingRequestMethod, ProtocolVersion, RequestId, ServerJsonRpcMessage,
    ServerResult,
};

use crate::registry::Registry;
use crate::tool::CallContext;

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";
const PROTOCOL_VERSION: &str = "MCP-Protocol-Version";
const MCP_METHOD: &str = "Mcp-Method";
const MCP_NAME: &str = "Mcp-Name";

/// A refusal is boxed: the common path returns small.
type Answer = Result<Response, Box<Response>>;

/// Answers one `/mcp` request.
pub async fn handle(registry: Arc<Registry>, req: axum::extract::Request) -> Response {
    match respond(&registry, req).await {
        Ok(r) => r,
        Err(r) => *r,
    }
}

async fn respond(registry: &Registry, req: axum::extract::Request) -> Answer {
    let (parts, body) = req.into_parts();
    host(&parts)?;
    if parts.method != Method::POST {
        return Err(Box::new(
            response(StatusCode::METHOD_NOT_ALLOWED)
                .header(header::ALLOW, "POST")
                .body(Body::from("Method Not Allowed"))
                .expect("a static response"),
        ));
    }
    let (mut json, mut sse) = (false, false);
    for essence in accepted_media_types(&parts.headers) {
        json |= essence.eq_ignore_ascii_case(JSON);
        sse |= essence.eq_ignore_ascii_case(EVENT_STREAM);
    }
    if !json || !sse {
        return Err(Box::new(text(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        )));
    }
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| {
            let essence = h.split_once(';').map_or(h, |(e, _)| e);
            essence.trim().eq_ignore_ascii_case(JSON)
        });
    if !is_json {
        return Err(Box::new(text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: Content-Type must be application/json",
        )));
    }
    let message = read_message(body, registry.max_body_bytes()).await?;
    let headers = &parts.headers;
    let per_request = per_request_version(&message);
    match &message {
        ClientJsonRpcMessage::Request(r) => match &r.request {
            ClientRequest::InitializeRequest(init) => {
                header_matches_init_body(headers, init.params.protocol_version.as_str(), &r.id)?
            }
            _ => protocol_version_header(headers, per_request)?,
        },
        _ => protocol_version_header(headers, per_request)?,
    }
    standard_headers(headers, &message)?;
    request_version_meta(headers, &message)?;
    match message {
        ClientJsonRpcMessage::Request(request) => {
            let negotiated =
                per_request || matches!(request.request, ClientRequest::DiscoverRequest(_));
            let malformed = !request
                .request
                .get_meta()
                .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty();
            let reply = dispatch(registry, request, &parts).await;
            let status = if negotiated {
                jsonrpc_http_status(&reply, malformed)
            } else {
                StatusCode::OK
            };
            Ok(json_body(status, &reply))
        }
        ClientJsonRpcMessage::Notification(_) => Ok(response(StatusCode::ACCEPTED)
            .body(Body::empty())
            .expect("a static response")),
        ClientJsonRpcMessage::Response(_) | ClientJsonRpcMessage::Error(_) => {
            Err(Box::new(invalid_request(
                None,
                "stateless server does not accept JSON-RPC responses".into(),
            )))
        }
    }
}

/// One request to its reply: rmcp's `ServerHandler::handle_request` for a
/// server with tools only, and the stateless service's negotiation.
async fn dispatch(
    registry: &Registry,
    request: JsonRpcRequest<ClientRequest>,
    parts: &Parts,
) -> ServerJsonRpcMessage {
    let id = request.id.clone();
    // The version the handler sees: initialize's own, else the header's,
    // else 2025-03-26 (tower.rs `peer_info_for_stateless_request`).
    let version = match &request.request {
        ClientRequest::InitializeRequest(init) => init.params.protocol_version.clone(),
        _ => parts
            .headers
            .get(PROTOCOL_VERSION)
            .and_then(|v| v.to_str().ok())
            .and_then(|s| serde_json::from_value(serde_json::Value::String(s.to_owned())).ok())
            .unwrap_or(ProtocolVersion::V_2025_03_26),
    };
    match answer(registry, request.request, &version, parts).await {
        Ok(result) => ServerJsonRpcMessage::response(result, id),
        Err(e) => ServerJsonRpcMessage::error(e, Some(id)),
    }
}

async fn answer(
    registry: &Registry,
    request: ClientRequest,
    version: &ProtocolVersion,
    parts: &Parts,
) -> Result<ServerResult, ErrorData> {
    let v2026 = version.as_str() >= ProtocolVersion::V_2026_07_28.as_str();
    let supported = super::supported_versions();
    let meta = request.get_meta();
    let requested = meta.protocol_version();
    let inline = !matches!(request, ClientRequest::InitializeRequest(_));
    if inline
        && let Some(requested) = &requested
        && !supported.contains(requested)
    {
        return Err(ErrorData::unsupported_protocol_version(
            requested.clone(),
            supported,
        ));
    }
    let needs_meta = inline
        && (matches!(request, ClientRequest::DiscoverRequest(_))
            || requested
                .as_ref()
                .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str()));
    if needs_meta {
        let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
        if !missing.is_empty() {
            return Err(ErrorData::invalid_params(
                format!(
                    "request _meta is missing or has malformed required fields: {}",
                    missing.join(", ")
                ),
                None,
            ));
        }
    }
    let legacy = !needs_meta && version.has_initialize();
    let mut result = match request {
        ClientRequest::InitializeRequest(init) => {
            let mut info = super::server_info();
            // Negotiated twice in rmcp (the handler, then the stateless
            // wrapper); the second pass keeps the first's answer.
            info.protocol_version = negotiate(
                &init.params.protocol_version,
                std::mem::take(&mut info.protocol_version),
            )?;
            ServerResult::InitializeResult(info)
        }
        ClientRequest::DiscoverRequest(_) => ServerResult::DiscoverResult(
            DiscoverResult::from_server_info(supported.to_vec(), super::server_info()),
        ),
        ClientRequest::PingRequest(_) if legacy => ServerResult::empty(()),
        ClientRequest::PingRequest(_) => {
            return Err(ErrorData::method_not_found::<PingRequestMethod>());
        }
        ClientRequest::ListToolsRequest(_) => {
            ServerResult::ListToolsResult(super::list_tools(registry))
        }
        ClientRequest::CallToolRequest(call) => {
            let ctx = crate::http::context::call_context(
                parts.extensions.get::<CallContext>().cloned(),
                &parts.headers,
            );
            ServerResult::from(super::call_tool(registry, call.params, &ctx).await?)
        }
        // Every other method needs a capability this server does not
        // declare (prompts, resources, completions, logging, tasks,
        // skills, subscriptions), or is one nobody defined. Declaring one
        // in `super::server_info` would make rmcp answer it (an empty
        // list): the comparison test would then fail here.
        other => {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                other.method().to_owned(),
                None,
            ));
        }
    };
    if v2026 {
        result.fill_missing_cache_hints();
    } else {
        result.strip_result_type_for_legacy_peer();
        result.strip_non_object_output_for_legacy_peer();
    }
    Ok(result)
}

/// rmcp's `negotiate_protocol_version`: the client's version when it has an
/// `initialize` and is known, else the server's preferred one that has.
fn negotiate(
    requested: &ProtocolVersion,
    preferred: ProtocolVersion,
) -> Result<ProtocolVersion, ErrorData> {
    let supported = super::supported_versions();
    if requested.has_initialize() && supported.contains(requested) {
        return Ok(requested.clone());
    }
    let fallback = if preferred.has_initialize() {
        Some(preferred)
    } else {
        supported
            .iter()
            .filter(|v| v.has_initialize())
            .max_by(|a, b| a.as_str().cmp(b.as_str()))
            .cloned()
    };
    fallback.ok_or_else(|| ErrorData::unsupported_protocol_version(requested.clone(), supported))
}

/// The reply's status on the per-request (2026-07-28) path.
fn jsonrpc_http_status(reply: &ServerJsonRpcMessage, meta_malformed: bool) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = reply else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::INVALID_PARAMS if meta_malformed => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// The body as one JSON-RPC message, at most `max` bytes.
async fn read_message(body: Body, max: usize) -> Result<ClientJsonRpcMessage, Box<Response>> {
    let too_large = || {
        text(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("Payload Too Large: request body exceeds {max} bytes"),
        )
    };
    let bytes = match axum::body::to_bytes(body, max).await {
        Ok(b) => b,
        Err(e) if is_length_limit(&e) => return Err(Box::new(too_large())),
        Err(e) => {
            return Err(Box::new(text(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("Failed to read request body: {e}"),
            )));
        }
    };
    serde_json::from_slice(&bytes).map_err(|e| {
        Box::new(text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!("fail to deserialize request body {e}"),
        ))
    })
}

fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// The Host header must parse (any host is allowed: the bearer token is the
/// guard, as in `server::service`).
fn host(parts: &Parts) -> Result<(), Box<Response>> {
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
fn accepted_media_types(headers: &HeaderMap) -> impl Iterator<Item = &str> {
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

fn per_request_version(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(r) if r.request.get_meta().protocol_version().is_some())
}

/// A header naming a version must name a known one (unless the body names
/// its own); no header means 2025-03-26.
fn protocol_version_header(headers: &HeaderMap, allow_unknown: bool) -> Result<(), Box<Response>> {
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

fn header_matches_init_body(
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
fn standard_headers(
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
fn request_version_meta(
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

fn response(status: StatusCode) -> axum::http::response::Builder {
    Response::builder().status(status)
}

fn text(status: StatusCode, message: &str) -> Response {
    response(status)
        .body(Body::from(message.to_owned()))
        .expect("a static response")
}

fn json_body(status: StatusCode, message: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => response(status)
            .header(header::CONTENT_TYPE, JSON)
            .body(Body::from(body))
            .expect("a static response"),
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("Encounter an error when serialize json response: {e}"),
        ),
    }
}

fn jsonrpc_error(error: ErrorData, id: Option<RequestId>) -> Response {
    json_body(StatusCode::BAD_REQUEST, &JsonRpcError::new(id, error))
}

fn invalid_request(id: Option<RequestId>, message: String) -> Response {
    jsonrpc_error(ErrorData::invalid_request(message, None), id)
}

fn header_mismatch(id: Option<RequestId>, message: String) -> Response {
    jsonrpc_error(ErrorData::header_mismatch(message, None), id)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use serde_json::{Value, json};

    use crate::error::{ErrorCode, ToolError};
    use crate::registry::Registry;
    use crate::tool::testing::Echo;
    use crate::tool::{CallContext, Tool, ToolFuture, ToolSpec};

    /// A tool that always fails, for MCP's tool errors (`isError`).
    struct Refuses(ToolSpec);

    impl Tool for Refuses {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn call<'a>(&'a self, _: Value, _: &'a CallContext) -> ToolFuture<'a> {
            Box::pin(async { Err(ToolError::new(ErrorCode::InvalidInput, "no, thanks")) })
        }
    }

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("{name}, for tests"),
            input_schema: json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
            output_schema: json!({"type": "object"}),
            ..Default::default()
        }
    }

    fn registry() -> Arc<Registry> {
        let mut r = Registry::new();
        r.add(Arc::new(Echo(spec("echo.tool")))).unwrap();
        r.add(Arc::new(Refuses(spec("refuses")))).unwrap();
        Arc::new(r)
    }

    const V2026: &str = "2026-07-28";

    fn meta(version: &str) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        })
    }

    fn call(method: &str, params: Value) -> String {
        json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string()
    }

    fn init(version: &str) -> String {
        call(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        )
    }

    /// (method, extra headers, body, whether the usual Accept and
    /// Content-Type headers go too).
    type Case = (&'static str, Vec<(&'static str, String)>, String, bool);

    fn corpus() -> Vec<Case> {
        let none = Vec::new;
        let v = |s: &str| vec![("MCP-Protocol-Version", s.to_owned())];
        let echo = json!({"name": "echo.tool", "arguments": {"x": 1}});
        let with_meta = |mut p: Value| {
            p["_meta"] = meta(V2026);
            p
        };
        vec![
            // The initialize lifecycle, each version, and one nobody knows.
            post(none(), init("2025-06-18")),
            post(none(), init("2024-11-05")),
            post(none(), init("2025-11-25")),
            post(none(), init(V2026)),
            post(none(), init("1999-01-01")),
            post(v("2025-03-26"), init("2025-06-18")),
            post(v("2025-06-18"), init("2025-06-18")),
            post(
                none(),
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
            ),
            post(none(), call("ping", json!({}))),
            post(v("2025-06-18"), call("ping", json!({}))),
            post(v("1999-01-01"), call("ping", json!({}))),
            post(v("2025-06-18"), call("tools/list", json!({}))),
            post(none(), call("tools/list", json!({"cursor": "x"}))),
            post(v("2025-06-18"), call("tools/call", echo.clone())),
            post(
                v("2025-06-18"),
                call(
                    "tools/call",
                    json!({"name": "echo.tool", "arguments": {
                        "files": {"a b.txt": "hi", "bin": {"base64": "AAE="}}}}),
                ),
            ),
            post(none(), call("tools/call", json!({"name": "echo.tool"}))),
            post(none(), call("tools/call", json!({"name": "refuses"}))),
            post(none(), call("tools/call", json!({"name": "nope"}))),
            post(none(), call("tools/call", json!({"arguments": {}}))),
            post(none(), call("tools/call", json!({"name": 5}))),
            post(none(), call("prompts/list", json!({}))),
            post(none(), call("prompts/get", json!({"name": "p"}))),
            post(none(), call("resources/list", json!({}))),
            post(none(), call("resources/read", json!({"uri": "file:///a"}))),
            post(
                none(),
                call(
                    "completion/complete",
                    json!({"ref": {"type": "ref/prompt", "name": "p"},
                    "argument": {"name": "a", "value": "b"}}),
                ),
            ),
            post(none(), call("logging/setLevel", json!({"level": "info"}))),
            post(none(), call("no/such/method", json!({}))),
            post(none(), call("tasks/get", json!({"taskId": "t"}))),
            // The per-request lifecycle (2026-07-28): discover, then calls
            // that carry their version and the standard headers.
            post(
                modern("server/discover", None),
                call("server/discover", with_meta(json!({}))),
            ),
            post(none(), call("server/discover", json!({}))),
            post(
                modern("tools/list", None),
                call("tools/list", with_meta(json!({}))),
            ),
            post(
                modern("tools/call", Some("echo.tool")),
                call("tools/call", with_meta(echo.clone())),
            ),
            post(
                modern("tools/call", Some("=?base64?ZWNoby50b29s?=")),
                call("tools/call", with_meta(echo.clone())),
            ),
            post(
                modern("tools/call", Some("other")),
                call("tools/call", with_meta(echo.clone())),
            ),
            post(
                modern("tools/call", None),
                call("tools/call", with_meta(echo.clone())),
            ),
            post(
                modern("tools/list", None),
                call("tools/call", with_meta(echo.clone())),
            ),
            post(modern("ping", None), call("ping", with_meta(json!({})))),
            post(modern("tools/list", None), call("tools/list", json!({}))),
            post(v("2025-06-18"), call("tools/list", with_meta(json!({})))),
            post(none(), call("tools/list", with_meta(json!({})))),
            post(
                modern("tools/list", None),
                call("tools/list", json!({"_meta": meta("2099-01-01")})),
            ),
            post(modern("initialize", None), init(V2026)),
            post(modern("tools/list", None), init(V2026)),
            // What is not a request for this server.
            post(none(), r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into()),
            post(none(), "{not json".into()),
            post(none(), "[]".into()),
            post(
                none(),
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.into(),
            ),
            post(none(), r#"{"id":1,"method":"ping"}"#.into()),
            post(none(), String::new()),
            negotiating("application/json", None),
            negotiating(
                "application/json, text/event-stream;q=0",
                Some("application/json"),
            ),
            negotiating("application/json, text/event-stream", Some("text/plain")),
            negotiating(
                "application/json;q=0.5, text/event-stream;q=bad",
                Some("application/json; charset=utf-8"),
            ),
            ("GET", none(), String::new(), true),
            ("DELETE", none(), String::new(), true),
            ("PUT", none(), call("ping", json!({})), true),
            post(vec![("Host", "bad host".into())], call("ping", json!({}))),
            post(
                none(),
                call(
                    "tools/call",
                    json!({"name": "echo.tool",
                    "arguments": {"pad": "x".repeat(crate::tool::MAX_BODY_BYTES)}}),
                ),
            ),
        ]
        .into_iter()
        .chain(extra())
        .collect()
    }

    /// More, most of them hostile (from a review of the port against
    /// rmcp's source): Origin and Host, duplicate and non-UTF-8 headers,
    /// every method this server has no capability for, notifications,
    /// odd ids and envelopes, `_meta` at older versions, the body limit.
    fn extra() -> Vec<Case> {
        let none = Vec::new;
        let v = |s: &str| vec![("MCP-Protocol-Version", s.to_owned())];
        let h = |pairs: &[(&'static str, &str)]| -> Vec<(&'static str, String)> {
            pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
        };
        let with_meta = |mut p: Value| {
            p["_meta"] = meta(V2026);
            p
        };
        let echo = json!({"name": "echo.tool", "arguments": {"x": 1}});
        let ping = || call("ping", json!({}));
        let limit = crate::tool::MAX_BODY_BYTES;
        let sized = |n: usize| {
            let base = call(
                "tools/call",
                json!({"name": "echo.tool", "arguments": {"pad": ""}}),
            );
            call(
                "tools/call",
                json!({"name": "echo.tool", "arguments": {"pad": "x".repeat(n - base.len())}}),
            )
        };
        let mut init_meta: Value = serde_json::from_str(&init("2025-06-18")).unwrap();
        init_meta["params"]["_meta"] = meta(V2026);
        let init_meta = init_meta.to_string();
        vec![
            post(h(&[("Origin", "https://evil.example")]), ping()),
            post(h(&[("Origin", "null")]), ping()),
            post(h(&[("Origin", "RAW:ff")]), ping()),
            post(h(&[("Host", "RAW:ff")]), ping()),
            post(h(&[("Host", "NONE")]), ping()),
            post(h(&[("Host", "")]), ping()),
            post(h(&[("Host", "[::1]:8080")]), ping()),
            post(h(&[("Host", "a:99999")]), ping()),
            ("GET", h(&[("Host", "bad host")]), String::new(), true),
            ("HEAD", none(), String::new(), true),
            ("OPTIONS", none(), String::new(), true),
            post(h(&[("MCP-Protocol-Version", "2025-06-18"), ("MCP-Protocol-Version", V2026)]), ping()),
            post(h(&[("MCP-Protocol-Version", V2026), ("MCP-Protocol-Version", "2025-06-18"), ("Mcp-Method", "tools/list")]), call("tools/list", with_meta(json!({})))),
            post(h(&[("MCP-Protocol-Version", "RAW:ff")]), ping()),
            post(h(&[("MCP-Protocol-Version", "RAW:ff")]), init("2025-06-18")),
            post(h(&[("MCP-Protocol-Version", "RAW:ff")]), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into()),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "RAW:ff")]), init(V2026)),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "initialize"), ("Mcp-Method", "initialize")]), init(V2026)),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "initialize"), ("Mcp-Name", "zzz")]), init(V2026)),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "tools/call"), ("Mcp-Name", "RAW:ff")]), call("tools/call", with_meta(echo.clone()))),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "tools/call"), ("Mcp-Name", "echo.tool"), ("Mcp-Name", "echo.tool")]), call("tools/call", with_meta(echo.clone()))),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "tools/call"), ("Mcp-Name", "=?base64?!!!?=")]), call("tools/call", with_meta(echo.clone()))),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "tools/call"), ("Mcp-Name", "=?base64?ZWNoby50b29sX===?=")]), call("tools/call", with_meta(echo.clone()))),
            post(h(&[("MCP-Protocol-Version", V2026), ("Mcp-Method", "tools/list"), ("Mcp-Method", "tools/list")]), call("tools/list", with_meta(json!({})))),
            post(modern("tasks/get", Some("t")), call("tasks/get", with_meta(json!({"taskId": "t"})))),
            post(modern("tasks/get", None), call("tasks/get", with_meta(json!({"taskId": "t"})))),
            post(none(), call("tasks/cancel", json!({"taskId": "t"}))),
            post(modern("tasks/update", Some("t")), call("tasks/update", with_meta(json!({"taskId": "t", "inputResponses": {}})))),
            post(modern("tasks/list", None), call("tasks/list", with_meta(json!({})))),
            post(modern("subscriptions/listen", None), call("subscriptions/listen", with_meta(json!({"notifications": {}})))),
            post(modern("subscriptions/listen", None), call("subscriptions/listen", with_meta(json!({"notifications": {"toolsListChanged": true}})))),
            post(none(), call("subscriptions/listen", json!({"notifications": {}}))),
            post(modern("resources/subscribe", Some("file:///a")), call("resources/subscribe", with_meta(json!({"uri": "file:///a"})))),
            post(none(), call("resources/subscribe", json!({"uri": "file:///a"}))),
            post(none(), call("resources/unsubscribe", json!({"uri": "file:///a"}))),
            post(none(), call("resources/templates/list", json!({}))),
            post(none(), call("skills/list", json!({}))),
            post(modern("skills/list", None), call("skills/list", with_meta(json!({})))),
            post(modern("skills/get", None), call("skills/get", with_meta(json!({"uri": "skill://a/SKILL.md"})))),
            post(none(), call("skills/get", json!({"uri": "nope"}))),
            post(none(), call("resources/directory/read", json!({"uri": "file:///a/"}))),
            post(modern("logging/setLevel", None), call("logging/setLevel", with_meta(json!({"level": "info"})))),
            post(modern("prompts/get", Some("p")), call("prompts/get", with_meta(json!({"name": "p"})))),
            post(modern("resources/read", Some("=?base64?ZmlsZTovLy9h?=")), call("resources/read", with_meta(json!({"uri": "file:///a"})))),
            post(h(&[("MCP-Protocol-Version", V2026)]), r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#.into()),
            post(modern("notifications/cancelled", None), r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#.into()),
            post(v("2099-01-01"), r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#.into()),
            post(modern("tools/call", Some("x")), r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#.into()),
            post(modern("notifications/initialized", None), r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":-3,"method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":null}"#.into()),
            post(none(), r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#.into()),
            post(none(), r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1}}}"#.into()),
            post(none(), init_meta.clone()),
            post(v("2025-06-18"), init_meta.clone()),
            post(v(V2026), init_meta.clone()),
            post(v("2025-06-18"), call("ping", json!({"_meta": meta("2025-06-18")}))),
            post(v("2025-06-18"), call("tools/list", json!({"_meta": meta("2025-06-18")}))),
            post(v("2025-06-18"), call("tools/call", json!({"name": "echo.tool", "arguments": {"x": 1}, "_meta": meta("2025-06-18")}))),
            post(v("2025-06-18"), call("server/discover", json!({"_meta": meta("2025-06-18")}))),
            post(v("2025-06-18"), call("server/discover", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-06-18"}}))),
            post(modern("server/discover", None), call("server/discover", json!({"_meta": meta("2099-01-01")}))),
            post(v("2099-01-01"), call("server/discover", json!({"_meta": meta("2099-01-01")}))),
            post(modern("ping", None), call("ping", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V2026}}))),
            post(modern("tools/list", None), call("tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 5}}))),
            post(modern("tools/call", Some("echo.tool")), call("tools/call", json!({"name": "echo.tool", "arguments": {"x": 1}, "_meta": {"progressToken": "p", "io.modelcontextprotocol/protocolVersion": V2026, "io.modelcontextprotocol/clientCapabilities": {}}}))),
            post(modern("tools/call", Some("nope")), call("tools/call", with_meta(json!({"name": "nope"})))),
            post(modern("tools/call", Some("refuses")), call("tools/call", with_meta(json!({"name": "refuses"})))),
            post(modern("tools/call", None), call("tools/call", with_meta(json!({"name": 5})))),
            post(modern("no/such", None), call("no/such", with_meta(json!({})))),
            post(h(&[("Content-Type", "text/plain")]), ping()),
            ("POST", h(&[("Accept", "*/*"), ("Content-Type", "application/json")]), ping(), false),
            ("POST", h(&[("Accept", "application/json, text/event-stream"), ("Content-Type", "RAW:ff")]), ping(), false),
            post(none(), sized(limit)),
            post(none(), sized(limit + 1)),
            post(none(), format!("{}{}", "[".repeat(200), "]".repeat(200))),
            post(none(), call("initialize", json!({"protocolVersion": "2025-06-18"}))),
        ]
    }

    /// The 2026-07-28 headers: the version, `Mcp-Method`, and `Mcp-Name`.
    fn modern(method: &str, name: Option<&str>) -> Vec<(&'static str, String)> {
        let mut h = vec![
            ("MCP-Protocol-Version", V2026.to_owned()),
            ("Mcp-Method", method.to_owned()),
        ];
        h.extend(name.map(|n| ("Mcp-Name", n.to_owned())));
        h
    }

    /// A POST with the usual `Accept` and `Content-Type`, and `headers`.
    fn post(headers: Vec<(&'static str, String)>, body: String) -> Case {
        ("POST", headers, body, true)
    }

    /// A ping with these `Accept` and `Content-Type` headers alone.
    fn negotiating(accept: &str, content_type: Option<&str>) -> Case {
        let mut headers = vec![("Accept", accept.to_owned())];
        headers.extend(content_type.map(|c| ("Content-Type", c.to_owned())));
        ("POST", headers, call("ping", json!({})), false)
    }

    fn request(method: &str, headers: &[(&str, String)], body: &str, usual: bool) -> Request<Body> {
        let mut b = Request::builder().method(method).uri("/mcp");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            b = b.header("Host", "localhost");
        }
        if usual {
            b = b
                .header("Accept", "application/json, text/event-stream")
                .header("Content-Type", "application/json");
        }
        for (k, v) in headers {
            if k.eq_ignore_ascii_case("host") && v == "NONE" {
                continue;
            }
            if let Some(hex) = v.strip_prefix("RAW:") {
                let bytes: Vec<u8> = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect();
                b = b.header(*k, axum::http::HeaderValue::from_bytes(&bytes).unwrap());
            } else {
                b = b.header(*k, v.as_str());
            }
        }
        b.body(Body::from(body.to_owned())).unwrap()
    }

    async fn parts<B>(r: axum::http::Response<B>) -> (u16, Vec<String>, String)
    where
        B: axum::body::HttpBody,
        B::Error: std::fmt::Debug,
    {
        let status = r.status().as_u16();
        let mut headers: Vec<String> = r
            .headers()
            .iter()
            .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or("?")))
            .collect();
        headers.sort();
        let body = r.into_body().collect().await.unwrap().to_bytes();
        (status, headers, String::from_utf8_lossy(&body).into_owned())
    }

    /// Every request of the corpus gets from `handle` what it gets from
    /// rmcp's own server: status, headers and body, byte for byte.
    #[tokio::test]
    async fn answers_as_rmcp_does() {
        let registry = registry();
        let rmcp = super::super::service(registry.clone());
        let mut differ = Vec::new();
        let cases = corpus();
        for (method, headers, body, usual) in &cases {
            let theirs = parts(rmcp.handle(request(method, headers, body, *usual)).await).await;
            let ours = parts(
                super::handle(registry.clone(), request(method, headers, body, *usual)).await,
            )
            .await;
            if theirs != ours {
                differ.push(format!(
                    "{method} {headers:?} {}\n  rmcp: {theirs:?}\n  ours: {ours:?}",
                    body.chars().take(200).collect::<String>()
                ));
            }
        }
        assert!(
            differ.is_empty(),
            "{} of {} differ:\n{}",
            differ.len(),
            cases.len(),
            differ.join("\n")
        );
    }

    /// The corpus is not all refusals: the calls run, each lifecycle answers,
    /// and the errors are the ones meant.
    #[tokio::test]
    async fn the_corpus_reaches_every_kind_of_answer() {
        let registry = registry();
        let mut seen = std::collections::BTreeMap::new();
        for (method, headers, body, usual) in corpus() {
            let (status, _, text) = parts(
                super::handle(registry.clone(), request(method, &headers, &body, usual)).await,
            )
            .await;
            let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let kind = if v["result"]["structuredContent"]["x"] == 1 {
                "call ran"
            } else if v["result"]["isError"] == true {
                "tool error"
            } else if v["result"]["protocolVersion"].is_string() {
                "initialized"
            } else if v["result"]["supportedVersions"].is_array() {
                "discovered"
            } else if v["result"]["tools"].is_array() {
                "listed"
            } else if v["error"]["code"] == -32601 {
                "method not found"
            } else if v["error"]["data"]["code"] == "unknown_tool" {
                "unknown tool"
            } else if status == 202 {
                "accepted"
            } else {
                "other"
            };
            *seen.entry(kind).or_insert(0) += 1;
        }
        for kind in [
            "call ran",
            "tool error",
            "initialized",
            "discovered",
            "listed",
            "method not found",
            "unknown tool",
            "accepted",
        ] {
            assert!(seen.contains_key(kind), "{kind} never answered: {seen:?}");
        }
    }
}
