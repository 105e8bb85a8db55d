//! Completing a Step Functions task that waits on a clarification
//! (`.waitForTaskToken`): `SendTaskSuccess` with the answer, or
//! `SendTaskFailure` with `Clarify.Expired` / `Clarify.Cancelled`.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

pub type CallbackFuture<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

pub trait TaskCallback: Send + Sync {
    fn success<'a>(&'a self, token: &'a str, output: &'a Value) -> CallbackFuture<'a>;
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
    pub async fn from_env() -> Self {
        let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Self {
            client: aws_sdk_sfn::Client::new(&conf),
        }
    }
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
                .map_err(|e| {
                    format!(
                        "SendTaskSuccess: {}",
                        aws_sdk_sfn::error::DisplayErrorContext(e)
                    )
                })
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
                .map_err(|e| {
                    format!(
                        "SendTaskFailure: {}",
                        aws_sdk_sfn::error::DisplayErrorContext(e)
                    )
                })
        })
    }
}
