//! A table item read back: a clarification, its notices, its approval.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use toolgate_shared::clarify::store::ApprovalRow;
use toolgate_shared::clarify::{Clarification, Status};

pub(super) fn item_to(item: &HashMap<String, AttributeValue>) -> Option<Clarification> {
    let text = |k: &str| crate::dynamo::text(item, k);
    let num = |k: &str| crate::dynamo::num(item, k);
    Some(Clarification {
        id: text("id")?,
        question: text("question")?,
        options: serde_json::from_str(&text("options")?).ok()?,
        status: Status::parse(&text("status")?)?,
        answer: text("answer"),
        choice: num("choice").map(|c| c as usize),
        created_at: num("created_at")?,
        expires_at: num("expires_at")?,
        settled_at: num("settled_at"),
        task_token: text("task_token"),
        notified: notices(item),
    })
}

pub(super) const NOTICE: &str = "notice:";

pub(super) fn notices(
    item: &HashMap<String, AttributeValue>,
) -> toolgate_shared::clarify::Notified {
    let mut out = toolgate_shared::clarify::Notified::new();
    for (k, v) in item {
        if let (Some((channel, event)), Ok(outcome)) = (
            k.strip_prefix(NOTICE).and_then(|r| r.split_once(':')),
            v.as_s(),
        ) {
            out.entry(channel.to_owned())
                .or_default()
                .insert(event.to_owned(), outcome.clone());
        }
    }
    out
}

/// The approval attributes of an item, when it is an approval.
pub(super) fn approval_of(item: &HashMap<String, AttributeValue>) -> Option<ApprovalRow> {
    let text = |k: &str| crate::dynamo::text(item, k);
    let num = |k: &str| crate::dynamo::num(item, k);
    Some(ApprovalRow {
        binding: text("approval")?,
        details: text("approval_details").unwrap_or_default(),
        cap_sha256: text("approval_cap"),
        decision: text("decision"),
        approver: text("approver"),
        decided_at: num("decided_at"),
        decided_binding: text("decided_binding"),
        used_at: num("approval_used_at"),
    })
}
