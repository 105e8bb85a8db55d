//! Lambda function serving clarify and the answer routes; clarifications
//! live in the DynamoDB table `TOOLGATE_CLARIFY_TABLE`, and answers complete
//! waiting Step Functions tasks.

use std::process::ExitCode;

fn main() -> ExitCode {
    toolgate_lambda::main(toolgate_aws::Aws::backends(), |cfg, set| async move {
        if cfg.clarify.table.is_none() {
            return Err("TOOLGATE_CLARIFY_TABLE is not set (the DynamoDB table)".into());
        }
        if cfg.clarify.public_url.is_none() {
            return Err(
                "TOOLGATE_PUBLIC_URL is not set (the API's base URL, for answer_url)".into(),
            );
        }
        set.with_clarify(&cfg).await
    })
}
