//! `/mcp`: every tool of the registry as an MCP server over streamable HTTP.
//!
//! - this file: what the server says, whatever carries it (its info, its
//!   tools as MCP lists them, a call's result);
//! - `server`: rmcp's own server, where tokio runs (serve, Lambda; the
//!   `toolgate` binary also runs it over stdio);
//! - `stateless`: the same answers without rmcp's service loop, for the
//!   Worker (wasm32 has no tokio runtime); a test compares the two.

mod input_required;
#[cfg(not(target_arch = "wasm32"))]
mod server;
pub mod stateless;
#[cfg(not(target_arch = "wasm32"))]
pub mod tasks;

#[cfg(not(target_arch = "wasm32"))]
pub use server::{McpServer, service};

use std::sync::Arc;

use rmcp::{
    ErrorData,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
        JsonObject, ListToolsResult, ProtocolVersion, ResourceContents, ServerCapabilities,
        ServerConfig, Tool as McpTool, ToolAnnotations, ToolsCapability,
    },
};
use serde_json::Value;

use crate::elicit::Elicit;
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

/// A tool spec as MCP lists it, under `name`: its hints as MCP's
/// annotations, and for a passed-through result (a cloud tool) the
/// account's own output schema.
pub fn mcp_tool(spec: &ToolSpec, name: String) -> McpTool {
    let mut t = McpTool::new(name, spec.description.clone(), object(&spec.input_schema));
    t.output_schema = spec.mcp_output_schema().map(object);
    if !spec.hints.is_empty() {
        let h = &spec.hints;
        let mut a = ToolAnnotations::default();
        a.read_only_hint = h.read_only_hint;
        a.destructive_hint = h.destructive_hint;
        a.idempotent_hint = h.idempotent_hint;
        a.open_world_hint = h.open_world_hint;
        t.annotations = Some(a);
    }
    t
}

/// `tools/list`: every tool, in one page, under the names the registry
/// gives `/mcp`.
pub fn list_tools(registry: &Registry) -> ListToolsResult {
    let tools = registry
        .tools()
        .iter()
        .map(|t| mcp_tool(t.spec(), registry.mcp_name(&t.spec().name)))
        .collect();
    ListToolsResult::with_all_items(tools)
}

/// What the client can ask its person, from the request's own `_meta`
/// (MCP 2026-07-28's multi round-trip requests), with what its retry
/// brought back; `None` for an older client, which keeps today's answers,
/// or one that declared no elicitation.
fn elicit_of(
    version: Option<ProtocolVersion>,
    capabilities: Option<ClientCapabilities>,
    request: &CallToolRequestParams,
) -> Option<Elicit> {
    if version? < ProtocolVersion::V_2026_07_28 {
        return None;
    }
    let declared = capabilities?.elicitation?;
    Some(Elicit {
        // `elicitation: {}` is form mode (the spec's backwards compatibility).
        form: declared.form.is_some() || declared.url.is_none(),
        url: declared.url.is_some(),
        responses: request
            .input_responses
            .clone()
            .map(|r| r.into_iter().collect()),
        state: request.request_state.clone(),
    })
}

/// The request's `_meta.traceparent` (MCP's trace context propagation), in
/// canonical form; `None` when absent or malformed.
fn traceparent_of(meta: &rmcp::model::RequestMetaObject) -> Option<String> {
    crate::http::traceparent::parse(meta.get_traceparent()?).map(|p| p.header())
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
    let args = |limit: usize| std::future::ready(within(args, limit));
    let outcome = invoke(registry, Transport::Mcp, &name, args, ctx).await;
    respond(registry, &name, outcome, ctx)
}

/// `args`, or `too_large` past the tool's `limit`.
fn within(args: Value, limit: usize) -> Result<Value, ToolError> {
    if json_len_over(&args, limit) {
        Err(ToolError::new(
            ErrorCode::TooLarge,
            format!("The arguments are larger than {limit} bytes, this tool's limit"),
        ))
    } else {
        Ok(args)
    }
}

