//! `/mcp`: every tool of the registry as an MCP server over streamable HTTP
//! (rmcp), stateless so that it works where requests do not stick to one
//! instance (Lambda).

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::{
    ErrorData, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
        ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
        Tool as McpTool,
    },
    service::{RequestContext, RoleServer},
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde_json::Value;

use crate::error::ErrorCode;
use crate::invoke::{Transport, invoke};
use crate::registry::Registry;
use crate::tool::{CallContext, ToolSpec};

/// MCP protocol versions `/mcp` negotiates: every version rmcp knows, from
/// 2024-11-05 to 2026-07-28.
pub fn supported_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::KNOWN_VERSIONS
}

/// The `/mcp` server, one per request: lists the registry's tools and calls
/// them through [`invoke`].
#[derive(Clone)]
pub struct McpServer {
    registry: Arc<Registry>,
}

fn object(v: &Value) -> Arc<JsonObject> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

/// A tool spec as MCP lists it: MCP allows dots, so the canonical name.
pub fn mcp_tool(spec: &ToolSpec) -> McpTool {
    let mut t = McpTool::new(
        spec.name.clone(),
        spec.description.clone(),
        object(&spec.input_schema),
    );
    t.output_schema = Some(object(&spec.output_schema));
    t
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info.name = "toolgate".into();
        info.server_info.version = env!("CARGO_PKG_VERSION").into();
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(supported_versions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .registry
            .tools()
            .iter()
            .map(|t| mcp_tool(t.spec()))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let ctx = match context.extensions.get::<axum::http::request::Parts>() {
            Some(parts) => crate::http::context::call_context(
                parts.extensions.get::<CallContext>().cloned(),
                &parts.headers,
            ),
            None => CallContext::default(),
        };
        let args = std::future::ready(Ok(args));
        let outcome = invoke(&self.registry, Transport::Mcp, &name, args, &ctx).await;
        Ok(match outcome {
            // MCP's own answer to an unknown name is a protocol error; the
            // contract's code rides in its data.
            Err(e) if e.code == ErrorCode::UnknownTool => {
                return Err(ErrorData::invalid_params(
                    e.message,
                    Some(serde_json::json!({"code": e.code.as_str()})),
                ));
            }
            Ok(v) => {
                let text = serde_json::to_string(&v).unwrap_or_default();
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = Some(v);
                r
            }
            // A failing tool is an MCP tool error (isError), not a protocol
            // error. The error body goes in the text only: structured content
            // must match the tool's output schema, and an error does not.
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.body().to_string())]),
        }
        .into())
    }
}

/// The `/mcp` service, stateless and answering plain JSON where it can.
/// Host validation is off: the bearer token (or the API Gateway authorizer)
/// is the guard, and deployed hosts are not loopback.
pub fn service(registry: Arc<Registry>) -> StreamableHttpService<McpServer, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_allowed_hosts(Vec::<String>::new())
        .with_max_request_body_bytes(crate::http::body::MAX_BODY_BYTES);
    StreamableHttpService::new(
        move || {
            Ok(McpServer {
                registry: registry.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
