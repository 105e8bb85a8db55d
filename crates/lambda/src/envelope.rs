//! What one Lambda function sends another, and what a direct invocation
//! carries: the envelope `{"tool", "arguments", "scope", "caller",
//! "deadline", "elicit", "traceparent", "task", "script"}`, the
//! control payloads, and a function error's `errorType` for each error
//! code. One home for both ends: `lambda` decodes, `peers` encodes.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use toolgate_shared::elicit::Elicit;
use toolgate_shared::error::{ErrorCode, ToolError};

/// `{"toolgate": "describe"}` asks a function for its own tools (`peers`).
pub const DESCRIBE: &str = "describe";
/// `{"toolgate": "sweep"}`: the clarify function's schedule (template.yaml,
/// `ClarifyFunction` `Events`) expires what is due.
pub const SWEEP: &str = "sweep";

const KEYS: [&str; 9] = [
    "tool",
    "arguments",
    "scope",
    "caller",
    "deadline",
    "elicit",
    "traceparent",
    "task",
    "script",
];

/// `{"toolgate": "settled", "tool": NAME, "id": ID}` asks a function what a
/// script's waited call answers once its person settled `id`
/// ([`toolgate_shared::tool::Tool::settled`]): `{"settled": answer|null}`.
pub const SETTLED: &str = "settled";

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
    /// When the caller stops waiting (API Gateway's limit, through the
    /// gateway function), in ms since the Unix epoch: functions share no
    /// clock but the wall's.
    pub deadline_ms: Option<u64>,
    /// What the caller's MCP client can ask its person, and what its retry
    /// brought back (the gateway's `/mcp`): `{"form", "url", "responses",
    /// "state"}`.
    pub elicit: Option<Elicit>,
    /// The caller's W3C trace context (an MCP client's `_meta.traceparent`,
    /// through the gateway): the call's span continues it.
    pub traceparent: Option<String>,
    /// The task this call runs as (an asynchronous invocation from a
    /// function that started it): its outcome goes to the task's row.
    pub task: Option<String>,
    /// The script whose call this is (code mode: `python.execute#<ref>`):
    /// the line names it, and the answer holds the outcome, an error with
    /// its details (an approval's id), never a function error
    /// ([`tagged`]).
    pub script: Option<String>,
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
        if let Some(ms) = self.deadline_ms {
            payload["deadline"] = json!(ms);
        }
        if let Some(e) = &self.elicit {
            payload["elicit"] = json!({"form": e.form, "url": e.url});
            if let Some(r) = &e.responses {
                payload["elicit"]["responses"] = Value::Object(r.clone());
            }
            if let Some(state) = &e.state {
                payload["elicit"]["state"] = json!(state);
            }
        }
        if let Some(t) = &self.traceparent {
            payload["traceparent"] = json!(t);
        }
        if let Some(t) = &self.task {
            payload["task"] = json!(t);
        }
        if let Some(p) = &self.script {
            payload["script"] = json!(p);
        }
        payload
    }

    /// The deadline as this process's `Instant` (a past one is now).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline_ms.map(instant_at)
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
                    deadline_ms: None,
                    elicit: None,
                    traceparent: None,
                    task: None,
                    script: None,
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
        let deadline_ms = match o.remove("deadline") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| {
                ToolError::invalid_input(
                    "\"deadline\" must be a time in milliseconds since the Unix epoch (an integer)",
                )
            })?),
        };
        let elicit = match o.remove("elicit") {
            None | Some(Value::Null) => None,
            Some(e) => Some(parse_elicit(e)?),
        };
        // A malformed one starts a new trace (W3C's rule), as a header's.
        let traceparent = match o.remove("traceparent") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => {
                toolgate_shared::http::traceparent::parse(&t).map(|p| p.header())
            }
            Some(_) => {
                return Err(ToolError::invalid_input(
                    "\"traceparent\" must be a W3C traceparent (string)",
                ));
            }
        };
        let task = match o.remove("task") {
            None | Some(Value::Null) => None,
            Some(Value::String(t))
                if t.len() == 40 && t.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
            {
                Some(t)
            }
            Some(_) => {
                return Err(ToolError::invalid_input(
                    "\"task\" must be a task id (40 lowercase hex characters)",
                ));
            }
        };
        let script = match o.remove("script") {
            None | Some(Value::Null) => None,
            Some(Value::String(p)) if is_script_ref(&p) => Some(p),
            Some(_) => {
                return Err(ToolError::invalid_input(
                    "\"script\" must name the script's call (<namespace>.execute#ref:<hex>)",
                ));
            }
        };
        Ok(Self {
            tool,
            arguments,
            servers,
            caller,
            deadline_ms,
            elicit,
            traceparent,
            task,
            script,
        })
    }
}

