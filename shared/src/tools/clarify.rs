//! `clarify` (docs/contracts.md#clarify): asks a person a question with optional choices.
//! Input `{"question", "options": []}` (plus `task_token` from a Step
//! Functions `.waitForTaskToken` state, accepted only on a direct Lambda
//! invocation: whoever holds a task token completes that workflow's step,
//! so an agent calling over HTTP or MCP must not hand one in); output a
//! pending clarification
//! `{"status":"pending","id","question","options","answer_url","expires_at"}`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::clarify::{Clarify, MAX_OPTION_CHARS, MAX_OPTIONS, MAX_QUESTION_CHARS, now_ms};
use crate::error::ToolError;
use crate::invoke::Transport;
use crate::tool::{CallContext, NOT_AN_OBJECT, SettledFuture, Tool, ToolFuture, ToolSpec};

mod by_elicitation;

/// The tool's name.
pub const NAME: &str = "clarify";

/// The refusal of a `task_token` that did not come with a direct Lambda
/// invocation.
pub const TASK_TOKEN_DIRECT_ONLY: &str = "\"task_token\" is accepted only when a Step Functions workflow invokes the clarify function directly";

/// The `clarify` tool, over the shared [`Clarify`] service.
pub struct ClarifyTool {
    spec: ToolSpec,
    clarify: Arc<Clarify>,
}

/// The tool's spec; its description states the expiry. The input schema
/// leaves `task_token` out: it is not for agents (see the module).
pub fn spec(expiry_secs: u64) -> ToolSpec {
    ToolSpec {
        name: NAME.into(),
        description: format!(
            "Ask the human a question when something is ambiguous, optionally with options to \
             choose from (they may also answer in their own words). Returns at once with a \
             pending clarification: give its answer_url to the person, then read the answer with \
             GET /clarifications/{{id}}?wait=25 until its status is answered (an MCP client that \
             can ask its user is asked, and the call returns the answer). It expires after \
             {expiry_secs} s."
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS},
                "options": {
                    "type": "array",
                    "maxItems": MAX_OPTIONS,
                    "items": {"type": "string", "minLength": 1, "maxLength": MAX_OPTION_CHARS},
                    "default": []
                }
            },
            "required": ["question"],
            "additionalProperties": false
        }),
        output_schema: json!({
            "type": "object",
            "properties": {
                "status": {"enum": ["pending", "answered", "cancelled", "expired"]},
                "answer": {"type": ["string", "null"], "description": "once answered (in the caller's own MCP client)"},
                "choice": {"type": ["integer", "null"]},
                "id": {"type": "string"},
                "question": {"type": "string"},
                "options": {"type": "array", "items": {"type": "string"}},
                "answer_url": {"type": "string"},
                "expires_at": {"type": "string", "description": "RFC 3339, UTC"}
            },
            "required": ["status", "id", "question", "options", "answer_url", "expires_at"]
        }),
        // It keeps a question (a quota counts it) and tells people: not
        // read-only, so clients ask before they let it run; nothing it
        // does destroys anything.
        hints: crate::tool::Hints::writes(false, false, true),
        mcp_result: false,
    }
}

/// The arguments, checked.
#[derive(Debug, PartialEq)]
pub struct Input {
    /// Non-blank, at most [`MAX_QUESTION_CHARS`] characters.
    pub question: String,
    /// The choices to offer, possibly none; each non-blank.
    pub options: Vec<String>,
    /// A Step Functions task token (`.waitForTaskToken`) to complete with the
    /// answer.
    pub task_token: Option<String>,
}

/// The question a clarify answer still waits on (code mode): its id while
/// pending. One rule for this tool and for it served by another function.
pub fn pending_id(answer: &Value) -> Option<String> {
    (answer["status"] == "pending")
        .then(|| answer["id"].as_str().map(str::to_owned))
        .flatten()
}

/// Checks the arguments (the messages are docs/contracts.md#clarify's).
pub fn parse_input(args: &Value) -> Result<Input, ToolError> {
    let obj = args
        .as_object()
        .ok_or_else(|| ToolError::invalid_input(NOT_AN_OBJECT))?;
    crate::tool::only_keys(obj, &["question", "options"], &["task_token"])?;
    let question = match obj.get("question") {
        Some(Value::String(q)) if !q.trim().is_empty() => q.clone(),
        _ => {
            return Err(ToolError::invalid_input(
                "\"question\" is required and must be a non-empty string",
            ));
        }
    };
    if question.chars().count() > MAX_QUESTION_CHARS {
        return Err(ToolError::invalid_input(format!(
            "\"question\" is longer than {MAX_QUESTION_CHARS} characters"
        )));
    }
    let options = match obj.get("options") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            if items.len() > MAX_OPTIONS {
                return Err(ToolError::invalid_input(format!(
                    "\"options\" may hold at most {MAX_OPTIONS} choices"
                )));
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s)
                        if !s.trim().is_empty() && s.chars().count() <= MAX_OPTION_CHARS =>
                    {
                        out.push(s.clone())
                    }
                    _ => {
                        return Err(ToolError::invalid_input(format!(
                            "options[{i}] must be a non-empty string of at most {MAX_OPTION_CHARS} characters"
                        )));
                    }
                }
            }
            out
        }
        Some(_) => {
            return Err(ToolError::invalid_input(
                "\"options\" must be a list of strings",
            ));
        }
    };
    let task_token = match obj.get("task_token") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) if !t.is_empty() && t.len() <= 8_192 => Some(t.clone()),
        Some(_) => {
            return Err(ToolError::invalid_input(
                "\"task_token\" must be a Step Functions task token (a string)",
            ));
        }
    };
    Ok(Input {
        question,
        options,
        task_token,
    })
}

