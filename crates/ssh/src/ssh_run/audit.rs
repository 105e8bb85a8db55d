//! `ssh_run`'s audit line: one per call, refused or run, with the
//! approval's receipt when one was used.

use std::time::Instant;

use toolgate_shared::error::ToolError;
use toolgate_shared::logging::{field, id_ref, redact_ids};
use toolgate_shared::tool::CallContext;

use super::{Input, Ran};

/// The audit line. The command and intent are the caller's words; keys and
/// passwords never pass through here.
pub(super) fn audit(
    input: &Input,
    ctx: &CallContext,
    started: Instant,
    outcome: &Result<Ran, ToolError>,
) {
    let duration_ms = started.elapsed().as_millis() as u64;
    let caller = ctx.caller.as_deref().unwrap_or("-");
    match outcome {
        Ok(r) if r.asked => tracing::info!(
            target: "toolgate::audit",
            event = "ssh_run",
            server = %field(&input.server_name),
            command = %field(&input.command),
            intent = %field(&input.intent),
            caller = %field(caller),
            outcome = "approval_asked_in_client",
            duration_ms,
            "audit"
        ),
        Ok(r) => {
            let receipt = r.receipt.as_ref();
            tracing::info!(
                target: "toolgate::audit",
                event = "ssh_run",
                server = %field(&input.server_name),
                command = %field(&input.command),
                intent = %field(&input.intent),
                caller = %field(caller),
                outcome = "ran",
                exit_code = r.output["exit_code"].as_i64(),
                timed_out = r.output["timed_out"].as_bool(),
                bytes_out = r.bytes_out,
                connection = if r.reused { "reused" } else { "new" },
                approval = receipt.map(|r| id_ref(&r.id)),
                approver = receipt.map(|r| field(&r.approver)),
                approved_via = receipt.and_then(|r| r.via.as_deref()),
                approved_at = receipt.map(|r| r.approved_at.as_str()),
                command_sha256 = receipt.map(|r| r.command_sha256.as_str()),
                host_key = receipt.map(|r| r.host_key.as_str()),
                duration_ms,
                "audit"
            )
        }
        Err(e) => tracing::warn!(
            target: "toolgate::audit",
            event = "ssh_run",
            server = %field(&input.server_name),
            command = %field(&input.command),
            intent = %field(&input.intent),
            caller = %field(caller),
            outcome = e.code.as_str(),
            reason = %field(&redact_ids(&e.message)),
            approval = input.approval.as_deref().map(id_ref),
            duration_ms,
            "audit"
        ),
    }
}
