//! How an approval reads, from what the store keeps: its clarification
//! (the summary as the question, its expiry and settlement) and its
//! approval row (binding, details, decision, use). Never a capability: the
//! link a channel is sent in link-holder mode exists only in that message.

use serde_json::{Value, json};

use super::store::ApprovalRow;
use super::{Clarification, Status, rfc3339};

/// Where an approval stands, as approvers, the agent and the logs see it.
pub fn status(c: &Clarification, row: &ApprovalRow, now: i64) -> &'static str {
    match (c.status_at(now), row.decision.as_deref()) {
        (Status::Pending, _) => "pending",
        (Status::Answered, Some("approved")) => "approved",
        (Status::Answered, Some("rejected")) => "rejected",
        // Answered before approvals had approvers (through a link): it has
        // no approver and cannot be used.
        (Status::Answered, _) => "answered without an approver",
        (Status::Expired, _) => "expired",
        (Status::Cancelled, _) => "withdrawn",
    }
}

/// The page where approvers review it: `{base}/inbox/{id}` (they sign in
/// there; the URL alone decides nothing).
pub fn inbox_url(base_url: &str, id: &str) -> String {
    format!("{}/inbox/{id}", base_url.trim_end_matches('/'))
}

/// The approval's full view (`GET /approvals/{id}`, the channels' events,
/// and `GET /clarifications/{id}` for the agent that asked).
pub fn view(c: &Clarification, row: &ApprovalRow, now: i64, base_url: &str) -> Value {
    let binding: Value = serde_json::from_str(&row.binding).unwrap_or(Value::Null);
    let details: Value = serde_json::from_str(&row.details).unwrap_or(Value::Null);
    let mut v = json!({
        "id": c.id,
        "kind": "approval",
        "status": status(c, row, now),
        "summary": c.question,
        "tool": binding["tool"],
        "target": binding["server"],
        "caller": binding["caller"],
        "sha256": binding["command_sha256"],
        "pinned": binding["host_key"],
        "details": details.get("fields").cloned().unwrap_or_else(|| json!([])),
        "why": details["why"],
        "created_at": rfc3339(c.created_at),
        "expires_at": rfc3339(c.expires_at),
        "inbox_url": inbox_url(base_url, &c.id),
        "ref": crate::logging::id_ref(&c.id),
    });
    if let Some(a) = &row.approver {
        v["approver"] = json!(a);
    }
    // Asked in the caller's MCP client; who may decide besides approvers.
    if let Some(via) = binding.get("via") {
        v["via"] = via.clone();
    }
    if binding["client_approves"] == true {
        v["approvers"] = json!("client");
    }
    if let Some(t) = row.decided_at {
        v["decided_at"] = json!(rfc3339(t));
    }
    if let Some(t) = row.used_at {
        v["used_at"] = json!(rfc3339(t));
    }
    if c.status_at(now) == Status::Cancelled
        && let Some(t) = c.settled_at
    {
        v["withdrawn_at"] = json!(rfc3339(t));
    }
    if !c.notified.is_empty() {
        v["notified"] = json!(c.notified);
    }
    v
}

/// What every channel is told of an approval's `event`: its [`view`] with
/// `type` (`approval.created`, `approval.approved`, …), `delivery`, `sent_at`
/// and `approval_url`: where approvers review it (`link`).
pub fn event_json(event: super::notify::Event, mut view: Value, link: &str, now: i64) -> Value {
    let what = match event {
        super::notify::Event::Created => "created",
        super::notify::Event::Answered => view["status"].as_str().unwrap_or("answered"),
        super::notify::Event::Expired => "expired",
        super::notify::Event::Cancelled => "withdrawn",
    }
    .to_owned();
    if let Value::Object(o) = &mut view {
        o.remove("notified");
        let id = o
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        o.insert("type".into(), format!("approval.{what}").into());
        o.insert("delivery".into(), format!("{id}.{}", event.as_str()).into());
        o.insert("sent_at".into(), rfc3339(now).into());
        o.insert("approval_url".into(), link.into());
    }
    view
}
