//! The answer routes (docs/contracts.md#answer-routes): `GET /clarifications/{id}` (JSON, or the
//! page with `Accept: text/html`; `?wait=N` long-polls up to 25 s),
//! `POST /clarifications/{id}/answer` and `POST /clarifications/{id}/cancel`.
//! `GET /clarifications/{id}/answer` is the page too: that is the
//! `answer_url` a person is given, and a browser opens a link with GET.
//! The id is the capability: these routes take no bearer token. An
//! approval's id is not: these routes show it (without a link) and refuse
//! to answer or cancel it; approvers decide it (`approvals::http`).

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::Value;

use super::{
    Clarify, MAX_ANSWER_CHARS, MAX_WAIT_SECS, Refusal, approval_view, now_ms, page, refusal_error,
};
use crate::error::ToolError;
use crate::logging::id_ref;

/// The answer routes over `clarify`, for a runtime to merge into its router.
pub fn routes<S: Clone + Send + Sync + 'static>(clarify: Arc<Clarify>) -> axum::Router<S> {
    axum::Router::new()
        .route("/clarifications/{id}", get(read))
        .route("/clarifications/{id}/answer", get(answer_page).post(answer))
        .route("/clarifications/{id}/cancel", post(cancel))
        .with_state(clarify)
}

#[derive(Deserialize)]
struct WaitQuery {
    wait: Option<String>,
}

fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"))
}

fn not_found() -> Response {
    refusal_error(&Refusal::NotFound).into_response()
}

async fn read(
    State(c): State<Arc<Clarify>>,
    Path(id): Path<String>,
    Query(q): Query<WaitQuery>,
    headers: HeaderMap,
) -> Response {
    let wait = match q.wait.as_deref().map(str::parse::<u64>) {
        None => 0,
        Some(Ok(w)) => w.min(MAX_WAIT_SECS),
        Some(Err(_)) => {
            return ToolError::invalid_input("wait must be a whole number of seconds (at most 25)")
                .into_response();
        }
    };
    let found = if wait > 0 && !wants_html(&headers) {
        c.wait(&id, Duration::from_secs(wait)).await
    } else {
        c.get(&id).await
    };
    let cl = match found {
        Ok(Some(cl)) => cl,
        Ok(None) => return not_found(),
        Err(e) => return e.into_response(),
    };
    match c.approval(&id).await {
        Ok(Some(_)) if wants_html(&headers) => return to_inbox(&format!("../inbox/{id}")),
        Ok(Some(row)) => {
            // The agent reads where its approval stands: no link, not even
            // the inbox's (approvers are told where to go, it is not).
            let mut v = approval_view::view(&cl, &row, now_ms(), &c.base_url());
            if let Some(o) = v.as_object_mut() {
                o.remove("inbox_url");
            }
            return Json(v).into_response();
        }
        Ok(None) => {}
        Err(e) => return e.into_response(),
    }
    if wants_html(&headers) {
        return page_response(&cl);
    }
    Json(cl.view(now_ms(), &c.base_url())).into_response()
}

/// An approval is reviewed in the inbox, where approvers sign in: `to` is
/// relative, so that a prefix in front of the routes (an API stage) stays.
fn to_inbox(to: &str) -> Response {
    let mut res = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        res.headers_mut().insert(header::LOCATION, v);
    }
    res
}

/// The answer link: the page whatever the `Accept` header says (a chat
/// client's preview or a plain `curl` sees the same page a browser does).
async fn answer_page(State(c): State<Arc<Clarify>>, Path(id): Path<String>) -> Response {
    match c.approval(&id).await {
        Ok(Some(_)) => return to_inbox(&format!("../../inbox/{id}")),
        Ok(None) => {}
        Err(e) => return e.into_response(),
    }
    match c.get(&id).await {
        Ok(Some(cl)) => page_response(&cl),
        Ok(None) => not_found(),
        Err(e) => e.into_response(),
    }
}

