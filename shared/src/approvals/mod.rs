//! Approval gates (docs/approvals.md): a call a policy marks as needing a
//! person does not run. It becomes an approval, a clarification whose
//! binding says exactly what it allows (tool, target, the command's or
//! arguments' SHA-256, host key or endpoint, caller) and whose details are
//! what approvers see, and the call answers `approval_required` with the
//! approval's id and nothing that decides it. An approver (an identity
//! that is never the caller: a token, a JWT group, an IAM principal, a
//! Slack user, the local operator; or, where the operator chose it,
//! whoever holds a channel's link) approves or rejects it; the repeated
//! call with `approval: <id>` runs only if it was approved, is unexpired
//! and unused, and matches exactly, and using it is one conditional write.
//!
//! - `binding`: the binding, the details, the receipt;
//! - `http`: the approvers' routes (inbox, decisions, link decisions, Slack);
//! - `page`: the inbox page; `shown`: text made visible for people;
//! - `slack`: Slack's signed interactive clicks.

pub mod binding;
pub mod http;
pub mod in_client;
pub mod page;
pub mod shown;
pub mod slack;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

pub use binding::{Binding, Details, Field, Receipt, canonical, hex, sha256_hex};
pub use in_client::{Gated, InClient, client_approves};

use crate::clarify::{
    ApprovalRow, Clarification, Clarify, Decision, ListQuery, Refusal, Status, approval_view,
    now_ms, rfc3339,
};
use crate::error::{ErrorCode, ToolError};
use crate::http::identity::Approver;
use crate::logging::id_ref;

/// The approver a link-holder decision records.
pub const LINK_HOLDER: &str = "link holder";

/// The most approvals or questions one inbox listing returns.
pub const LIST_LIMIT: usize = 100;

/// The approval service over clarify's store and channels.
pub struct Approvals {
    clarify: Arc<Clarify>,
    link_holder: bool,
}

fn refused(why: String) -> ToolError {
    ToolError::new(ErrorCode::Forbidden, why)
}

/// `approval_required`, carrying the pending approval: its id, status,
/// expiry and what it is for; never how to decide it. `arg` is the
/// argument the repeated call names it in.
fn required(c: &Clarification, b: &Binding, why: &str, arg: &str) -> ToolError {
    let expires = rfc3339(c.expires_at);
    ToolError::new(
        ErrorCode::ApprovalRequired,
        format!(
            "This call needs a person's approval ({why}). Approval {} waits for an approver; \
             once it is approved, call again with the same arguments and \"{arg}\": \"{}\" \
             (until {expires}).",
            c.id, c.id
        ),
    )
    .with_detail(
        "approval",
        json!({
            "id": c.id,
            "status": "pending",
            "expires_at": expires,
            "tool": b.tool,
            "target": b.server,
            "sha256": b.command_sha256,
            "argument": arg,
        }),
    )
}

/// A new approval: decided within the wait, or pending (with why it needs
/// one).
enum Asked {
    Decided(Clarification),
    Pending(Clarification, String),
}

