//! `ssh_run` (docs/contracts.md#list_servers-and-ssh_run): runs one shell command on one registered server.
//! Input `{server_name, command, intent = "", timeout = 600}`; output
//! `{stdout, stderr, exit_code, timed_out, truncated, duration_ms}`. Every
//! call, refused or run, writes one audit line (target `toolgate::audit`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::error::ToolError;
use crate::ssh::{Request, Ssh};
use crate::tool::{CallContext, NOT_AN_OBJECT, Tool, ToolFuture, ToolSpec, effective_timeout};

/// The tool's name.
pub const NAME: &str = "ssh_run";
/// The timeout of a call that names none, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;
const MAX_COMMAND_CHARS: usize = 65_536;
const MAX_INTENT_CHARS: usize = 2_000;
/// Inventory names are short (`list_servers`); a longer one names nothing.
const MAX_SERVER_NAME_CHARS: usize = 64;

/// The `ssh_run` tool, over the shared [`Ssh`] service.
pub struct SshRun {
    spec: ToolSpec,
    ssh: Arc<Ssh>,
}

/// The tool's spec; its description states `max_timeout`.
pub fn spec(max_timeout: Duration) -> ToolSpec {
    ToolSpec {
        name: NAME.into(),
        description: format!(
            "Run a shell command on one registered server over SSH (see list_servers) and \
             return stdout, stderr and exit_code. State the intent: it is written to the \
             audit log. The command runs under the server's login shell and is killed at \
             the timeout (default {DEFAULT_TIMEOUT_SECS}s, at most {}s). Output beyond \
             {} characters per stream keeps its head and tail.",
            max_timeout.as_secs(),
            crate::truncate::LIMIT
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "server_name": {"type": "string", "minLength": 1, "maxLength": MAX_SERVER_NAME_CHARS, "description": "A name from list_servers"},
                "command": {"type": "string", "minLength": 1, "maxLength": MAX_COMMAND_CHARS},
                "intent": {"type": "string", "maxLength": MAX_INTENT_CHARS, "default": "", "description": "Why you run this command"},
                "timeout": {"type": "integer", "minimum": 1, "default": DEFAULT_TIMEOUT_SECS, "description": "Seconds before the command is killed"}
            },
            "required": ["server_name", "command"]
        }),
        output_schema: json!({
            "type": "object",
            "properties": {
                "stdout": {"type": "string"},
                "stderr": {"type": "string"},
                "exit_code": {"type": "integer", "description": "The command's exit status; 128+N when killed by signal N; -1 on timeout"},
                "timed_out": {"type": "boolean"},
                "truncated": {"type": "boolean"},
                "duration_ms": {"type": "integer"}
            },
            "required": ["stdout", "stderr", "exit_code", "timed_out", "truncated", "duration_ms"]
        }),
    }
}

/// The arguments, checked.
#[derive(Debug, PartialEq)]
pub struct Input {
    /// An inventory name, as `list_servers` shows it.
    pub server_name: String,
    /// The shell command, non-blank.
    pub command: String,
    /// Why the agent runs the command, for the audit line; empty when not
    /// given.
    pub intent: String,
    /// Seconds asked for, at least 1; the run caps it at the configured
    /// maximum.
    pub timeout: u64,
}

fn string_field(
    obj: &Map<String, Value>,
    key: &str,
    required: bool,
    max: usize,
) -> Result<String, ToolError> {
    match obj.get(key) {
        None | Some(Value::Null) if !required => Ok(String::new()),
        Some(Value::String(s)) if required && s.trim().is_empty() => Err(ToolError::invalid_input(
            format!("\"{key}\" must be a non-empty string"),
        )),
        Some(Value::String(s)) if s.chars().count() > max => Err(ToolError::invalid_input(
            format!("\"{key}\" is longer than {max} characters"),
        )),
        Some(Value::String(s)) => Ok(s.clone()),
        None if required => Err(ToolError::invalid_input(format!(
            "\"{key}\" is required and must be a non-empty string"
        ))),
        _ => Err(ToolError::invalid_input(format!(
            "\"{key}\" must be a string"
        ))),
    }
}

/// Checks the arguments (the messages are docs/contracts.md's).
pub fn parse_input(args: &Value) -> Result<Input, ToolError> {
    let obj = args
        .as_object()
        .ok_or_else(|| ToolError::invalid_input(NOT_AN_OBJECT))?;
    let timeout = match obj.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT_SECS,
        Some(v) => match v.as_u64() {
            Some(t) if t >= 1 => t,
            _ => {
                return Err(ToolError::invalid_input(
                    "\"timeout\" must be a whole number of seconds, at least 1",
                ));
            }
        },
    };
    Ok(Input {
        server_name: string_field(obj, "server_name", true, MAX_SERVER_NAME_CHARS)?,
        command: string_field(obj, "command", true, MAX_COMMAND_CHARS)?,
        intent: string_field(obj, "intent", false, MAX_INTENT_CHARS)?,
        timeout,
    })
}

