//! The `Tool` abstraction: a name, a description, JSON Schemas for input and
//! output, and a call that returns a result or a typed [`ToolError`].

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::clock::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;

/// Every tool's answer to input that is not a JSON object (docs/contracts.md#tool-specs-and-input).
pub const NOT_AN_OBJECT: &str = "Tool input must be a JSON object (dict)";

/// Time kept back from a runtime deadline (Lambda) to report the timeout.
pub const DEADLINE_MARGIN: Duration = Duration::from_millis(500);

/// The timeout for one call: the configured one, lowered to fit a runtime
/// deadline. Returns the timeout and whether it was lowered.
pub fn effective_timeout(
    configured: Duration,
    deadline: Option<Instant>,
    now: Instant,
) -> (Duration, bool) {
    match deadline {
        Some(d) => {
            let room = d
                .saturating_duration_since(now)
                .saturating_sub(DEADLINE_MARGIN);
            // Whole seconds, at least one: the contract reports "{N}s".
            let room = Duration::from_secs(room.as_secs().max(1));
            if room < configured {
                (room, true)
            } else {
                (configured, false)
            }
        }
        None => (configured, false),
    }
}

/// What a call returns: the tool's JSON result, or a [`ToolError`].
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'a>>;

/// What a tool advertises (docs/contracts.md#tool-specs-and-input: name, description, input and output schema).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ToolSpec {
    /// The canonical name (`python.execute`); function-calling formats get
    /// `registry::exported_name`'s.
    pub name: String,
    /// What the tool does, for an agent to read.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the result.
    pub output_schema: Value,
    /// What calls do to the world, as MCP's hints say it.
    #[serde(default, skip_serializing_if = "Hints::is_empty")]
    pub hints: Hints,
    /// Whether a result is itself an MCP `CallToolResult` (a cloud
    /// account's): `/mcp` then answers with it as it is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mcp_result: bool,
}

impl ToolSpec {
    /// The output schema MCP lists: a passed-through result's (a cloud
    /// tool's) is its account's own, when it has one.
    pub fn mcp_output_schema(&self) -> Option<&Value> {
        if !self.mcp_result {
            return Some(&self.output_schema);
        }
        let own = &self.output_schema["properties"]["structuredContent"];
        own.as_object()
            .filter(|o| o.get("type").and_then(Value::as_str) == Some("object") && o.len() > 1)
            .map(|_| own)
    }
}

/// MCP's tool annotations (`readOnlyHint`, …): what a client may assume
/// about a call before it makes it. `None` leaves MCP's default.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Hints {
    /// Changes nothing in its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// May destroy or overwrite (meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// The same call again has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// Reaches things outside Toolgate (servers, people, cloud accounts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl Hints {
    /// A tool that only reads.
    pub fn read_only(open_world: bool) -> Self {
        Self {
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(open_world),
        }
    }

    /// A tool that writes: whether it may destroy, whether a repeat is
    /// harmless, whether it reaches outside.
    pub fn writes(destructive: bool, idempotent: bool, open_world: bool) -> Self {
        Self {
            read_only_hint: Some(false),
            destructive_hint: Some(destructive),
            idempotent_hint: Some(idempotent),
            open_world_hint: Some(open_world),
        }
    }

    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Refuses keys a tool does not take, naming the key, the closest known
/// one, and every key the tool takes: a misspelt argument must not be
/// ignored (docs/contracts.md#tool-specs-and-input). `unlisted` are taken
/// too but not offered (keys not meant for agents).
pub fn only_keys(
    obj: &serde_json::Map<String, Value>,
    known: &[&str],
    unlisted: &[&str],
) -> Result<(), ToolError> {
    let Some(unknown) = obj
        .keys()
        .find(|k| !known.contains(&k.as_str()) && !unlisted.contains(&k.as_str()))
    else {
        return Ok(());
    };
    let shown: String = unknown.chars().take(40).collect();
    let hint = closest(unknown, known)
        .map(|k| format!(" (did you mean \"{k}\"?)"))
        .unwrap_or_default();
    let takes = if known.is_empty() {
        "This tool takes no input".to_owned()
    } else {
        format!("This tool takes: {}", known.join(", "))
    };
    Err(ToolError::invalid_input(format!(
        "Unknown input key {shown:?}{hint}. {takes}"
    )))
}