/// `{"form": bool, "url": bool, "responses": {...}, "state": "..."}`.
fn parse_elicit(e: Value) -> Result<Elicit, ToolError> {
    let bad = || {
        ToolError::invalid_input(
            "\"elicit\" must be {\"form\": bool, \"url\": bool, \"responses\": {...}, \"state\": string}",
        )
    };
    let Value::Object(mut o) = e else {
        return Err(bad());
    };
    let flag = |v: Option<Value>| match v {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(_) => Err(bad()),
    };
    let out = Elicit {
        form: flag(o.remove("form"))?,
        url: flag(o.remove("url"))?,
        responses: match o.remove("responses") {
            None | Some(Value::Null) => None,
            Some(Value::Object(r)) => Some(r),
            Some(_) => return Err(bad()),
        },
        state: match o.remove("state") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return Err(bad()),
        },
    };
    if o.is_empty() { Ok(out) } else { Err(bad()) }
}

/// `at` (ms since the Unix epoch) as an `Instant`: now plus what is left,
/// at most a day (no call runs longer).
pub fn instant_at(at: u64) -> Instant {
    const DAY: Duration = Duration::from_secs(86_400);
    let left = UNIX_EPOCH
        .checked_add(Duration::from_millis(at))
        .map_or(DAY, |t| {
            t.duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO)
        });
    Instant::now() + left.min(DAY)
}

