//! What one Lambda function sends another, and what a direct invocation
//! carries: the envelope `{"tool", "arguments", "scope", "caller"}`, the
//! control payloads, and a function error's `errorType` for each error
//! code. One home for both ends: `lambda` decodes, `peers` encodes.

use serde_json::{Value, json};

use crate::error::{ErrorCode, ToolError};

/// `{"toolgate": "describe"}` asks a function for its own tools (`peers`).
pub const DESCRIBE: &str = "describe";
/// `{"toolgate": "sweep"}`: the clarify function's schedule (template.yaml,
/// `ClarifyFunction` `Events`) expires what is due.
pub const SWEEP: &str = "sweep";

const KEYS: [&str; 4] = ["tool", "arguments", "scope", "caller"];

/// One call, as a direct invocation carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The tool's name, canonical or exported.
    pub tool: String,
    /// The tool's arguments, passed on as they are.
    pub arguments: Value,
    /// The servers the call may use, when something narrowed them.
    pub servers: Option<Vec<String>>,
    /// Who called, as the forwarding function saw it.
    pub caller: Option<String>,
}

impl Envelope {
    /// The payload to invoke a function with; `scope` and `caller` only when
    /// set.
    pub fn encode(&self) -> Value {
        let mut payload = json!({"tool": self.tool, "arguments": self.arguments});
        if let Some(servers) = &self.servers {
            payload["scope"] = json!({ "servers": servers });
        }
        if let Some(caller) = &self.caller {
            payload["caller"] = json!(caller);
        }
        payload
    }

    /// A payload as a call: the envelope, or, for a function with one tool
    /// (`tools` holds the names it serves), that tool's bare arguments.
    pub fn decode(payload: Value, tools: &[&str]) -> Result<Self, ToolError> {
        let is_envelope = payload.as_object().is_some_and(|o| {
            o.contains_key("tool") && o.keys().all(|k| KEYS.contains(&k.as_str()))
        });
        if !is_envelope {
            return match tools {
                [only] => Ok(Self {
                    tool: (*only).to_owned(),
                    arguments: payload,
                    servers: None,
                    caller: None,
                }),
                _ => Err(ToolError::invalid_input(format!(
                    "This function serves several tools ({}): send {{\"tool\": NAME, \"arguments\": {{...}}}}",
                    tools.join(", ")
                ))),
            };
        }
        let Value::Object(mut o) = payload else {
            unreachable!("checked above")
        };
        let tool = match o.remove("tool") {
            Some(Value::String(s)) => s,
            other => {
                return Err(ToolError::invalid_input(format!(
                    "\"tool\" must be a tool name (string), got {}",
                    other.unwrap_or(Value::Null)
                )));
            }
        };
        let arguments = o.remove("arguments").unwrap_or_else(|| json!({}));
        if !arguments.is_object() {
            return Err(ToolError::invalid_input(
                "\"arguments\" must be a JSON object",
            ));
        }
        let servers = match o.remove("scope") {
            None => None,
            Some(s) => Some(parse_scope(&s)?),
        };
        let caller = match o.remove("caller") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c),
            Some(_) => return Err(ToolError::invalid_input("\"caller\" must be a string")),
        };
        Ok(Self {
            tool,
            arguments,
            servers,
            caller,
        })
    }
}

/// `{"servers": ["a", "b"]}`: the servers this invocation may use.
fn parse_scope(scope: &Value) -> Result<Vec<String>, ToolError> {
    let bad = || ToolError::invalid_input("\"scope\" must be {\"servers\": [names]}");
    let obj = scope.as_object().ok_or_else(bad)?;
    if obj.keys().any(|k| k != "servers") {
        return Err(bad());
    }
    obj.get("servers")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(|v| v.as_str().map(str::to_owned).ok_or_else(bad))
        .collect()
}

/// A function error's `errorType` for `code`: the code in PascalCase.
pub fn error_type(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::InvalidInput => "InvalidInput",
        ErrorCode::Unauthorized => "Unauthorized",
        ErrorCode::Forbidden => "Forbidden",
        ErrorCode::UnknownTool => "UnknownTool",
        ErrorCode::TooLarge => "TooLarge",
        ErrorCode::Internal => "Internal",
        ErrorCode::UpstreamUnavailable => "UpstreamUnavailable",
        ErrorCode::NotFound => "NotFound",
        ErrorCode::Conflict => "Conflict",
        ErrorCode::Expired => "Expired",
        ErrorCode::NotConfigured => "NotConfigured",
        ErrorCode::ApprovalRequired => "ApprovalRequired",
        ErrorCode::QuotaExceeded => "QuotaExceeded",
    }
}

/// The code of a function error's `errorType` ([`error_type`]'s inverse);
/// anything else, such as Lambda's own `Runtime.*` errors, is `internal`.
pub fn code_of(error_type: &str) -> ErrorCode {
    ErrorCode::ALL
        .into_iter()
        .find(|c| self::error_type(*c) == error_type)
        .unwrap_or(ErrorCode::Internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_survives_encoding() {
        let e = Envelope {
            tool: "ssh_run".into(),
            arguments: json!({"command": "uptime"}),
            servers: Some(vec!["web-1".into()]),
            caller: Some("agent-7f3a".into()),
        };
        assert_eq!(
            Envelope::decode(e.encode(), &["list_servers", "ssh_run"]).unwrap(),
            e
        );
    }

    #[test]
    fn every_code_round_trips_through_its_error_type() {
        for c in ErrorCode::ALL {
            assert_eq!(code_of(error_type(c)), c);
        }
        assert_eq!(code_of("Runtime.ExitError"), ErrorCode::Internal);
    }
}
