//! The gateway's side: start a task in a peer function, read it, cancel it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use serde_json::Value;

use super::{STALE_AFTER, START_WINDOW};
use crate::envelope::Envelope;
use toolgate_shared::clarify::now_ms;
use toolgate_shared::error::{ErrorCode, ToolError};
use toolgate_shared::invoke::{Transport, invoke};
use toolgate_shared::logging::id_ref;
use toolgate_shared::registry::Registry;
use toolgate_shared::tasks::rows::{Row, TaskRows};
use toolgate_shared::tasks::{
    CANCEL_GRACE, Started, Status, Task, TaskFuture, TaskHost, not_found,
};
use toolgate_shared::tool::CallContext;

/// How long the function's asynchronous invocation may take to be
/// accepted (Lambda answers 202 in milliseconds) before the start fails.
const ACCEPT_BOUND: Duration = Duration::from_secs(10);

/// Kept back from the caller's deadline when the inline window ends.
const INLINE_MARGIN: Duration = Duration::from_millis(1500);

/// Lambda's limit on an asynchronous event's payload, less room for the
/// envelope's other fields: a call with larger arguments is forwarded as a
/// direct one (up to 6 MB).
const EVENT_ARGS_BYTES: usize = 1_000_000 - 16_384;

/// The longest pause between two reads of a row while waiting.
const MAX_PAUSE: Duration = Duration::from_millis(500);

/// Tasks started in peer functions, kept in [`TaskRows`].
pub struct LambdaTasks {
    rows: Arc<dyn TaskRows>,
    client: aws_sdk_lambda::Client,
    registry: Registry,
    after: Duration,
}

impl LambdaTasks {
    /// Tasks of `registry`'s peer tools, in `rows`, invoked through
    /// `client`; an MCP call becomes one `after` its start.
    pub fn new(
        rows: Arc<dyn TaskRows>,
        client: aws_sdk_lambda::Client,
        registry: Registry,
        after: Duration,
    ) -> Self {
        Self {
            rows,
            client,
            registry,
            after,
        }
    }

    /// Invokes `function` with `payload` as an asynchronous event.
    async fn hand(
        client: aws_sdk_lambda::Client,
        function: String,
        payload: Value,
    ) -> Result<(), ToolError> {
        client
            .invoke()
            .function_name(&function)
            .invocation_type(InvocationType::Event)
            .payload(Blob::new(payload.to_string()))
            .send()
            .await
            .map(drop)
            .map_err(|e| {
                ToolError::new(
                    ErrorCode::UpstreamUnavailable,
                    format!(
                        "function {function:?} cannot take the task: {}",
                        aws_sdk_lambda::error::DisplayErrorContext(e)
                    ),
                )
            })
    }

    /// `row`, once a task nobody will end is ended: one no function took
    /// up within [`START_WINDOW`], or whose function was stopped.
    async fn settled(&self, row: Row) -> Result<Row, ToolError> {
        if row.task.status != Status::Working {
            return Ok(row);
        }
        let now = now_ms();
        let lost = match (row.started_at, row.run_by) {
            (None, _) if now > row.task.created_at + START_WINDOW.as_millis() as i64 => {
                Some(ToolError::new(
                    ErrorCode::UpstreamUnavailable,
                    "No function took this task up within 5 minutes, so nothing ran: call again",
                ))
            }
            (Some(_), Some(by)) if now > by + STALE_AFTER.as_millis() as i64 => {
                Some(ToolError::internal(
                    "The function running this task stopped before the call ended (its memory or a crash): what it did is unknown",
                ))
            }
            _ => None,
        };
        let Some(e) = lost else {
            return Ok(row);
        };
        let unstarted = row.started_at.is_none();
        self.rows
            .end(
                &row.runner,
                &row.task.id,
                Status::Completed,
                Some(&Err(e)),
                unstarted,
            )
            .await?;
        self.rows.get(&row.task.id).await?.ok_or_else(not_found)
    }

    /// Task `id` of `caller`, if kept.
    async fn row(&self, id: &str, caller: &str) -> Result<Row, ToolError> {
        let row = self
            .rows
            .get(id)
            .await?
            .filter(|r| r.caller == caller && now_ms() < r.task.expires_at())
            .ok_or_else(not_found)?;
        self.settled(row).await
    }
}

/// The outcome of a task that ended.
fn outcome_of(task: Task) -> Result<Value, ToolError> {
    match task.status {
        Status::Cancelled => Err(ToolError::new(
            ErrorCode::Conflict,
            "The call was cancelled before it ended",
        )),
        _ => task
            .outcome
            .unwrap_or_else(|| Err(ToolError::internal("the task ended without an outcome"))),
    }
}

impl TaskHost for LambdaTasks {
    fn after(&self) -> Duration {
        self.after
    }

