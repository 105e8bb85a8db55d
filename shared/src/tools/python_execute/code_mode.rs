//! Code mode's host: a script's `tools.<name>(**arguments)` reaches here
//! (through the sandbox's socket) and goes through the one invocation path,
//! `invoke`, with the script's caller, scopes and trace, as transport
//! `code`: the same scopes, approval gates and audit as a direct call. A
//! script can do nothing its caller could not do with direct calls.
//!
//! The script is untrusted: its request is checked here, its calls are
//! counted here (not in the child), and it never reaches python.execute.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::clock::Instant;
use crate::error::{ErrorCode, ToolError};
use crate::invoke::invoke;
use crate::registry::{Registry, exported_name};
use crate::tool::{CallContext, Transport};
use toolgate_core::code::{MAX_ANSWER, ToolAnswer, ToolHost};

/// The longest request a script sends: a tool's largest body, and room
/// for the envelope.
const MAX_REQUEST: usize = crate::tool::MAX_BODY_BYTES + (64 << 10);

/// One script's tools.
pub struct CodeHost<'a> {
    registry: &'a Registry,
    ctx: CallContext,
    /// python.execute's own name: never callable from a script.
    own: &'a str,
    calls: AtomicU32,
    max_calls: u32,
}

impl<'a> CodeHost<'a> {
    /// The tools of `registry` for a script run under `ctx` by the tool
    /// named `own`, at most `max_calls` requests.
    pub fn new(registry: &'a Registry, ctx: &CallContext, own: &'a str, max_calls: u32) -> Self {
        let ctx = CallContext {
            // A person answers in the client of a direct call only.
            elicit: None,
            // The answer goes to the script, not to a transport.
            response_limit: None,
            parent: Some(format!(
                "{own}#{}",
                crate::logging::id_ref(&crate::clarify::new_id().unwrap_or_default())
            )),
            ..ctx.clone()
        };
        Self {
            registry,
            ctx,
            own,
            calls: AtomicU32::new(0),
            max_calls,
        }
    }

    /// Whether `name` is python.execute itself (canonical or exported).
    fn is_own(&self, name: &str) -> bool {
        self.registry
            .get(name)
            .is_ok_and(|t| t.spec().name == self.own)
    }

    async fn call(&self, name: &str, args: Value, ctx: &CallContext) -> Result<Value, ToolError> {
        let refused = self.is_own(name).then(|| {
            ToolError::new(
                ErrorCode::Forbidden,
                format!("{} cannot be called from a script", self.own),
            )
        });
        if let Some(e) = refused {
            // Audited as any call: one line, under the name it resolves to.
            let outcome = Err(e);
            let known = self.registry.get(name).ok();
            let tool = match &known {
                Some(t) => t.spec().name.clone(),
                None => crate::logging::redact_ids(&name.chars().take(80).collect::<String>()),
            };
            let ctx = &self.ctx;
            crate::invoke::log(
                &tool,
                known.is_some(),
                Transport::Code,
                ctx,
                Instant::now(),
                &outcome,
            );
            return outcome;
        }
        let args = move |limit: usize| {
            let fits = crate::response_limit::json_len(&args) <= limit;
            std::future::ready(if fits {
                Ok(args)
            } else {
                Err(ToolError::new(
                    ErrorCode::TooLarge,
                    format!("The arguments are over the {limit} bytes this tool takes"),
                ))
            })
        };
        invoke(self.registry, Transport::Code, name, args, ctx).await
    }

    /// The tools a script may call, with their Python signatures.
    fn list(&self) -> Value {
        let tools: Vec<Value> = self
            .registry
            .tools()
            .iter()
            .filter(|t| t.spec().name != self.own)
            .map(|t| {
                let spec = t.spec();
                let name = exported_name(&spec.name);
                json!({
                    "name": name,
                    "signature": signature(&name, &spec.input_schema),
                    "description": spec.description,
                })
            })
            .collect();
        Value::Array(tools)
    }

