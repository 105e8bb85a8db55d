//! Assembles the tools one runtime serves, with what `/healthz` reports about
//! them. Every runtime (local server, each Lambda function) builds its set
//! here, so a tool is wired up the same way everywhere.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::approvals::Approvals;
use crate::cloud::account::ConfigAccounts;
use crate::cloud::{CloudSettings, CloudTools};
use crate::config::Config;
use crate::http::{AppState, HealthFn};
use crate::registry::Registry;
#[cfg(feature = "python")]
use crate::sandbox::{Sandbox, SandboxConfig};
#[cfg(feature = "python")]
use crate::tools::python_execute::PythonExecute;

type HealthPart = Arc<dyn Fn() -> Value + Send + Sync>;

/// The tools one runtime serves and what `/healthz` reports about them, built
/// up by the `with_*` methods.
#[derive(Default)]
pub struct Toolset {
    /// The tools, as the adapters look them up.
    pub registry: Registry,
    health: Vec<(&'static str, HealthPart)>,
    cloud: Option<Arc<CloudTools>>,
    /// The clarify service: questions, and the approvals kept with them.
    clarify_service: Option<Arc<crate::clarify::Clarify>>,
    /// `clarify` is served here (the tool and its answer routes).
    clarify: Option<Arc<crate::clarify::Clarify>>,
    /// Where gated calls wait for approvers, once set up.
    approvals: Option<Arc<Approvals>>,
    /// The approvers' routes, where clarify is served.
    approval_routes: Option<crate::approvals::http::Routes>,
    long_running: bool,
    /// What the protected-resource metadata says.
    resource: crate::http::resource::ProtectedResource,
    #[cfg(feature = "ssh")]
    ssh: Option<Arc<crate::ssh::Ssh>>,
}

impl Toolset {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The process lives on between requests (`toolgate serve`): clarify's
    /// notifications are sent after the answer instead of before it (a
    /// Lambda function is frozen once it answers). Before `with_clarify`.
    pub fn long_running(mut self) -> Self {
        self.long_running = true;
        self
    }

    /// How the HTTP side presents the tools: `/mcp`'s names, and the
    /// protected-resource metadata (public URL, JWT issuer).
    pub fn with_http(mut self, cfg: &Config) -> Self {
        self.registry.set_mcp_names(cfg.server.mcp_names);
        self.resource = crate::http::resource::ProtectedResource {
            public_url: cfg.clarify.public_url.clone(),
            issuer: cfg.server.oauth_issuer.clone(),
        };
        self
    }

    /// python.execute, with its sandbox's warm process started now (during
    /// Lambda init, or before the local server binds).
    #[cfg(feature = "python")]
    pub async fn with_python(self, cfg: &Config) -> Result<Self, String> {
        let sandbox_cfg = cfg.python.sandbox_config().map_err(|e| e.to_string())?;
        self.with_python_sandbox(cfg, sandbox_cfg).await
    }

    /// As [`Self::with_python`], with the sandbox's settings given (tests
    /// point `exe` at the `toolgate` binary, whose `main` runs the zygote).
    #[cfg(feature = "python")]
    pub async fn with_python_sandbox(
        mut self,
        cfg: &Config,
        sandbox_cfg: SandboxConfig,
    ) -> Result<Self, String> {
        let sandbox = Arc::new(Sandbox::start(sandbox_cfg).map_err(|e| e.to_string())?);
        let mut tool = PythonExecute::new(&cfg.python, sandbox.clone());
        if let Some(store) = session_store(&cfg.python).await? {
            tool = tool.with_sessions(crate::sessions::Sessions::new(
                store,
                std::time::Duration::from_secs(cfg.python.session_idle_secs),
            ));
        }
        self.registry.add(Arc::new(tool))?;
        self.health.push((
            "sandbox",
            Arc::new(move || serde_json::json!({ "walls": sandbox.walls() })),
        ));
        Ok(self)
    }

