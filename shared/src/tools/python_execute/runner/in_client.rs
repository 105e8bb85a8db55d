//! A script that waits for a person, asked in the caller's own MCP client
//! (MCP 2026-07-28's multi round-trip requests, URL mode): instead of the
//! `waiting` answer, a client that opens links gets `input_required`
//! sending its person to the question's answer page or the approval's page
//! (which carries no capability), and a sealed `requestState` naming the
//! script's `resume` id. Its retry (the same call, on any instance) waits a
//! while for the person once they opened the page, then resumes the script
//! from its journal, as a call with `resume` would.

use std::time::Duration;

use serde_json::{Value, json};

use crate::approvals::{canonical, sha256_hex};
use crate::clarify::{Clarify, approval_view, now_ms};
use crate::elicit::state::Claims;
use crate::elicit::{Elicit, Reply, input_required};
use crate::error::{ErrorCode, ToolError};
use crate::tool::CallContext;

/// The key the script's wait is asked under, and what its state says.
const KEY: &str = "script";

/// The caller's MCP client, where its person can be sent to a page, and
/// the call it is about. The state key and the arguments' hash are had
/// only when a script waits or a retry comes (most calls need neither).
pub(super) struct InClient {
    elicit: Elicit,
    tool: String,
    caller: String,
    deadline: Option<crate::clock::Instant>,
}

/// Why a retry (a call with a `requestState`) cannot be taken here: the
/// caller's scripts may not call tools, or no state can be opened.
pub(super) fn untakeable(code_mode: bool) -> ToolError {
    if code_mode {
        ToolError::new(ErrorCode::Unavailable, crate::elicit::STATE_UNREADABLE)
    } else {
        ToolError::new(
            ErrorCode::Forbidden,
            "\"requestState\" goes on with a script that called tools, and this caller's scripts may not (code_mode)",
        )
    }
}

/// The answer when the person declined or dismissed the page: nothing
/// runs; the script still waits under `resume`.
pub(super) fn declined(resume: &str) -> Result<Value, ToolError> {
    let mut out = crate::tools::python_execute::ExecOutput::failed();
    out.exit_code = -1;
    out.add_note(&format!(
        "[The person at the MCP client did not go on, so nothing ran; the script still waits: once it is settled, call python.execute again with the same code and \"resume\": \"{resume}\"]\n"
    ));
    let mut v = serde_json::to_value(&out).map_err(|e| ToolError::internal(e.to_string()))?;
    v["resume"] = json!(resume);
    Ok(v)
}

/// A retry's state, opened.
pub(super) struct Retry {
    /// The script's `resume` id.
    pub resume: String,
    /// The person declined or dismissed the page: the call answers as
    /// without a client (`waiting`, `resume`).
    pub declined: bool,
}

impl InClient {
    /// `ctx`'s client, when it opens links (or retries) and `clarify`
    /// seals states.
    pub(super) fn of(clarify: &Clarify, ctx: &CallContext, tool: &str) -> Option<Self> {
        let elicit = ctx.elicit.as_ref().filter(|e| e.url || e.state.is_some())?;
        clarify.seals_states().then(|| Self {
            elicit: elicit.clone(),
            tool: tool.to_owned(),
            caller: ctx.caller.clone().unwrap_or_default(),
            deadline: ctx.deadline,
        })
    }

    /// The retry's state, if this call (its arguments `args`, as sent) is
    /// one: checked (this server's, unchanged, this caller's, these
    /// arguments, unexpired), and once the person opened the page, a while
    /// to act there.
    pub(super) async fn retry(
        &self,
        clarify: &Clarify,
        args: &Value,
    ) -> Result<Option<Retry>, ToolError> {
        let Some(state) = self.elicit.state.as_deref() else {
            return Ok(None);
        };
        let Some(key) = clarify.state_key().await else {
            return Err(ToolError::new(
                ErrorCode::Unavailable,
                crate::elicit::STATE_UNREADABLE,
            ));
        };
        let args = sha256_hex(&canonical(args));
        let claims = key.open(state, &self.tool, &self.caller, &args, now_ms())?;
        let other = || {
            ToolError::invalid_input(
                "\"requestState\" was issued for another call: send the arguments of the call that got it",
            )
        };
        if claims.asked != KEY {
            return Err(other());
        }
        let (resume, waited) = claims.subject.split_once(' ').ok_or_else(other)?;
        let reply = self.elicit.response(KEY).and_then(Reply::parse);
        if matches!(reply, Some(Reply::Accept(_))) {
            clarify
                .wait(waited, crate::elicit::link_wait(self.deadline))
                .await?;
        }
        Ok(Some(Retry {
            resume: resume.to_owned(),
            declined: matches!(reply, Some(Reply::Decline | Reply::Cancel)),
        }))
    }

    /// python.execute's `answer` to the call with `args`; when the script
    /// waits, as the request sending the person to the page where it is
    /// settled, for `ttl`.
    pub(super) async fn ask(
        &self,
        clarify: &Clarify,
        args: &Value,
        answer: Value,
        ttl: Duration,
    ) -> Value {
        if !self.elicit.url {
            return answer;
        }
        let (Some(resume), Some(w)) = (answer["resume"].as_str(), answer.get("waiting")) else {
            return answer;
        };
        let (waited, url, message) = match w["for"].as_str() {
            Some("approval") => {
                let Some(id) = w["approval"]["id"].as_str() else {
                    return answer;
                };
                let url = approval_view::inbox_url(&clarify.base_url(), id);
                let message = format!(
                    "A script waits for approval {id} of its {} call. An approver decides it on its page; once decided, the script goes on.",
                    w["tool"].as_str().unwrap_or("tool")
                );
                (id, url, message)
            }
            Some("answer") => {
                let c = &w["clarification"];
                let (Some(id), Some(url)) = (c["id"].as_str(), c["answer_url"].as_str()) else {
                    return answer;
                };
                let question = c["question"].as_str().unwrap_or_default();
                (id, url.to_owned(), question.to_owned())
            }
            _ => return answer,
        };
        // Without the key (a store outage), the answer as it is: the
        // agent can still resume by its id.
        let Some(key) = clarify.state_key().await else {
            return answer;
        };
        let state = key.seal(&Claims {
            tool: self.tool.clone(),
            caller: self.caller.clone(),
            args: sha256_hex(&canonical(args)),
            subject: format!("{resume} {waited}"),
            asked: KEY.into(),
            exp: now_ms() + ttl.as_millis() as i64,
        });
        let params = json!({"mode": "url", "message": message, "url": url});
        input_required(vec![(KEY, params)], state)
    }
}
