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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
}

impl Transport {
    /// The transport as the log line names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Mcp => "mcp",
            Self::Lambda => "lambda",
            Self::Cli => "cli",
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
    /// The largest request body a call may send: the contract's 1 MiB,
    /// unless the tool takes more (python.execute's `files`).
    fn max_body_bytes(&self) -> usize {
        MAX_BODY_BYTES
    }
}

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
