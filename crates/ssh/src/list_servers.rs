//! `list_servers` (docs/contracts.md#list_servers-and-ssh_run): the servers in the caller's scope, with tags.
//! No input. Output `{"servers": [{name, address, tags}], "message"?}`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::service::Ssh;
use toolgate_shared::error::ToolError;
use toolgate_shared::tool::{CallContext, NOT_AN_OBJECT, Tool, ToolFuture, ToolSpec};

/// The tool's name.
pub const NAME: &str = "list_servers";

/// The `list_servers` tool, over the shared [`Ssh`] service.
pub struct ListServers {
    spec: ToolSpec,
    ssh: Arc<Ssh>,
}

/// The tool's spec; it takes no input.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.into(),
        description: "List the SSH servers you may run commands on with ssh_run: each \
                      server's name, user@host:port and tags. Takes no input."
            .into(),
        input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        output_schema: json!({
            "type": "object",
            "properties": {
                "servers": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "address": {"type": "string", "description": "user@host:port"},
                            "tags": {"type": "array", "items": {"type": "string"}}
                        },
                        "required": ["name", "address", "tags"]
                    }
                },
                "message": {"type": "string", "description": "Present when there are no servers"}
            },
            "required": ["servers"]
        }),
        hints: toolgate_shared::tool::Hints::read_only(false),
        mcp_result: false,
    }
}

impl ListServers {
    /// The tool over `ssh`.
    pub fn new(ssh: Arc<Ssh>) -> Self {
        Self { spec: spec(), ssh }
    }
}

impl Tool for ListServers {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a CallContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let Some(obj) = args.as_object() else {
                return Err(ToolError::invalid_input(NOT_AN_OBJECT));
            };
            toolgate_shared::tool::only_keys(obj, &[], &[])?;
            let servers = self.ssh.visible(ctx.servers.as_deref()).await?;
            let list: Vec<Value> = servers
                .iter()
                .map(|s| json!({"name": s.name, "address": s.address(), "tags": s.tags}))
                .collect();
            if list.is_empty() {
                let why = if ctx.servers.is_some() {
                    "none of the configured servers is in this caller's scope"
                } else {
                    "none is configured (add [servers.NAME] to toolgate.toml, or parameters under the SSM prefix)"
                };
                return Ok(
                    json!({"servers": [], "message": format!("No servers are available: {why}.")}),
                );
            }
            Ok(json!({ "servers": list }))
        })
    }
}
