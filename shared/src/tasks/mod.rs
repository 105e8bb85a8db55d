//! Long calls as tasks (MCP's `io.modelcontextprotocol/tasks` extension,
//! and `Prefer: respond-async` over HTTP): a call that is still running
//! when its inline window ends answers with a task handle instead of
//! holding the connection, runs on, and keeps its outcome (the tool's own
//! result or error, exactly) until the task expires. The caller polls it
//! (`tasks/get`, `GET /tasks/{id}`) and may cancel it, which stops the
//! work: a remote command is signalled, a sandbox process killed.
//!
//! - [`TaskHost`]: where tasks run and are kept (`local`: in this process,
//!   for `toolgate serve`; on AWS Lambda, `toolgate_lambda`'s, over
//!   [`rows`] in a table);
//! - `http`: the HTTP routes and `Prefer` header.

pub mod cancel;
#[cfg(not(target_arch = "wasm32"))]
pub mod http;
#[cfg(not(target_arch = "wasm32"))]
pub mod local;
pub mod rows;

use std::pin::Pin;
use std::time::Duration;

use serde_json::{Value, json};

use crate::error::{ErrorCode, ToolError};
use crate::invoke::Transport;
use crate::tool::CallContext;

pub use cancel::{Cancel, Canceller, cancellation};

/// How long a task and its outcome are kept, from its start.
pub const TTL: Duration = Duration::from_secs(3600);

/// How often a client is told to poll.
pub const POLL_INTERVAL: Duration = Duration::from_millis(1000);

/// How long a cancelled call may take to stop its work (a remote command
/// signalled) before it is dropped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// The most tasks one caller may have at once, running or kept.
pub const MAX_PER_CALLER: usize = 100;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Running.
    Working,
    /// Ended with the tool's result or error (a tool error is a completed
    /// call: MCP's `isError`).
    Completed,
    /// Cancelled before it ended.
    Cancelled,
}

impl Status {
    /// The status as MCP and the HTTP view name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// A task as its caller sees it.
#[derive(Debug, Clone)]
pub struct Task {
    /// 40 lowercase hex characters (160 random bits).
    pub id: String,
    /// The tool's canonical name.
    pub tool: String,
    /// Where it stands.
    pub status: Status,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds: its last change of status.
    pub updated_at: i64,
    /// The tool's outcome, once completed.
    pub outcome: Option<Result<Value, ToolError>>,
}

impl Task {
    /// When it is forgotten, Unix milliseconds.
    pub fn expires_at(&self) -> i64 {
        self.created_at + TTL.as_millis() as i64
    }

    /// The HTTP view: `{"task": {…}}`, plus the tool's `result` or `error`
    /// once completed.
    pub fn view(&self) -> Value {
        let mut v = json!({"task": {
            "id": self.id,
            "tool": self.tool,
            "status": self.status.as_str(),
            "created_at": crate::clarify::rfc3339(self.created_at),
            "updated_at": crate::clarify::rfc3339(self.updated_at),
            "expires_at": crate::clarify::rfc3339(self.expires_at()),
            "poll_interval_ms": POLL_INTERVAL.as_millis() as u64,
        }});
        match &self.outcome {
            Some(Ok(r)) => v["result"] = r.clone(),
            Some(Err(e)) => v["error"] = e.body()["error"].clone(),
            None => {}
        }
        v
    }
}

/// What starting a call gave.
#[derive(Debug)]
pub enum Started {
    /// It ended within its inline window: its outcome, as a direct call's.
    Done(Result<Value, ToolError>),
    /// It runs on as this task.
    Task(Task),
}

/// The future a host's operation returns.
pub type TaskFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ToolError>> + Send + 'a>>;

/// Where tasks run and are kept.
pub trait TaskHost: Send + Sync {
    /// How long an MCP call runs before it answers as a task.
    fn after(&self) -> Duration;

    /// Calls tool `name` with `args` for `ctx`'s caller over `transport`:
    /// its outcome if it ends within `inline`, else the task it runs on as.
    fn start<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        ctx: &'a CallContext,
        transport: Transport,
        inline: Duration,
    ) -> TaskFuture<'a, Started>;

    /// Task `id` of `caller`, once it is no longer working or after `wait`.
    /// Another caller's task is not found, as an unknown one.
    fn get<'a>(&'a self, id: &'a str, caller: &'a str, wait: Duration) -> TaskFuture<'a, Task>;

    /// Cancels task `id` of `caller` and waits for its work to stop (at
    /// most [`CANCEL_GRACE`]); an ended task is left as it ended.
    fn cancel<'a>(&'a self, id: &'a str, caller: &'a str) -> TaskFuture<'a, Task>;
}

/// The refusal of an unknown (or another caller's, or expired) task.
pub fn not_found() -> ToolError {
    ToolError::new(
        ErrorCode::NotFound,
        "No such task (tasks are kept for an hour, and only for the caller that started them)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_carries_the_outcome_exactly() {
        let mut t = Task {
            id: "ab".repeat(20),
            tool: "ssh_run".into(),
            status: Status::Completed,
            created_at: 0,
            updated_at: 1_000,
            outcome: Some(Ok(json!({"exit_code": 0}))),
        };
        let v = t.view();
        assert_eq!(v["result"], json!({"exit_code": 0}));
        assert_eq!(v["task"]["status"], "completed");
        assert_eq!(v["task"]["expires_at"], "1970-01-01T01:00:00Z");
        t.outcome = Some(Err(ToolError::invalid_input("no")));
        assert_eq!(
            t.view()["error"],
            json!({"code": "invalid_input", "message": "no"})
        );
    }
}
