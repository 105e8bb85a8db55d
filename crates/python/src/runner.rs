//! The process sandbox as python.execute's [`Runner`].

use std::sync::Arc;

use toolgate_sandbox::Sandbox;
use toolgate_sandbox::pool::ANONYMOUS;
use toolgate_shared::error::ToolError;
use toolgate_shared::tools::python_execute::{Run, RunFuture, Runner};

/// Runs each script in a sealed child of the sandbox's zygote.
pub struct SandboxRunner(pub Arc<Sandbox>);

impl Runner for SandboxRunner {
    fn run<'a>(&'a self, run: Run<'a>) -> RunFuture<'a> {
        Box::pin(async move {
            self.0
                .execute_with(
                    run.caller.unwrap_or(ANONYMOUS),
                    run.code,
                    run.files,
                    run.session,
                    run.timeout,
                    run.tools,
                )
                .await
                .map_err(|e| {
                    tracing::error!(error = %toolgate_shared::logging::field(&e.to_string()), "sandbox failure");
                    ToolError::internal(format!("sandbox unavailable: {e}"))
                })
        })
    }
}