    /// The cloud accounts' tools, when any account is configured (`[clouds.*]`
    /// tables, or `TOOLGATE_CLOUD_SSM_PREFIX` with the `aws` feature). Lists
    /// every account's tools now, each within the configured timeout.
    pub async fn with_cloud(mut self, cfg: &Config) -> Result<Self, String> {
        let c = &cfg.cloud;
        if !c.is_configured() {
            return Ok(self);
        }
        let settings = CloudSettings {
            ttl: std::time::Duration::from_secs(c.ttl_secs),
            timeout: std::time::Duration::from_secs(c.timeout_secs),
        };
        let approvals = self.gate_approvals(cfg).await?;
        let cloud = match &c.ssm_prefix {
            #[cfg(feature = "aws")]
            Some(prefix) => {
                let source = crate::cloud::ssm::SsmAccounts::from_env(prefix).await;
                CloudTools::start(&source, settings, c.approve_tools.clone(), approvals).await?
            }
            #[cfg(not(feature = "aws"))]
            Some(_) => {
                return Err(
                    "TOOLGATE_CLOUD_SSM_PREFIX is set, but this build has no AWS support (feature `aws`)"
                        .into(),
                );
            }
            None => {
                CloudTools::start(
                    &ConfigAccounts(c.accounts.clone()),
                    settings,
                    c.approve_tools.clone(),
                    approvals,
                )
                .await?
            }
        };
        let cloud = Arc::new(cloud);
        self.registry.add_source(cloud.clone());
        let health = cloud.clone();
        self.health
            .push(("cloud", Arc::new(move || health.health())));
        self.cloud = Some(cloud);
        Ok(self)
    }