/// The page for `cl`, with its own nonce and locked-down headers.
fn page_response(cl: &super::Clarification) -> Response {
    let nonce = match super::new_id() {
        Ok(n) => n,
        Err(e) => return e.into_response(),
    };
    let mut res = (StatusCode::OK, page::render(cl, now_ms(), &nonce)).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(v) = HeaderValue::from_str(&page::csp(&nonce)) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// `{"answer": text}` and/or `{"choice": index}`; a choice alone answers
/// with that option's text.
fn parse_answer(body: &Value, options: &[String]) -> Result<(String, Option<usize>), ToolError> {
    let obj = body.as_object().ok_or_else(|| {
        ToolError::invalid_input(
            "The body must be a JSON object: {\"answer\": text} or {\"choice\": index}",
        )
    })?;
    let choice = match obj.get("choice") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(i) if (i as usize) < options.len() => Some(i as usize),
            _ => {
                return Err(ToolError::invalid_input(format!(
                    "\"choice\" must be an option's index, 0 to {}",
                    options.len().saturating_sub(1)
                )));
            }
        },
    };
    let answer = match obj.get("answer") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => {
            return Err(ToolError::invalid_input("\"answer\" must not be empty"));
        }
        Some(Value::String(s)) if s.chars().count() > MAX_ANSWER_CHARS => {
            return Err(ToolError::invalid_input(format!(
                "\"answer\" is longer than {MAX_ANSWER_CHARS} characters"
            )));
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(ToolError::invalid_input("\"answer\" must be a string")),
    };
    match (answer, choice) {
        // A choice with words of its own would say one thing on the page
        // and record another.
        (Some(a), Some(i)) if a != options[i] => Err(ToolError::invalid_input(format!(
            "\"answer\" and \"choice\" disagree: option {i} is {:?}; send the choice alone, or your own words alone",
            options[i]
        ))),
        (Some(a), c) => Ok((a, c)),
        (None, Some(i)) => Ok((options[i].clone(), Some(i))),
        (None, None) => Err(ToolError::invalid_input(
            "Send {\"answer\": text} or {\"choice\": index}",
        )),
    }
}

fn settled(c: &Clarify, r: Refusal) -> Response {
    let err = refusal_error(&r);
    let status = StatusCode::from_u16(err.code.status()).unwrap_or(StatusCode::CONFLICT);
    let mut body = err.body();
    if let Refusal::Settled(cl) | Refusal::Expired(cl) = &r {
        // 409 carries the answer that won.
        body["clarification"] = cl.view(now_ms(), &c.base_url());
    }
    (status, Json(body)).into_response()
}

async fn answer(
    State(c): State<Arc<Clarify>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let cl = match c.get(&id).await {
        Ok(Some(cl)) => cl,
        Ok(None) => return not_found(),
        Err(e) => return e.into_response(),
    };
    let parsed = match crate::http::body::read_json_body(
        &headers,
        body,
        crate::http::MAX_BODY_BYTES,
    )
    .await
    {
        Ok(v) => parse_answer(&v, &cl.options),
        Err(e) => Err(e),
    };
    let (text, choice) = match parsed {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    match c.answer(&id, text, choice).await {
        Ok(Ok(done)) => {
            tracing::info!(id = %id_ref(&done.id), choice = done.choice.map(|i| i as u64), "clarification answered");
            Json(done.view(now_ms(), &c.base_url())).into_response()
        }
        Ok(Err(r)) => settled(&c, r),
        Err(e) => e.into_response(),
    }
}

async fn cancel(State(c): State<Arc<Clarify>>, Path(id): Path<String>) -> Response {
    match c.cancel(&id).await {
        Ok(Ok(done)) => {
            tracing::info!(id = %id_ref(&done.id), "clarification cancelled");
            Json(done.view(now_ms(), &c.base_url())).into_response()
        }
        Ok(Err(r)) => settled(&c, r),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answer_bodies() {
        let opts = vec!["yes".to_owned(), "no".to_owned()];
        assert_eq!(
            parse_answer(&json!({"choice": 1}), &opts).unwrap(),
            ("no".into(), Some(1))
        );
        assert_eq!(
            parse_answer(&json!({"answer": "maybe"}), &opts).unwrap(),
            ("maybe".into(), None)
        );
        assert_eq!(
            parse_answer(&json!({"answer": "no", "choice": 1}), &opts).unwrap(),
            ("no".into(), Some(1))
        );
        let e = parse_answer(&json!({"answer": "no", "choice": 0}), &opts).unwrap_err();
        assert!(e.message.contains("disagree"), "{}", e.message);
        for bad in [
            json!({}),
            json!({"choice": 2}),
            json!({"choice": -1}),
            json!({"choice": "0"}),
            json!({"answer": ""}),
            json!({"answer": 3}),
            json!([1]),
        ] {
            assert!(parse_answer(&bad, &opts).is_err(), "{bad}");
        }
    }
}
