//! Long calls as tasks on AWS Lambda. The gateway ([`LambdaTasks`]) writes
//! the task's row in the clarify table and invokes the tool's function
//! asynchronously (`InvocationType: Event`) with the task's id in the
//! envelope; that function ([`run`]) takes the row up once, runs the call
//! under its own timeout (not API Gateway's 30 s), watches the row for a
//! cancel, and writes the outcome. Any gateway instance then reads the row:
//! nothing waits in memory, so a task outlives the request that started it
//! and is read wherever the next request lands.
//!
//! Lambda delivers an asynchronous event at least once: a run goes on only
//! if its conditional start wins, so a second delivery runs nothing (the
//! template also turns Lambda's retries off).

mod host;
pub(crate) mod run;

pub use host::LambdaTasks;

use std::time::Duration;

/// A task no function took up within this long ended: Lambda's queue held
/// it (throttled, or the function cannot start). A late delivery runs
/// nothing.
pub const START_WINDOW: Duration = Duration::from_secs(300);

/// A started task still working this long after its function's own
/// deadline ended: the function was stopped without writing its outcome
/// (its memory, a crash).
pub const STALE_AFTER: Duration = Duration::from_secs(30);

/// The largest outcome a row keeps, as JSON (DynamoDB's items stop at
/// 400 KB): a larger result leaves its files out, as a direct call's
/// does, or is refused as too large.
pub const OUTCOME_BYTES: usize = 350_000;

/// How often a running task's function reads its row for a cancel.
pub const CANCEL_POLL: Duration = Duration::from_secs(1);

/// The name a function's runs are kept under: its name, from a name or an
/// ARN (`arn:aws:lambda:…:function:NAME[:QUALIFIER]`), as the function
/// itself knows it (`AWS_LAMBDA_FUNCTION_NAME`) and its role's rights
/// name it.
pub fn runner_name(function: &str) -> &str {
    match function.split_once(":function:") {
        Some((_, rest)) => rest.split(':').next().unwrap_or(rest),
        None => function,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runner_is_named_as_the_function_knows_itself() {
        assert_eq!(runner_name("tg-ssh"), "tg-ssh");
        assert_eq!(
            runner_name("arn:aws:lambda:eu-west-1:123456789012:function:tg-ssh"),
            "tg-ssh"
        );
        assert_eq!(
            runner_name("arn:aws:lambda:eu-west-1:123456789012:function:tg-ssh:live"),
            "tg-ssh"
        );
    }
}
