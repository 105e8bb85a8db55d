//! python.execute's side of code mode's waits: a script stopped where one
//! of its calls waits for a person is answered with what it waits for and
//! a `resume` id, its journal kept in the sessions' store (the caller's,
//! until it expires); a call with `resume` runs the script again from that
//! journal and goes on from the call it waited on.

use std::time::Duration;

use serde_json::{Value, json};

use super::{PythonExecute, to_value};
use crate::clock::Instant;
use crate::error::{ErrorCode, ToolError};
use crate::files::Files;
use crate::registry::{Registry, exported_name};
use crate::sessions::new_record_id;
use crate::tool::{CallContext, effective_timeout};
use crate::tools::python_execute::code_mode::{CodeHost, Ending, Halt, Journal};
use crate::tools::python_execute::{ExecOutput, Input};

/// How a resume is named in its refusals.
const RESUME: &str = "Resume";

impl PythonExecute {
    /// The tools of `registry` for one script under `ctx`.
    pub(super) fn host<'a>(&'a self, registry: &'a Registry, ctx: &CallContext) -> CodeHost<'a> {
        CodeHost::new(registry, ctx, &self.spec.name, self.code_mode.max_calls)
    }

    fn resume_ttl(&self) -> Duration {
        Duration::from_secs(self.code_mode.resume_ttl_secs)
    }

    /// The most a journal's calls may hold: a session's state, less room
    /// for the rest of it.
    pub(super) fn journal_cap(&self) -> usize {
        self.state_cap.saturating_sub(1024) as usize
    }

    /// The answer to a call whose script called tools: as it ran, or, when
    /// it stopped to wait, with what it waits for and its `resume` id.
    pub(super) async fn answered(
        &self,
        out: ExecOutput,
        ending: Ending,
        code: &str,
        files: &Files,
        ctx: &CallContext,
    ) -> Result<Value, ToolError> {
        let Some(journal) = ending.journal(code, &wire(files)) else {
            return to_value(&out);
        };
        let kept = match &self.sessions {
            Some(sessions) => {
                let owner = ctx.caller.as_deref().unwrap_or("");
                match (new_record_id(), self.journal_bytes(&journal)) {
                    (Ok(id), Ok(bytes)) => sessions
                        .put_record(&id, owner, &bytes, self.resume_ttl())
                        .await
                        .map(|()| id),
                    (Err(e), _) | (_, Err(e)) => Err(e),
                }
            }
            None => Err(ToolError::new(
                ErrorCode::NotConfigured,
                "no session store keeps journals here",
            )),
        };
        waiting(out, &journal, kept)
    }

