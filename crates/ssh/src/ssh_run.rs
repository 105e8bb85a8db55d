//! `ssh_run` (docs/contracts.md#list_servers-and-ssh_run): runs one shell command on one registered server.
//! Input `{server_name, command, intent = "", timeout = 600, approval, wait = 0}`;
//! output `{stdout, stderr, exit_code, timed_out, truncated, duration_ms}`.
//! A command the policy marks as needing approval runs only with an
//! approval bound to it (`clarify::approval`). Every call, refused or run,
//! writes one audit line (target `toolgate::audit`), with the approval's
//! receipt when one was used.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::service::{Request, Ssh};
use audit::audit;
use toolgate_shared::approvals::{
    Approvals, Binding, Details, Gated, InClient, Receipt, sha256_hex,
};
use toolgate_shared::error::{ErrorCode, ToolError};
use toolgate_shared::tool::{
    CallContext, NOT_AN_OBJECT, Tool, ToolFuture, ToolSpec, effective_timeout,
};

mod audit;

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
    /// Where approvals are asked and kept; `None` where this deployment
    /// has none (a gated command is then refused).
    approvals: Option<Arc<Approvals>>,
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
            toolgate_shared::truncate::LIMIT
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "server_name": {"type": "string", "minLength": 1, "maxLength": MAX_SERVER_NAME_CHARS, "description": "A name from list_servers"},
                "command": {"type": "string", "minLength": 1, "maxLength": MAX_COMMAND_CHARS},
                "intent": {"type": "string", "maxLength": MAX_INTENT_CHARS, "default": "", "description": "Why you run this command"},
                "timeout": {"type": "integer", "minimum": 1, "default": DEFAULT_TIMEOUT_SECS, "description": "Seconds before the command is killed"},
                "approval": {"type": "string", "pattern": "^[0-9a-f]{40}$", "description": "For a command that needs a person's approval: the id from the approval_required error, once a person approved it. It is used once, for exactly the approved command and server"},
                "wait": {"type": "integer", "minimum": 0, "maximum": toolgate_shared::clarify::MAX_WAIT_SECS, "default": 0, "description": "Seconds to wait for a person's approval before answering approval_required (at most 25)"}
            },
            "required": ["server_name", "command"],
            "additionalProperties": false
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
        // Any shell command on a real server.
        hints: toolgate_shared::tool::Hints::writes(true, false, true),
        mcp_result: false,
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
    /// An approval's id, to use for this call.
    pub approval: Option<String>,
    /// Seconds to wait for a new approval, at most 25.
    pub wait: u64,
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
    toolgate_shared::tool::only_keys(
        obj,
        &[
            "server_name",
            "command",
            "intent",
            "timeout",
            "approval",
            "wait",
        ],
        &[],
    )?;
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
    let wait = match obj.get("wait") {
        None | Some(Value::Null) => 0,
        Some(v) => match v.as_u64() {
            Some(w) if w <= toolgate_shared::clarify::MAX_WAIT_SECS => w,
            _ => {
                return Err(ToolError::invalid_input(
                    "\"wait\" must be a whole number of seconds, at most 25",
                ));
            }
        },
    };
    let approval = match obj.get("approval") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Some(s.to_ascii_lowercase())
        }
        Some(_) => {
            return Err(ToolError::invalid_input(
                "\"approval\" must be the 40-character id of an approval_required error",
            ));
        }
    };
    Ok(Input {
        server_name: string_field(obj, "server_name", true, MAX_SERVER_NAME_CHARS)?,
        command: string_field(obj, "command", true, MAX_COMMAND_CHARS)?,
        intent: string_field(obj, "intent", false, MAX_INTENT_CHARS)?,
        timeout,
        approval,
        wait,
    })
}

impl SshRun {
    /// The tool over `ssh`, its spec stating the largest timeout; gated
    /// commands wait on `approvals`.
    pub fn new(ssh: Arc<Ssh>, approvals: Option<Arc<Approvals>>) -> Self {
        Self {
            spec: spec(ssh.settings.max_timeout),
            ssh,
            approvals,
        }
    }

