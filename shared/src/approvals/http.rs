//! The approvers' routes (docs/approvals.md):
//!
//! - `GET /inbox`, `GET /inbox/{id}`: the inbox page (a static page that
//!   signs in and fetches the JSON below);
//! - `GET /approvals[?status=pending|all]`, `GET /approvals/{id}`,
//!   `POST /approvals/{id}/decision`, `GET /clarifications[?status=…]`: for
//!   a signed-in approver only (the runtime's auth layer puts an
//!   [`Approver`] in the request, or refuses it before it gets here);
//! - `POST /approval-links/{id}`: a link holder's decision, where the
//!   operator chose link-holder approvals;
//! - `POST /slack/interactions`: a Slack app's signed button clicks.

use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Approvals, slack};
use crate::error::{ErrorCode, ToolError};
use crate::http::identity::Approver;

/// A Slack app whose clicks decide approvals.
#[derive(Clone)]
pub struct SlackApp {
    /// The app's signing secret (never logged).
    pub signing_secret: String,
    /// The Slack user ids allowed to decide (`*`: anyone the message reaches).
    pub users: Vec<String>,
    /// Posts the acknowledgement to a click's `response_url`.
    pub post: Option<Arc<dyn crate::clarify::notify::post::Post>>,
    /// Runs that post after Slack has its answer (tokio's spawn on a
    /// server); without one it runs before (Lambda is frozen after).
    pub spawn: Option<crate::clarify::notify::Spawn>,
}

/// What the routes share.
#[derive(Clone)]
pub struct Routes {
    /// The service.
    pub approvals: Arc<Approvals>,
    /// Slack's interactive clicks, when a signing secret is configured.
    pub slack: Option<SlackApp>,
}

/// The approvers' routes, for a runtime to merge into its router.
pub fn routes<S: Clone + Send + Sync + 'static>(r: Routes) -> axum::Router<S> {
    axum::Router::new()
        .route("/inbox", get(inbox))
        .route("/inbox/{id}", get(inbox))
        .route("/approvals", get(list_approvals))
        .route("/approvals/{id}", get(one))
        .route("/approvals/{id}/decision", post(decide))
        .route("/clarifications", get(list_questions))
        .route("/approval-links/{id}", post(by_link))
        .route("/slack/interactions", post(slack_click))
        .with_state(r)
}

/// The request's approver, or 401 (nobody signed in) — the runtime's auth
/// layer answers for tokens it knows; this covers a runtime whose
/// authorizer let a non-approver through (a JWT outside the group).
fn signed_in(approver: Option<Extension<Approver>>) -> Result<Approver, ToolError> {
    approver.map(|Extension(a)| a).ok_or_else(|| {
        ToolError::new(
            ErrorCode::Forbidden,
            "This route is for approvers: sign in as an approver (an approver token, or a JWT in the approvers' group)",
        )
    })
}

/// The inbox page, with its own nonce and locked-down headers.
async fn inbox() -> Response {
    let nonce = match crate::clarify::new_id() {
        Ok(n) => n,
        Err(e) => return e.into_response(),
    };
    let mut res = (StatusCode::OK, super::page::inbox(&nonce)).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(v) = HeaderValue::from_str(&crate::clarify::page::csp(&nonce)) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    res
}

#[derive(Deserialize)]
struct ListQuery {
    status: Option<String>,
}

/// `pending` (the default) or `all`.
fn pending_only(q: &ListQuery) -> Result<bool, ToolError> {
    match q.status.as_deref() {
        None | Some("pending") => Ok(true),
        Some("all") => Ok(false),
        Some(other) => Err(ToolError::invalid_input(format!(
            "status must be pending or all, got {:?}",
            other.chars().take(40).collect::<String>()
        ))),
    }
}

