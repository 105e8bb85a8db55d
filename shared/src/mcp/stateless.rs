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
use axum::http::{Method, StatusCode, header, request::Parts};
use axum::response::Response;
use rmcp::ErrorData;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, DiscoverResult, ErrorCode, GetMeta, JsonRpcError,
    JsonRpcRequest, PingRequestMethod, ProtocolVersion, RequestId, ServerJsonRpcMessage,
    ServerResult,
};

use crate::registry::Registry;
use crate::tool::CallContext;

mod headers;
use headers::{
    accepted_media_types, header_matches_init_body, host, per_request_version,
    protocol_version_header, request_version_meta, standard_headers,
};

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
    let capabilities = meta.client_capabilities();
    let traceparent = super::traceparent_of(meta);
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
            let mut ctx = crate::http::context::call_context(
                parts.extensions.get::<CallContext>().cloned(),
                &parts.headers,
            );
            let version = requested.or_else(|| Some(version.clone()));
            ctx.elicit = super::elicit_of(version, capabilities, &call.params);
            ctx.traceparent = traceparent;
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
mod tests;
