//! Assembles the tools one runtime serves, with what `/healthz` reports about
//! them. Every runtime (local server, each Lambda function) builds its set
//! here, so a tool is wired up the same way everywhere.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::approvals::Approvals;
use crate::backends::{Backends, MaybeBackends};
use crate::check::{CheckFn, Finding};
use crate::cloud::account::ConfigAccounts;
use crate::cloud::{CloudSettings, CloudTools};
use crate::config::Config;
use crate::http::{AppState, HealthFn};
use crate::registry::Registry;

mod findings;
use findings::{clarify_findings, cloud_findings};

/// What `/healthz` reports for one component.
pub type HealthPart = Arc<dyn Fn() -> Value + Send + Sync>;
/// A [`HealthPart`] that has to wait for what it reports (the sandbox's
/// walls, probed on the first request for them).
pub type AsyncHealthPart = Arc<dyn Fn() -> crate::http::HealthFuture + Send + Sync>;
/// Ends one component's upstream sessions.
pub type Closer = Box<dyn Fn() -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The tools one runtime serves and what `/healthz` reports about them, built
/// up by the `with_*` methods.
#[derive(Default)]
pub struct Toolset {
    /// The tools, as the adapters look them up.
    pub registry: Registry,
    health: Vec<(&'static str, AsyncHealthPart)>,
    cloud: Option<Arc<CloudTools>>,
    /// The clarify service: questions, and the approvals kept with them.
    pub clarify_service: Option<Arc<crate::clarify::Clarify>>,
    /// `clarify` is served here (the tool and its answer routes).
    clarify: Option<Arc<crate::clarify::Clarify>>,
    /// Where gated calls wait for approvers, once set up.
    approvals: Option<Arc<Approvals>>,
    /// The approvers' routes, where clarify is served.
    approval_routes: Option<crate::approvals::http::Routes>,
    long_running: bool,
    /// What the protected-resource metadata says.
    resource: crate::http::resource::ProtectedResource,
    /// Where tables, inventories and secrets named in the config live.
    backends: MaybeBackends,
    /// What ends upstream sessions (SSH connections) at shutdown.
    closers: Vec<Closer>,
    /// What `toolgate check` runs, per component.
    checks: Vec<CheckFn>,
    /// What each component adds to `/metrics`.
    samples: Vec<crate::metrics::SampleFn>,
    /// Where long calls run on as tasks, on a runtime that keeps them
    /// outside this set (AWS Lambda's gateway).
    tasks: Option<Arc<dyn crate::tasks::TaskHost>>,
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

    /// The cloud whose tables, inventories and secrets the configuration
    /// may name (`TOOLGATE_*_TABLE`, `*_SSM_PREFIX`, SSM parameters).
    pub fn with_backends(mut self, backends: Arc<dyn Backends>) -> Self {
        self.backends = Some(backends);
        self
    }

    /// Long calls run on as tasks in `host`.
    pub fn with_tasks(mut self, host: Arc<dyn crate::tasks::TaskHost>) -> Self {
        self.tasks = Some(host);
        self
    }

    /// Whether long calls run as tasks here ([`Self::with_tasks`]).
    pub fn runs_tasks(&self) -> bool {
        self.tasks.is_some()
    }

    /// The backends, for a tool whose `setting` names something they hold;
    /// an error naming the setting in a build without any.
    pub fn backends_for(&self, setting: &str) -> Result<&Arc<dyn Backends>, String> {
        self.backends
            .as_ref()
            .ok_or_else(|| crate::backends::none_for(setting))
    }

    /// Adds what ends a component's upstream sessions at shutdown.
    pub fn add_closer(&mut self, close: Closer) {
        self.closers.push(close);
    }

    /// Adds what `/healthz` reports under `name`.
    pub fn add_health(&mut self, name: &'static str, part: HealthPart) {
        self.add_health_async(name, Arc::new(move || Box::pin(std::future::ready(part()))));
    }

    /// [`Self::add_health`] for a part that waits.
    pub fn add_health_async(&mut self, name: &'static str, part: AsyncHealthPart) {
        self.health.push((name, part));
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

    /// The cloud accounts' tools, when any account is configured (`[clouds.*]`
    /// tables, or `TOOLGATE_CLOUD_SSM_PREFIX` on a set with backends). Lists
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
            Some(prefix) => {
                let source = self
                    .backends_for("TOOLGATE_CLOUD_SSM_PREFIX")?
                    .account_source(prefix)
                    .await?;
                CloudTools::start(&*source, settings, c.approve_tools.clone(), approvals).await?
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
        self.add_health("cloud", Arc::new(move || health.health()));
        let listed = cloud.clone();
        self.add_check(Arc::new(move || {
            Box::pin(std::future::ready(cloud_findings(&listed.health())))
        }));
        self.cloud = Some(cloud);
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
            Some(table) => {
                self.backends_for("TOOLGATE_CLARIFY_TABLE")?
                    .clarify_store(table)
                    .await?
            }
            None => Arc::new(
                crate::clarify::sqlite::SqliteStore::open(&c.db_path)
                    .map_err(|e| format!("clarify store: {e}"))?,
            ),
        };
        let callback: Option<Arc<dyn TaskCallback>> = if callbacks {
            Some(
                self.backends_for("TOOLGATE_CLARIFY_STEP_FUNCTIONS")?
                    .task_callback()
                    .await?,
            )
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
                self.backends.as_deref(),
            )
            .await?;
            tracing::info!(channels = ?notifier.names(), "clarify notifications");
            clarify = clarify.with_notifier(notifier);
        }
        self.seal_states(clarify, cfg).await
    }