    /// The approval this call runs under, if it needs or names one; or the
    /// caller's MCP client's input request while it waits.
    async fn gate(
        &self,
        input: &Input,
        args: &Value,
        server: &toolgate_shared::ssh::inventory::Server,
        ctx: &CallContext,
    ) -> Result<Option<Gated>, ToolError> {
        let needs = self.ssh.settings.needs_approval(server, &input.command);
        if input.approval.is_none() && needs.is_none() {
            return Ok(None);
        }
        let Some(approvals) = &self.approvals else {
            return Err(ToolError::new(
                ErrorCode::Forbidden,
                format!(
                    "This command needs a person's approval ({}), and this deployment has no \
                     clarify service to ask one",
                    needs.as_deref().unwrap_or("an approval was given")
                ),
            ));
        };
        let binding = Binding {
            tool: NAME.into(),
            server: server.name.clone(),
            command_sha256: sha256_hex(&input.command),
            host_key: server.host_key.fingerprint(),
            caller: ctx.caller.clone(),
            login: Some(format!(
                "{}@{}:{}",
                server.username, server.host, server.port
            )),
            via: None,
            client_approves: false,
        };
        let ask = || {
            let intent = if input.intent.is_empty() {
                "(no intent given)"
            } else {
                &input.intent
            };
            Details {
                summary: format!(
                    "Run a command on {} ({}@{}:{})",
                    server.name, server.username, server.host, server.port
                ),
                fields: Vec::new(),
                why: needs.clone().unwrap_or_default(),
            }
            .code("Command", input.command.clone())
            .text("Intent", intent)
            .text("Needs approval because", needs.clone().unwrap_or_default())
            .code("Host key", binding.host_key.clone())
            .code("Command SHA-256", binding.command_sha256.clone())
            .text("Caller", ctx.caller.as_deref().unwrap_or("(anonymous)"))
        };
        let wait = Duration::from_secs(input.wait);
        let client = InClient::of(
            approvals.clarify(),
            ctx,
            args,
            server.policy.client_approves(),
        )
        .await?;
        let id = input.approval.as_deref();
        approvals
            .gate(&binding, "approval", id, ask, wait, client.as_ref())
            .await
            .map(Some)
    }

    async fn run(&self, input: &Input, args: &Value, ctx: &CallContext) -> Result<Ran, ToolError> {
        let scope = ctx.servers.as_deref();
        let server = self.ssh.resolve(&input.server_name, scope).await?;
        if let Err(why) = server.policy.check(&input.command) {
            return Err(ToolError::new(
                toolgate_shared::error::ErrorCode::Forbidden,
                format!(
                    "Command refused by the policy of server {:?}: {why}",
                    server.name
                ),
            ));
        }
        let receipt = match self.gate(input, args, &server, ctx).await? {
            Some(Gated::Ask(asked)) => return Ok(Ran::asked(asked)),
            Some(Gated::Run(r)) => Some(r),
            None => None,
        };
        let asked = Duration::from_secs(input.timeout);
        let capped = asked.min(self.ssh.settings.max_timeout);
        // A command that ignores its TERM holds the call STOP_SLACK longer.
        let deadline = ctx
            .deadline
            .map(|d| d.checked_sub(crate::exec::STOP_SLACK).unwrap_or(d));
        let (timeout, lowered) = effective_timeout(capped, deadline, Instant::now());
        let started = Instant::now();
        let (out, reused) = self
            .ssh
            .run(Request {
                server: &server,
                command: &input.command,
                timeout,
                cancel: ctx.cancel.clone(),
            })
            .await?;
        let mut stderr = out.stderr;
        if timeout < asked {
            let why = if lowered {
                "to fit the runtime's remaining time"
            } else {
                "by configuration"
            };
            stderr = toolgate_shared::truncate::truncate(&format!(
                "{stderr}{}[timeout lowered to {}s {why}]\n",
                if stderr.is_empty() || stderr.ends_with('\n') {
                    ""
                } else {
                    "\n"
                },
                timeout.as_secs()
            ));
        }
        let mut v = json!({
            "stdout": out.stdout,
            "stderr": stderr,
            "exit_code": out.exit_code,
            "timed_out": out.timed_out,
            "truncated": out.truncated,
            "duration_ms": started.elapsed().as_millis() as u64,
        });
        if let Some(r) = &receipt {
            v["approval"] = json!(r.id);
        }
        Ok(Ran {
            output: v,
            bytes_out: out.bytes_out,
            reused,
            receipt,
            asked: false,
        })
    }
}

/// What a run gives the audit line besides the output.
struct Ran {
    output: Value,
    bytes_out: u64,
    reused: bool,
    receipt: Option<Receipt>,
    /// Nothing ran: the output asks the caller's MCP client for approval.
    asked: bool,
}

impl Ran {
    fn asked(output: Value) -> Self {
        Self {
            output,
            bytes_out: 0,
            reused: false,
            receipt: None,
            asked: true,
        }
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
            let outcome = self.run(&input, &args, ctx).await;
            audit(&input, ctx, started, &outcome);
            outcome.map(|r| r.output)
        })
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
                timeout: 600,
                approval: None,
                wait: 0,
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
            (
                json!({"server_name": "a", "command": "ls", "approval": "../x"}),
                "\"approval\" must be the 40-character id",
            ),
            (
                json!({"server_name": "a", "command": "ls", "wait": 26}),
                "\"wait\"",
            ),
        ] {
            let e = parse_input(&bad).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {}", e.message);
        }
    }
}
