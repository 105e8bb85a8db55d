//! The function's side: run a task sent by asynchronous invocation.

use serde_json::{Value, json};

use std::time::Duration;

use super::{CANCEL_POLL, OUTCOME_BYTES, START_WINDOW};
use toolgate_shared::clarify::now_ms;
use toolgate_shared::error::ToolError;
use toolgate_shared::invoke::{Transport, invoke};
use toolgate_shared::logging::id_ref;
use toolgate_shared::registry::Registry;
use toolgate_shared::response_limit::{fit_answer, json_len};
use toolgate_shared::tasks::rows::TaskRows;
use toolgate_shared::tasks::{CANCEL_GRACE, Status, cancellation};
use toolgate_shared::tool::CallContext;

/// Kept back from the function's deadline for the tool: the outcome's
/// bounding and write (up to 350 KB) come after it.
const OUTCOME_MARGIN: Duration = Duration::from_secs(3);

/// Runs `tool` on `args` as task `id` if this delivery takes it up, and
/// writes how it ended. The answer goes nowhere (an asynchronous event's
/// is dropped) but the log: `{"task", "ran"}`.
pub(crate) async fn run(
    rows: &dyn TaskRows,
    runner: &str,
    registry: &Registry,
    id: &str,
    tool: &str,
    args: Value,
    ctx: &CallContext,
) -> Result<Value, ToolError> {
    let created_after = now_ms() - START_WINDOW.as_millis() as i64;
    let run_by = ctx.deadline.map(|d| crate::envelope::epoch_ms(d) as i64);
    if !rows.start(runner, id, created_after, run_by).await? {
        tracing::warn!(task = %id_ref(id), "task not run: taken up already, cancelled, ended, or too old");
        return Ok(json!({"task": id, "ran": false}));
    }
    let (canceller, cancel) = cancellation();
    let mut ctx = ctx.clone();
    ctx.cancel = Some(cancel);
    // Time to bound and write the outcome before Lambda stops the function.
    ctx.deadline = ctx
        .deadline
        .map(|d| d.checked_sub(OUTCOME_MARGIN).unwrap_or(d));
    let call = invoke(
        registry,
        Transport::Lambda,
        tool,
        |_| std::future::ready(Ok(args)),
        &ctx,
    );
    tokio::pin!(call);
    let asked_to_stop = async {
        loop {
            tokio::time::sleep(CANCEL_POLL).await;
            // A read that fails is read again: the call goes on.
            if rows.stop_asked(runner, id).await.unwrap_or(false) {
                return;
            }
        }
    };
    let outcome = tokio::select! {
        out = &mut call => Some(out),
        () = asked_to_stop => None,
    };
    let Some(mut outcome) = outcome else {
        // The tool stops its work (a remote command is signalled); past
        // the grace the call is dropped, which kills a sandbox process.
        canceller.cancel();
        let _ = tokio::time::timeout(CANCEL_GRACE, &mut call).await;
        rows.end(runner, id, Status::Cancelled, None, false).await?;
        tracing::info!(task = %id_ref(id), "task stopped: cancelled");
        return Ok(json!({"task": id, "ran": true}));
    };
    if let Ok(v) = &mut outcome
        && let Err(e) = fit_answer(v, OUTCOME_BYTES, &json_len)
    {
        outcome = Err(e);
    }
    if !rows
        .end(runner, id, Status::Completed, Some(&outcome), false)
        .await?
    {
        tracing::warn!(task = %id_ref(id), "task ended elsewhere first: its outcome is dropped");
    }
    Ok(json!({"task": id, "ran": true}))
}