    fn start<'a>(
        &'a self,
        name: &'a str,
        args: Value,
        ctx: &'a CallContext,
        transport: Transport,
        inline: Duration,
    ) -> TaskFuture<'a, Started> {
        Box::pin(async move {
            let tool = self.registry.get(name).ok();
            let function = tool.as_ref().and_then(|t| t.runs_in().map(str::to_owned));
            let fits = toolgate_shared::response_limit::json_len(&args) <= EVENT_ARGS_BYTES;
            let (Some(tool), Some(function), true) = (tool, function, fits) else {
                // An unknown name, a tool of this function, or arguments
                // no event holds: a direct call, answered (and logged) as
                // any.
                let args = |_| std::future::ready(Ok(args));
                return Ok(Started::Done(
                    invoke(&self.registry, transport, name, args, ctx).await,
                ));
            };
            let now = now_ms();
            let task = Task {
                id: toolgate_shared::clarify::new_id()?,
                tool: tool.spec().name.clone(),
                status: Status::Working,
                created_at: now,
                updated_at: now,
                outcome: None,
            };
            let caller = ctx.caller.clone().unwrap_or_default();
            let runner = super::runner_name(&function).to_owned();
            self.rows.create(&task, &caller, &runner).await?;
            let payload = Envelope {
                tool: task.tool.clone(),
                arguments: args,
                servers: ctx.servers.clone(),
                caller: ctx.caller.clone(),
                // The function's own timeout: a task outlives its
                // transport's deadline.
                deadline_ms: None,
                elicit: ctx.elicit.clone(),
                traceparent: ctx.traceparent.clone(),
                task: Some(task.id.clone()),
                script: None,
            }
            .encode();
            // Lambda accepts the event at once; `cargo lambda watch` runs
            // it before it answers, so the row's start counts as accepted.
            let mut handed = tokio::spawn(Self::hand(self.client.clone(), function, payload));
            let began = Instant::now();
            let mut inline = inline;
            if let Some(d) = ctx.deadline {
                inline = inline.min(
                    d.saturating_duration_since(began)
                        .saturating_sub(INLINE_MARGIN),
                );
            }
            let until = began + inline;
            let accept_by = until.max(began + ACCEPT_BOUND);
            let mut accepted = false;
            let mut pause = Duration::from_millis(20);
            loop {
                if !accepted && handed.is_finished() {
                    let e = match (&mut handed).await {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(e),
                        Err(e) => {
                            Some(ToolError::internal(format!("the task's start failed: {e}")))
                        }
                    };
                    if let Some(e) = e {
                        let outcome = Err(e);
                        self.rows
                            .end(&runner, &task.id, Status::Completed, Some(&outcome), true)
                            .await?;
                        return Ok(Started::Done(outcome));
                    }
                    accepted = true;
                }
                if let Some(row) = self.rows.get(&task.id).await? {
                    accepted |= row.started_at.is_some();
                    if row.task.status != Status::Working {
                        return Ok(Started::Done(outcome_of(row.task)));
                    }
                }
                let now = Instant::now();
                if accepted && now >= until {
                    tracing::info!(task = %id_ref(&task.id), tool = %task.tool, "call runs on as a task");
                    return Ok(Started::Task(task));
                }
                if now >= accept_by {
                    let outcome = Err(ToolError::new(
                        ErrorCode::UpstreamUnavailable,
                        format!(
                            "The function that runs {} did not take the task within {} s, so nothing ran",
                            task.tool,
                            ACCEPT_BOUND.as_secs()
                        ),
                    ));
                    if self
                        .rows
                        .end(&runner, &task.id, Status::Completed, Some(&outcome), true)
                        .await?
                    {
                        handed.abort();
                        return Ok(Started::Done(outcome));
                    }
                    // It started meanwhile.
                    accepted = true;
                    continue;
                }
                let left = if accepted {
                    until - now
                } else {
                    accept_by - now
                };
                tokio::time::sleep(pause.min(left)).await;
                pause = (pause * 2).min(MAX_PAUSE);
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str, caller: &'a str, wait: Duration) -> TaskFuture<'a, Task> {
        Box::pin(async move {
            let until = Instant::now() + wait;
            let mut pause = Duration::from_millis(100);
            loop {
                let row = self.row(id, caller).await?;
                let now = Instant::now();
                if row.task.status != Status::Working || now >= until {
                    return Ok(row.task);
                }
                tokio::time::sleep(pause.min(until - now)).await;
                pause = (pause * 2).min(MAX_PAUSE * 2);
            }
        })
    }

    fn cancel<'a>(&'a self, id: &'a str, caller: &'a str) -> TaskFuture<'a, Task> {
        Box::pin(async move {
            let row = self.row(id, caller).await?;
            if row.task.status != Status::Working {
                return Ok(row.task);
            }
            self.rows.request_cancel(&row.runner, id).await?;
            // Not taken up yet: it never will be (a start needs no cancel).
            if row.started_at.is_none() {
                self.rows
                    .end(&row.runner, id, Status::Cancelled, None, true)
                    .await?;
            }
            tracing::info!(task = %id_ref(id), "task cancelled");
            self.get(id, caller, CANCEL_GRACE + super::CANCEL_POLL * 2)
                .await
        })
    }
}
