#![deny(missing_docs)]
//! Toolgate on AWS Lambda: the handler every function binary runs
//! ([`main`], [`Function`]), the envelope of direct invocations, and the
//! gateway's tools of other functions ([`WithPeers`]) and the tasks it
//! runs in them ([`WithTasks`]).

use std::sync::Arc;

use toolgate_shared::config::Config;
use toolgate_shared::toolset::Toolset;

pub mod envelope;
mod function;
pub mod peers;
pub mod tasks;

pub use function::*;

/// The tools of other Lambda functions, for the gateway.
pub trait WithPeers: Sized {
    /// The tools of other Lambda functions (`TOOLGATE_PEER_FUNCTIONS`),
    /// listed now and forwarded to through the Invoke API.
    fn with_peers(self, cfg: &Config) -> impl Future<Output = Result<Self, String>> + Send;
}

impl WithPeers for Toolset {
    async fn with_peers(mut self, cfg: &Config) -> Result<Self, String> {
        if cfg.peer_functions.is_empty() {
            return Ok(self);
        }
        let peers = Arc::new(
            peers::PeerTools::start(
                &cfg.peer_functions,
                std::time::Duration::from_secs(cfg.cloud.ttl_secs),
            )
            .await,
        );
        self.registry.add_source(peers.clone());
        self.add_health("peers", Arc::new(move || peers.health()));
        Ok(self)
    }
}

/// The tools of other Lambda functions for python-execute's scripts.
pub trait WithScriptPeers: Sized {
    /// Code mode on AWS: a script's `tools.<name>` reaches the tools of
    /// the functions in `TOOLGATE_PEER_FUNCTIONS` (this one left out)
    /// through the Invoke API, as the gateway's calls do. Listed when a
    /// script first needs them; never served by this function's own
    /// transports. Nothing when code mode is off.
    fn with_script_peers(self, cfg: &Config) -> impl Future<Output = Self> + Send;
}

impl WithScriptPeers for Toolset {
    async fn with_script_peers(mut self, cfg: &Config) -> Self {
        let own = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_default();
        let peers: Vec<String> = cfg
            .peer_functions
            .iter()
            .filter(|f| tasks::runner_name(f) != own)
            .cloned()
            .collect();
        if !cfg.code_mode.enabled || peers.is_empty() {
            return self;
        }
        let ttl = std::time::Duration::from_secs(cfg.cloud.ttl_secs);
        let peers = Arc::new(peers::PeerTools::for_scripts(&peers, ttl).await);
        self.registry.add_source(peers.clone());
        self
    }
}

/// Long calls as tasks, run in the tools' functions.
pub trait WithTasks: Sized {
    /// Tasks of the peer functions' tools (call [`WithPeers::with_peers`]
    /// first), kept in `TOOLGATE_TASKS_TABLE`; none when it is not set.
    fn with_lambda_tasks(self, cfg: &Config) -> impl Future<Output = Result<Self, String>> + Send;
}

impl WithTasks for Toolset {
    async fn with_lambda_tasks(self, cfg: &Config) -> Result<Self, String> {
        let Some(table) = &cfg.server.tasks_table else {
            return Ok(self);
        };
        let rows = self
            .backends_for("TOOLGATE_TASKS_TABLE")?
            .task_rows(table)
            .await?;
        let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let host = tasks::LambdaTasks::new(
            rows,
            aws_sdk_lambda::Client::new(&conf),
            self.registry.clone(),
            std::time::Duration::from_millis(cfg.server.tasks_after_ms),
        );
        Ok(self.with_tasks(Arc::new(host)))
    }
}
