//! `/mcp` on rmcp's own server (streamable HTTP), stateless so that it works
//! where requests do not stick to one instance (Lambda).

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::{
    ErrorData, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
        ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerConfig,
    },
    service::{RequestContext, RoleServer},
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};

use crate::registry::Registry;
use crate::tasks::TaskHost;
use crate::tool::CallContext;

/// The `/mcp` server, one per request: lists the registry's tools and calls
/// them through [`super::call_tool`], or as tasks where `tasks` runs them.
#[derive(Clone)]
pub struct McpServer {
    registry: Arc<Registry>,
    tasks: Option<Arc<dyn TaskHost>>,
}

impl McpServer {
    /// The server of `registry`'s tools, for any rmcp transport (the
    /// `toolgate` binary serves it over stdio too).
    pub fn new(registry: Arc<Registry>) -> Self {
        Self {
            registry,
            tasks: None,
        }
    }
}

/// The call's context as the HTTP layers left it (caller, scope, deadline).
fn context_of(context: &RequestContext<RoleServer>) -> CallContext {
    match context.extensions.get::<axum::http::request::Parts>() {
        Some(parts) => crate::http::context::call_context(
            parts.extensions.get::<CallContext>().cloned(),
            &parts.headers,
        ),
        None => CallContext::default(),
    }
}

impl McpServer {
    /// The task host, for a request that declared the tasks extension.
    fn tasks_for(&self, context: &RequestContext<RoleServer>) -> Option<&dyn TaskHost> {
        let declared = context
            .meta
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        self.tasks.as_deref().filter(|_| declared)
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = super::server_info();
        if self.tasks.is_some() {
            info.capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(rmcp::model::TASKS_EXTENSION_ID.into(), Default::default());
        }
        info
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
        let mut ctx = context_of(&context);
        ctx.elicit = super::elicit_of(
            context.protocol_version(),
            context.meta.client_capabilities(),
            &request,
        );
        ctx.traceparent = super::traceparent_of(&context.meta);
        // A retry answering a person is never made a task: it is their wait.
        let retry = ctx.elicit.as_ref().is_some_and(|e| e.state.is_some());
        match self.tasks_for(&context) {
            Some(tasks) if !retry => super::tasks::call(tasks, &self.registry, request, &ctx).await,
            _ => super::call_tool(&self.registry, request, &ctx).await,
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let ctx = context_of(&context);
        let tasks = self.tasks.as_deref().ok_or_else(no_tasks)?;
        let caller = ctx.caller.as_deref().unwrap_or_default();
        let t = tasks
            .get(&request.task_id, caller, std::time::Duration::ZERO)
            .await
            .map_err(super::tasks::error)?;
        Ok(super::tasks::detailed(&self.registry, &t, &ctx))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let ctx = context_of(&context);
        let tasks = self.tasks.as_deref().ok_or_else(no_tasks)?;
        let caller = ctx.caller.as_deref().unwrap_or_default();
        tasks
            .cancel(&request.task_id, caller)
            .await
            .map(drop)
            .map_err(super::tasks::error)
    }
}

fn no_tasks() -> ErrorData {
    ErrorData::invalid_request("This server runs no tasks", None)
}

/// The `/mcp` service, stateless and answering plain JSON where it can.
/// Host validation is off: the bearer token (or the API Gateway authorizer)
/// is the guard, and deployed hosts are not loopback.
pub fn service(
    registry: Arc<Registry>,
    tasks: Option<Arc<dyn TaskHost>>,
) -> StreamableHttpService<McpServer, LocalSessionManager> {
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
                tasks: tasks.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
