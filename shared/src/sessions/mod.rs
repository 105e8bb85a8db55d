//! python.execute's sessions (docs/contracts.md#sessions): a call with
//! `session` starts from the globals and files the session's last call
//! left, in a fresh sealed process like any call. The server only stores
//! and hands over the saved state; it never reads it (the child does).

pub mod quota;
mod records;
#[cfg(not(target_arch = "wasm32"))]
pub mod sqlite;
pub mod store;

use std::convert::Infallible;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{Either, select};
use serde_json::Value;
use tracing::Instrument;

use crate::error::{ErrorCode, ToolError};
use crate::files::Files;
use crate::outcome::ExecOutput;
pub use quota::Quotas;
pub use records::new_record_id;
pub use store::{Claim, Lease, Record, SessionStore, Usage, stored_size};

/// The answer to a `session` that is neither `"new"` nor a string.
pub const SESSION_SHAPE: &str = "\"session\" must be \"new\" or the id of a session";

/// What a call asks of sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionArg {
    /// Start one.
    New,
    /// Go on with this one.
    Resume(String),
}

/// Reads `session` from a call's input: absent (or null) is no session.
/// An id that is not one a session could have (40 lowercase hex digits)
/// is answered as a missing session is, without asking the store, and
/// named by its first 80 characters only.
pub fn parse(v: Option<&Value>) -> Result<Option<SessionArg>, ToolError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s == "new" => Ok(Some(SessionArg::New)),
        Some(Value::String(s)) if crate::clarify::valid_id(s) => {
            Ok(Some(SessionArg::Resume(s.clone())))
        }
        Some(Value::String(s)) if !s.is_empty() => Err(no_session(s)),
        Some(_) => Err(ToolError::invalid_input(SESSION_SHAPE)),
    }
}

/// The answer for a session that does not exist (or is another caller's).
fn no_session(id: &str) -> ToolError {
    ToolError::new(
        ErrorCode::NotFound,
        format!("No session {}", crate::files::shown(id)),
    )
}

/// The note for a session call that ended without a report (timeout,
/// memory, a crash): nothing of it is saved.
pub const NOT_FINISHED: &str = "[session: the call did not finish, so nothing was saved; the session keeps its state from before this call]\n";

/// The note for a stored state larger than any call may save (the store
/// was written by something else): the call starts without it.
pub const STATE_REFUSED: &str = "[session: the saved state could not be restored (it is larger than the state limit); this call started without it]\n";

/// The note for a call whose result stands but whose session keeps what
/// it had, saying `why`.
pub fn nothing_saved(why: &str) -> String {
    format!("[session: nothing was saved: {why}; the session keeps what it had before this call]\n")
}

/// The files a session call sees: the session's, with the call's over them,
/// within the files cap. Files of the call that cannot sit beside the
/// session's (a file that is the other's folder, names that differ only
/// in case or Unicode form, more than 1000 in all) are `invalid_input`,
/// naming them; the session's own are taken as stored.
pub fn with_files(saved: &Files, given: Files, cap: u64) -> Result<Files, ToolError> {
    if let Some(why) = crate::files::union_problem(
        saved,
        &given,
        "the session's file",
        "the session's files and this call's",
    ) {
        return Err(ToolError::invalid_input(why));
    }
    let mut all = saved.clone();
    all.extend(given);
    let total: u64 = all.values().map(|b| b.len() as u64).sum();
    if total > cap {
        return Err(ToolError::invalid_input(format!(
            "the session's files and this call's hold more than {cap} bytes, the limit \
             (TOOLGATE_PYTHON_MAX_FILES_MB)"
        )));
    }
    Ok(all)
}

/// The files a session keeps after a call: those it saw, with the ones the
/// script created or changed (the output's `files`) over them. `Err` says
/// why they cannot all be kept (as [`with_files`]), for
/// [`nothing_saved`].
pub fn after_call(mut seen: Files, returned: Option<&Value>) -> Result<Files, String> {
    let changed = crate::files::parse_input(returned, u64::MAX).map_err(|e| e.message)?;
    if let Some(why) = crate::files::union_problem(
        &seen,
        &changed,
        "the file",
        "its files would be those it had and those this call wrote, which",
    ) {
        return Err(why);
    }
    seen.extend(changed);
    Ok(seen)
}