    /// `list_servers` and `ssh_run`, when any server is configured
    /// (`[servers.*]` tables, or `TOOLGATE_SSH_SSM_PREFIX` with `aws`).
    #[cfg(feature = "ssh")]
    pub async fn with_ssh(mut self, cfg: &Config) -> Result<Self, String> {
        use crate::ssh::inventory::{ConfigServers, Inventory, ServerSource};
        use crate::tools::{list_servers::ListServers, ssh_run::SshRun};
        use std::time::Duration;

        let c = &cfg.ssh;
        if !c.is_configured() {
            return Ok(self);
        }
        let source: Box<dyn ServerSource> = match &c.ssm_prefix {
            #[cfg(feature = "aws")]
            Some(prefix) => Box::new(crate::ssh::ssm::SsmServers::from_env(prefix).await),
            #[cfg(not(feature = "aws"))]
            Some(_) => {
                return Err(
                    "TOOLGATE_SSH_SSM_PREFIX is set, but this build has no AWS support (feature `aws`)"
                        .into(),
                );
            }
            None => Box::new(ConfigServers(c.servers.clone())),
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
        let ssh = Arc::new(crate::ssh::Ssh::new(
            inventory,
            crate::ssh::SshSettings {
                max_timeout: Duration::from_secs(c.max_timeout_secs),
                connect_timeout: Duration::from_secs(c.connect_timeout_secs),
                max_output_bytes: c.max_output_bytes,
                approve: crate::ssh::policy::Approve::compile(c.approve_preset.as_deref(), &[])?,
                approve_tags: c.approve_tags.clone(),
            },
        ));
        self.registry.add(Arc::new(ListServers::new(ssh.clone())))?;
        let approvals = self.gate_approvals(cfg).await?;
        self.registry
            .add(Arc::new(SshRun::new(ssh.clone(), approvals)))?;
        let health = ssh.clone();
        self.health.push(("ssh", Arc::new(move || health.health())));
        self.ssh = Some(ssh);
        Ok(self)
    }

    /// The clarify service `cfg` describes, its notifications included;
    /// `callbacks` completes Step Functions tasks.
    async fn clarify_service(
        &self,
        cfg: &Config,
        callbacks: bool,
    ) -> Result<crate::clarify::Clarify, String> {
        use crate::clarify::{Clarify, ClarifyStore, TaskCallback};
        let c = &cfg.clarify;
        let store: Arc<dyn ClarifyStore> = match &c.table {
            #[cfg(feature = "aws")]
            Some(table) => Arc::new(crate::clarify::dynamo::DynamoStore::from_env(table).await),
            #[cfg(not(feature = "aws"))]
            Some(_) => {
                return Err("TOOLGATE_CLARIFY_TABLE is set, but this build has no AWS support (feature `aws`)".into());
            }
            None => Arc::new(
                crate::clarify::sqlite::SqliteStore::open(&c.db_path)
                    .map_err(|e| format!("clarify store: {e}"))?,
            ),
        };
        let callback: Option<Arc<dyn TaskCallback>> = if callbacks {
            #[cfg(feature = "aws")]
            {
                Some(Arc::new(
                    crate::clarify::callback::StepFunctions::from_env().await,
                ))
            }
            #[cfg(not(feature = "aws"))]
            {
                return Err("TOOLGATE_CLARIFY_STEP_FUNCTIONS needs a build with AWS support (feature `aws`)".into());
            }
        } else {
            None
        };
        let base = c
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", cfg.server.addr));
        let mut clarify = Clarify::new(
            store,
            callback,
            base,
            std::time::Duration::from_secs(c.expiry_secs),
        )
        .with_pending_limits(c.pending_limits());
        if !c.notify.is_empty() {
            let spawn = self.long_running.then(crate::clarify::notify::tokio_spawn);
            let post = Arc::new(crate::clarify::notify::post::Reqwest::new()?);
            let notifier = crate::clarify::notify::from_config(
                &c.notify,
                post,
                clarify.nap(),
                spawn,
                !cfg.approvals.slack_users.is_empty(),
            )
            .await?;
            tracing::info!(channels = ?notifier.names(), "clarify notifications");
            clarify = clarify.with_notifier(notifier);
        }
        Ok(clarify)
    }

    /// Where approvals are kept and decided: the clarify service `cfg`
    /// describes (SQLite locally, DynamoDB with `TOOLGATE_CLARIFY_TABLE`),
    /// set up now if it is not yet. Call it before the gated tools
    /// (`with_ssh`, `with_cloud`) on a runtime that keeps approvals
    /// itself; on Lambda, the ssh and cloud functions get them from
    /// clarify's table without it.
    pub async fn with_approvals(mut self, cfg: &Config) -> Result<Self, String> {
        self.ensure_approvals(cfg, false).await?;
        Ok(self)
    }

    /// The approvals, set up on first use; `callbacks` completes Step
    /// Functions tasks (where clarify itself is served).
    async fn ensure_approvals(
        &mut self,
        cfg: &Config,
        callbacks: bool,
    ) -> Result<Arc<Approvals>, String> {
        if let Some(a) = &self.approvals {
            return Ok(a.clone());
        }
        let clarify = match &self.clarify_service {
            Some(c) => c.clone(),
            None => {
                let c = Arc::new(self.clarify_service(cfg, callbacks).await?);
                self.clarify_service = Some(c.clone());
                c
            }
        };
        let approvals = Arc::new(Approvals::new(clarify, cfg.approvals.link_holder));
        self.approvals = Some(approvals.clone());
        Ok(approvals)
    }

    /// The approvals a gated tool waits on: those set up, or on a Lambda
    /// function with clarify's table, its own over that table; `None`
    /// where there is nowhere to keep one (a gated call is then refused).
    async fn gate_approvals(&mut self, cfg: &Config) -> Result<Option<Arc<Approvals>>, String> {
        if self.approvals.is_none() && cfg.clarify.table.is_none() {
            return Ok(None);
        }
        self.ensure_approvals(cfg, false).await.map(Some)
    }

    /// The approvals of the machine `cfg` describes, for its operator's
    /// command line (`toolgate approvals`): no process stays to send
    /// notifications later, so they go before each command returns.
    pub async fn open_approvals(cfg: &Config) -> Result<Arc<Approvals>, String> {
        let mut set = Self::new();
        set.ensure_approvals(cfg, false).await
    }

    /// `clarify` and its answer routes, with the approvers' routes:
    /// SQLite locally, DynamoDB with `TOOLGATE_CLARIFY_TABLE` (feature
    /// `aws`), Step Functions callbacks when enabled. Expired
    /// clarifications that hold a task token are swept by `sweep_every` (a
    /// long-running server) or by a schedule (Lambda,
    /// `{"toolgate": "sweep"}`).
    pub async fn with_clarify(mut self, cfg: &Config) -> Result<Self, String> {
        let approvals = self
            .ensure_approvals(cfg, cfg.clarify.step_functions)
            .await?;
        let clarify = approvals.clarify().clone();
        self.registry
            .add(Arc::new(crate::tools::clarify::ClarifyTool::new(
                clarify.clone(),
            )))?;
        self.approval_routes = Some(crate::approvals::http::Routes {
            approvals,
            slack: self.slack_app(cfg).await?,
        });
        self.clarify = Some(clarify);
        Ok(self)
    }

    /// The Slack app whose signed clicks decide approvals, when its
    /// signing secret is configured (read from SSM now, on AWS).
    async fn slack_app(
        &self,
        cfg: &Config,
    ) -> Result<Option<crate::approvals::http::SlackApp>, String> {
        let Some(secret) = &cfg.approvals.slack_signing_secret else {
            return Ok(None);
        };
        let signing_secret = secret
            .reveal()
            .await
            .map_err(|e| format!("the Slack app's signing secret: {e}"))?;
        if cfg.approvals.slack_users.is_empty() {
            tracing::warn!(
                "a Slack signing secret is set but no Slack user may decide ([approvals] slack_users): every click is refused"
            );
        }
        Ok(Some(crate::approvals::http::SlackApp {
            signing_secret,
            users: cfg.approvals.slack_users.clone(),
            post: Some(Arc::new(crate::clarify::notify::post::Reqwest::new()?)),
            spawn: self.long_running.then(crate::clarify::notify::tokio_spawn),
        }))
    }

    /// Sweeps expired clarifications every `period` while clarify lives, so
    /// their workflows fail promptly. Only where the process keeps running
    /// between requests: a Lambda function is frozen, so a schedule sweeps.
    pub fn sweep_every(self, period: std::time::Duration) -> Self {
        if let Some(clarify) = &self.clarify {
            let sweeper = Arc::downgrade(clarify);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(period);
                loop {
                    tick.tick().await;
                    let Some(c) = sweeper.upgrade() else { break };
                    let _ = c.sweep().await;
                }
            });
        }
        self
    }