/// A call's `outcome` as MCP answers it: a result, a tool error
/// (`isError`), a question for the client's person, or for an unknown
/// name MCP's protocol error with the contract's code.
pub fn respond(
    registry: &Registry,
    name: &str,
    outcome: Result<Value, ToolError>,
    ctx: &CallContext,
) -> Result<CallToolResponse, ErrorData> {
    // A cloud account's result is already an MCP result: passed through.
    let passthrough = registry.get(name).is_ok_and(|t| t.spec().mcp_result);
    Ok(match outcome {
        // MCP's own answer to an unknown name is a protocol error; the
        // contract's code rides in its data.
        Err(e) if e.code == ErrorCode::UnknownTool => {
            return Err(ErrorData::invalid_params(
                e.message,
                Some(serde_json::json!({"code": e.code.as_str()})),
            ));
        }
        // A question for the client's person (only asked where the client
        // declared it can be): MCP's own intermediate result.
        Ok(v) if ctx.elicit.is_some() && crate::elicit::is_input_required(&v) => {
            return match input_required::of(&v) {
                Some(r) => Ok(CallToolResponse::InputRequired(r)),
                None => Err(ErrorData::internal_error(
                    "a tool asked for input in a shape MCP's elicitation cannot carry",
                    None,
                )),
            };
        }
        Ok(v) if passthrough => match serde_json::from_value::<CallToolResult>(v) {
            Ok(r) => match ctx.response_limit.map(|limit| (rendered_len(&r), limit)) {
                Some((size, limit)) if size > limit => {
                    let e = crate::response_limit::too_large(size, limit);
                    CallToolResult::error(vec![ContentBlock::text(e.body().to_string())])
                }
                _ => r,
            },
            Err(e) => CallToolResult::error(vec![ContentBlock::text(
                ToolError::new(
                    ErrorCode::UpstreamUnavailable,
                    format!("The cloud account's result is not an MCP result: {e}"),
                )
                .body()
                .to_string(),
            )]),
        },
        Ok(mut v) => {
            // The result as text, its files as resources, and as itself.
            let build = |v: &Value| {
                let text = serde_json::to_string(v).unwrap_or_default();
                let mut blocks = vec![ContentBlock::text(text)];
                blocks.extend(file_resources(v));
                let mut r = CallToolResult::success(blocks);
                r.structured_content = Some(v.clone());
                r
            };
            let fitted = ctx.response_limit.map_or(Ok(()), |limit| {
                crate::response_limit::fit_answer(&mut v, limit, &|v| rendered_len(&build(v)))
            });
            match fitted {
                Ok(()) => build(&v),
                Err(e) => CallToolResult::error(vec![ContentBlock::text(e.body().to_string())]),
            }
        }
        // A failing tool is an MCP tool error (isError), not a protocol
        // error. The error body goes in the text only: structured content
        // must match the tool's output schema, and an error does not.
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.body().to_string())]),
    }
    .into())
}

/// What `r` takes in the runtime's answer: its JSON inside another JSON
/// string (API Gateway's body); the JSON-RPC envelope is in the limit's
/// margin.
fn rendered_len(r: &CallToolResult) -> usize {
    serde_json::to_string(r).map_or(usize::MAX, |s| {
        crate::response_limit::string_literal_len(&s)
    })
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
/// resources, for clients that show files: text as `text/*`, and bytes
/// whose first bytes say image (PNG, JPEG, GIF, WebP) or PDF. Other bytes
/// stay in the result's `files` alone: MCP client libraries refuse a
/// resource they cannot hand to a model (LangChain's adapters without a
/// media type, Anthropic's helpers for any type outside text, those
/// images and PDF), and a refusal there ends the agent's run.
fn file_resources(v: &Value) -> Vec<ContentBlock> {
    let Some(files) = v.get("files").and_then(Value::as_object) else {
        return Vec::new();
    };
    files
        .iter()
        .filter_map(|(name, f)| {
            let uri = file_uri(name);
            let contents = match f {
                Value::String(text) => {
                    ResourceContents::text(text.clone(), uri).with_mime_type(text_type(name))
                }
                _ => {
                    let b64 = f.get("base64")?.as_str()?;
                    ResourceContents::blob(b64.to_owned(), uri).with_mime_type(sniff(b64)?)
                }
            };
            Some(ContentBlock::resource(contents))
        })
        .collect()
}

/// A text file's media type from its name: always `text/*`.
pub fn text_type(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "md" | "markdown" => "text/markdown",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "xml" => "text/xml",
        "py" => "text/x-python",
        "js" | "mjs" => "text/javascript",
        _ => "text/plain",
    }
}

/// The largest image a model provider takes (Anthropic: 5 MB) and the
/// largest PDF (32 MB), decoded: past them a client's conversion is refused
/// by the API, and the agent's run ends.
const MAX_IMAGE_BYTES: usize = 5_000_000;
const MAX_PDF_BYTES: usize = 32_000_000;

