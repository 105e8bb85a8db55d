//! Completing a Step Functions task that waits on a clarification
//! (`.waitForTaskToken`): `SendTaskSuccess` with the answer, or
//! `SendTaskFailure` with `Clarify.Expired` / `Clarify.Cancelled`.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

/// The error a waiting task fails with when its clarification expires.
pub const EXPIRED: &str = "Clarify.Expired";
/// The error a waiting task fails with when its clarification is cancelled.
pub const CANCELLED: &str = "Clarify.Cancelled";

/// What a [`TaskCallback`] returns: done, or why the callback did not land.
pub type CallbackFuture<'a> = Pin<Box<dyn Future<Output = Result<(), CallbackError>> + Send + 'a>>;

/// A callback that did not land, and whether sending it again could help
/// (a throttle or a network error could; a token Step Functions no longer
/// knows could not).
#[derive(Debug)]
pub struct CallbackError {
    /// Whether sending it again could help.
    pub retry: bool,
    /// What went wrong, for the log.
    pub message: String,
}

/// Completes or fails the Step Functions task a clarification's workflow waits
/// on.
pub trait TaskCallback: Send + Sync {
    /// Completes the task whose token is `token`, with `output` (the answer,
    /// the choice and the id) as its result.
    fn success<'a>(&'a self, token: &'a str, output: &'a Value) -> CallbackFuture<'a>;
    /// Fails the task whose token is `token`: `error` names the failure
    /// (`Clarify.Expired`, `Clarify.Cancelled`), `cause` says it in words.
    fn failure<'a>(&'a self, token: &'a str, error: &'a str, cause: &'a str) -> CallbackFuture<'a>;
}