/// The answer to `session` where no session store is set up (a Lambda
/// function without its table).
pub fn unavailable() -> ToolError {
    ToolError::new(
        ErrorCode::NotConfigured,
        "sessions are not set up on this deployment (its operator names a table in \
         TOOLGATE_SESSIONS_TABLE to keep them): run without \"session\"",
    )
}

/// A session held by one call.
#[derive(Debug)]
pub struct Held {
    /// The session's id, for the output.
    pub id: String,
    /// What the session holds going in.
    pub record: Record,
    token: String,
}

/// The sessions of one tool: their store, idle life and how long a call
/// waits for another on the same session.
pub struct Sessions {
    store: Arc<dyn SessionStore>,
    idle: Duration,
    nap: crate::clarify::Nap,
    row_limit: Option<usize>,
    quotas: Quotas,
}

/// A call's limits, as a session call needs them.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The call's timeout (how long another call on the session may wait).
    pub timeout: Duration,
    /// The files a call sees, in bytes in all.
    pub files_cap: u64,
    /// The state a call may save, in bytes.
    pub state_cap: u64,
}

/// How long a call waits at most for the call holding its session, beyond
/// that call's own timeout.
const WAIT_MARGIN: Duration = Duration::from_secs(5);

/// How long a call's hold on its session lasts unless renewed: a crashed
/// server's hold ends a little after its call would have.
fn hold_for(timeout: Duration) -> Duration {
    timeout + WAIT_MARGIN * 2
}

impl Sessions {
    /// Sessions in `store`, ending `idle` after their last call.
    pub fn new(store: Arc<dyn SessionStore>, idle: Duration) -> Self {
        Self {
            store,
            idle,
            nap: crate::clarify::default_nap(),
            row_limit: None,
            quotas: Quotas::default(),
        }
    }

    /// Bounds what callers' sessions may hold ([`Quotas`]), where the
    /// store can count them.
    pub fn with_quotas(mut self, quotas: Quotas) -> Self {
        self.quotas = quotas;
        self
    }

    /// Bounds what one session holds in all (D1's row), state and files
    /// (as base64 JSON) together.
    pub fn with_row_limit(mut self, bytes: usize) -> Self {
        self.row_limit = Some(bytes);
        self
    }

