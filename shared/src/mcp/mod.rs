//! `/mcp`: every tool of the registry as an MCP server over streamable HTTP.
//!
//! - this file: what the server says, whatever carries it (its info, its
//!   tools as MCP lists them, a call's result);
//! - `server`: rmcp's own server, where tokio runs (serve, Lambda);
//! - `stateless`: the same answers without rmcp's service loop, for the
//!   Worker (wasm32 has no tokio runtime); a test compares the two.

#[cfg(feature = "native")]
mod server;
pub mod stateless;

#[cfg(feature = "native")]
pub use server::{McpServer, service};

use std::sync::Arc;

use rmcp::{
    ErrorData,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
        ListToolsResult, ProtocolVersion, ResourceContents, ServerCapabilities, ServerConfig,
        Tool as McpTool, ToolsCapability,
    },
};
use serde_json::Value;

use crate::error::{ErrorCode, ToolError};
use crate::invoke::{Transport, invoke};
use crate::registry::Registry;
use crate::tool::{CallContext, ToolSpec};

/// MCP protocol versions `/mcp` negotiates: every version rmcp knows, from
/// 2024-11-05 to 2026-07-28.
pub fn supported_versions() -> &'static [ProtocolVersion] {
    ProtocolVersion::KNOWN_VERSIONS
}

/// The server's name, version and capabilities (tools only).
pub fn server_info() -> ServerConfig {
    // Without rmcp's `server` feature there is no builder (the Worker).
    let mut capabilities = ServerCapabilities::default();
    capabilities.tools = Some(ToolsCapability::default());
    let mut info = ServerConfig::new(capabilities);
    info.server_info.name = "toolgate".into();
    info.server_info.version = env!("CARGO_PKG_VERSION").into();
    info
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

/// `tools/list`: every tool, in one page.
pub fn list_tools(registry: &Registry) -> ListToolsResult {
    let tools = registry
        .tools()
        .iter()
        .map(|t| mcp_tool(t.spec()))
        .collect();
    ListToolsResult::with_all_items(tools)
}

/// `tools/call` through [`invoke`]: a result, a tool error (`isError`), or
/// for an unknown name MCP's protocol error with the contract's code.
/// The arguments are held to the tool's own body limit, as `POST /tools`
/// holds them (`/mcp` reads up to the largest any tool takes before it
/// knows the tool): larger is the tool error `too_large`.
pub async fn call_tool(
    registry: &Registry,
    request: CallToolRequestParams,
    ctx: &CallContext,
) -> Result<CallToolResponse, ErrorData> {
    let name = request.name.to_string();
    let args = Value::Object(request.arguments.unwrap_or_default());
    let args = |limit: usize| {
        std::future::ready(if json_len_over(&args, limit) {
            Err(ToolError::new(
                ErrorCode::TooLarge,
                format!("The arguments are larger than {limit} bytes, this tool's limit"),
            ))
        } else {
            Ok(args)
        })
    };
    let outcome = invoke(registry, Transport::Mcp, &name, args, ctx).await;
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

/// Whether `v` as compact JSON is longer than `limit` bytes; counted
/// without building the text, and only up to the limit.
fn json_len_over(v: &Value, limit: usize) -> bool {
    struct Count {
        left: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.left = self
                .left
                .checked_sub(b.len())
                .ok_or_else(|| std::io::Error::other("over"))?;
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(&mut Count { left: limit }, v).is_err()
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
