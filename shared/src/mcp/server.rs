//! `/mcp` on rmcp's own server (streamable HTTP), stateless so that it works
//! where requests do not stick to one instance (Lambda).

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::{
    ErrorData, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams,
        ProtocolVersion, ServerConfig,
    },
    service::{RequestContext, RoleServer},
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};

use crate::registry::Registry;
use crate::tool::CallContext;

/// The `/mcp` server, one per request: lists the registry's tools and calls
/// them through [`super::call_tool`].
#[derive(Clone)]
pub struct McpServer {
    registry: Arc<Registry>,
}

impl McpServer {
    /// The server of `registry`'s tools, for any rmcp transport (the
    /// `toolgate` binary serves it over stdio too).
    pub fn new(registry: Arc<Registry>) -> Self {
        Self { registry }
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        super::server_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(super::supported_versions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(super::list_tools(&self.registry))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut ctx = match context.extensions.get::<axum::http::request::Parts>() {
            Some(parts) => crate::http::context::call_context(
                parts.extensions.get::<CallContext>().cloned(),
                &parts.headers,
            ),
            None => CallContext::default(),
        };
        ctx.elicit = super::elicit_of(
            context.protocol_version(),
            context.meta.client_capabilities(),
            &request,
        );
        ctx.traceparent = super::traceparent_of(&context.meta);
        super::call_tool(&self.registry, request, &ctx).await
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