/// The media type of base64 `b64`'s bytes when they start as an image a
/// model reads (a PNG with its header chunk, JPEG, GIF, WebP) or a PDF,
/// within the size a provider takes; `None` otherwise.
pub fn sniff(b64: &str) -> Option<&'static str> {
    use base64::Engine;
    let decoded_len = b64.len() / 4 * 3;
    let head = b64.get(..24).unwrap_or(b64);
    let head = base64::engine::general_purpose::STANDARD
        .decode(head)
        .ok()?;
    let starts = |magic: &[u8]| head.starts_with(magic);
    let image = if starts(b"\x89PNG\r\n\x1a\n") && head.get(12..16) == Some(b"IHDR") {
        Some("image/png")
    } else if starts(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && starts(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    };
    match image {
        Some(t) if decoded_len <= MAX_IMAGE_BYTES => Some(t),
        Some(_) => None,
        None if starts(b"%PDF-") && decoded_len <= MAX_PDF_BYTES => Some("application/pdf"),
        None => None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Hints, ToolSpec};
    use serde_json::json;

    fn resources(files: Value) -> Vec<Value> {
        file_resources(&json!({ "files": files }))
            .into_iter()
            .map(|b| serde_json::to_value(b).unwrap()["resource"].clone())
            .collect()
    }

    #[test]
    fn files_are_embedded_with_a_type_every_client_takes() {
        // A PNG with its header chunk; one without is not embedded.
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB";
        let headless = "iVBORw0KGgoAAAAAAAAAAAAAAAAAAAAA";
        let pdf = "JVBERi0xLjcKJeLjz9MK";
        let got = resources(json!({
            "out.json": "{}",
            "table.csv": "a,b\n",
            "pic.png": {"base64": png},
            "doc.pdf": {"base64": pdf},
            "blob.bin": {"base64": "AAECAwQFBgcICQ=="},
            "fake.png": {"base64": "AAECAwQFBgcICQ=="},
            "headless.png": {"base64": headless},
        }));
        let types: Vec<(&str, &str)> = got
            .iter()
            .map(|r| (r["uri"].as_str().unwrap(), r["mimeType"].as_str().unwrap()))
            .collect();
        assert_eq!(
            types,
            [
                ("file:///doc.pdf", "application/pdf"),
                ("file:///out.json", "text/plain"),
                ("file:///pic.png", "image/png"),
                ("file:///table.csv", "text/csv"),
            ],
            "bytes that are neither an image nor a PDF stay in `files` alone"
        );
    }

    #[test]
    fn images_past_what_a_provider_takes_stay_in_files() {
        let big_png = format!("iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB{}", "A".repeat(7_000_000));
        assert_eq!(sniff(&big_png), None);
        assert_eq!(sniff("iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB"), Some("image/png"));
        let big_pdf = format!("JVBERi0xLjcKJeLjz9MK{}", "A".repeat(20_000_000));
        assert_eq!(sniff(&big_pdf), Some("application/pdf"));
        let huge_pdf = format!("JVBERi0xLjcKJeLjz9MK{}", "A".repeat(44_000_000));
        assert_eq!(sniff(&huge_pdf), None);
    }

    #[test]
    fn listed_under_the_registry_names_with_hints() {
        let spec = ToolSpec {
            name: "python.execute".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object"}),
            hints: Hints::read_only(false),
            ..Default::default()
        };
        let t = serde_json::to_value(mcp_tool(&spec, "python__execute".into())).unwrap();
        assert_eq!(t["name"], "python__execute");
        assert_eq!(
            t["annotations"],
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
        );
        // A passed-through result lists the account's own output schema,
        // or none.
        let mut cloud = spec.clone();
        cloud.mcp_result = true;
        cloud.hints = Hints::default();
        cloud.output_schema = json!({"properties": {"structuredContent": {"type": "object"}}});
        let t = serde_json::to_value(mcp_tool(&cloud, "a__b".into())).unwrap();
        assert!(
            t.get("outputSchema").is_none() && t.get("annotations").is_none(),
            "{t}"
        );
        let own = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        cloud.output_schema = json!({"properties": {"structuredContent": own}});
        let t = serde_json::to_value(mcp_tool(&cloud, "a__b".into())).unwrap();
        assert_eq!(t["outputSchema"], own);
    }
}