    /// Runs one call in the session `arg` names, for `owner`: `run` gets
    /// the files (the session's, the call's over them) and the saved state,
    /// and runs the script; then what the call left is stored. An error
    /// before a result gives the session back unchanged. The hold on the
    /// session is renewed for as long as `run` lasts, so a call that waits
    /// for a place in the sandbox keeps its session while it waits.
    pub async fn call<F, Fut>(
        &self,
        arg: &SessionArg,
        owner: &str,
        given: Files,
        limits: Limits,
        run: F,
    ) -> Result<ExecOutput, ToolError>
    where
        F: FnOnce(Files, Vec<u8>) -> Fut,
        Fut: std::future::Future<Output = Result<ExecOutput, ToolError>>,
    {
        let mut held = self
            .open(arg, owner, limits.timeout)
            .instrument(tracing::info_span!(target: "toolgate::trace", "session open"))
            .await?;
        let files = match with_files(&held.record.files, given, limits.files_cap) {
            Ok(f) => f,
            Err(e) => {
                self.abandon(held).await;
                return Err(e);
            }
        };
        // Larger than any call may save: written by something else, and not
        // the child's to read.
        let mut refused = false;
        if held.record.state.len() as u64 > limits.state_cap {
            held.record.state.clear();
            refused = true;
        }
        let ran = self
            .holding(
                &held,
                limits.timeout,
                run(files.clone(), held.record.state.clone()),
            )
            .await;
        let mut out = match ran {
            Ok(out) => out,
            Err(e) => {
                self.abandon(held).await;
                return Err(e);
            }
        };
        if refused {
            out.stderr.insert_str(0, STATE_REFUSED);
        }
        let mut state = out.state.take();
        // Whether it finished is the sandbox's word: stderr is the script's.
        if state.is_none() && !out.finished {
            // Not the call's files either: the session stays as it was.
            out.add_note(NOT_FINISHED);
            let before = held.record.files.clone();
            out.session = Some(self.close(held, None, &before).await?);
            return Ok(out);
        }
        let mut kept = match after_call(files, out.files.as_ref()) {
            Ok(kept) => kept,
            Err(why) => {
                out.add_note(&nothing_saved(&why));
                state = None;
                held.record.files.clone()
            }
        };
        if let Some(limit) = self.row_limit {
            let size = state.as_ref().map_or(held.record.state.len(), Vec::len)
                + serde_json::to_vec(&crate::files::to_wire(&kept)).map_or(0, |v| v.len());
            if size > limit {
                out.add_note(&format!(
                    "[session: nothing was saved: its state and files would take {size} bytes, over \
                     the {limit} a session holds here; the session keeps what it had before this call]\n"
                ));
                state = None;
                kept = held.record.files.clone();
            }
        }
        if let Some(note) = self.over_quota(&held, owner, state.as_deref(), &kept).await {
            out.add_note(&note);
            state = None;
            kept = held.record.files.clone();
        }
        let saving = tracing::info_span!(target: "toolgate::trace", "session save");
        out.session = Some(self.close(held, state, &kept).instrument(saving).await?);
        Ok(out)
    }

    /// The note for a save that would take the caller's sessions, or all,
    /// past a quota; `None` when it fits, shrinks, or the store cannot
    /// count (a store failure here saves anyway: the bound is soft).
    async fn over_quota(
        &self,
        held: &Held,
        owner: &str,
        state: Option<&[u8]>,
        kept: &Files,
    ) -> Option<String> {
        if !self.quotas.any() {
            return None;
        }
        let old = stored_size(&held.record.state, &held.record.files);
        let new = stored_size(state.unwrap_or(&held.record.state), kept);
        if new <= old {
            return None;
        }
        let usage = match self.store.usage(owner, crate::clock::unix_ms()).await {
            Ok(u) => u?,
            Err(e) => {
                tracing::warn!(error = %crate::logging::field(&e), "session usage unreadable; saving without the quota check");
                return None;
            }
        };
        self.quotas.save_note(&usage, old, new)
    }

    /// Runs `work` while keeping `held` held: the hold is moved on a third
    /// of its length before it would end, until `work` is done. A runtime
    /// whose timer does not wait (none set) keeps the first hold.
    async fn holding<T>(
        &self,
        held: &Held,
        timeout: Duration,
        work: impl std::future::Future<Output = T>,
    ) -> T {
        let hold = hold_for(timeout);
        let every = hold / 3;
        let renew = async {
            loop {
                let slept = crate::clock::Instant::now();
                (self.nap)(every).await;
                if slept.elapsed() < every / 2 {
                    break;
                }
                let until = crate::clock::unix_ms() + hold.as_millis() as i64;
                match self.store.extend(&held.id, &held.token, until).await {
                    Ok(true) => {}
                    // Taken over: `close` says so.
                    Ok(false) => break,
                    Err(e) => tracing::warn!(
                        error = %crate::logging::field(&e),
                        "a session's hold could not be renewed; trying again"
                    ),
                }
            }
            std::future::pending::<Infallible>().await
        };
        match select(pin!(work), pin!(renew)).await {
            Either::Left((done, _)) => done,
            Either::Right((never, _)) => match never {},
        }
    }

    /// Replaces the timer a call waits for its session on (the Worker's).
    pub fn with_nap(mut self, nap: crate::clarify::Nap) -> Self {
        self.nap = nap;
        self
    }

    fn expires_at(&self, now: i64) -> i64 {
        now + self.idle.as_millis() as i64
    }

