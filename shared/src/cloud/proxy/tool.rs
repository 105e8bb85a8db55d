//! One account's tool: its calls forwarded to the account's MCP server,
//! through the approval gate when the tool is gated, with an audit line.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, ErrorCode as McpErrorCode};
use rmcp::service::ServiceError;
use serde_json::Value;

use super::{APPROVAL_ARG, Upstream, WAIT_ARG, unavailable};
use crate::approvals::{Binding, Details, Gated, InClient, canonical, sha256_hex};
use crate::error::{ErrorCode, ToolError};
use crate::logging::{field, id_ref, redact_ids};
use crate::tool::{CallContext, Tool, ToolFuture, ToolSpec};

/// One account's tool as this runtime serves it, under its exported name; calls
/// go to the account's MCP server unchanged.
pub struct ProxyTool {
    pub(super) spec: ToolSpec,
    /// The tool's own name on its server.
    pub(super) remote: String,
    /// Whether calls wait for a person's approval.
    pub(super) gated: bool,
    pub(super) upstream: Arc<Upstream>,
}

impl ProxyTool {
    async fn forward(&self, args: Value) -> Result<Value, ToolError> {
        let span = tracing::info_span!(
            target: "toolgate::trace",
            "cloud call",
            account = %self.upstream.account.id,
            remote_tool = %self.remote,
            otel.kind = "client",
        );
        tracing::Instrument::instrument(self.send(args), span).await
    }

    async fn send(&self, args: Value) -> Result<Value, ToolError> {
        let up = &self.upstream;
        let id = &up.account.id;
        let arguments = match args {
            Value::Object(o) => o,
            _ => {
                return Err(ToolError::invalid_input(
                    "Tool input must be a JSON object (dict)",
                ));
            }
        };
        let started = std::time::Instant::now();
        let client = up.client().await.inspect_err(|e| up.failed(&e.message))?;
        let mut call = CallToolRequestParams::new(self.remote.clone());
        call.arguments = Some(arguments);
        let result = match tokio::time::timeout(up.settings.timeout, client.call_tool(call)).await {
            Ok(Ok(r)) => r,
            Ok(Err(ServiceError::McpError(e))) => {
                // The server refused the request itself (not a tool error).
                let code = match e.code {
                    McpErrorCode::INVALID_PARAMS => ErrorCode::InvalidInput,
                    McpErrorCode::METHOD_NOT_FOUND => ErrorCode::UnknownTool,
                    _ => ErrorCode::UpstreamUnavailable,
                };
                return Err(ToolError::new(
                    code,
                    format!("Cloud account {id:?} refused the call: {}", e.message),
                ));
            }
            Ok(Err(e)) => {
                up.discard(&client).await;
                let e = unavailable(id, super::words::in_words(&up.account.url, &e));
                up.failed(&e.message);
                return Err(e);
            }
            // One slow tool is not the account down: health stays as it is.
            Err(_) => {
                return Err(unavailable(
                    id,
                    format!(
                        "{} did not answer within {:?}: check that it is reachable from here",
                        super::words::shown_url(&up.account.url),
                        up.settings.timeout
                    ),
                ));
            }
        };
        up.answered(started);
        serde_json::to_value(result)
            .map_err(|e| ToolError::internal(format!("cannot encode the result: {e}")))
    }
}

