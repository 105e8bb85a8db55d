//! The SSH tools' service: the inventory, the pool, one command per call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::Instrument;

use crate::connection::Pool;
use crate::exec;
use toolgate_shared::error::{ErrorCode, ToolError};
use toolgate_shared::ssh::inventory::{Inventory, Server};

/// The SSH tools' limits, from the configuration (`[ssh]`,
/// `TOOLGATE_SSH_*`).
#[derive(Clone, Debug)]
pub struct SshSettings {
    /// The largest `timeout` a call may ask for.
    pub max_timeout: Duration,
    /// Time allowed for the TCP connect and the SSH handshake.
    pub connect_timeout: Duration,
    /// Output bytes read before a flooding command is stopped.
    pub max_output_bytes: u64,
    /// The approval rule for every server (`[ssh] approve_preset`).
    pub approve: toolgate_shared::ssh::policy::Approve,
    /// Where `approve` applies: servers with one of these tags; empty:
    /// every server.
    pub approve_tags: Vec<String>,
}

impl SshSettings {
    /// `Some(why)` when `command` on `server` needs a person's approval,
    /// by the server's own policy or by the rule for all servers.
    pub fn needs_approval(&self, server: &Server, command: &str) -> Option<String> {
        server.policy.needs_approval(command).or_else(|| {
            let applies = self.approve_tags.is_empty()
                || server.tags.iter().any(|t| self.approve_tags.contains(t));
            if applies {
                self.approve.needs(command)
            } else {
                None
            }
        })
    }
}

/// What a call asked for, after validation.
pub struct Request<'a> {
    /// The server to run on, in the caller's scope.
    pub server: &'a Server,
    /// The command line, which the remote user's login shell runs.
    pub command: &'a str,
    /// The call's whole time: waiting for a session, connecting, and the
    /// command's run.
    pub timeout: Duration,
    /// The call's cancellation, when it runs as a task: the command is
    /// signalled TERM, then KILL.
    pub cancel: Option<toolgate_shared::tasks::Cancel>,
}

/// What `list_servers` and `ssh_run` share: the server inventory and the
/// connection pool.
pub struct Ssh {
    inventory: Inventory,
    pool: Pool,
    /// The limits calls are held to.
    pub settings: SshSettings,
}

impl Ssh {
    /// The service over `inventory`, with no connection open yet.
    pub fn new(inventory: Inventory, settings: SshSettings) -> Self {
        Self {
            pool: Pool::new(settings.connect_timeout),
            inventory,
            settings,
        }
    }

    /// The servers this caller may use: the inventory, narrowed by scope.
    pub async fn visible(&self, scope: Option<&[String]>) -> Result<Vec<Server>, ToolError> {
        let all = self.servers().await?;
        Ok(all
            .values()
            .filter(|s| scope.is_none_or(|sc| sc.iter().any(|n| n == &s.name)))
            .cloned()
            .collect())
    }

    async fn servers(&self) -> Result<Arc<BTreeMap<String, Server>>, ToolError> {
        self.inventory.servers().await.map_err(|e| {
            ToolError::new(
                ErrorCode::UpstreamUnavailable,
                format!("the server inventory cannot be read: {e}"),
            )
        })
    }

    /// The named server, if the caller may use it. Out of scope is
    /// `forbidden` whether or not the server exists, so a scope does
    /// not reveal the rest of the inventory.
    pub async fn resolve(&self, name: &str, scope: Option<&[String]>) -> Result<Server, ToolError> {
        if let Some(sc) = scope
            && !sc.iter().any(|n| n == name)
        {
            return Err(ToolError::new(
                ErrorCode::Forbidden,
                format!("Server {name:?} is not in this caller's scope"),
            ));
        }
        let all = self.servers().await?;
        all.get(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = all
                .keys()
                .filter(|n| scope.is_none_or(|sc| sc.iter().any(|s| s == *n)))
                .map(String::as_str)
                .collect();
            ToolError::invalid_input(if known.is_empty() {
                format!("Unknown server {name:?}: no servers are available to this caller")
            } else {
                format!("Unknown server {name:?}; available: {}", known.join(", "))
            })
        })
    }

    /// Connects (or reuses), runs, and reports.
    pub async fn run(&self, req: Request<'_>) -> Result<(exec::Outcome, bool), ToolError> {
        let started = Instant::now();
        // The wait for a session counts against the call's own time.
        let session = self
            .pool
            .open(req.server, req.timeout.max(self.settings.connect_timeout))
            .instrument(tracing::info_span!(
                target: "toolgate::trace",
                "ssh connect",
                server = %req.server.name,
                otel.kind = "client",
            ))
            .await?;
        let reused = session.reused;
        // Whole seconds for the remote `timeout`: a connect of a few ms
        // must not turn "2 s" into "1 s".
        let left = req.timeout.saturating_sub(started.elapsed());
        let left = Duration::from_secs(left.as_secs_f64().ceil() as u64).min(req.timeout);
        let outcome = exec::run(
            session.channel,
            req.command,
            left.max(Duration::from_secs(1)),
            self.settings.max_output_bytes,
            req.cancel.clone(),
        )
        .instrument(tracing::info_span!(
            target: "toolgate::trace",
            "ssh exec",
            server = %req.server.name,
            reused,
            otel.kind = "client",
        ))
        .await
        .map_err(|e| {
            ToolError::new(
                ErrorCode::UpstreamUnavailable,
                format!("server {:?}: {e}", req.server.name),
            )
        })?;
        Ok((outcome, reused))
    }

    /// `toolgate check`'s view: each server connected to (its host key
    /// checked against the pin, the login tried) within the connect
    /// timeout; nothing is run on it.
    pub async fn probe(&self) -> Vec<toolgate_shared::check::Finding> {
        use toolgate_shared::check::Finding;
        let servers = match self.servers().await {
            Ok(s) => s,
            Err(e) => {
                return vec![Finding::of(
                    format!("ssh inventory {}", self.inventory.describe()),
                    Err(e.message),
                )];
            }
        };
        if servers.is_empty() {
            return vec![Finding::of(
                "ssh inventory",
                Err(format!("{} lists no server", self.inventory.describe())),
            )];
        }
        let mut found = Vec::new();
        for server in servers.values() {
            let started = Instant::now();
            let opened = self
                .pool
                .open(server, self.settings.connect_timeout)
                .await
                .map(|_| {
                    format!(
                        "{}: host key {} matches its pin, logged in ({} ms)",
                        server.address(),
                        server.host_key.fingerprint(),
                        started.elapsed().as_millis()
                    )
                })
                .map_err(|e| e.message);
            found.push(Finding::of(format!("ssh {}", server.name), opened));
        }
        found
    }

    /// `/healthz`'s SSH part: where the inventory comes from, and the open
    /// connections.
    pub fn health(&self) -> serde_json::Value {
        serde_json::json!({
            "inventory": self.inventory.describe(),
            "connections": self.pool.open_connections(),
        })
    }

    /// Closes every pooled connection, at shutdown.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}
