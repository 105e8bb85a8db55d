//! MCP clients nobody on this team wrote, pointed at any `/mcp` URL: rmcp's
//! client and the MCP Inspector CLI (npm).

use std::process::Command;

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

use crate::peer::{run_ok, tools_dir};

/// rmcp's client, connected with `initialize` (the 2025-11-25 lifecycle;
/// `serve_with_lifecycle` picks 2026-07-28's).
pub async fn rmcp_client(
    url: String,
    token: Option<&str>,
) -> Result<rmcp::service::RunningService<rmcp::RoleClient, ()>, String> {
    let mut cfg = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(t) = token {
        crate::issued::record("bearer token", t);
        cfg = cfg.auth_header(t.to_owned());
    }
    ().serve(StreamableHttpClientTransport::from_config(cfg))
        .await
        .map_err(|e| e.to_string())
}

/// The MCP Inspector's CLI over streamable HTTP; its JSON output.
pub fn inspector(url: &str, extra: &[&str]) -> Value {
    let bin = tools_dir().join("node_modules/.bin/mcp-inspector");
    // `--header "Authorization: Bearer …"`
    for h in extra.iter().filter_map(|a| a.split_once(':')) {
        crate::issued::record_header(h.0.trim(), h.1.trim());
    }
    let stdout = run_ok(
        Command::new(&bin)
            .arg("--cli")
            .arg(url)
            .args(["--transport", "http"])
            .args(extra)
            .env(
                "MCP_CATALOG_PATH",
                std::env::temp_dir().join(format!("mcp-catalog-{}.json", std::process::id())),
            ),
        "the MCP Inspector",
    );
    let v = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("inspector output is not JSON ({e}): {stdout}"));
    crate::issued::record_json(&v);
    v
}

/// A scripted MCP 2026-07-28 client's `tools/call` of `tool` (no
/// `initialize`: its version, identity and `capabilities` ride in the
/// request's own `_meta`), with a retry's `extra` params (`requestState`,
/// `inputResponses`): the JSON-RPC body.
pub fn call_2026(tool: &str, args: &Value, capabilities: &Value, extra: &Value) -> Value {
    let mut params = serde_json::json!({
        "name": tool,
        "arguments": args,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "scripted", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        },
    });
    for (k, v) in extra.as_object().into_iter().flatten() {
        params[k] = v.clone();
    }
    serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
}

/// The headers a `tools/call` of `tool` at protocol `version` goes with
/// over streamable HTTP, less authorization.
pub fn call_headers(version: &str, tool: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Content-Type", "application/json".into()),
        ("Accept", "application/json, text/event-stream".into()),
        ("MCP-Protocol-Version", version.into()),
        ("Mcp-Method", "tools/call".into()),
        ("Mcp-Name", tool.into()),
    ]
}

/// A 2026-07-28 first call's `input_required` answer: its input request
/// under `key`, and its sealed `requestState` (recorded as issued).
pub fn input_asked(reply: &Value, key: &str) -> (Value, String) {
    let r = &reply["result"];
    assert_eq!(r["resultType"], "input_required", "{reply}");
    let state = r["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned();
    crate::issued::record("request state", &state);
    (r["inputRequests"][key].clone(), state)
}