/// The known key within edit distance 2 of `key` (case aside), if any.
fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    if key.len() > 64 {
        return None;
    }
    let key = key.to_ascii_lowercase();
    known
        .iter()
        .map(|k| (edit_distance(&key, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// Per-call facts from the runtime, not from the caller's arguments.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// A hard deadline imposed by the runtime (Lambda's remaining time).
    pub deadline: Option<Instant>,
    /// Who is calling, when the runtime knows (authorizer claims).
    pub caller: Option<String>,
    /// The servers this caller may use, when something narrows them
    /// (`scope` module); `None` means all that configuration allows.
    pub servers: Option<Vec<String>>,
    /// What carried the call, set by `invoke::invoke`; `None` for a call
    /// that did not come through it (a tool may then refuse what only one
    /// transport may ask for, as clarify's `task_token`).
    pub transport: Option<Transport>,
    /// The most bytes the answer may take as the runtime sends it (Lambda:
    /// [`crate::response_limit::LAMBDA_RESPONSE_BYTES`]); the transports
    /// fit it in ([`crate::response_limit::fit`]).
    pub response_limit: Option<usize>,
    /// What the caller's MCP client can ask its person, and its answers
    /// on a retry (MCP 2026-07-28); `None` elsewhere.
    pub elicit: Option<crate::elicit::Elicit>,
    /// The caller's W3C trace context from MCP's `_meta.traceparent`
    /// (canonical form): the call's span continues that trace, and its log
    /// line names it.
    pub traceparent: Option<String>,
    /// Set when the call runs as a task its caller may cancel: a tool that
    /// holds work outside this process (a remote command) stops it once
    /// cancelled; the rest stops when the call is dropped.
    pub cancel: Option<crate::tasks::cancel::Cancel>,
    /// The call this one was made from (code mode: `python.execute#<ref>`),
    /// which its log line names.
    pub parent: Option<String>,
}

/// What carried a call, for its log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// `POST /tools/{name}` (serve, API Gateway, Function URLs, the Worker).
    Http,
    /// `tools/call` on `/mcp`.
    Mcp,
    /// A Lambda function invoked directly (Step Functions, the SDK, a gateway).
    Lambda,
    /// `toolgate call`.
    Cli,
    /// A python.execute script's `tools.<name>(…)` (code mode).
    Code,
}

impl Transport {
    /// The transport as the log line names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Mcp => "mcp",
            Self::Lambda => "lambda",
            Self::Cli => "cli",
            Self::Code => "code",
        }
    }
}

/// A tool any runtime can serve.
pub trait Tool: Send + Sync {
    /// What the tool advertises.
    fn spec(&self) -> &ToolSpec;
    /// Runs the tool on the caller's arguments, unchecked (each tool checks its
    /// own), with the runtime's facts in `ctx`.
    fn call<'a>(&'a self, args: Value, ctx: &'a CallContext) -> ToolFuture<'a>;
    /// [`Self::call`], from `registry`, the registry serving this call: a
    /// tool that calls others (python.execute's code mode) reaches them
    /// here, never by holding the registry that holds it. (`Any`, which
    /// `invoke` fills with a `Registry`: this module cannot name the one
    /// that names it.)
    fn call_in<'a>(
        &'a self,
        args: Value,
        ctx: &'a CallContext,
        registry: &'a (dyn std::any::Any + Send + Sync),
    ) -> ToolFuture<'a> {
        let _ = registry;
        self.call(args, ctx)
    }
    /// The largest request body a call may send: the contract's 1 MiB,
    /// unless the tool takes more (python.execute's `files`).
    fn max_body_bytes(&self) -> usize {
        MAX_BODY_BYTES
    }
    /// The function that runs it, when another one does (AWS Lambda: the
    /// gateway's tools are its peers').
    fn runs_in(&self) -> Option<&str> {
        None
    }
    /// Code mode: the id of what `answer` (this tool's result) left for a
    /// person to settle (clarify's pending question), where a script waits
    /// for it rather than taking the answer as it is.
    fn waits_on(&self, answer: &Value) -> Option<String> {
        let _ = answer;
        None
    }
    /// Code mode: what a call's answer is once the person settled `id`
    /// ([`Self::waits_on`]); `Ok(None)` while it still waits.
    fn settled<'a>(&'a self, id: &'a str) -> SettledFuture<'a> {
        let _ = id;
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// What [`Tool::settled`] returns.
pub type SettledFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Option<Value>, ToolError>> + Send + 'a>>;

/// Request bodies over this size get 413 `too_large`, unless the tool
/// takes more ([`Tool::max_body_bytes`]).
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// A tool that echoes its arguments, for unit tests of the machinery around tools.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    pub struct Echo(pub ToolSpec);

    impl Tool for Echo {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn call<'a>(&'a self, args: Value, _: &'a CallContext) -> ToolFuture<'a> {
            Box::pin(async move { Ok(args) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refusal(v: Value, known: &[&str]) -> String {
        only_keys(v.as_object().unwrap(), known, &["task_token"])
            .unwrap_err()
            .message
    }

    #[test]
    fn unknown_keys_are_named_with_the_closest_and_every_known_one() {
        let known = ["code", "files", "session"];
        for ok in [json!({"code": "1"}), json!({}), json!({"task_token": "t"})] {
            assert!(only_keys(ok.as_object().unwrap(), &known, &["task_token"]).is_ok());
        }
        assert_eq!(
            refusal(json!({"code": "1", "sesion": "new"}), &known),
            "Unknown input key \"sesion\" (did you mean \"session\"?). This tool takes: code, files, session"
        );
        assert_eq!(
            refusal(json!({"timeout": 1}), &known),
            "Unknown input key \"timeout\". This tool takes: code, files, session"
        );
        assert_eq!(
            refusal(json!({"Code": 1}), &known),
            "Unknown input key \"Code\" (did you mean \"code\"?). This tool takes: code, files, session"
        );
        assert_eq!(
            refusal(json!({"x": 1}), &[]),
            "Unknown input key \"x\". This tool takes no input"
        );
        // A hostile key is cut, and quoted with its escapes.
        let long = "\u{202e}".repeat(500);
        let m = refusal(json!({ long: 1 }), &known);
        assert!(m.len() < 500 && !m.contains('\u{202e}'), "{m}");
        assert!(m.contains("\\u{202e}"), "{m}");
    }
}