    /// The clarify service, to set its public address once bound.
    pub fn clarify(&self) -> Option<&Arc<crate::clarify::Clarify>> {
        self.clarify.as_ref()
    }

    /// The tools of other Lambda functions (`TOOLGATE_PEER_FUNCTIONS`),
    /// listed now and forwarded to through the Invoke API.
    #[cfg(all(feature = "aws", feature = "lambda"))]
    pub async fn with_peers(mut self, cfg: &Config) -> Result<Self, String> {
        if cfg.peer_functions.is_empty() {
            return Ok(self);
        }
        let peers = Arc::new(
            crate::peers::PeerTools::start(
                &cfg.peer_functions,
                std::time::Duration::from_secs(cfg.cloud.ttl_secs),
            )
            .await,
        );
        self.registry.add_source(peers.clone());
        self.health
            .push(("peers", Arc::new(move || peers.health())));
        Ok(self)
    }

    /// The specs of the tools `cfg` configures, in the order a server built
    /// from it lists them, without starting any of them: no sandbox
    /// process, no clarify store, no SSH connection. Cloud tools exist only
    /// on their accounts, so those are asked for their listing.
    pub async fn specs(cfg: &Config) -> Result<Vec<crate::tool::ToolSpec>, String> {
        let mut specs = Vec::new();
        #[cfg(feature = "python")]
        specs.push(crate::tools::python_execute::spec(&cfg.python));
        #[cfg(feature = "ssh")]
        if cfg.ssh.is_configured() {
            specs.push(crate::tools::list_servers::spec());
            specs.push(crate::tools::ssh_run::spec(std::time::Duration::from_secs(
                cfg.ssh.max_timeout_secs,
            )));
        }
        specs.push(crate::tools::clarify::spec(cfg.clarify.expiry_secs));
        let cloud = Self::new().with_cloud(cfg).await?;
        specs.extend(cloud.registry.tools().iter().map(|t| t.spec().clone()));
        cloud.shutdown().await;
        Ok(specs)
    }

    /// Ends upstream sessions (the cloud accounts' MCP sessions, SSH
    /// connections).
    pub async fn shutdown(&self) {
        if let Some(c) = &self.cloud {
            c.close().await;
        }
        #[cfg(feature = "ssh")]
        if let Some(s) = &self.ssh {
            s.close().await;
        }
    }

    /// The `/healthz` extras: one field per component.
    pub fn health(&self) -> HealthFn {
        let parts = self.health.clone();
        Arc::new(move || {
            let mut obj = Map::new();
            for (name, part) in &parts {
                obj.insert((*name).to_owned(), part());
            }
            Box::pin(std::future::ready(Value::Object(obj)))
        })
    }

    /// The router's state for this set; `tokens` and `loopback_hosts_only` as in [`AppState`].
    pub fn app_state(&self, tokens: crate::http::Tokens, loopback_hosts_only: bool) -> AppState {
        AppState {
            registry: Arc::new(self.registry.clone()),
            tokens: Arc::new(tokens),
            health: self.health(),
            loopback_hosts_only,
            clarify: self.clarify.clone(),
            approvals: self.approval_routes.clone(),
            resource: Arc::new(self.resource.clone()),
        }
    }
}

/// Where python.execute keeps sessions: `TOOLGATE_SESSIONS_TABLE` (DynamoDB),
/// else SQLite in the data folder; none on Lambda without a table.
#[cfg(feature = "python")]
async fn session_store(
    cfg: &crate::config::PythonConfig,
) -> Result<Option<Arc<dyn crate::sessions::SessionStore>>, String> {
    match (&cfg.session_table, &cfg.session_db) {
        #[cfg(feature = "dynamodb")]
        (Some(table), _) => Ok(Some(Arc::new(
            crate::sessions::dynamo::DynamoSessions::from_env(table).await,
        ))),
        #[cfg(not(feature = "dynamodb"))]
        (Some(_), _) => Err(
            "TOOLGATE_SESSIONS_TABLE is set, but this build has no DynamoDB support (feature `dynamodb`)"
                .into(),
        ),
        (None, Some(path)) => Ok(Some(Arc::new(
            crate::sessions::sqlite::SqliteSessions::open(path)
                .map_err(|e| format!("session store: {e}"))?,
        ))),
        (None, None) => Ok(None),
    }
}
