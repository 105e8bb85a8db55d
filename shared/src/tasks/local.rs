//! Tasks in this process (`toolgate serve`): a call runs on a tokio task of
//! its own, its outcome kept in memory for [`TTL`]; nothing survives a
//! restart, and the tasks of one server are not another's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::{
    CANCEL_GRACE, Canceller, MAX_PER_CALLER, Started, Status, Task, TaskFuture, TaskHost,
    cancellation, not_found,
};
use crate::clarify::now_ms;
use crate::error::{ErrorCode, ToolError};
use crate::invoke::{Transport, invoke};
use crate::registry::Registry;
use crate::tool::CallContext;

/// The shortest a call is waited for before it becomes a task.
const MIN_INLINE: Duration = Duration::from_millis(100);

/// Tasks run in this process, over `registry`'s tools.
pub struct LocalTasks {
    registry: Arc<Registry>,
    shared: Arc<Shared>,
    after: Duration,
}

struct Shared {
    tasks: Mutex<HashMap<String, Entry>>,
    /// Woken at each change of status.
    changed: tokio::sync::Notify,
}

struct Entry {
    caller: String,
    task: Task,
    canceller: Option<Canceller>,
}

impl Entry {
    /// Whether `caller` may see it at `now`: theirs, and not expired.
    fn kept_for(&self, caller: &str, now: i64) -> bool {
        self.caller == caller && now < self.task.expires_at()
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The task `id` of `caller`, if kept.
    fn of(&self, id: &str, caller: &str) -> Option<Task> {
        let now = now_ms();
        self.lock()
            .get(id)
            .filter(|e| e.kept_for(caller, now))
            .map(|e| e.task.clone())
    }

    /// Records how task `id` ended, unless it already did.
    fn end(&self, id: &str, status: Status, outcome: Option<Result<Value, ToolError>>) {
        if let Some(e) = self.lock().get_mut(id)
            && e.task.status == Status::Working
        {
            e.task.status = status;
            e.task.updated_at = now_ms();
            e.task.outcome = outcome;
            e.canceller = None;
        }
        self.changed.notify_waiters();
    }
}

impl LocalTasks {
    /// Tasks over `registry`'s tools; an MCP call becomes one `after` its
    /// start.
    pub fn new(registry: Arc<Registry>, after: Duration) -> Self {
        Self {
            registry,
            after,
            shared: Arc::new(Shared {
                tasks: Mutex::new(HashMap::new()),
                changed: tokio::sync::Notify::new(),
            }),
        }
    }

    /// A new working task of `caller`, unless it has [`MAX_PER_CALLER`].
    fn create(&self, caller: &str, tool: &str, canceller: Canceller) -> Result<Task, ToolError> {
        let now = now_ms();
        let mut tasks = self.shared.lock();
        tasks.retain(|_, e| now < e.task.expires_at());
        if tasks.values().filter(|e| e.caller == caller).count() >= MAX_PER_CALLER {
            return Err(ToolError::new(
                ErrorCode::QuotaExceeded,
                format!(
                    "This caller has {MAX_PER_CALLER} tasks, the most kept at once: wait for some to expire (an hour after they started)"
                ),
            ));
        }
        let task = Task {
            id: crate::clarify::new_id()?,
            tool: tool.to_owned(),
            status: Status::Working,
            created_at: now,
            updated_at: now,
            outcome: None,
        };
        tasks.insert(
            task.id.clone(),
            Entry {
                caller: caller.to_owned(),
                task: task.clone(),
                canceller: Some(canceller),
            },
        );
        Ok(task)
    }
}

impl TaskHost for LocalTasks {
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
            let Ok(tool) = self.registry.get(name).map(|t| t.spec().name.clone()) else {
                // Answered (and logged) as any unknown name is.
                let args = |_| std::future::ready(Ok(args));
                return Ok(Started::Done(
                    invoke(&self.registry, transport, name, args, ctx).await,
                ));
            };
            let caller = ctx.caller.clone().unwrap_or_default();
            let (canceller, cancel) = cancellation();
            let mut ctx = ctx.clone();
            ctx.cancel = Some(cancel.clone());
            // The call's own deadline is the tool's: a task outlives its
            // transport's.
            ctx.deadline = None;
            let registry = self.registry.clone();
            let call_name = tool.clone();
            let (done_tx, done_rx) = tokio::sync::oneshot::channel();
            let run = tokio::spawn(async move {
                let args = |_| std::future::ready(Ok(args));
                let outcome = invoke(&registry, transport, &call_name, args, &ctx).await;
                let _ = done_tx.send(outcome);
            });
            let mut done_rx = done_rx;
            // Not less than MIN_INLINE: a call refused at once (bad
            // arguments) answers as without the preference, whichever
            // worker thread takes the spawned call up first.
            let inline = inline.max(MIN_INLINE);
            if let Ok(Ok(outcome)) = tokio::time::timeout(inline, &mut done_rx).await {
                return Ok(Started::Done(outcome));
            }
            let task = match self.create(&caller, &tool, canceller) {
                Ok(t) => t,
                Err(e) => {
                    run.abort();
                    return Err(e);
                }
            };
            tracing::info!(task = %crate::logging::id_ref(&task.id), tool = %tool, "call runs on as a task");
            let shared = self.shared.clone();
            let id = task.id.clone();
            tokio::spawn(async move {
                let mut cancel = cancel;
                tokio::select! {
                    // A cancel the call already answered (its command
                    // stopped) is still a cancel.
                    biased;
                    _ = cancel.cancelled() => {
                        // The tool stops its work (a remote command is
                        // signalled); past the grace, the call is dropped,
                        // which kills a sandbox process.
                        if tokio::time::timeout(CANCEL_GRACE, &mut done_rx).await.is_err() {
                            run.abort();
                        }
                        shared.end(&id, Status::Cancelled, None);
                    }
                    outcome = &mut done_rx => {
                        let outcome = outcome.unwrap_or_else(|_| Err(ToolError::internal("the task's call ended without an outcome")));
                        shared.end(&id, Status::Completed, Some(outcome));
                    }
                }
            });
            Ok(Started::Task(task))
        })
    }

    fn get<'a>(&'a self, id: &'a str, caller: &'a str, wait: Duration) -> TaskFuture<'a, Task> {
        Box::pin(async move {
            let until = tokio::time::Instant::now() + wait;
            loop {
                let changed = self.shared.changed.notified();
                let task = self.shared.of(id, caller).ok_or_else(not_found)?;
                if task.status != Status::Working {
                    return Ok(task);
                }
                if tokio::time::timeout_at(until, changed).await.is_err() {
                    return Ok(task);
                }
            }
        })
    }

    fn cancel<'a>(&'a self, id: &'a str, caller: &'a str) -> TaskFuture<'a, Task> {
        Box::pin(async move {
            {
                let tasks = self.shared.lock();
                let e = tasks
                    .get(id)
                    .filter(|e| e.kept_for(caller, now_ms()))
                    .ok_or_else(not_found)?;
                if let Some(c) = &e.canceller {
                    c.cancel();
                }
            }
            tracing::info!(task = %crate::logging::id_ref(id), "task cancelled");
            self.get(id, caller, CANCEL_GRACE + Duration::from_secs(1))
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::TTL;
    use super::*;

    #[test]
    fn a_task_is_kept_an_hour() {
        let t = Task {
            id: String::new(),
            tool: String::new(),
            status: Status::Working,
            created_at: 1_000,
            updated_at: 1_000,
            outcome: None,
        };
        assert_eq!(t.expires_at(), 1_000 + TTL.as_millis() as i64);
    }
}