/// `at` as ms since the Unix epoch ([`instant_at`]'s inverse).
pub fn epoch_ms(at: Instant) -> u64 {
    let wall = SystemTime::now() + at.saturating_duration_since(Instant::now());
    wall.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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

/// Whether `p` names a script's call as code mode does:
/// `<namespace>.execute#ref:` and a hex ref (`logging::id_ref`).
fn is_script_ref(p: &str) -> bool {
    let Some((tool, r)) = p.split_once(".execute#ref:") else {
        return false;
    };
    let namespace = (1..=40).contains(&tool.len())
        && tool
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    namespace && (1..=64).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A script's call's answer ([`Envelope::script`]): `{"ok": result}` or
/// the contract's `{"error": {...}}` with the error's details.
pub fn tagged(outcome: Result<Value, ToolError>) -> Value {
    match outcome {
        Ok(v) => json!({ "ok": v }),
        Err(e) => e.body(),
    }
}

/// [`tagged`]'s inverse; anything else is the function's fault.
pub fn untagged(mut answer: Value) -> Result<Value, ToolError> {
    if let Some(v) = answer.get_mut("ok") {
        return Ok(v.take());
    }
    let Some(Value::Object(mut e)) = answer.get_mut("error").map(Value::take) else {
        return Err(ToolError::internal(
            "a script's call was answered with neither \"ok\" nor \"error\"",
        ));
    };
    let code = e
        .remove("code")
        .and_then(|c| c.as_str().and_then(ErrorCode::parse))
        .unwrap_or(ErrorCode::Internal);
    let message = match e.remove("message") {
        Some(Value::String(m)) => m,
        _ => "the tool failed".to_owned(),
    };
    let mut err = ToolError::new(code, message);
    if !e.is_empty() {
        err.details = Some(e);
    }
    Err(err)
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
        ErrorCode::Unavailable => "Unavailable",
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
            deadline_ms: Some(1_800_000_000_000),
            elicit: None,
            traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01".into()),
            task: Some("0a".repeat(20)),
            script: Some("python.execute#ref:3f2a".into()),
        };
        assert_eq!(
            Envelope::decode(e.encode(), &["list_servers", "ssh_run"]).unwrap(),
            e
        );
        // A retry of a question asked in the caller's MCP client.
        let retry = Envelope {
            tool: "clarify".into(),
            elicit: Some(Elicit {
                form: true,
                url: false,
                responses: json!({"answer": {"action": "accept"}}).as_object().cloned(),
                state: Some("ts1.a.b".into()),
            }),
            ..e
        };
        assert_eq!(
            Envelope::decode(retry.encode(), &["clarify"]).unwrap(),
            retry
        );
    }

    #[test]
    fn a_task_is_an_id() {
        for bad in [
            json!("ab"),
            json!("AB".repeat(20)),
            json!(7),
            json!("../".repeat(14)),
        ] {
            let payload = json!({"tool": "clarify", "arguments": {}, "task": bad});
            let e = Envelope::decode(payload, &["clarify"]).unwrap_err();
            assert!(e.message.starts_with("\"task\" must be"), "{}", e.message);
        }
    }

    #[test]
    fn a_bad_elicit_is_refused() {
        for bad in [
            json!("form"),
            json!({"form": "yes"}),
            json!({"responses": []}),
            json!({"state": 7}),
            json!({"form": true, "person": "me"}),
        ] {
            let payload = json!({"tool": "clarify", "arguments": {}, "elicit": bad});
            let e = Envelope::decode(payload, &["clarify"]).unwrap_err();
            assert!(e.message.starts_with("\"elicit\" must be"), "{}", e.message);
        }
    }

    #[test]
    fn a_deadline_is_a_wall_clock_time() {
        let at = Instant::now() + Duration::from_secs(20);
        let back = instant_at(epoch_ms(at));
        let off = back.max(at) - back.min(at);
        assert!(off < Duration::from_millis(50), "{off:?}");
        // Past: now; past the calendar's end: a day; never a panic.
        assert!(instant_at(0) <= Instant::now());
        assert!(instant_at(u64::MAX) <= Instant::now() + Duration::from_secs(86_400));
        for bad in [json!(-1), json!(1.5), json!("soon")] {
            let payload = json!({"tool": "ssh_run", "arguments": {}, "deadline": bad});
            let e = Envelope::decode(payload, &["ssh_run"]).unwrap_err();
            assert!(e.message.contains("\"deadline\" must be"), "{}", e.message);
        }
    }

    #[test]
    fn a_script_is_named_as_code_mode_names_it() {
        for bad in [
            json!("x"),
            json!("python.execute#ref:"),
            json!("python.execute#ref:zz"),
            json!("python.execute#3f2a"),
            json!("a.b.execute#ref:3f2a"),
            json!(7),
        ] {
            let payload = json!({"tool": "ssh_run", "arguments": {}, "script": bad});
            let e = Envelope::decode(payload, &["ssh_run"]).unwrap_err();
            assert!(e.message.starts_with("\"script\" must"), "{}", e.message);
        }
    }

    #[test]
    fn a_scripts_answer_keeps_the_errors_details() {
        let e = ToolError::new(ErrorCode::ApprovalRequired, "needs an approval")
            .with_detail("approval", json!({"id": "ab", "argument": "approval"}));
        let back = untagged(tagged(Err(e.clone()))).unwrap_err();
        assert_eq!(back.body(), e.body());
        assert_eq!(
            untagged(tagged(Ok(json!({"ok": 1})))).unwrap(),
            json!({"ok": 1})
        );
        assert_eq!(
            untagged(json!({"stdout": "x"})).unwrap_err().code,
            ErrorCode::Internal
        );
        assert_eq!(
            untagged(json!({"error": {"code": "nonsense", "message": "m"}}))
                .unwrap_err()
                .code,
            ErrorCode::Internal
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