impl SshRun {
    /// The tool over `ssh`, its spec stating the largest timeout.
    pub fn new(ssh: Arc<Ssh>) -> Self {
        Self {
            spec: spec(ssh.settings.max_timeout),
            ssh,
        }
    }

    async fn run(&self, input: &Input, ctx: &CallContext) -> Result<(Value, u64, bool), ToolError> {
        let scope = ctx.servers.as_deref();
        let server = self.ssh.resolve(&input.server_name, scope).await?;
        if let Err(why) = server.policy.check(&input.command) {
            return Err(ToolError::new(
                crate::error::ErrorCode::Forbidden,
                format!(
                    "Command refused by the policy of server {:?}: {why}",
                    server.name
                ),
            ));
        }
        let asked = Duration::from_secs(input.timeout);
        let capped = asked.min(self.ssh.settings.max_timeout);
        let (timeout, lowered) = effective_timeout(capped, ctx.deadline, Instant::now());
        let started = Instant::now();
        let (out, reused) = self
            .ssh
            .run(Request {
                server: &server,
                command: &input.command,
                timeout,
            })
            .await?;
        let mut stderr = out.stderr;
        if timeout < asked {
            let why = if lowered {
                "to fit the runtime's remaining time"
            } else {
                "by configuration"
            };
            stderr = crate::truncate::truncate(&format!(
                "{stderr}{}[timeout lowered to {}s {why}]\n",
                if stderr.is_empty() || stderr.ends_with('\n') {
                    ""
                } else {
                    "\n"
                },
                timeout.as_secs()
            ));
        }
        Ok((
            json!({
                "stdout": out.stdout,
                "stderr": stderr,
                "exit_code": out.exit_code,
                "timed_out": out.timed_out,
                "truncated": out.truncated,
                "duration_ms": started.elapsed().as_millis() as u64,
            }),
            out.bytes_out,
            reused,
        ))
    }
}

impl Tool for SshRun {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a CallContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let started = Instant::now();
            let input = parse_input(&args)?;
            let outcome = self.run(&input, ctx).await;
            audit(&input, ctx, started, &outcome);
            outcome.map(|(v, _, _)| v)
        })
    }
}

/// The audit line. The command and intent are the caller's words; keys and
/// passwords never pass through here.
fn audit(
    input: &Input,
    ctx: &CallContext,
    started: Instant,
    outcome: &Result<(Value, u64, bool), ToolError>,
) {
    let duration_ms = started.elapsed().as_millis() as u64;
    let caller = ctx.caller.as_deref().unwrap_or("-");
    match outcome {
        Ok((v, bytes_out, reused)) => tracing::info!(
            target: "toolgate::audit",
            event = "ssh_run",
            server = %input.server_name,
            command = %input.command,
            intent = %input.intent,
            caller,
            outcome = "ran",
            exit_code = v["exit_code"].as_i64(),
            timed_out = v["timed_out"].as_bool(),
            bytes_out,
            connection = if *reused { "reused" } else { "new" },
            duration_ms,
            "audit"
        ),
        Err(e) => tracing::warn!(
            target: "toolgate::audit",
            event = "ssh_run",
            server = %input.server_name,
            command = %input.command,
            intent = %input.intent,
            caller,
            outcome = e.code.as_str(),
            reason = %e.message,
            duration_ms,
            "audit"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_rules() {
        let ok = parse_input(&json!({"server_name": "web", "command": "uptime"})).unwrap();
        assert_eq!(
            ok,
            Input {
                server_name: "web".into(),
                command: "uptime".into(),
                intent: String::new(),
                timeout: 600
            }
        );
        for (bad, says) in [
            (json!([]), "JSON object"),
            (json!({"command": "ls"}), "\"server_name\" is required"),
            (json!({"server_name": "", "command": "ls"}), "non-empty"),
            (
                json!({"server_name": "a", "command": "  "}),
                "\"command\" must be a non-empty",
            ),
            (
                json!({"server_name": "a", "command": 5}),
                "\"command\" must be a string",
            ),
            (
                json!({"server_name": "a", "command": "ls", "intent": 1}),
                "\"intent\" must be a string",
            ),
            (
                json!({"server_name": "a", "command": "ls", "timeout": 0}),
                "\"timeout\"",
            ),
            (
                json!({"server_name": "a", "command": "ls", "timeout": -3}),
                "\"timeout\"",
            ),
            (
                json!({"server_name": "a", "command": "ls", "timeout": 1.5}),
                "\"timeout\"",
            ),
            (
                json!({"server_name": "a", "command": "ls", "timeout": "9"}),
                "\"timeout\"",
            ),
            (
                json!({"server_name": "a", "command": "x".repeat(70_000)}),
                "longer than",
            ),
        ] {
            let e = parse_input(&bad).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {}", e.message);
        }
    }
}