    /// How an MCP client's retry states are sealed: with the configured
    /// secret; else, on a shared store, with the store's own key, read when
    /// first needed; else (SQLite) with a key file beside the database,
    /// made once, so that every server on that store opens the others'
    /// states (none if it cannot be made: questions are then not asked in
    /// the client).
    async fn seal_states(
        &self,
        clarify: crate::clarify::Clarify,
        cfg: &Config,
    ) -> Result<crate::clarify::Clarify, String> {
        use crate::elicit::state::StateKey;
        let c = &cfg.clarify;
        let secret = match (&c.mcp_state_key, &c.table) {
            (Some(s), _) => s.reveal(self.backends.as_deref()).await?.into_bytes(),
            (None, Some(_)) => return Ok(clarify.with_stored_state_key()),
            (None, None) => match crate::sqlite_file::private_key_file(&c.db_path) {
                Ok(k) => k,
                Err(e) => {
                    tracing::warn!(error = %e, "questions are not asked in MCP clients: no state key");
                    return Ok(clarify);
                }
            },
        };
        Ok(clarify.with_state_key(StateKey::from_secret(&secret)?))
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
    pub async fn gate_approvals(&mut self, cfg: &Config) -> Result<Option<Arc<Approvals>>, String> {
        if self.approvals.is_none() && cfg.clarify.table.is_none() {
            return Ok(None);
        }
        self.ensure_approvals(cfg, false).await.map(Some)
    }

    /// The approvals of the machine `cfg` describes, for its operator's
    /// command line (`toolgate approvals`): no process stays to send
    /// notifications later, so they go before each command returns. On a
    /// set with the backends a table in `cfg` needs.
    pub async fn open_approvals(mut self, cfg: &Config) -> Result<Arc<Approvals>, String> {
        self.ensure_approvals(cfg, false).await
    }

    /// `clarify` and its answer routes, with the approvers' routes:
    /// SQLite locally, the backends' table with `TOOLGATE_CLARIFY_TABLE`,
    /// Step Functions callbacks when enabled. Expired
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
        let counted = clarify.clone();
        self.add_samples(Arc::new(move || {
            let c = counted.clone();
            Box::pin(async move { pending_samples(&c).await })
        }));
        let probe = clarify.clone();
        self.add_check(Arc::new(move || {
            let c = probe.clone();
            Box::pin(async move { clarify_findings(&c).await })
        }));
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
            .reveal(self.backends.as_deref())
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

    /// The specs of the tools this crate serves that `cfg` configures (the
    /// tool crates give their own), in the order a server lists them, without starting any of them: no sandbox
    /// process, no clarify store, no SSH connection. Cloud tools exist only
    /// on their accounts, so those are asked for their listing.
    pub async fn specs(cfg: &Config) -> Result<Vec<crate::tool::ToolSpec>, String> {
        let mut specs = Vec::new();
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
        for close in &self.closers {
            close().await;
        }
    }

    /// Adds a component's numbers to `/metrics`.
    pub fn add_samples(&mut self, samples: crate::metrics::SampleFn) {
        self.samples.push(samples);
    }

    /// `/metrics`'s text: the calls counted so far and every component's
    /// samples, read now. Served where the process lives on (`toolgate
    /// serve`); elsewhere `None`.
    pub fn metrics(&self) -> Option<crate::http::MetricsFn> {
        if !self.long_running {
            return None;
        }
        let parts = self.samples.clone();
        Some(Arc::new(move || {
            let parts = parts.clone();
            Box::pin(async move {
                let mut samples = Vec::new();
                for part in &parts {
                    samples.extend(part().await);
                }
                crate::metrics::render(&samples)
            })
        }))
    }

    /// Adds a component's checks for `toolgate check`.
    pub fn add_check(&mut self, check: CheckFn) {
        self.checks.push(check);
    }

    /// Runs every component's checks, in the order they were added.
    pub async fn check(&self) -> Vec<Finding> {
        let mut found = Vec::new();
        for check in &self.checks {
            found.extend(check().await);
        }
        found
    }

    /// The `/healthz` extras: one field per component.
    pub fn health(&self) -> HealthFn {
        let parts = self.health.clone();
        Arc::new(move || {
            let parts = parts.clone();
            Box::pin(async move {
                let mut obj = Map::new();
                for (name, part) in &parts {
                    obj.insert((*name).to_owned(), part().await);
                }
                Value::Object(obj)
            })
        })
    }

    /// The router's state for this set; `tokens` and `loopback_hosts_only` as in [`AppState`].
    pub fn app_state(&self, tokens: crate::http::Tokens, loopback_hosts_only: bool) -> AppState {
        AppState {
            registry: Arc::new(self.registry.clone()),
            tokens: Arc::new(tokens),
            health: self.health(),
            metrics: self.metrics(),
            loopback_hosts_only,
            clarify: self.clarify.clone(),
            approvals: self.approval_routes.clone(),
            resource: Arc::new(self.resource.clone()),
            tasks: self.tasks.clone(),
        }
    }
}

/// Questions and approvals waiting for a person, for `/metrics` (none when
/// the store cannot list them).
async fn pending_samples(c: &crate::clarify::Clarify) -> Vec<crate::metrics::Sample> {
    let Ok(w) = c.waiting().await else {
        return Vec::new();
    };
    [("question", w.questions), ("approval", w.approvals)]
        .into_iter()
        .map(|(kind, n)| crate::metrics::Sample {
            name: "toolgate_pending",
            help: "Questions and approvals waiting for a person.",
            labels: vec![("kind", kind.to_owned())],
            value: n as f64,
        })
        .collect()
}
