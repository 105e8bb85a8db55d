#![deny(missing_docs)]
//! Toolgate on AWS: clarifications and sessions in DynamoDB, inventories
//! and secrets in SSM Parameter Store, workflow callbacks to Step Functions,
//! notifications to SNS. [`Aws`] hands them to a runtime as its
//! [`Backends`].

use std::sync::Arc;

use toolgate_shared::backends::{BackendFuture, Backends};
use toolgate_shared::clarify::notify::{Channel, Listener};
use toolgate_shared::clarify::{ClarifyStore, TaskCallback};
use toolgate_shared::cloud::AccountSource;
use toolgate_shared::sessions::store::SessionStore;
use toolgate_shared::ssh::inventory::ServerSource;
use toolgate_shared::tasks::rows::TaskRows;

pub mod clarify_table;
mod dynamo;
pub mod session_table;
pub mod sns;
pub mod ssm;
pub mod ssm_accounts;
pub mod ssm_servers;
pub mod step_functions;
pub mod task_table;

/// AWS, with clients from the environment's configuration (region,
/// credentials, and `AWS_ENDPOINT_URL` when set), made when first used.
#[derive(Clone, Copy, Default)]
pub struct Aws;

impl Aws {
    /// Every AWS service a runtime may be configured to use.
    pub fn backends() -> Arc<dyn Backends> {
        Arc::new(Self)
    }

    /// DynamoDB's session table alone: python-execute's, whose zip must
    /// not carry SSM, Step Functions or SNS clients it never uses.
    pub fn sessions_only() -> Arc<dyn Backends> {
        Arc::new(SessionsOnly)
    }
}

impl Backends for Aws {
    fn clarify_store<'a>(
        &'a self,
        table: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn ClarifyStore>, String>> {
        Box::pin(async move {
            Ok(Arc::new(clarify_table::DynamoStore::from_env(table).await)
                as Arc<dyn ClarifyStore>)
        })
    }

    fn task_callback(&self) -> BackendFuture<'_, Result<Arc<dyn TaskCallback>, String>> {
        Box::pin(async {
            Ok(Arc::new(step_functions::StepFunctions::from_env().await) as Arc<dyn TaskCallback>)
        })
    }

    fn session_store<'a>(
        &'a self,
        table: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn SessionStore>, String>> {
        SessionsOnly.session_store(table)
    }

    fn server_source<'a>(
        &'a self,
        prefix: &'a str,
    ) -> BackendFuture<'a, Result<Box<dyn ServerSource>, String>> {
        Box::pin(async move {
            Ok(Box::new(ssm_servers::SsmServers::from_env(prefix).await) as Box<dyn ServerSource>)
        })
    }

    fn account_source<'a>(
        &'a self,
        prefix: &'a str,
    ) -> BackendFuture<'a, Result<Box<dyn AccountSource>, String>> {
        Box::pin(async move {
            Ok(Box::new(ssm_accounts::SsmAccounts::from_env(prefix).await)
                as Box<dyn AccountSource>)
        })
    }

    fn secret<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Result<String, String>> {
        Box::pin(async move { ssm::secure_string(&ssm::client_from_env().await, name).await })
    }

    fn topic<'a>(
        &'a self,
        listener: Listener,
        topic: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn Channel>, String>> {
        Box::pin(async move {
            Ok(Arc::new(sns::Sns::from_env(listener, topic.to_owned()).await) as Arc<dyn Channel>)
        })
    }

    fn task_rows<'a>(
        &'a self,
        table: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn TaskRows>, String>> {
        task_rows(table)
    }
}

/// [`Aws::sessions_only`]: the rest is refused, naming what was asked for.
struct SessionsOnly;

fn only_sessions<T>(what: &str) -> BackendFuture<'static, Result<T, String>>
where
    T: Send + 'static,
{
    let message = format!("{what}: this function reaches only its session table in AWS");
    Box::pin(async move { Err(message) })
}

impl Backends for SessionsOnly {
    fn clarify_store<'a>(
        &'a self,
        _: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn ClarifyStore>, String>> {
        only_sessions("a clarify table")
    }

    fn task_callback(&self) -> BackendFuture<'_, Result<Arc<dyn TaskCallback>, String>> {
        only_sessions("Step Functions")
    }

    fn session_store<'a>(
        &'a self,
        table: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn SessionStore>, String>> {
        Box::pin(async move {
            Ok(
                Arc::new(session_table::DynamoSessions::from_env(table).await)
                    as Arc<dyn SessionStore>,
            )
        })
    }

    fn server_source<'a>(
        &'a self,
        _: &'a str,
    ) -> BackendFuture<'a, Result<Box<dyn ServerSource>, String>> {
        only_sessions("an SSM server inventory")
    }

    fn account_source<'a>(
        &'a self,
        _: &'a str,
    ) -> BackendFuture<'a, Result<Box<dyn AccountSource>, String>> {
        only_sessions("an SSM account inventory")
    }

    fn secret<'a>(&'a self, _: &'a str) -> BackendFuture<'a, Result<String, String>> {
        only_sessions("a secret in SSM")
    }

    fn topic<'a>(
        &'a self,
        _: Listener,
        _: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn Channel>, String>> {
        only_sessions("an SNS topic")
    }

    fn task_rows<'a>(
        &'a self,
        table: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn TaskRows>, String>> {
        task_rows(table)
    }
}

/// The task rows in `table` (the clarify table): every function that runs
/// or starts tasks, python-execute's too.
fn task_rows(table: &str) -> BackendFuture<'_, Result<Arc<dyn TaskRows>, String>> {
    Box::pin(async move {
        Ok(Arc::new(task_table::TaskTable::from_env(table).await) as Arc<dyn TaskRows>)
    })
}
