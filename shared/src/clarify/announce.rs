//! What a clarification's events say: the audit line of an approval's
//! decision, the body the channels get, and their delivery.

use super::{Clarification, Clarify, approval_view, notify, now_ms};
use crate::logging::id_ref;

impl Clarify {
    /// An approval's decision (approved, rejected, expired, withdrawn) as
    /// an audit line, whether or not the call is ever repeated.
    pub(super) async fn audit_decision(&self, c: &Clarification) {
        let Ok(Some(row)) = self.store.approval(&c.id).await else {
            return;
        };
        let b: serde_json::Value = serde_json::from_str(&row.binding).unwrap_or_default();
        let decision = match approval_view::status(c, &row, now_ms()) {
            "pending" => return,
            other => other,
        };
        let text = |k: &str| b[k].as_str().unwrap_or("-").to_owned();
        tracing::info!(
            target: "toolgate::audit",
            event = "approval",
            approval = %id_ref(&c.id),
            decision,
            approver = row.approver.as_deref().unwrap_or("-"),
            tool = %crate::logging::field(&text("tool")),
            server = %crate::logging::field(&text("server")),
            command_sha256 = %text("command_sha256"),
            host_key = %crate::logging::field(&text("host_key")),
            caller = %crate::logging::field(&text("caller")),
            "audit"
        );
    }

    /// What channels are told of `c`'s latest event: an approval's view
    /// (linking the inbox), or the question as `GET` shows it.
    pub(super) async fn event_body(&self, c: &Clarification) -> serde_json::Value {
        let event = notify::Event::of(c.status);
        let now = now_ms();
        let base = self.base_url();
        match self.store.approval(&c.id).await {
            Ok(Some(row)) => {
                let url = approval_view::inbox_url(&base, &c.id);
                approval_view::event_json(
                    event,
                    approval_view::view(c, &row, now, &base),
                    &url,
                    now,
                )
            }
            _ => notify::event_json(event, c, &base, now),
        }
    }

    /// Tells the channels that hear of `c`'s latest event, and records each
    /// outcome on `c`. Errors are logged and recorded, never returned.
    pub(super) async fn announce(&self, c: &Clarification, body: Option<serde_json::Value>) {
        let Some(notifier) = &self.notifier else {
            return;
        };
        let event = notify::Event::of(c.status);
        let channels = notifier.listeners(event);
        if channels.is_empty() {
            return;
        }
        let body = match body {
            Some(b) => b,
            None => self.event_body(c).await,
        };
        let store = self.store.clone();
        let id = c.id.clone();
        let delivery = Box::pin(async move {
            // At once: a slow or failing channel delays no other.
            let sends = channels.into_iter().map(|ch| {
                let (store, body, id) = (store.clone(), &body, &id);
                async move {
                    let started = crate::clock::Instant::now();
                    let outcome = ch.send(event, body).await;
                    let ms = started.elapsed().as_millis() as u64;
                    let r = id_ref(id);
                    match &outcome {
                        Ok(()) => tracing::info!(id = %r, channel = ch.name(), event = event.as_str(), duration_ms = ms, "notified"),
                        Err(e) => tracing::warn!(id = %r, channel = ch.name(), event = event.as_str(), duration_ms = ms, error = %e, "notification failed"),
                    }
                    let text = notify::outcome_text(&outcome);
                    if let Err(e) = store.note(id, ch.name(), event.as_str(), &text).await {
                        tracing::warn!(id = %r, channel = ch.name(), error = %e, "cannot record a notification");
                    }
                }
            });
            futures_util::future::join_all(sends).await;
        });
        notifier.run(delivery).await;
    }
}
