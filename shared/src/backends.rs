//! What a cloud keeps outside the process, named by a table, a prefix, a
//! topic or a parameter in the configuration. The AWS crate
//! (`toolgate-aws`) gives DynamoDB, SSM, Step Functions and SNS; a runtime
//! built without it refuses those settings with an error naming the setting.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::clarify::notify::{Channel, Listener};
use crate::clarify::{ClarifyStore, TaskCallback};
use crate::cloud::AccountSource;
use crate::sessions::store::SessionStore;
#[cfg(not(target_arch = "wasm32"))]
use crate::ssh::inventory::ServerSource;

/// What a [`Backends`] method returns.
pub type BackendFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The stores, sources and secrets of one cloud. A backend that holds
/// only some (a function that needs one table) refuses the others with an
/// error saying so.
pub trait Backends: Send + Sync {
    /// Clarifications and approvals kept in `table`.
    fn clarify_store<'a>(
        &'a self,
        table: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn ClarifyStore>, String>>;
    /// Completes the workflow tasks that wait on a clarification.
    fn task_callback(&self) -> BackendFuture<'_, Result<Arc<dyn TaskCallback>, String>>;
    /// python.execute's sessions kept in `table`.
    fn session_store<'a>(
        &'a self,
        table: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn SessionStore>, String>>;
    /// The SSH servers listed under `prefix` (natively: the Worker has no
    /// SSH tools).
    #[cfg(not(target_arch = "wasm32"))]
    fn server_source<'a>(
        &'a self,
        prefix: &'a str,
    ) -> BackendFuture<'a, Result<Box<dyn ServerSource>, String>>;
    /// The cloud accounts listed under `prefix`.
    fn account_source<'a>(
        &'a self,
        prefix: &'a str,
    ) -> BackendFuture<'a, Result<Box<dyn AccountSource>, String>>;
    /// The secret in parameter `name`, decrypted; an error names the
    /// parameter, never a value.
    fn secret<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Result<String, String>>;
    /// A notification channel publishing to `topic`.
    fn topic<'a>(
        &'a self,
        listener: Listener,
        topic: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn Channel>, String>>;
    /// Tasks kept in `table` (runtimes whose calls run apart from their
    /// start: AWS Lambda).
    fn task_rows<'a>(
        &'a self,
        table: &'a str,
    ) -> BackendFuture<'a, Result<Arc<dyn crate::tasks::rows::TaskRows>, String>> {
        let message = format!("a task table ({table}): this runtime keeps no task tables");
        Box::pin(async move { Err(message) })
    }
}

/// The backends a runtime has: `None` in a build without any.
pub type MaybeBackends = Option<Arc<dyn Backends>>;

/// The error for a setting that names something only a cloud holds, in a
/// build that has none.
pub fn none_for(setting: &str) -> String {
    format!("{setting} is set, but this build has no AWS support (the toolgate-aws crate)")
}
