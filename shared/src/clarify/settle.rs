//! Settling a clarification (answered, cancelled, expired, decided), the
//! sweep of expired ones, and telling a waiting workflow.

use crate::error::{ErrorCode, ToolError};
use crate::logging::id_ref;

use serde_json::json;

use super::{Clarification, Clarify, Refusal, Settlement, Status, callback, now_ms};

impl Clarify {
    pub(super) async fn settle(
        &self,
        id: &str,
        to: Status,
        answer: Option<String>,
        choice: Option<usize>,
    ) -> Result<Result<Clarification, Refusal>, ToolError> {
        let Some(c) = self.get(id).await? else {
            return Ok(Err(Refusal::NotFound));
        };
        if self.approval(id).await?.is_some() {
            return Ok(Err(Refusal::Approval(c.id)));
        }
        let now = now_ms();
        match c.status_at(now) {
            Status::Pending => {}
            Status::Expired => return Ok(Err(Refusal::Expired(c))),
            _ => return Ok(Err(Refusal::Settled(c))),
        }
        let s = Settlement {
            status: to,
            answer,
            choice,
            at: now,
        };
        let won = self.store.settle(id, &s).await.map_err(Self::store_error)?;
        let current = self
            .store
            .get(id)
            .await
            .map_err(Self::store_error)?
            .ok_or_else(|| ToolError::internal("the clarification vanished"))?;
        if !won {
            // Someone else settled it first (or it expired meanwhile).
            return Ok(Err(match current.status_at(now) {
                Status::Expired => Refusal::Expired(current),
                _ => Refusal::Settled(current),
            }));
        }
        self.changed.notify_waiters();
        self.report(&current).await;
        self.announce(&current, None).await;
        Ok(Ok(current))
    }

    pub(super) async fn expire(&self, c: &Clarification) {
        let s = Settlement {
            status: Status::Expired,
            answer: None,
            choice: None,
            at: now_ms(),
        };
        match self.store.settle(&c.id, &s).await {
            Ok(true) => {
                self.changed.notify_waiters();
                let mut done = c.clone();
                done.status = Status::Expired;
                self.report(&done).await;
                self.announce(&done, None).await;
                self.audit_decision(&done).await;
            }
            Ok(false) => {}
            Err(e) => {
                tracing::error!(id = %id_ref(&c.id), error = %e, "cannot mark a clarification expired")
            }
        }
    }

    /// Tells every waiting workflow and channel what it still needs to
    /// hear: expires the pending clarifications past their expiry (a
    /// workflow fails with Clarify.Expired, the channels hear `expired`),
    /// and sends again a callback that did not land (stores that track it). Run on a timer locally, and by a schedule on
    /// AWS (`{"toolgate": "sweep"}`), where nothing runs between
    /// invocations.
    pub async fn sweep(&self) -> Result<Swept, String> {
        let now = now_ms();
        let failed = |e: &String| tracing::error!(error = %e, "clarification sweep failed");
        let expired = self.store.expired_pending(now).await.inspect_err(failed)?;
        let due = self.store.due(now).await.inspect_err(failed)?;
        let mut swept = Swept::default();
        let mut done = std::collections::HashSet::new();
        for c in &expired {
            if done.insert(c.id.as_str()) {
                self.expire(c).await;
                swept.expired += 1;
            }
        }
        for c in &due {
            if c.status != Status::Pending {
                self.report(c).await;
                swept.resent += 1;
            } else if done.insert(c.id.as_str()) {
                self.expire(c).await;
                swept.expired += 1;
            }
        }
        if !due.is_empty() {
            tracing::info!(
                expired = swept.expired,
                resent = swept.resent,
                "clarification sweep"
            );
        }
        Ok(swept)
    }

    /// Tells the waiting workflow, if any; once it has been told (or can no
    /// longer be), the store stops listing the clarification as due. A
    /// callback that may land later stays due for the next sweep.
    pub(super) async fn report(&self, c: &Clarification) {
        let (Some(token), Some(cb)) = (&c.task_token, &self.callback) else {
            return;
        };
        let outcome = match c.status {
            Status::Answered => {
                let output = json!({"answer": c.answer, "choice": c.choice, "id": c.id});
                cb.success(token, &output).await
            }
            Status::Expired => {
                cb.failure(
                    token,
                    callback::EXPIRED,
                    &format!("clarification {} expired unanswered", c.id),
                )
                .await
            }
            Status::Cancelled => {
                cb.failure(
                    token,
                    callback::CANCELLED,
                    &format!("clarification {} was cancelled", c.id),
                )
                .await
            }
            Status::Pending => return,
        };
        let done = match outcome {
            Ok(()) => {
                tracing::info!(id = %id_ref(&c.id), status = c.status.as_str(), "task callback sent");
                true
            }
            Err(e) => {
                tracing::error!(id = %id_ref(&c.id), error = %e.message, retry = e.retry, "task callback failed");
                !e.retry
            }
        };
        if done && let Err(e) = self.store.reported(&c.id).await {
            // It stays due: the next sweep tells the workflow again.
            tracing::warn!(id = %id_ref(&c.id), error = %e, "cannot record the task callback");
        }
    }
}

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Pending clarifications past their expiry, now expired.
    pub expired: usize,
    /// Settled ones whose callback had not landed, sent again.
    pub resent: usize,
}

/// A refusal as the HTTP contract's error: 404, 409 (with the current
/// state) or 410.
pub fn refusal_error(r: &Refusal) -> ToolError {
    match r {
        Refusal::NotFound => ToolError::new(ErrorCode::NotFound, "No such clarification"),
        Refusal::Expired(_) => ToolError::new(ErrorCode::Expired, "This clarification has expired"),
        Refusal::Settled(c) => ToolError::new(
            ErrorCode::Conflict,
            format!("This clarification is already {}", c.status.as_str()),
        ),
        Refusal::Approval(id) => ToolError::new(
            ErrorCode::Forbidden,
            format!(
                "Clarification {id} is an approval: only an approver can decide it (/inbox/{id})"
            ),
        ),
    }
}