/// Compares without an early exit.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl Approvals {
    /// Approvals kept by `clarify`; `link_holder` lets whoever holds a
    /// channel's link decide (the operator's choice; receipts say so).
    pub fn new(clarify: Arc<Clarify>, link_holder: bool) -> Self {
        Self {
            clarify,
            link_holder,
        }
    }

    /// The clarify service underneath.
    pub fn clarify(&self) -> &Arc<Clarify> {
        &self.clarify
    }

    /// Whether whoever holds a channel's link may decide.
    pub fn link_holder(&self) -> bool {
        self.link_holder
    }

    /// The gate: a call that names approval `id` (in its argument `arg`)
    /// uses it ([`Self::redeem`]); one that names none asks approvers with
    /// the details `ask` gives, and waits up to `wait` (at most 25 s) for a
    /// decision. From a `client` that opens links, a pending approval is
    /// the client's input request, and its retry uses the approval
    /// (`in_client`).
    pub async fn gate(
        &self,
        binding: &Binding,
        arg: &str,
        id: Option<&str>,
        ask: impl FnOnce() -> Details,
        wait: Duration,
        client: Option<&InClient>,
    ) -> Result<Gated, ToolError> {
        let span = tracing::info_span!(
            target: "toolgate::trace",
            "approval check",
            asked = id.is_none(),
        );
        let gate = async {
            match (id, client) {
                (Some(id), _) => self.redeem(id, binding, arg).await.map(Gated::Run),
                (None, Some(client)) => match client.state() {
                    Some(state) => self.resume(client, state, binding, arg).await,
                    None => self.request_in_client(client, binding, arg, ask()).await,
                },
                (None, None) => self
                    .request(binding, arg, ask(), wait)
                    .await
                    .map(Gated::Run),
            }
        };
        tracing::Instrument::instrument(gate, span).await
    }

    /// Asks approvers to decide `binding`, shown as `details`, and waits up
    /// to `wait` for the decision: `Ok` (the approval used) when it was
    /// approved in that time; else `approval_required`, or the refusal.
    pub async fn request(
        &self,
        binding: &Binding,
        arg: &str,
        details: Details,
        wait: Duration,
    ) -> Result<Receipt, ToolError> {
        match self.ask(binding, details, wait).await? {
            Asked::Decided(c) => self.redeem(&c.id, binding, arg).await,
            Asked::Pending(c, why) => Err(required(&c, binding, &why, arg)),
        }
    }

    /// A new approval of `binding`, shown as `details`, and its decision if
    /// one came within `wait`.
    async fn ask(
        &self,
        binding: &Binding,
        details: Details,
        wait: Duration,
    ) -> Result<Asked, ToolError> {
        let capability = if self.link_holder {
            // A fresh link capability: 256 random bits, hex.
            Some(crate::clarify::new_secret()?)
        } else {
            None
        };
        let row = ApprovalRow {
            binding: serde_json::to_string(binding)
                .map_err(|e| ToolError::internal(e.to_string()))?,
            details: serde_json::to_string(&details)
                .map_err(|e| ToolError::internal(e.to_string()))?,
            cap_sha256: capability.as_deref().map(sha256_hex),
            ..Default::default()
        };
        let base = self.clarify.base_url();
        let c = self
            .clarify
            .ask_approval(details.summary.clone(), &row, |id| {
                let page = approval_view::inbox_url(&base, id);
                match &capability {
                    Some(cap) => format!("{page}#cap={cap}"),
                    None => page,
                }
            })
            .await?;
        tracing::info!(
            approval = %id_ref(&c.id),
            tool = %crate::logging::field(&binding.tool),
            server = %crate::logging::field(&binding.server),
            "approval asked"
        );
        if !wait.is_zero() {
            let wait = wait.min(Duration::from_secs(crate::clarify::MAX_WAIT_SECS));
            let waited = self.clarify.wait(&c.id, wait).await?;
            if waited.is_some_and(|w| w.status_at(now_ms()) != Status::Pending) {
                return Ok(Asked::Decided(c));
            }
        }
        Ok(Asked::Pending(c, details.why))
    }

    /// Uses approval `id` for a call bound as `want`: `Ok` only if an
    /// approver approved it, it is unexpired and unused, and it matches
    /// exactly; it is then used. Anything else is refused with the reason
    /// (`approval_required` while nobody has decided yet).
    pub async fn redeem(&self, id: &str, want: &Binding, arg: &str) -> Result<Receipt, ToolError> {
        let not_found = || refused(format!("approval {id:?} does not exist"));
        let c = self.clarify.get(id).await?.ok_or_else(not_found)?;
        let row = self
            .clarify
            .approval(id)
            .await?
            .ok_or_else(|| refused(format!("clarification {id} is not an approval")))?;
        let have: Binding = serde_json::from_str(&row.binding)
            .map_err(|e| ToolError::internal(format!("approval {id} is unreadable: {e}")))?;
        if have.tool != want.tool {
            return Err(refused(format!(
                "approval {id} is for {}, not {}",
                have.tool, want.tool
            )));
        }
        if have.server != want.server {
            return Err(refused(format!(
                "approval {id} is for server {:?}, not {:?}",
                have.server, want.server
            )));
        }
        if have.command_sha256 != want.command_sha256 {
            return Err(refused(format!(
                "approval {id} is for another command (SHA-256 {}…): the command must be exactly the approved one",
                &have.command_sha256[..12.min(have.command_sha256.len())]
            )));
        }
        if have.host_key != want.host_key {
            // A cloud tool's binding pins the account's endpoint (no login).
            let pinned = if want.login.is_none() {
                format!("the endpoint of cloud account {:?}", want.server)
            } else {
                format!("the host key pinned for {:?}", want.server)
            };
            return Err(refused(format!(
                "{pinned} changed since approval {id} (approved for {}, now {})",
                have.host_key, want.host_key
            )));
        }
        if have.login != want.login {
            return Err(refused(format!(
                "approval {id} was given for logging in as {}; {:?} now logs in as {}",
                have.login.as_deref().unwrap_or("-"),
                want.server,
                want.login.as_deref().unwrap_or("-")
            )));
        }
        if have.caller != want.caller {
            return Err(refused(format!(
                "approval {id} was asked for by another caller"
            )));
        }
        let now = now_ms();
        match approval_view::status(&c, &row, now) {
            "pending" => {
                let details: Details = serde_json::from_str(&row.details).unwrap_or(Details {
                    summary: c.question.clone(),
                    fields: Vec::new(),
                    why: "no one has answered yet".into(),
                });
                return Err(required(&c, &have, &details.why, arg));
            }
            "approved" => {}
            "expired" => return Err(refused(format!("approval {id} expired unanswered"))),
            "withdrawn" => return Err(refused(format!("approval {id} was withdrawn"))),
            "rejected" => {
                return Err(refused(format!(
                    "approval {id} was not approved (rejected by {})",
                    row.approver.as_deref().unwrap_or("an approver")
                )));
            }
            other => {
                return Err(refused(format!(
                    "approval {id} cannot be used: it was {other}"
                )));
            }
        }
        let Some(approver) = row.approver.clone() else {
            return Err(refused(format!("approval {id} has no approver")));
        };
        if row.decided_binding.as_deref() != Some(sha256_hex(&row.binding).as_str()) {
            return Err(refused(format!(
                "approval {id} was changed after it was decided"
            )));
        }
        if now >= c.expires_at {
            return Err(refused(format!(
                "approval {id} expired at {}",
                rfc3339(c.expires_at)
            )));
        }
        if row.used_at.is_some() || !self.clarify.consume(id, now).await? {
            return Err(refused(format!("approval {id} has already been used")));
        }
        Ok(Receipt {
            id: id.to_owned(),
            approver,
            approved_at: row.decided_at.map(rfc3339).unwrap_or_default(),
            command_sha256: have.command_sha256,
            host_key: have.host_key,
            via: have.via,
        })
    }

    /// One approval's view, for approvers (`None`: no such approval).
    pub async fn view(&self, id: &str) -> Result<Option<Value>, ToolError> {
        let Some(c) = self.clarify.get(id).await? else {
            return Ok(None);
        };
        Ok(self
            .clarify
            .approval(id)
            .await?
            .map(|row| approval_view::view(&c, &row, now_ms(), &self.clarify.base_url())))
    }

    /// The newest approvals, or questions (`approvals = false`), pending
    /// only or all, as approvers list them.
    pub async fn list(&self, approvals: bool, pending_only: bool) -> Result<Vec<Value>, ToolError> {
        let now = now_ms();
        let base = self.clarify.base_url();
        let found = self
            .clarify
            .list(ListQuery {
                approvals,
                pending_only,
                now,
                limit: LIST_LIMIT,
            })
            .await?;
        Ok(found
            .into_iter()
            .map(|(c, row)| match row {
                Some(row) => approval_view::view(&c, &row, now, &base),
                None => c.view(now, &base),
            })
            .collect())
    }

    /// `approver` approves or rejects approval `id`: its view as it now
    /// stands. Refused when the approver is the caller who asked, when it
    /// is no approval, or when it is no longer pending (409 with its state,
    /// 410 once expired).
    pub async fn decide(
        &self,
        id: &str,
        approve: bool,
        approver: &Approver,
    ) -> Result<Value, ToolError> {
        let not_found = || ToolError::new(ErrorCode::NotFound, "No such approval");
        let row = self.clarify.approval(id).await?.ok_or_else(not_found)?;
        let have: Binding = serde_json::from_str(&row.binding)
            .map_err(|e| ToolError::internal(format!("approval {id} is unreadable: {e}")))?;
        // `token:alice` and the caller `alice`, `jwt:<sub>` and the caller
        // `<sub>`: one person on both sides.
        let principal = approver
            .id
            .split_once(':')
            .map_or(approver.id.as_str(), |(_, p)| p);
        // Unless the target's policy lets the caller's own person decide
        // (`approvers = "client"`), proved with a credential the agent
        // never holds (an approver token, a people's app client's JWT).
        if let Some(caller) = &have.caller
            && principal == caller
            && !(have.client_approves && approver.person)
        {
            return Err(refused(format!(
                "{} asked for approval {id}: the caller cannot approve its own call",
                approver.id
            )));
        }
        self.settle(id, &row, approve, approver.id.clone()).await
    }

    /// A link holder approves or rejects approval `id` with `capability`
    /// (only in link-holder mode), or reads it (`decision` `None`).
    pub async fn by_link(
        &self,
        id: &str,
        capability: &str,
        decision: Option<bool>,
    ) -> Result<Value, ToolError> {
        // The same answer whatever is wrong: a probe learns nothing.
        let denied = || {
            ToolError::new(
                ErrorCode::Forbidden,
                "This link does not decide this approval (links decide only where the operator chose link-holder approvals)",
            )
        };
        if !self.link_holder {
            return Err(denied());
        }
        let row = self.clarify.approval(id).await?.ok_or_else(denied)?;
        let want = row.cap_sha256.as_deref().ok_or_else(denied)?;
        if !same(&sha256_hex(capability), want) {
            return Err(denied());
        }
        match decision {
            Some(approve) => self.settle(id, &row, approve, LINK_HOLDER.into()).await,
            None => self
                .view(id)
                .await?
                .ok_or_else(|| ToolError::new(ErrorCode::NotFound, "No such approval")),
        }
    }

    /// Records the decision on approval `id` (whose row is `row`, as the
    /// approver saw it).
    async fn settle(
        &self,
        id: &str,
        row: &ApprovalRow,
        approve: bool,
        approver: String,
    ) -> Result<Value, ToolError> {
        let d = Decision {
            approved: approve,
            approver,
            at: now_ms(),
            binding_sha256: sha256_hex(&row.binding),
        };
        match self.clarify.decide(id, &d).await? {
            Ok((c, row)) => {
                tracing::info!(
                    approval = %id_ref(id),
                    decision = d.as_str(),
                    approver = %crate::logging::field(&d.approver),
                    "approval decided"
                );
                Ok(approval_view::view(
                    &c,
                    &row,
                    now_ms(),
                    &self.clarify.base_url(),
                ))
            }
            Err(Refusal::NotFound | Refusal::Approval(_)) => {
                Err(ToolError::new(ErrorCode::NotFound, "No such approval"))
            }
            Err(Refusal::Expired(c)) => Err(self
                .state_error(ErrorCode::Expired, "This approval has expired", &c)
                .await),
            Err(Refusal::Settled(c)) => {
                let status = match self.clarify.approval(id).await? {
                    Some(row) => approval_view::status(&c, &row, now_ms()),
                    None => c.status.as_str(),
                };
                Err(self
                    .state_error(
                        ErrorCode::Conflict,
                        &format!("This approval is already {status}"),
                        &c,
                    )
                    .await)
            }
        }
    }

    /// A 409 or 410 carrying the approval's state under `approval`.
    async fn state_error(&self, code: ErrorCode, message: &str, c: &Clarification) -> ToolError {
        let mut e = ToolError::new(code, message);
        if let Ok(Some(v)) = self.view(&c.id).await {
            e = e.with_detail("approval", v);
        }
        e
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
