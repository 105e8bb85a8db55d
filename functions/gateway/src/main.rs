//! Lambda function answering `GET /tools`, `/openapi.json`, `/mcp` and
//! `/healthz` for the whole stack: it lists the tools of the functions in
//! `TOOLGATE_PEER_FUNCTIONS` and forwards MCP calls to them. It runs no tool
//! itself, so python-execute's role stays without any AWS permission.

use std::process::ExitCode;

use toolgate_shared::{lambda, toolset::Toolset};

fn main() -> ExitCode {
    lambda::main(|cfg| async move {
        if cfg.peer_functions.is_empty() {
            return Err(
                "TOOLGATE_PEER_FUNCTIONS is not set (the functions whose tools to serve)".into(),
            );
        }
        Toolset::new().with_peers(&cfg).await
    })
}
