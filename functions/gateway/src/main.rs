//! Lambda function answering `GET /tools`, `/openapi.json`, `/mcp` and
//! `/healthz` for the whole stack: it lists the tools of the functions in
//! `TOOLGATE_PEER_FUNCTIONS` and forwards MCP calls to them. It runs no tool
//! itself, so python-execute's role reaches only its sessions table and its
//! own task runs. With `TOOLGATE_TASKS_TABLE`, long calls run on in their
//! functions as tasks.

use std::process::ExitCode;

use toolgate_lambda::{WithPeers, WithTasks};

fn main() -> ExitCode {
    toolgate_lambda::main(toolgate_aws::Aws::backends(), |cfg, set| async move {
        if cfg.peer_functions.is_empty() {
            return Err(
                "TOOLGATE_PEER_FUNCTIONS is not set (the functions whose tools to serve)".into(),
            );
        }
        set.with_peers(&cfg).await?.with_lambda_tasks(&cfg).await
    })
}