    /// A call with `resume`: the script again, from its journal.
    pub(super) async fn resume(
        &self,
        id: &str,
        input: &Input<'_>,
        ctx: &CallContext,
        registry: Option<&Registry>,
    ) -> Result<Value, ToolError> {
        let Some(registry) = registry else {
            return Err(ToolError::new(
                ErrorCode::Forbidden,
                "\"resume\" goes on with a script that called tools, and this caller's scripts \
                 may not (code_mode)",
            ));
        };
        let Some(sessions) = &self.sessions else {
            return Err(ToolError::new(
                ErrorCode::NotConfigured,
                "\"resume\" needs the session store, which this deployment does not keep",
            ));
        };
        let owner = ctx.caller.as_deref().unwrap_or("");
        let (timeout, _) = effective_timeout(self.timeout, ctx.deadline, Instant::now());
        let held = sessions.take_record(id, owner, timeout, RESUME).await?;
        let shown = crate::files::shown(id);
        let files = wire(&input.files);
        let journal = match Journal::from_bytes(&held.record.state) {
            Some(j) => j,
            None => {
                sessions.abandon(held).await;
                return Err(ToolError::new(
                    ErrorCode::NotFound,
                    format!("No {RESUME} {shown}"),
                ));
            }
        };
        if let Some(why) = journal.refuses(input.code, &files) {
            sessions.abandon(held).await;
            return Err(ToolError::new(
                ErrorCode::Conflict,
                format!("{RESUME} {shown}: {why}"),
            ));
        }
        // Spent before the waited call goes on, in the store: whatever then
        // happens to this call (an error, a client gone, a crash), its
        // calls from there never run again from this journal.
        let spend = || -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), ToolError>> + Send + '_>> {
            Box::pin(sessions.spend_record(&held))
        };
        let host = self
            .host(registry, ctx)
            .stopping_to_wait(self.journal_cap())
            .resuming(journal, &spend);
        // The hold is renewed while the script waits for a place and runs:
        // no other call takes the journal meanwhile.
        let ran = sessions
            .holding_record(
                &held,
                timeout,
                self.run_with(input.code, &input.files, None, ctx, Some(&host)),
            )
            .await;
        let ending = host.end();
        drop(host);
        let mut out = match ran {
            Ok(out) => out,
            Err(e) => {
                self.let_go(held, ending.spent).await;
                return Err(e);
            }
        };
        if let Some(journal) = ending.journal(input.code, &files) {
            // Waits again: on a later call, or on the same approval still
            // undecided. Under the same id while its journal stands; once
            // spent, under a new one.
            let bytes = self.journal_bytes(&journal);
            let kept = match (bytes, ending.spent) {
                (Ok(bytes), false) => sessions
                    .keep_record(&held, &bytes, self.resume_ttl())
                    .await
                    .map(|()| id.to_owned()),
                (Ok(bytes), true) => match new_record_id() {
                    Ok(next) => sessions
                        .put_record(&next, owner, &bytes, self.resume_ttl())
                        .await
                        .map(|()| next),
                    Err(e) => Err(e),
                },
                (Err(e), _) => Err(e),
            };
            if kept.is_err() {
                self.let_go(held, ending.spent).await;
            }
            return waiting(out, &journal, kept);
        }
        if let Some(Halt::Diverged(why)) = ending.halt {
            self.let_go(held, ending.spent).await;
            return Err(ToolError::new(ErrorCode::Conflict, why));
        }
        if let Some(why) = ending.unfinished {
            self.let_go(held, ending.spent).await;
            if !out.timed_out {
                return Err(ToolError::new(ErrorCode::Conflict, why));
            }
            // Stopped before it got back to its wait: nothing new ran.
            out.add_note(&format!(
                "[{RESUME} {shown}: the script timed out before it reached the call it waits on; \
                 the resume can be tried again]\n"
            ));
            return to_value(&out);
        }
        // It went on past its wait: its journal was spent then.
        self.let_go(held, ending.spent).await;
        if out.timed_out {
            out.add_note(&format!(
                "[{RESUME} {shown} is used: the script went on past the call it waited on]\n"
            ));
        }
        to_value(&out)
    }

    /// Gives a taken journal back unchanged, unless it was spent.
    async fn let_go(&self, held: crate::sessions::Held, spent: bool) {
        if let (Some(sessions), false) = (&self.sessions, spent) {
            sessions.abandon(held).await;
        }
    }

    /// A journal as kept; one past the state a session may keep is refused.
    fn journal_bytes(&self, journal: &Journal) -> Result<Vec<u8>, ToolError> {
        let bytes = journal.to_bytes();
        if bytes.len() as u64 > self.state_cap {
            return Err(ToolError::new(
                ErrorCode::TooLarge,
                format!(
                    "the script's journal (its tool calls' answers) is {} bytes, over the {} a \
                     session's state may take here",
                    bytes.len(),
                    self.state_cap
                ),
            ));
        }
        Ok(bytes)
    }
}

/// Files as a journal hashes them.
fn wire(files: &Files) -> Value {
    json!(crate::files::to_wire(files))
}

/// The answer of a script stopped to wait: what it waits for, and its
/// `resume` id, or why it cannot be resumed.
fn waiting(
    mut out: ExecOutput,
    journal: &Journal,
    kept: Result<String, ToolError>,
) -> Result<Value, ToolError> {
    let w = &journal.waiting;
    let tool = exported_name(&w.tool);
    let what = match &w.on {
        crate::tools::python_execute::code_mode::On::Approval { id, .. } => {
            format!("approval {id}")
        }
        crate::tools::python_execute::code_mode::On::Answer { id, .. } => {
            format!("a person's answer ({id})")
        }
    };
    match &kept {
        Ok(id) => out.add_note(&format!(
            "[The script waits at its call of {tool} for {what}. Once it is given, call \
             python.execute again with the same code and \"resume\": \"{id}\"; the calls before \
             are not run again]\n"
        )),
        Err(e) => out.add_note(&format!(
            "[The script waits at its call of {tool} for {what}, and cannot be resumed: {}]\n",
            e.message
        )),
    }
    let mut v = to_value(&out)?;
    v["waiting"] = w.shown(&tool);
    if let Ok(id) = kept {
        v["resume"] = json!(id);
    }
    Ok(v)
}
