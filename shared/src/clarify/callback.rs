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

/// Step Functions through the AWS SDK (`AWS_ENDPOINT_URL` points it at moto
/// in tests).
#[cfg(feature = "aws")]
pub struct StepFunctions {
    client: aws_sdk_sfn::Client,
}

#[cfg(feature = "aws")]
impl StepFunctions {
    /// A client from the environment's AWS config (region, credentials, and
    /// `AWS_ENDPOINT_URL` when set).
    pub async fn from_env() -> Self {
        let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Self {
            client: aws_sdk_sfn::Client::new(&conf),
        }
    }
}

/// A Step Functions error as a `CallbackError`, retried unless the token is
/// gone for good (a macro: each operation has its own error type).
#[cfg(feature = "aws")]
macro_rules! callback_error {
    ($op:literal, $e:expr) => {{
        let e = $e;
        let retry = !e.as_service_error().is_some_and(|se| {
            se.is_invalid_token() || se.is_task_does_not_exist() || se.is_task_timed_out()
        });
        CallbackError {
            retry,
            message: format!(
                concat!($op, ": {}"),
                aws_sdk_sfn::error::DisplayErrorContext(e)
            ),
        }
    }};
}

#[cfg(feature = "aws")]
impl TaskCallback for StepFunctions {
    fn success<'a>(&'a self, token: &'a str, output: &'a Value) -> CallbackFuture<'a> {
        Box::pin(async move {
            self.client
                .send_task_success()
                .task_token(token)
                .output(output.to_string())
                .send()
                .await
                .map(|_| ())
                .map_err(|e| callback_error!("SendTaskSuccess", e))
        })
    }

    fn failure<'a>(&'a self, token: &'a str, error: &'a str, cause: &'a str) -> CallbackFuture<'a> {
        Box::pin(async move {
            self.client
                .send_task_failure()
                .task_token(token)
                .error(error)
                .cause(cause)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| callback_error!("SendTaskFailure", e))
        })
    }
}
