//! `clarify` (docs/contracts.md#clarify): an agent asks a person a question and gets a
//! pending clarification with an unguessable id; the answer arrives later
//! over HTTPS (`http` module, with a page for people in `page`). Stores sit
//! behind one trait (`store`: SQLite locally, DynamoDB on AWS). When the
//! call carried a Step Functions task token, the answer completes the task
//! (`callback`), and expiry or cancellation fails it. People hear of
//! questions through the configured channels (`notify`).

mod announce;
pub mod approval_view;
pub mod callback;
mod clarification;
pub mod http;
pub mod notify;
pub mod page;
mod settle;
#[cfg(not(target_arch = "wasm32"))]
pub mod sqlite;
mod state_key;
pub mod store;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::error::ToolError;
pub use callback::{CallbackError, TaskCallback};
pub use clarification::*;
pub use settle::{Swept, refusal_error};
pub use store::{ApprovalRow, ClarifyStore, Decision, ListQuery, Pending, Settlement, Waiting};

/// Longest `?wait=` a reader may ask for: under API Gateway's 30 s limit.
pub const MAX_WAIT_SECS: u64 = 25;
/// Longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 2_000;
/// Most choices one question may offer.
pub const MAX_OPTIONS: usize = 20;
/// Longest choice, in characters.
pub const MAX_OPTION_CHARS: usize = 200;
/// Longest answer a person may write, in characters.
pub const MAX_ANSWER_CHARS: usize = 10_000;
/// Questions one caller may have waiting, when not set.
pub const DEFAULT_MAX_PENDING_PER_CALLER: u64 = 20;
/// Questions all callers may have waiting, when not set.
pub const DEFAULT_MAX_PENDING: u64 = 500;

/// Why an answer or a cancel did not take.
#[derive(Debug)]
pub enum Refusal {
    /// No clarification has that id.
    NotFound,
    /// It expired unanswered; its state is returned.
    Expired(Clarification),
    /// Already answered or cancelled; the current state is returned.
    Settled(Clarification),
    /// An approval: only an approver decides it ([`Clarify::decide`]).
    Approval(String),
}

/// The clarification service over one store: asks, reads, waits, answers,
/// cancels and sweeps, and tells a waiting Step Functions task how its question
/// ended.
pub struct Clarify {
    store: Arc<dyn ClarifyStore>,
    callback: Option<Arc<dyn TaskCallback>>,
    base_url: std::sync::RwLock<String>,
    /// How long a question stays open for its answer.
    pub expiry: Duration,
    /// Wakes local long-polls when an answer lands here.
    changed: Notify,
    nap: Nap,
    notifier: Option<Arc<notify::Notifier>>,
    limits: PendingLimits,
    /// Seals the state an MCP client's retry brings back (`crate::elicit`);
    /// without one, questions are not asked in the client.
    state_key: state_key::StateKeySource,
}

/// How many questions may wait for an answer at once, where the store can
/// count them (`0`: no bound). Checked before anyone is notified: a flood
/// of questions is a flood of messages to people.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingLimits {
    /// Asked by one caller.
    pub per_caller: u64,
    /// Asked by anyone.
    pub total: u64,
}

impl Default for PendingLimits {
    fn default() -> Self {
        Self {
            per_caller: DEFAULT_MAX_PENDING_PER_CALLER,
            total: DEFAULT_MAX_PENDING,
        }
    }
}

impl PendingLimits {
    /// The refusal when `p` has reached a bound.
    pub fn check(&self, p: &Pending) -> Result<(), ToolError> {
        if self.per_caller > 0 && p.mine >= self.per_caller {
            return Err(ToolError::quota(format!(
                "This caller has {} clarifications waiting for an answer, the limit \
                 (TOOLGATE_CLARIFY_MAX_PENDING_PER_CALLER); wait for answers, or cancel some",
                p.mine
            )));
        }
        if self.total > 0 && p.all >= self.total {
            return Err(ToolError::quota(format!(
                "{} clarifications are waiting for an answer, the limit \
                 (TOOLGATE_CLARIFY_MAX_PENDING); try again once some are answered or expire",
                p.all
            )));
        }
        Ok(())
    }
}

/// Sleeps for a while: tokio's timer natively, the Worker's `setTimeout`
/// on wasm32, where tokio has no timer.
pub type Nap = Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

pub(crate) fn default_nap() -> Nap {
    #[cfg(not(target_arch = "wasm32"))]
    return Arc::new(|d| Box::pin(tokio::time::sleep(d)));
    // Without a timer a long-poll returns at once; a runtime sets its own.
    #[cfg(target_arch = "wasm32")]
    return Arc::new(|_| Box::pin(async {}));
}