async fn list_approvals(
    State(r): State<Routes>,
    approver: Option<Extension<Approver>>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, ToolError> {
    signed_in(approver)?;
    let list = r.approvals.list(true, pending_only(&q)?).await?;
    Ok(Json(json!({ "approvals": list })))
}

async fn list_questions(
    State(r): State<Routes>,
    approver: Option<Extension<Approver>>,
    Query(q): Query<ListQuery>,
) -> Result<Json<Value>, ToolError> {
    signed_in(approver)?;
    let list = r.approvals.list(false, pending_only(&q)?).await?;
    Ok(Json(json!({ "clarifications": list })))
}

async fn one(
    State(r): State<Routes>,
    approver: Option<Extension<Approver>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ToolError> {
    signed_in(approver)?;
    r.approvals
        .view(&id)
        .await?
        .map(Json)
        .ok_or_else(|| ToolError::new(ErrorCode::NotFound, "No such approval"))
}

/// The body's fields, refusing any key but `allowed` (a misspelt field is
/// an error, not silence).
fn fields(body: &Value, allowed: &[&str]) -> Result<Map<String, Value>, ToolError> {
    let obj = body.as_object().ok_or_else(|| {
        ToolError::invalid_input(
            "The body must be a JSON object: {\"decision\": \"approve\" or \"reject\"}",
        )
    })?;
    if let Some(k) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(ToolError::invalid_input(format!(
            "Unknown field {:?}; allowed: {}",
            k.chars().take(40).collect::<String>(),
            allowed.join(", ")
        )));
    }
    Ok(obj.clone())
}

/// `"approve"` → true, `"reject"` → false; anything else is an error.
fn decision(v: Option<&Value>) -> Result<bool, ToolError> {
    match v.and_then(Value::as_str) {
        Some("approve") => Ok(true),
        Some("reject") => Ok(false),
        _ => Err(ToolError::invalid_input(
            "\"decision\" must be \"approve\" or \"reject\"",
        )),
    }
}

async fn body_json(headers: &HeaderMap, body: Body) -> Result<Value, ToolError> {
    crate::http::body::read_json_body(headers, body, 16 * 1024).await
}

async fn decide(
    State(r): State<Routes>,
    approver: Option<Extension<Approver>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ToolError> {
    let approver = signed_in(approver)?;
    let body = body_json(&headers, body).await?;
    let f = fields(&body, &["decision"])?;
    let approve = decision(f.get("decision"))?;
    r.approvals.decide(&id, approve, &approver).await.map(Json)
}

async fn by_link(
    State(r): State<Routes>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ToolError> {
    let body = body_json(&headers, body).await?;
    let f = fields(&body, &["capability", "decision"])?;
    let cap = f
        .get("capability")
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::invalid_input("\"capability\" is required"))?;
    let d = match f.get("decision") {
        None | Some(Value::Null) => None,
        v => Some(decision(v)?),
    };
    r.approvals.by_link(&id, cap, d).await.map(Json)
}

/// A Slack click: checked (size, signature, freshness, user), decided
/// through the same service as any approver, acknowledged in the channel.
/// Slack wants its answer within 3 s, and a 200 even for a refusal (the
/// refusal is the message the person sees).
async fn slack_click(State(r): State<Routes>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(app) = &r.slack else {
        return ToolError::new(
            ErrorCode::NotConfigured,
            "Slack approvals are not set up here (no Slack signing secret)",
        )
        .into_response();
    };
    if body.len() > slack::MAX_BODY_BYTES {
        return ToolError::new(ErrorCode::TooLarge, "Slack's request is too large").into_response();
    }
    let header_text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let now = crate::clock::unix_ms() / 1000;
    if let Err(e) = slack::verify(
        app.signing_secret.as_bytes(),
        header_text("x-slack-request-timestamp"),
        header_text("x-slack-signature"),
        &body,
        now,
    ) {
        tracing::warn!(reason = %e, "Slack request refused");
        return ToolError::new(ErrorCode::Unauthorized, e.to_string()).into_response();
    }
    // Slack also posts clicks on link buttons (the page, a question's
    // options): those are no decision, and an error would show the person
    // a warning next to the button.
    let click = match slack::parse(&body) {
        Ok(c) => c,
        Err(e) => {
            tracing::info!(reason = %e, "Slack click ignored");
            return StatusCode::OK.into_response();
        }
    };
    let outcome = if !slack::allowed(&app.users, &click.user_id) {
        Err(ToolError::new(
            ErrorCode::Forbidden,
            format!(
                "Slack user {} is not one of this deployment's approvers",
                click.user_id
            ),
        ))
    } else {
        let approver = Approver {
            id: slack::approver_id(&click),
            via: slack::VIA,
            // A Slack user is never a caller's principal.
            person: false,
        };
        r.approvals
            .decide(&click.approval_id, click.action.approves(), &approver)
            .await
    };
    let ack = slack::ack_message(&click, &outcome);
    if let (Some(url), Some(post)) = (click.response_url.clone(), app.post.clone())
        && let Ok(body) = serde_json::to_vec(&ack)
    {
        // Best effort: the decision stands whether or not Slack shows it.
        let send = Box::pin(async move {
            let req = crate::clarify::notify::post::Request {
                url,
                headers: Vec::new(),
                body,
            };
            match post.post(&req, std::time::Duration::from_secs(2)).await {
                Ok(s) if (200..300).contains(&s) => {}
                Ok(s) => tracing::warn!(status = s, "Slack did not take the message update"),
                Err(e) => tracing::warn!(error = %e, "cannot update the Slack message"),
            }
        });
        match &app.spawn {
            Some(spawn) => spawn(send),
            None => send.await,
        }
    }
    // Slack reads nothing of this answer but its status; the body says the
    // outcome to whoever else reads it (a test, a log).
    (StatusCode::OK, Json(ack)).into_response()
}
