//! `/mcp`: every tool of the registry as an MCP server over streamable HTTP
//! (rmcp), stateless so that it works where requests do not stick to one
//! instance (Lambda).

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::{
    ErrorData, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
        ListToolsResult, PaginatedRequestParams, ProtocolVersion, ResourceContents,
        ServerCapabilities, ServerConfig, Tool as McpTool,
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
        let args = |_| std::future::ready(Ok(args));
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
                let mut blocks = vec![ContentBlock::text(text)];
                blocks.extend(file_resources(&v));
                let mut r = CallToolResult::success(blocks);
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

/// The files a result returns (python.execute's `files`), also as embedded
/// resources, so that clients that show files can show them.
fn file_resources(v: &Value) -> Vec<ContentBlock> {
    let Some(files) = v.get("files").and_then(Value::as_object) else {
        return Vec::new();
    };
    files
        .iter()
        .filter_map(|(name, f)| {
            let uri = file_uri(name);
            let contents = match f {
                Value::String(text) => ResourceContents::text(text.clone(), uri),
                _ => ResourceContents::blob(f.get("base64")?.as_str()?.to_owned(), uri),
            };
            Some(ContentBlock::resource(contents))
        })
        .collect()
}

/// `file:///` and the name, each byte outside RFC 3986's unreserved set
/// (and `/`) percent-encoded.
fn file_uri(name: &str) -> String {
    let mut uri = String::from("file:///");
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
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
        // rmcp reads the body before the tool is known: the largest any
        // tool here takes.
        .with_max_request_body_bytes(registry.max_body_bytes());
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
