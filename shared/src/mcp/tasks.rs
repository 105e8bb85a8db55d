//! MCP's tasks extension (`io.modelcontextprotocol/tasks`) over a
//! [`TaskHost`]: a client that declares it gets a call still running after
//! the host's window ([`TaskHost::after`]) as a task (`resultType: "task"`), then `tasks/get` and
//! `tasks/cancel`; the completed task's result is the call's exact
//! `CallToolResult`.

use rmcp::{
    ErrorData,
    model::{
        CallToolRequestParams, CallToolResponse, CreateTaskResult, DetailedTask, GetTaskResult,
        JsonObject, Task as McpTask, TaskPayload, TaskStatus,
    },
};
use serde_json::Value;

use crate::invoke::Transport;
use crate::registry::Registry;
use crate::tasks::{POLL_INTERVAL, Started, Status, TTL, Task, TaskHost};
use crate::tool::CallContext;

/// `tools/call` that may become a task.
pub async fn call(
    tasks: &dyn TaskHost,
    registry: &Registry,
    request: CallToolRequestParams,
    ctx: &CallContext,
) -> Result<CallToolResponse, ErrorData> {
    let name = request.name.to_string();
    let args = Value::Object(request.arguments.unwrap_or_default());
    let args = match registry.get(&name) {
        Ok(t) => super::within(args, t.max_body_bytes()),
        Err(_) => Ok(args),
    };
    let started = match args {
        Ok(args) => {
            tasks
                .start(&name, args, ctx, Transport::Mcp, tasks.after())
                .await
        }
        Err(e) => Err(e),
    };
    match started {
        Ok(Started::Task(t)) => Ok(CallToolResponse::Task(CreateTaskResult::new(mcp_task(&t)))),
        Ok(Started::Done(outcome)) => super::respond(registry, &name, outcome, ctx),
        Err(e) => super::respond(registry, &name, Err(e), ctx),
    }
}

/// `t` as MCP's task handle.
fn mcp_task(t: &Task) -> McpTask {
    let status = match t.status {
        Status::Working => TaskStatus::Working,
        Status::Completed => TaskStatus::Completed,
        Status::Cancelled => TaskStatus::Cancelled,
    };
    McpTask::new(
        t.id.clone(),
        status,
        crate::clarify::rfc3339(t.created_at),
        crate::clarify::rfc3339(t.updated_at),
    )
    .with_ttl_ms(TTL.as_millis() as u64)
    .with_poll_interval_ms(POLL_INTERVAL.as_millis() as u64)
}

/// `tasks/get`'s answer: the task, and once completed the call's result
/// as `tools/call` would have given it (a protocol error as `failed`).
pub fn detailed(registry: &Registry, t: &Task, ctx: &CallContext) -> GetTaskResult {
    let payload = match (&t.status, &t.outcome) {
        (Status::Working, _) => TaskPayload::Working,
        (Status::Cancelled, _) => TaskPayload::Cancelled,
        (Status::Completed, outcome) => {
            let outcome = outcome.clone().unwrap_or_else(|| {
                Err(crate::error::ToolError::internal(
                    "the task ended without an outcome",
                ))
            });
            match super::respond(registry, &t.tool, outcome, ctx) {
                Ok(CallToolResponse::Complete(r)) => TaskPayload::Completed {
                    result: object(serde_json::to_value(r)),
                },
                Ok(_) => TaskPayload::Failed {
                    error: object(serde_json::to_value(ErrorData::internal_error(
                        "the call asked for input after it became a task: call it again",
                        None,
                    ))),
                },
                Err(e) => TaskPayload::Failed {
                    error: object(serde_json::to_value(e)),
                },
            }
        }
    };
    GetTaskResult::new(DetailedTask::new(mcp_task(t), payload))
}

fn object(v: Result<Value, serde_json::Error>) -> JsonObject {
    match v {
        Ok(Value::Object(o)) => o,
        _ => JsonObject::new(),
    }
}

/// A task error as MCP's: an unknown task is invalid params.
pub fn error(e: crate::error::ToolError) -> ErrorData {
    if e.code == crate::error::ErrorCode::NotFound {
        ErrorData::invalid_params(e.message, None)
    } else {
        ErrorData::internal_error(e.message, None)
    }
}
