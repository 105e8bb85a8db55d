//! Tasks kept in a table, for runtimes where the call runs in another
//! process than the one that started it and the one that reads it (AWS
//! Lambda: the gateway starts a task, the tool's function runs it from an
//! asynchronous invocation, any instance reads it). A task is two records:
//! the task (its tool and caller), which only its starter writes, and its
//! run (status, outcome, cancel), which the function named `runner` also
//! writes, so a function's rights reach its own runs and no other's. Every
//! change of a run is one conditional write: it starts once, ends once,
//! and a cancelled task stays cancelled.

use serde_json::{Map, Value, json};

use super::{Status, Task, TaskFuture};
use crate::error::{ErrorCode, ToolError};

/// A task's row.
#[derive(Debug, Clone)]
pub struct Row {
    /// The task as its caller sees it.
    pub task: Task,
    /// Who started it.
    pub caller: String,
    /// The function that runs it.
    pub runner: String,
    /// Whether a function took it up (unix ms).
    pub started_at: Option<i64>,
    /// When the function running it is stopped by its runtime (unix ms):
    /// a task still working well after it was cut off.
    pub run_by: Option<i64>,
    /// Whether its caller asked for it to stop.
    pub cancel: bool,
}

/// Where task rows are kept.
pub trait TaskRows: Send + Sync {
    /// Writes a new working task of `caller`, run by `runner`.
    fn create<'a>(&'a self, task: &'a Task, caller: &'a str, runner: &'a str)
    -> TaskFuture<'a, ()>;

    /// Task `id`'s row, read consistently.
    fn get<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<Row>>;

    /// Whether `runner`'s run of task `id` was asked to stop or has ended.
    fn stop_asked<'a>(&'a self, runner: &'a str, id: &'a str) -> TaskFuture<'a, bool>;

    /// Takes `runner`'s run of task `id` up, unless it is no longer
    /// working, was taken up already or asked to stop, or was created
    /// before `created_after` (unix ms): whether this run may go on.
    fn start<'a>(
        &'a self,
        runner: &'a str,
        id: &'a str,
        created_after: i64,
        run_by: Option<i64>,
    ) -> TaskFuture<'a, bool>;

    /// Ends `runner`'s run of task `id` as `status` with `outcome`, if it
    /// is still working (and, with `unstarted`, was never taken up):
    /// whether it did.
    fn end<'a>(
        &'a self,
        runner: &'a str,
        id: &'a str,
        status: Status,
        outcome: Option<&'a Result<Value, ToolError>>,
        unstarted: bool,
    ) -> TaskFuture<'a, bool>;

    /// Asks `runner`'s run of task `id` to stop, if it is still working.
    fn request_cancel<'a>(&'a self, runner: &'a str, id: &'a str) -> TaskFuture<'a, bool>;
}

/// An outcome as a row keeps it: `{"result": …}` or `{"error": {…}}`, the
/// contract's error object.
pub fn encode_outcome(outcome: &Result<Value, ToolError>) -> String {
    match outcome {
        Ok(v) => json!({ "result": v }),
        Err(e) => json!({ "error": e.body()["error"] }),
    }
    .to_string()
}

/// [`encode_outcome`]'s text read back; anything else is an internal error.
pub fn decode_outcome(text: &str) -> Result<Value, ToolError> {
    let unreadable = || ToolError::internal("the task's outcome is unreadable");
    let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(text) else {
        return Err(unreadable());
    };
    if let Some(v) = o.remove("result") {
        return Ok(v);
    }
    let Some(Value::Object(mut e)) = o.remove("error") else {
        return Err(unreadable());
    };
    let code = e.remove("code");
    let code = ErrorCode::ALL
        .into_iter()
        .find(|c| code.as_ref().and_then(Value::as_str) == Some(c.as_str()))
        .unwrap_or(ErrorCode::Internal);
    let message = match e.remove("message") {
        Some(Value::String(m)) => m,
        _ => return Err(unreadable()),
    };
    let mut err = ToolError::new(code, message);
    if !e.is_empty() {
        err.details = Some(Map::from_iter(e));
    }
    Err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_survives_its_row() {
        let ok = Ok(json!({"exit_code": 0, "stdout": "x"}));
        assert_eq!(decode_outcome(&encode_outcome(&ok)), ok);
        let err =
            ToolError::new(ErrorCode::ApprovalRequired, "ask").with_detail("approval", json!("ab"));
        let back = decode_outcome(&encode_outcome(&Err(err.clone()))).unwrap_err();
        assert_eq!(back.body(), err.body());
        assert_eq!(
            decode_outcome("[]").unwrap_err().message,
            "the task's outcome is unreadable"
        );
    }
}
