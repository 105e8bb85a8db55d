#![deny(missing_docs)]
//! The SSH tools (docs/contracts.md#list_servers-and-ssh_run):
//! `list_servers` and `ssh_run` over pooled connections to pinned hosts,
//! one command per call under a remote `timeout`, and how a runtime serves
//! them ([`WithSsh`]). The inventory they read is the configuration's
//! (`toolgate_shared::ssh`).
//!
//! - `service`: the inventory, the pool and the limits behind both tools;
//! - `connection`: the connection pool; `exec`: one command on a channel.

use std::sync::Arc;
use std::time::Duration;

use toolgate_shared::config::Config;
use toolgate_shared::ssh::inventory::{ConfigServers, Inventory, ServerSource};
use toolgate_shared::tool::ToolSpec;
use toolgate_shared::toolset::Toolset;

pub mod connection;
pub mod exec;
pub mod list_servers;
mod service;
pub mod ssh_run;

pub use service::{Request, Ssh, SshSettings};

/// The tools' specs as a server built from `cfg` lists them, without
/// connecting anywhere: none when no server is configured.
pub fn specs(cfg: &Config) -> Vec<ToolSpec> {
    if !cfg.ssh.is_configured() {
        return Vec::new();
    }
    vec![
        list_servers::spec(),
        ssh_run::spec(Duration::from_secs(cfg.ssh.max_timeout_secs)),
    ]
}

/// The SSH tools on a runtime's tool set.
pub trait WithSsh: Sized {
    /// `list_servers` and `ssh_run`, when any server is configured
    /// (`[servers.*]` tables, or `TOOLGATE_SSH_SSM_PREFIX` on a set with
    /// backends).
    fn with_ssh(self, cfg: &Config) -> impl Future<Output = Result<Self, String>> + Send;
}

impl WithSsh for Toolset {
    async fn with_ssh(mut self, cfg: &Config) -> Result<Self, String> {
        let c = &cfg.ssh;
        if !c.is_configured() {
            return Ok(self);
        }
        let source: Box<dyn ServerSource> = match &c.ssm_prefix {
            Some(prefix) => {
                self.backends_for("TOOLGATE_SSH_SSM_PREFIX")?
                    .server_source(prefix)
                    .await?
            }
            None => Box::new(ConfigServers(c.servers().map_err(|e| e.to_string())?)),
        };
        let inventory = Inventory::new(source, Duration::from_secs(c.ttl_secs));
        // Read once now (Lambda init), so a broken inventory shows at start.
        match inventory.servers().await {
            Ok(s) => {
                tracing::info!(source = %inventory.describe(), servers = s.len(), "SSH inventory loaded")
            }
            Err(e) => {
                tracing::error!(source = %inventory.describe(), error = %e, "SSH inventory unreadable; will retry per call")
            }
        }
        let ssh = Arc::new(Ssh::new(
            inventory,
            SshSettings {
                max_timeout: Duration::from_secs(c.max_timeout_secs),
                connect_timeout: Duration::from_secs(c.connect_timeout_secs),
                max_output_bytes: c.max_output_bytes,
                approve: toolgate_shared::ssh::policy::Approve::compile(
                    c.approve_preset.as_deref(),
                    &[],
                )?,
                approve_tags: c.approve_tags.clone(),
            },
        ));
        self.registry
            .add(Arc::new(list_servers::ListServers::new(ssh.clone())))?;
        let approvals = self.gate_approvals(cfg).await?;
        self.registry
            .add(Arc::new(ssh_run::SshRun::new(ssh.clone(), approvals)))?;
        let health = ssh.clone();
        self.add_health("ssh", Arc::new(move || health.health()));
        let probe = ssh.clone();
        self.add_check(Arc::new(move || {
            let ssh = probe.clone();
            Box::pin(async move { ssh.probe().await })
        }));
        self.add_closer(Box::new(move || {
            let ssh = ssh.clone();
            Box::pin(async move { ssh.close().await })
        }));
        Ok(self)
    }
}