impl ClarifyTool {
    /// The tool over `clarify`, its spec stating that service's expiry.
    pub fn new(clarify: Arc<Clarify>) -> Self {
        Self {
            spec: spec(clarify.expiry.as_secs()),
            clarify,
        }
    }
}

impl Tool for ClarifyTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// A script's question waits for its answer (code mode).
    fn waits_on(&self, answer: &Value) -> Option<String> {
        pending_id(answer)
    }

    /// The question's state as `GET /clarifications/{id}` shows it, once
    /// answered, cancelled or expired.
    fn settled<'a>(&'a self, id: &'a str) -> SettledFuture<'a> {
        Box::pin(async move {
            let now = now_ms();
            Ok(self
                .clarify
                .get(id)
                .await?
                .filter(|c| c.status_at(now) != crate::clarify::Status::Pending)
                .map(|c| c.view(now, &self.clarify.base_url())))
        })
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a CallContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let input = parse_input(&args)?;
            if input.task_token.is_some() && ctx.transport != Some(Transport::Lambda) {
                return Err(ToolError::invalid_input(TASK_TOKEN_DIRECT_ONLY));
            }
            // In the caller's own MCP client, where it can ask its person.
            let elicit = ctx
                .elicit
                .as_ref()
                .filter(|_| by_elicitation::applies(&self.clarify, ctx));
            // Read only for such a client: a stored key is a store read.
            let key = match elicit {
                Some(_) => self.clarify.state_key().await,
                None => None,
            };
            let key = key.as_ref();
            if let (Some(elicit), Some(key), Some(state)) =
                (elicit, key, elicit.and_then(|e| e.state.as_deref()))
            {
                return by_elicitation::resume(&self.clarify, key, elicit, state, ctx, &args).await;
            }
            // A retry this instance cannot open: asking again would lose
            // the person's answer and ask them twice.
            if key.is_none() && ctx.elicit.as_ref().is_some_and(|e| e.state.is_some()) {
                return Err(ToolError::new(
                    crate::error::ErrorCode::Unavailable,
                    by_elicitation::STATE_UNREADABLE,
                ));
            }
            let caller = ctx.caller.as_deref().unwrap_or("");
            let c = self
                .clarify
                .ask_as(caller, input.question, input.options, input.task_token)
                .await?;
            tracing::info!(id = %crate::logging::id_ref(&c.id), waits_for_task = c.task_token.is_some(), "clarification asked");
            if let (Some(elicit), Some(key)) = (elicit, key) {
                return Ok(by_elicitation::ask(
                    &self.clarify,
                    key,
                    elicit,
                    ctx,
                    &args,
                    &c,
                ));
            }
            Ok(c.view(now_ms(), &self.clarify.base_url()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_rules() {
        let ok =
            parse_input(&json!({"question": "Which region?", "options": ["eu", "us"]})).unwrap();
        assert_eq!(ok.options, ["eu", "us"]);
        assert_eq!(
            parse_input(&json!({"question": "Why?"}))
                .unwrap()
                .options
                .len(),
            0
        );
        let many: Vec<String> = (0..21).map(|i| i.to_string()).collect();
        for (bad, says) in [
            (json!("q"), "JSON object"),
            (json!({}), "\"question\" is required"),
            (json!({"question": "  "}), "\"question\" is required"),
            (json!({"question": "x".repeat(2001)}), "longer than 2000"),
            (
                json!({"question": "q", "options": "a,b"}),
                "list of strings",
            ),
            (json!({"question": "q", "options": many}), "at most 20"),
            (json!({"question": "q", "options": ["a", ""]}), "options[1]"),
            (
                json!({"question": "q", "options": ["x".repeat(201)]}),
                "options[0]",
            ),
            (json!({"question": "q", "options": [1]}), "options[0]"),
            (json!({"question": "q", "task_token": 5}), "task_token"),
        ] {
            let e = parse_input(&bad).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {}", e.message);
        }
    }
}
