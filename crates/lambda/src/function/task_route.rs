//! On AWS a tool's route (`POST /tools/{name}`) goes to the tool's own
//! function, which starts no task: its role may not write a task's record
//! (python-execute's invokes other functions only for its scripts' calls).
//! With `Prefer: respond-async` it sends the caller, by a 307 that keeps
//! the method and body, to the tool's task route (`POST
//! /tools/{name}/task`), which API Gateway gives the gateway; that starts
//! the task in this function as MCP's do.

use axum::Json;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use toolgate_shared::tasks::http::prefers_async;

/// The middleware: a call preferring an asynchronous answer goes to the
/// task route; anything else on.
pub(super) async fn to_task_route(req: Request, next: Next) -> Response {
    if req.method() == Method::POST
        && prefers_async(req.headers()).is_some()
        && let Some(name) = tool_of(req.uri().path())
    {
        return redirect(name);
    }
    next.run(req).await
}

/// The tool a `/tools/{name}` path names.
fn tool_of(path: &str) -> Option<&str> {
    path.strip_prefix("/tools/")
        .filter(|n| !n.is_empty() && !n.contains('/'))
}

fn redirect(name: &str) -> Response {
    // Relative to the request's own path, so that it holds under any stage
    // prefix: `/prod/tools/x` -> `/prod/tools/x/task`.
    let location = format!("{name}/task");
    (
        StatusCode::TEMPORARY_REDIRECT,
        [(header::LOCATION, location)],
        Json(json!({
            "task_route": format!("/tools/{name}/task"),
            "message": format!(
                "Long calls run as tasks through the gateway: send the same request to /tools/{name}/task"
            ),
        })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_tools_own_route_is_sent_on() {
        assert_eq!(tool_of("/tools/ssh_run"), Some("ssh_run"));
        assert_eq!(tool_of("/tools/python.execute"), Some("python.execute"));
        assert_eq!(tool_of("/tools/ssh_run/task"), None);
        assert_eq!(tool_of("/tools/"), None);
        assert_eq!(tool_of("/tasks/abc"), None);
    }
}