impl ProxyTool {
    /// A gated call: the approval it runs under (asked for, or used), its
    /// audit line, then the call.
    async fn gated_call(&self, mut args: Value, ctx: &CallContext) -> Result<Value, ToolError> {
        let Some(obj) = args.as_object_mut() else {
            return self.forward(args).await;
        };
        let approval = match obj.remove(APPROVAL_ARG) {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id),
            Some(_) => {
                return Err(ToolError::invalid_input(format!(
                    "\"{APPROVAL_ARG}\" must be the id of an approval_required error"
                )));
            }
        };
        let wait = match obj.remove(WAIT_ARG) {
            None | Some(Value::Null) => 0,
            Some(v) => v
                .as_u64()
                .filter(|w| *w <= crate::clarify::MAX_WAIT_SECS)
                .ok_or_else(|| {
                    ToolError::invalid_input(format!(
                        "\"{WAIT_ARG}\" must be a whole number of seconds, at most 25"
                    ))
                })?,
        };
        let up = &self.upstream;
        let Some(approvals) = &up.gate.approvals else {
            return Err(ToolError::new(
                ErrorCode::Forbidden,
                format!(
                    "{} needs a person's approval, and this deployment has no clarify service to ask one",
                    self.spec.name
                ),
            ));
        };
        let arguments = canonical(&args);
        let binding = Binding {
            tool: self.spec.name.clone(),
            server: up.account.id.clone(),
            command_sha256: sha256_hex(&arguments),
            host_key: up.account.url.clone(),
            caller: ctx.caller.clone(),
            login: None,
            via: None,
            client_approves: false,
        };
        let ask = || {
            let why = format!("{} is marked for approval", self.spec.name);
            Details {
                summary: format!("Call {} on cloud account {}", self.spec.name, up.account.id),
                fields: Vec::new(),
                why: why.clone(),
            }
            .code("Arguments", pretty(&args))
            .code("Endpoint", up.account.url.clone())
            .text("Needs approval because", why)
            .code("Arguments SHA-256", binding.command_sha256.clone())
            .text("Caller", ctx.caller.as_deref().unwrap_or("(anonymous)"))
        };
        let wait = std::time::Duration::from_secs(wait);
        let client =
            InClient::of(approvals.clarify(), ctx, &args, up.account.client_approves).await?;
        let id = approval.as_deref();
        let gated = approvals
            .gate(&binding, APPROVAL_ARG, id, ask, wait, client.as_ref())
            .await;
        audit(&self.spec.name, &up.account.id, ctx, &approval, &gated);
        match gated? {
            Gated::Ask(asked) => Ok(asked),
            Gated::Run(_) => self.forward(args).await,
        }
    }
}

/// The arguments as approvers read them: keys sorted, indented.
fn pretty(v: &Value) -> String {
    serde_json::from_str::<Value>(&canonical(v))
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_else(|_| canonical(v))
}

/// The audit line of a gated cloud call: its approval's receipt, or why it
/// did not run.
fn audit(
    tool: &str,
    account: &str,
    ctx: &CallContext,
    approval: &Option<String>,
    gated: &Result<Gated, ToolError>,
) {
    let caller = field(ctx.caller.as_deref().unwrap_or("-"));
    match gated {
        Ok(Gated::Ask(_)) => tracing::info!(
            target: "toolgate::audit",
            event = "cloud_call",
            tool,
            account,
            caller,
            outcome = "approval_asked_in_client",
            "audit"
        ),
        Ok(Gated::Run(r)) => tracing::info!(
            target: "toolgate::audit",
            event = "cloud_call",
            tool,
            account,
            caller,
            outcome = "approved",
            approval = %id_ref(&r.id),
            approver = %field(&r.approver),
            approved_via = r.via.as_deref(),
            approved_at = %r.approved_at,
            arguments_sha256 = %r.command_sha256,
            endpoint = %r.host_key,
            "audit"
        ),
        Err(e) => tracing::warn!(
            target: "toolgate::audit",
            event = "cloud_call",
            tool,
            account,
            caller,
            outcome = e.code.as_str(),
            reason = %field(&redact_ids(&e.message)),
            approval = approval.as_deref().map(id_ref),
            "audit"
        ),
    }
}

impl Tool for ProxyTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn call<'a>(&'a self, args: Value, ctx: &'a CallContext) -> ToolFuture<'a> {
        if self.gated {
            Box::pin(self.gated_call(args, ctx))
        } else {
            Box::pin(self.forward(args))
        }
    }
}
