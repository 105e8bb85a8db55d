//! The `Tool` abstraction: a name, a description, JSON Schemas for input and
//! output, and a call that returns a result or a typed [`ToolError`].

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;

pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'a>>;

/// What a tool advertises (DESIGN §3: name, description, input and output schema).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
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
}

pub trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    fn call<'a>(&'a self, args: Value, ctx: &'a CallContext) -> ToolFuture<'a>;
}

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
