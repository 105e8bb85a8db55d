//! Tasks over HTTP: `POST /tools/{name}` with `Prefer: respond-async`
//! (RFC 7240) answers 202 with the task once the call outlives the
//! preference's `wait` (0 when absent); `GET /tasks/{id}[?wait=N]` reads it
//! (long-polling up to N s while it works), `POST /tasks/{id}/cancel`
//! cancels it.

use std::sync::Arc;
use std::time::Duration;

use axum::{
    Json, Router,
    extract::{Extension, Path, Query, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde::Deserialize;

use super::{Task, TaskHost};
use crate::error::ToolError;
use crate::tool::CallContext;

/// The longest `wait` a read takes, in seconds.
pub const MAX_WAIT_SECS: u64 = 25;

/// The task routes over `host`.
pub fn routes<S: Clone + Send + Sync + 'static>(host: Arc<dyn TaskHost>) -> Router<S> {
    Router::new()
        .route("/tasks/{id}", get(read))
        .route("/tasks/{id}/cancel", post(cancel))
        .with_state(host)
}

/// `Some(wait)` when the request prefers an asynchronous answer
/// (`Prefer: respond-async`, with `wait=N` seconds, at most
/// [`MAX_WAIT_SECS`]); `None` otherwise.
pub fn prefers_async(headers: &HeaderMap) -> Option<Duration> {
    let mut asked = false;
    let mut wait = 0;
    for value in headers.get_all("prefer") {
        for pref in value.to_str().unwrap_or_default().split(',') {
            let pref = pref.split(';').next().unwrap_or_default().trim();
            let (name, value) = pref.split_once('=').unwrap_or((pref, ""));
            match name.trim().to_ascii_lowercase().as_str() {
                "respond-async" => asked = true,
                "wait" => {
                    if let Ok(n) = value.trim().trim_matches('"').parse::<u64>() {
                        wait = n.min(MAX_WAIT_SECS);
                    }
                }
                _ => {}
            }
        }
    }
    asked.then(|| Duration::from_secs(wait))
}

/// 202 with the task, where it is read (`Location`), and that the
/// preference was applied.
pub fn accepted(task: &Task) -> Response {
    (
        StatusCode::ACCEPTED,
        [
            (header::LOCATION, format!("/tasks/{}", task.id)),
            (
                header::HeaderName::from_static("preference-applied"),
                "respond-async".to_owned(),
            ),
        ],
        Json(task.view()),
    )
        .into_response()
}

#[derive(Deserialize)]
struct WaitQuery {
    wait: Option<String>,
}

fn caller(ctx: Option<Extension<CallContext>>, headers: &HeaderMap) -> String {
    context(ctx, headers).caller.unwrap_or_default()
}

fn context(ctx: Option<Extension<CallContext>>, headers: &HeaderMap) -> CallContext {
    crate::http::context::call_context(ctx.map(|Extension(c)| c), headers)
}

/// Kept back from the transport's deadline when a read waits.
const READ_MARGIN: Duration = Duration::from_millis(1500);

async fn read(
    State(host): State<Arc<dyn TaskHost>>,
    Path(id): Path<String>,
    Query(q): Query<WaitQuery>,
    ctx: Option<Extension<CallContext>>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ToolError> {
    let wait = match q.wait.as_deref() {
        None => 0,
        Some(w) => w
            .parse::<u64>()
            .ok()
            .filter(|w| *w <= MAX_WAIT_SECS)
            .ok_or_else(|| {
                ToolError::invalid_input(format!(
                    "wait must be a whole number of seconds from 0 to {MAX_WAIT_SECS}, got {w:?}"
                ))
            })?,
    };
    let ctx = context(ctx, &headers);
    let mut wait = Duration::from_secs(wait);
    // Answered before the transport stops waiting (API Gateway's 30 s).
    if let Some(d) = ctx.deadline {
        let left = d.saturating_duration_since(std::time::Instant::now());
        wait = wait.min(left.saturating_sub(READ_MARGIN));
    }
    let task = host.get(&id, &ctx.caller.unwrap_or_default(), wait).await?;
    Ok(Json(task.view()))
}

async fn cancel(
    State(host): State<Arc<dyn TaskHost>>,
    Path(id): Path<String>,
    ctx: Option<Extension<CallContext>>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ToolError> {
    let task = host.cancel(&id, &caller(ctx, &headers)).await?;
    Ok(Json(task.view()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefer(values: &[&str]) -> Option<Duration> {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("prefer", v.parse().unwrap());
        }
        prefers_async(&h)
    }

    #[test]
    fn the_preference_is_read_as_rfc_7240_writes_it() {
        assert_eq!(prefer(&[]), None);
        assert_eq!(prefer(&["return=minimal"]), None);
        assert_eq!(prefer(&["respond-async"]), Some(Duration::ZERO));
        assert_eq!(
            prefer(&["respond-async, wait=10"]),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            prefer(&["wait=3", "Respond-Async"]),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            prefer(&["respond-async, wait=999"]),
            Some(Duration::from_secs(25))
        );
        assert_eq!(prefer(&["respond-async, wait=x"]), Some(Duration::ZERO));
    }
}
