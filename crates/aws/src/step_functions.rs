//! Completing a Step Functions task that waits on a clarification
//! (`.waitForTaskToken`) through the AWS SDK.

use serde_json::Value;
use toolgate_shared::clarify::callback::{CallbackError, CallbackFuture, TaskCallback};

/// Step Functions through the AWS SDK (`AWS_ENDPOINT_URL` points it at moto
/// in tests).
pub struct StepFunctions {
    client: aws_sdk_sfn::Client,
}

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