impl Clarify {
    /// A service over `store`. `callback` completes Step Functions tasks
    /// (`None` where none wait), `base_url` starts every `answer_url`, and
    /// `expiry` is how long a question stays open.
    pub fn new(
        store: Arc<dyn ClarifyStore>,
        callback: Option<Arc<dyn TaskCallback>>,
        base_url: String,
        expiry: Duration,
    ) -> Self {
        Self {
            store,
            callback,
            base_url: std::sync::RwLock::new(base_url),
            expiry,
            changed: Notify::new(),
            nap: default_nap(),
            notifier: None,
            limits: PendingLimits::default(),
            state_key: state_key::StateKeySource::None,
        }
    }

    /// Bounds the questions waiting at once ([`PendingLimits`]).
    pub fn with_pending_limits(mut self, limits: PendingLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The channels told of events, when there are any.
    pub fn notifier(&self) -> Option<&notify::Notifier> {
        self.notifier.as_deref()
    }

    /// Tells `notifier`'s channels of every event from now on.
    pub fn with_notifier(mut self, notifier: notify::Notifier) -> Self {
        self.notifier = Some(Arc::new(notifier));
        self
    }

    /// The timer deliveries back off on.
    pub fn nap(&self) -> Nap {
        self.nap.clone()
    }

    /// Replaces the timer the long-poll sleeps on.
    pub fn with_nap(mut self, nap: Nap) -> Self {
        self.nap = nap;
        self
    }

    /// The base of `answer_url`.
    pub fn base_url(&self) -> String {
        self.base_url
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Set once the server knows its address (a port chosen at bind).
    pub fn set_base_url(&self, url: String) {
        *self.base_url.write().unwrap_or_else(|p| p.into_inner()) = url;
    }

    fn store_error(e: String) -> ToolError {
        tracing::error!(error = %e, "clarification store failed");
        ToolError::internal(format!("the clarification store failed: {e}"))
    }

    /// A new pending clarification that expires `expiry` from now.
    fn pending(
        &self,
        question: String,
        options: Vec<String>,
        task_token: Option<String>,
    ) -> Result<Clarification, ToolError> {
        let now = now_ms();
        Ok(Clarification {
            id: new_id()?,
            question,
            options,
            status: Status::Pending,
            answer: None,
            choice: None,
            created_at: now,
            expires_at: now + self.expiry.as_millis() as i64,
            settled_at: None,
            task_token,
            notified: Default::default(),
        })
    }

    /// Stores a new pending clarification that expires `expiry` from now.
    /// `task_token` names a Step Functions task to complete when it ends.
    pub async fn ask(
        &self,
        question: String,
        options: Vec<String>,
        task_token: Option<String>,
    ) -> Result<Clarification, ToolError> {
        self.ask_as("", question, options, task_token).await
    }

    /// [`Self::ask`] for `caller` (an identity, "" when none), within the
    /// [`PendingLimits`]: past one, `quota_exceeded` and nobody is told.
    pub async fn ask_as(
        &self,
        caller: &str,
        question: String,
        options: Vec<String>,
        task_token: Option<String>,
    ) -> Result<Clarification, ToolError> {
        if self.limits.per_caller > 0 || self.limits.total > 0 {
            let counted = self
                .store
                .count_pending(caller, now_ms())
                .await
                .map_err(Self::store_error)?;
            if let Some(p) = counted {
                self.limits.check(&p)?;
            }
        }
        let c = self.pending(question, options, task_token)?;
        self.store
            .insert_asked(&c, caller)
            .await
            .map_err(Self::store_error)?;
        self.announce(&c, None).await;
        Ok(c)
    }

    /// Stores a new pending approval (`summary` as its question, Approve /
    /// Reject as its options) with `row`, and tells the channels, whose
    /// message links `link` (the inbox, or in link-holder mode the inbox
    /// with the capability in the fragment: the one place it is ever
    /// written).
    pub async fn ask_approval(
        &self,
        summary: String,
        row: &ApprovalRow,
        link: impl FnOnce(&str) -> String,
    ) -> Result<Clarification, ToolError> {
        let (approve, reject) = (Decision::choice_text(true), Decision::choice_text(false));
        let c = self.pending(summary, vec![approve.into(), reject.into()], None)?;
        self.store
            .insert_approval(&c, row)
            .await
            .map_err(Self::store_error)?;
        let now = now_ms();
        let base = self.base_url();
        let body = approval_view::event_json(
            notify::Event::Created,
            approval_view::view(&c, row, now, &base),
            &link(&c.id),
            now,
        );
        self.announce(&c, Some(body)).await;
        Ok(c)
    }

    /// `id`'s approval row, when `id` is an approval.
    pub async fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, ToolError> {
        if !valid_id(id) {
            return Ok(None);
        }
        self.store.approval(id).await.map_err(Self::store_error)
    }

    /// Marks approval `id` used: true for the one call that did.
    pub async fn consume(&self, id: &str, at: i64) -> Result<bool, ToolError> {
        self.store.consume(id, at).await.map_err(Self::store_error)
    }

    /// Questions and approvals waiting for a person now: counted by the
    /// store, or read and counted where it cannot count.
    pub async fn waiting(&self) -> Result<Waiting, ToolError> {
        let now = crate::clock::unix_ms();
        if let Some(w) = self
            .store
            .count_waiting(now)
            .await
            .map_err(Self::store_error)?
        {
            return Ok(w);
        }
        let mut w = Waiting::default();
        for approvals in [false, true] {
            let q = ListQuery {
                approvals,
                pending_only: true,
                now,
                limit: 100_000,
            };
            let n = self.list(q).await?.len() as u64;
            if approvals {
                w.approvals = n;
            } else {
                w.questions = n;
            }
        }
        Ok(w)
    }

    /// The newest clarifications of one kind ([`ListQuery`]), with their
    /// approval rows.
    pub async fn list(
        &self,
        q: ListQuery,
    ) -> Result<Vec<(Clarification, Option<ApprovalRow>)>, ToolError> {
        self.store.list(q).await.map_err(Self::store_error)
    }

    /// Records an approver's decision on pending approval `id`: the
    /// decision and the approval row as they now stand, or why it did not
    /// take (not found, not an approval, already decided, expired).
    pub async fn decide(
        &self,
        id: &str,
        d: &Decision,
    ) -> Result<Result<(Clarification, ApprovalRow), Refusal>, ToolError> {
        let Some(c) = self.get(id).await? else {
            return Ok(Err(Refusal::NotFound));
        };
        if self.approval(id).await?.is_none() {
            return Ok(Err(Refusal::NotFound));
        }
        match c.status_at(d.at) {
            Status::Pending => {}
            Status::Expired => return Ok(Err(Refusal::Expired(c))),
            _ => return Ok(Err(Refusal::Settled(c))),
        }
        let won = self.store.decide(id, d).await.map_err(Self::store_error)?;
        let current = self
            .store
            .get(id)
            .await
            .map_err(Self::store_error)?
            .ok_or_else(|| ToolError::internal("the approval vanished"))?;
        if !won {
            return Ok(Err(match current.status_at(d.at) {
                Status::Expired => Refusal::Expired(current),
                _ => Refusal::Settled(current),
            }));
        }
        let row = self
            .approval(id)
            .await?
            .ok_or_else(|| ToolError::internal("the approval vanished"))?;
        self.changed.notify_waiters();
        self.announce(&current, None).await;
        self.audit_decision(&current).await;
        Ok(Ok((current, row)))
    }

    /// The clarification, with its expiry settled (and its task failed) if
    /// it has just passed.
    pub async fn get(&self, id: &str) -> Result<Option<Clarification>, ToolError> {
        if !valid_id(id) {
            return Ok(None);
        }
        let c = self.store.get(id).await.map_err(Self::store_error)?;
        if let Some(c) = &c
            && c.status_at(now_ms()) == Status::Expired
            && c.status == Status::Pending
        {
            self.expire(c).await;
        }
        Ok(c)
    }

    /// Waits up to `wait` for the clarification to leave `pending`.
    pub async fn wait(&self, id: &str, wait: Duration) -> Result<Option<Clarification>, ToolError> {
        let until = crate::clock::Instant::now() + wait;
        loop {
            let notified = self.changed.notified();
            let c = self.get(id).await?;
            let pending = c
                .as_ref()
                .is_some_and(|c| c.status_at(now_ms()) == Status::Pending);
            let now = crate::clock::Instant::now();
            if !pending || now >= until {
                return Ok(c);
            }
            // Another instance (Lambda, another isolate) may take the
            // answer: poll too.
            let nap = (self.nap)((until - now).min(Duration::from_secs(1)));
            tokio::select! {
                _ = notified => {}
                _ = nap => {}
            }
        }
    }

    /// Answers a pending clarification with its text and, when the person
    /// picked an option, its index; the waiting task, if any, is completed.
    /// `Ok(Err(_))` says why the answer did not take.
    pub async fn answer(
        &self,
        id: &str,
        answer: String,
        choice: Option<usize>,
    ) -> Result<Result<Clarification, Refusal>, ToolError> {
        self.settle(id, Status::Answered, Some(answer), choice)
            .await
    }

    /// Withdraws a pending clarification; the waiting task, if any, fails with
    /// `Clarify.Cancelled`. `Ok(Err(_))` says why the cancel did not take.
    pub async fn cancel(&self, id: &str) -> Result<Result<Clarification, Refusal>, ToolError> {
        self.settle(id, Status::Cancelled, None, None).await
    }
}

#[cfg(test)]
mod tests;