    /// Takes the session `arg` names for a call of at most `timeout`, by
    /// `owner` (the caller's identity, "" when none). A session busy with
    /// another call is waited for, as long as that call may run.
    pub async fn open(
        &self,
        arg: &SessionArg,
        owner: &str,
        timeout: Duration,
    ) -> Result<Held, ToolError> {
        let token = crate::clarify::new_id()?;
        let hold = hold_for(timeout);
        let lease = |now: i64| Lease {
            token: token.clone(),
            until: now + hold.as_millis() as i64,
        };
        let id = match arg {
            SessionArg::New => {
                let id = crate::clarify::new_id()?;
                let now = crate::clock::unix_ms();
                self.admit_new(owner, now).await?;
                self.store
                    .create(&id, owner, &lease(now), self.expires_at(now))
                    .await
                    .map_err(store_error)?;
                return Ok(Held {
                    id,
                    record: Record::default(),
                    token,
                });
            }
            SessionArg::Resume(id) => id,
        };
        let give_up = crate::clock::Instant::now() + timeout + WAIT_MARGIN;
        let mut pause = Duration::from_millis(20);
        loop {
            let now = crate::clock::unix_ms();
            match self
                .store
                .claim(id, owner, &lease(now), now)
                .await
                .map_err(store_error)?
            {
                Claim::Held(record) => {
                    return Ok(Held {
                        id: id.clone(),
                        record,
                        token,
                    });
                }
                Claim::NotFound => return Err(no_session(id)),
                Claim::Expired => {
                    return Err(ToolError::new(
                        ErrorCode::Expired,
                        format!(
                            "Session {id:?} expired after {}s without a call",
                            self.idle.as_secs()
                        ),
                    ));
                }
                Claim::Busy if crate::clock::Instant::now() + pause < give_up => {
                    (self.nap)(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(250));
                }
                Claim::Busy => {
                    return Err(ToolError::new(
                        ErrorCode::Conflict,
                        format!("Session {id:?} is still busy with another call; try again"),
                    ));
                }
            }
        }
    }

    /// Whether `owner` may start a session now ([`Quotas::admit_new`]).
    async fn admit_new(&self, owner: &str, now: i64) -> Result<(), ToolError> {
        if !self.quotas.any() {
            return Ok(());
        }
        match self.store.usage(owner, now).await.map_err(store_error)? {
            Some(usage) => self.quotas.admit_new(&usage, &idle_words(self.idle)),
            None => Ok(()),
        }
    }

    /// Ends the call: stores its state (`None` keeps the one from before)
    /// and files, and gives the session back.
    pub async fn close(
        &self,
        held: Held,
        state: Option<Vec<u8>>,
        files: &Files,
    ) -> Result<String, ToolError> {
        let expires_at = self.expires_at(crate::clock::unix_ms());
        let state = state.unwrap_or(held.record.state);
        let kept = self
            .store
            .save(&held.id, &held.token, &state, files, expires_at)
            .await
            .map_err(store_error)?;
        if !kept {
            return Err(ToolError::internal(format!(
                "session {:?} was taken over while this call ran (it outlived its hold); \
                 this call's state was not saved",
                held.id
            )));
        }
        Ok(held.id)
    }

    /// Gives the session back unchanged (the call failed before a result).
    pub async fn abandon(&self, held: Held) {
        if let Err(e) = self.store.release(&held.id, &held.token).await {
            tracing::warn!(error = %e, "a session could not be released; its hold ends by itself");
        }
    }
}

fn store_error(e: String) -> ToolError {
    tracing::error!(error = %crate::logging::field(&e), "session store failure");
    ToolError::internal(format!("session store unavailable: {e}"))
}

/// A session's idle life in words: `30 minutes`, `1 hour`, `90 seconds`.
fn idle_words(idle: Duration) -> String {
    let secs = idle.as_secs();
    let (n, unit) = match secs {
        s if s % 3600 == 0 && s > 0 => (s / 3600, "hour"),
        s if s % 60 == 0 && s > 0 => (s / 60, "minute"),
        s => (s, "second"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests;