    async fn answer(&self, request: &[u8], left: Duration) -> Result<Value, ToolError> {
        // Every request counts, answered or refused: a script cannot make
        // the server work (or log) without bound.
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        if n >= self.max_calls {
            let e = ToolError::new(
                ErrorCode::QuotaExceeded,
                format!(
                    "A script may make at most {} tool requests (code_mode.max_calls)",
                    self.max_calls
                ),
            );
            if n == self.max_calls {
                let outcome = Err(e.clone());
                crate::invoke::log(
                    "(code mode)",
                    false,
                    Transport::Code,
                    &self.ctx,
                    Instant::now(),
                    &outcome,
                );
            }
            return Err(e);
        }
        // Refused unread past any tool's body (python.execute's, the
        // largest, is never called from here).
        if request.len() > MAX_REQUEST {
            return Err(ToolError::new(
                ErrorCode::TooLarge,
                format!("A tool request is at most {MAX_REQUEST} bytes"),
            ));
        }
        let bad = |why: &str| ToolError::invalid_input(format!("a bad tool request: {why}"));
        let Ok(Value::Object(mut req)) = serde_json::from_slice::<Value>(request) else {
            return Err(bad("not a JSON object"));
        };
        if req.get("list").is_some() {
            return Ok(self.list());
        }
        let Some(Value::String(name)) = req.remove("call") else {
            return Err(bad("no tool named"));
        };
        let args = match req.remove("arguments") {
            Some(Value::Object(a)) => Value::Object(a),
            None => Value::Object(Map::new()),
            Some(_) => return Err(bad("the arguments are not keywords")),
        };
        // The tool ends by the script's deadline (an `ssh_run` command's
        // remote timeout fits it, so it does not outlive the script).
        let ctx = CallContext {
            deadline: Some(Instant::now() + left),
            ..self.ctx.clone()
        };
        let mut out = self.call(&name, args, &ctx).await?;
        // As a transport does: a result past what a script takes leaves
        // its files out, else is refused.
        crate::response_limit::fit_answer(
            &mut out,
            MAX_ANSWER - 1024,
            &crate::response_limit::json_len,
        )?;
        Ok(out)
    }
}

impl ToolHost for CodeHost<'_> {
    fn serve<'b>(&'b self, request: &'b [u8], left: Duration) -> ToolAnswer<'b> {
        Box::pin(async move {
            let reply = match self.answer(request, left).await {
                Ok(v) => json!({ "ok": v }),
                Err(e) => json!({ "error": e.body()["error"] }),
            };
            serde_json::to_vec(&reply).unwrap_or_default()
        })
    }
}

/// A Python signature for a tool taking `schema`'s object:
/// `ssh_run(server_name: str, command: str, timeout: int = None) -> dict`.
pub fn signature(name: &str, schema: &Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params: Vec<(bool, String)> = Vec::new();
    if let Some(props) = schema["properties"].as_object() {
        for (p, s) in props {
            let ty = py_type(s);
            let needed = required.contains(&p.as_str());
            params.push((
                needed,
                if needed {
                    format!("{p}: {ty}")
                } else {
                    format!("{p}: {ty} = None")
                },
            ));
        }
    }
    // Keyword-only, required first: Python refuses a default before one
    // without.
    params.sort_by_key(|(needed, _)| !needed);
    let params: Vec<String> = params.into_iter().map(|(_, p)| p).collect();
    if params.is_empty() {
        format!("{name}() -> dict")
    } else {
        format!("{name}(*, {}) -> dict", params.join(", "))
    }
}

fn py_type(schema: &Value) -> String {
    if let Some(e) = schema["enum"].as_array() {
        let values: Vec<String> = e.iter().map(|v| v.to_string()).collect();
        return format!("Literal[{}]", values.join(", "));
    }
    let one = |t: &str| match t {
        "string" => "str".to_owned(),
        "integer" => "int".to_owned(),
        "number" => "float".to_owned(),
        "boolean" => "bool".to_owned(),
        "array" => format!("list[{}]", py_type(&schema["items"])),
        "object" => "dict".to_owned(),
        "null" => "None".to_owned(),
        _ => "Any".to_owned(),
    };
    match &schema["type"] {
        Value::String(t) => one(t),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(one)
            .collect::<Vec<_>>()
            .join(" | "),
        _ => "Any".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_read_as_python() {
        let schema = json!({
            "type": "object",
            "properties": {
                "timeout": {"type": "integer"},
                "server_name": {"type": "string"},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "limit": {"type": ["integer", "null"]},
            },
            "required": ["server_name"],
        });
        assert_eq!(
            signature("ssh_run", &schema),
            "ssh_run(*, server_name: str, limit: int | None = None, mode: Literal[\"a\", \"b\"] = None, \
             tags: list[str] = None, timeout: int = None) -> dict"
        );
        assert_eq!(
            signature("list_servers", &json!({"type": "object"})),
            "list_servers() -> dict"
        );
    }
}
