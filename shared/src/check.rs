//! What `toolgate check` reports: each component of a tool set says what it
//! looked at (a server connected to, an account listed, a script run) and
//! what it found, so the command names no tool and a new component brings
//! its own checks (`Toolset::add_check`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;

/// How one thing fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Works as configured.
    Ok,
    /// Works, but not as the operator may expect (a wall off, a value
    /// clamped).
    Warn,
    /// Does not work: a call that needs it fails.
    Fail,
}

/// One thing looked at: `what` (a component and its subject, such as
/// `ssh web1`) and what was found, in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The component and subject.
    pub what: String,
    /// How it fared.
    pub status: Status,
    /// What was found, or why it failed and what to check.
    pub detail: String,
}

impl Finding {
    /// A finding of `status`.
    pub fn new(what: impl Into<String>, status: Status, detail: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            status,
            detail: detail.into(),
        }
    }

    /// `Ok` when `result` is, else `Fail` with its error.
    pub fn of(what: impl Into<String>, result: Result<String, String>) -> Self {
        match result {
            Ok(detail) => Self::new(what, Status::Ok, detail),
            Err(why) => Self::new(what, Status::Fail, why),
        }
    }
}

/// One component's checks, run when `toolgate check` asks.
pub type CheckFn =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Vec<Finding>> + Send>> + Send + Sync>;
