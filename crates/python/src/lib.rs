#![deny(missing_docs)]
//! `python.execute` on the process sandbox ([`SandboxRunner`] under the
//! shared tool), and how a runtime serves it ([`WithPython`]).

use std::sync::Arc;
use std::time::Duration;

use toolgate_shared::config::{Config, PythonConfig};
use toolgate_shared::sessions::{SessionStore, Sessions};
use toolgate_shared::toolset::Toolset;

mod check;
mod runner;

pub use runner::SandboxRunner;
pub use toolgate_shared::tools::python_execute::PythonExecute;

/// The interpreter layer and the process sandbox around it, as one path.
pub mod sandbox {
    pub use toolgate_pyvm::*;
    pub use toolgate_sandbox::*;
}

use sandbox::{Recycle, Sandbox, SandboxConfig, SandboxError, ZygoteConfig};

/// The process sandbox `cfg` makes, re-executing the current binary as its
/// zygote.
pub fn sandbox_config(cfg: &PythonConfig) -> Result<SandboxConfig, SandboxError> {
    Ok(SandboxConfig {
        exe: SandboxConfig::current_exe()?,
        zygote: ZygoteConfig {
            allowed: cfg.allowed_modules(),
            memory_mb: cfg.memory_mb,
            require_seccomp: cfg.require_seccomp,
            files_cap: cfg.max_files_bytes(),
            state_cap: cfg.max_state_bytes(),
            frozen_between_calls: cfg.frozen_between_calls,
        },
        spare_children: cfg.spare_children,
        max_concurrency: cfg.max_concurrency,
        max_per_caller: cfg.per_caller(),
        recycle: Recycle::new(cfg.zygote_max_calls, cfg.zygote_max_age_secs),
    })
}

/// The tool's specs as a server built from `cfg` lists them, without
/// starting the sandbox.
pub fn specs(cfg: &Config) -> Vec<toolgate_shared::tool::ToolSpec> {
    vec![toolgate_shared::tools::python_execute::spec(&cfg.python)]
}

/// python.execute on a runtime's tool set.
pub trait WithPython: Sized {
    /// python.execute, with its sandbox's warm process started now (during
    /// Lambda init, or before the local server binds).
    fn with_python(self, cfg: &Config) -> impl Future<Output = Result<Self, String>> + Send;
    /// As [`Self::with_python`], with the sandbox's settings given (tests
    /// point `exe` at the `toolgate` binary, whose `main` runs the zygote).
    fn with_python_sandbox(
        self,
        cfg: &Config,
        sandbox: SandboxConfig,
    ) -> impl Future<Output = Result<Self, String>> + Send;
}

impl WithPython for Toolset {
    async fn with_python(self, cfg: &Config) -> Result<Self, String> {
        let sandbox = sandbox_config(&cfg.python).map_err(|e| e.to_string())?;
        self.with_python_sandbox(cfg, sandbox).await
    }

    async fn with_python_sandbox(
        mut self,
        cfg: &Config,
        sandbox_cfg: SandboxConfig,
    ) -> Result<Self, String> {
        let sandbox = Arc::new(Sandbox::start(sandbox_cfg).map_err(|e| e.to_string())?);
        let mut tool = PythonExecute::new(&cfg.python, SandboxRunner(sandbox.clone()))
            .with_backlog(&cfg.python)
            .with_code_mode(&cfg.code_mode);
        if let Some(clarify) = &self.clarify_service {
            tool = tool.with_clarify(clarify.clone());
        }
        if let Some(store) = session_store(&self, &cfg.python).await? {
            tool = tool.with_sessions(Sessions::new(
                store,
                Duration::from_secs(cfg.python.session_idle_secs),
            ));
        }
        let tool = Arc::new(tool);
        self.registry.add(tool.clone())?;
        let probe = sandbox.clone();
        self.add_check(Arc::new(move || {
            let (tool, sandbox) = (tool.clone(), probe.clone());
            Box::pin(async move { check::findings(&*tool, &sandbox).await })
        }));
        let counted = sandbox.clone();
        self.add_samples(Arc::new(move || {
            let (spares, started) = counted.stats();
            let (lean, warm) = counted.replacements();
            let labelled = |name, help, labels, value| toolgate_shared::metrics::Sample {
                name,
                help,
                labels,
                value,
            };
            let sample = |name, help, value| labelled(name, help, Vec::new(), value);
            const REPLACED: &str = "Used sandbox processes replaced, by whether the replacement \
                skipped the warm-up run (lean: calls back to back, or a host that freezes the \
                process between calls).";
            let mut samples = vec![
                sample(
                    "toolgate_sandbox_spares",
                    "Warm sandbox processes ready for a call.",
                    spares as f64,
                ),
                sample(
                    "toolgate_sandbox_zygotes_started_total",
                    "Sandbox zygotes started: the first, then each restart and recycle.",
                    started as f64,
                ),
            ];
            samples.extend([("lean", lean), ("warm", warm)].map(|(kind, n)| {
                let labels = vec![("kind", kind.into())];
                labelled(
                    "toolgate_sandbox_replacements_total",
                    REPLACED,
                    labels,
                    n as f64,
                )
            }));
            Box::pin(std::future::ready(samples))
        }));
        // The pool's own walls are probed by the first request for them,
        // inside it (see the sandbox's `pool::probe`).
        self.add_health_async(
            "sandbox",
            Arc::new(move || {
                let sandbox = sandbox.clone();
                Box::pin(async move {
                    let walls = sandbox.probed_walls(Duration::from_secs(5)).await;
                    serde_json::json!({ "walls": walls })
                })
            }),
        );
        Ok(self)
    }
}

/// Where python.execute keeps sessions: `TOOLGATE_SESSIONS_TABLE` (the
/// set's backends), else SQLite in the data folder; none on Lambda without
/// a table.
async fn session_store(
    set: &Toolset,
    cfg: &PythonConfig,
) -> Result<Option<Arc<dyn SessionStore>>, String> {
    match (&cfg.session_table, &cfg.session_db) {
        (Some(table), _) => Ok(Some(
            set.backends_for("TOOLGATE_SESSIONS_TABLE")?
                .session_store(table)
                .await?,
        )),
        (None, Some(path)) => Ok(Some(Arc::new(
            toolgate_shared::sessions::sqlite::SqliteSessions::open(path)
                .map_err(|e| format!("session store: {e}"))?,
        ))),
        (None, None) => Ok(None),
    }
}
