//! clarify answered in the agent's own MCP client (MCP 2026-07-28): the
//! question as a form (its options as a choice, and the person's own
//! words), or, for a client that opens links only, the answer page as a
//! URL elicitation. It is the same clarification every channel sees (the
//! page, notifications, Step Functions, the long-poll): whichever answer
//! lands first is the answer. The retry names it in a sealed
//! `requestState` bound to the caller and the call's arguments.

use serde_json::{Value, json};

use crate::approvals::{canonical, sha256_hex};
use crate::clarify::{
    Clarification, Clarify, MAX_ANSWER_CHARS, Refusal, Status, now_ms, refusal_error,
};
use crate::elicit::state::{Claims, StateKey};
use crate::elicit::{Elicit, Reply, input_required};
use crate::error::ToolError;
use crate::tool::CallContext;

use super::NAME;

/// The key the question is asked under in `inputRequests`.
const KEY: &str = "answer";

/// The form's fields: the option picked, and the person's own words.
const CHOICE: &str = "choice";
const WORDS: &str = "answer";

pub(super) use crate::elicit::STATE_UNREADABLE;

/// Whether `ctx`'s client can be asked here: it declared a mode, and this
/// deployment seals states.
pub(super) fn applies(clarify: &Clarify, ctx: &CallContext) -> bool {
    clarify.seals_states() && ctx.elicit.as_ref().is_some_and(|e| e.form || e.url)
}

/// The retry's binding: the caller, and the arguments as sent.
fn bound(ctx: &CallContext, args: &Value) -> (String, String) {
    (
        ctx.caller.clone().unwrap_or_default(),
        sha256_hex(&canonical(args)),
    )
}

/// After `c` was asked: the input request for its person.
pub(super) fn ask(
    clarify: &Clarify,
    key: &StateKey,
    elicit: &Elicit,
    ctx: &CallContext,
    args: &Value,
    c: &Clarification,
) -> Value {
    let (caller, bound_args) = bound(ctx, args);
    let state = key.seal(&Claims {
        tool: NAME.into(),
        caller,
        args: bound_args,
        subject: c.id.clone(),
        asked: if elicit.form { FORM } else { URL }.into(),
        exp: c.expires_at,
    });
    input_required(vec![(KEY, request(clarify, elicit, c))], state)
}

/// How a question is asked: a form where the client shows forms, else a
/// link to its answer page.
const FORM: &str = "form";
const URL: &str = "url";

/// How long a retry after the link was opened waits for the person's
/// answer on the page before asking again: the client re-asks at once.
const LINK_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// The `elicitation/create` parameters for `c`: a form where the client
/// shows forms, else its answer page.
fn request(clarify: &Clarify, elicit: &Elicit, c: &Clarification) -> Value {
    if !elicit.form {
        // The page's link is the capability the pending clarification gives
        // any caller: asking through it grants the client nothing new.
        return json!({
            "mode": URL,
            "message": c.question,
            "url": crate::clarify::answer_url(&clarify.base_url(), &c.id),
        });
    }
    let mut properties = serde_json::Map::new();
    if !c.options.is_empty() {
        properties.insert(
            CHOICE.into(),
            json!({"type": "string", "title": "Choose one", "enum": c.options}),
        );
    }
    let words = if c.options.is_empty() {
        "Your answer"
    } else {
        "Or answer in your own words"
    };
    properties.insert(
        WORDS.into(),
        json!({"type": "string", "title": words, "maxLength": MAX_ANSWER_CHARS}),
    );
    let required: Vec<&str> = if c.options.is_empty() {
        vec![WORDS]
    } else {
        Vec::new()
    };
    json!({
        "mode": FORM,
        "message": c.question,
        "requestedSchema": {"type": "object", "properties": properties, "required": required},
    })
}

/// The retry: what the person did, applied to the clarification the sealed
/// `state` names; its state as the result, or the question again while it
/// waits for an answer the person has not given. An answer or a decline
/// that does not take (the question was answered, withdrawn or expired
/// meanwhile, or this state was used already) is the answer route's
/// refusal, with the state as it stands.
pub(super) async fn resume(
    clarify: &Clarify,
    key: &StateKey,
    elicit: &Elicit,
    state: &str,
    ctx: &CallContext,
    args: &Value,
) -> Result<Value, ToolError> {
    let (caller, bound_args) = bound(ctx, args);
    let claims = key.open(state, NAME, &caller, &bound_args, now_ms())?;
    let c = current(clarify, &claims.subject).await?;
    // The question again while it is pending, else its state.
    let as_is = |c: &Clarification| {
        Ok(if c.status_at(now_ms()) == Status::Pending {
            ask(clarify, key, elicit, ctx, args, c)
        } else {
            view(clarify, c)
        })
    };
    match elicit.response(KEY).and_then(Reply::parse) {
        None => as_is(&c),
        // The person dismissed it: the question stays open for the others.
        Some(Reply::Cancel) => Ok(view(clarify, &c)),
        // The link was opened: the answer is the page's, once given.
        Some(Reply::Accept(_)) if claims.asked == URL => {
            as_is(&clarify.wait(&c.id, LINK_WAIT).await?.ok_or_else(no_such)?)
        }
        Some(Reply::Decline) => settled(clarify, clarify.cancel(&c.id).await?),
        Some(Reply::Accept(content)) => match answer_of(&c, &content)? {
            Some((text, choice)) => settled(clarify, clarify.answer(&c.id, text, choice).await?),
            // An empty form: asked again.
            None => as_is(&c),
        },
    }
}

/// An answer or a decline as it landed: the state, or the answer route's
/// refusal (409 with the state that stands, 410, 404).
fn settled(clarify: &Clarify, r: Result<Clarification, Refusal>) -> Result<Value, ToolError> {
    r.map(|c| view(clarify, &c)).map_err(|refusal| {
        let e = refusal_error(&refusal);
        match &refusal {
            Refusal::Settled(c) | Refusal::Expired(c) => {
                e.with_detail("clarification", view(clarify, c))
            }
            _ => e,
        }
    })
}

/// The answer in a submitted form: its text (the person's words, else the
/// option's) and the option's index; `None` when it holds neither.
fn answer_of(
    c: &Clarification,
    content: &serde_json::Map<String, Value>,
) -> Result<Option<(String, Option<usize>)>, ToolError> {
    let words = content
        .get(WORDS)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|w| !w.is_empty());
    if words.is_some_and(|w| w.chars().count() > MAX_ANSWER_CHARS) {
        return Err(ToolError::invalid_input(format!(
            "\"answer\" is longer than {MAX_ANSWER_CHARS} characters"
        )));
    }
    let choice = match content.get(CHOICE).and_then(Value::as_str) {
        Some(picked) => Some(c.options.iter().position(|o| o == picked).ok_or_else(|| {
            ToolError::invalid_input(format!(
                "\"choice\" must be one of the question's options, not {picked:?}"
            ))
        })?),
        None => None,
    };
    Ok(match (words, choice) {
        (Some(w), choice) => Some((w.to_owned(), choice)),
        (None, Some(i)) => Some((c.options[i].clone(), Some(i))),
        (None, None) => None,
    })
}

async fn current(clarify: &Clarify, id: &str) -> Result<Clarification, ToolError> {
    clarify.get(id).await?.ok_or_else(no_such)
}

fn no_such() -> ToolError {
    ToolError::new(crate::error::ErrorCode::NotFound, "No such clarification")
}

fn view(clarify: &Clarify, c: &Clarification) -> Value {
    c.view(now_ms(), &clarify.base_url())
}
