//! Assembles the tools one runtime serves, with what `/healthz` reports about
//! them. Every runtime (local server, each Lambda function) builds its set
//! here, so a tool is wired up the same way everywhere.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::config::Config;
use crate::http::{AppState, HealthFn};
use crate::registry::Registry;
use crate::sandbox::{Sandbox, SandboxConfig};
use crate::tools::python_execute::PythonExecute;

type HealthPart = Arc<dyn Fn() -> Value + Send + Sync>;

#[derive(Default)]
pub struct Toolset {
    pub registry: Registry,
    health: Vec<(&'static str, HealthPart)>,
}

impl Toolset {
    pub fn new() -> Self {
        Self::default()
    }

    /// python.execute, with its sandbox's warm process started now (during
    /// Lambda init, or before the local server binds).
    pub fn with_python(self, cfg: &Config) -> Result<Self, String> {
        let sandbox_cfg = SandboxConfig::for_python(&cfg.python).map_err(|e| e.to_string())?;
        self.with_python_sandbox(cfg, sandbox_cfg)
    }

    /// As [`Self::with_python`], with the sandbox's settings given (tests
    /// point `exe` at the `toolgate` binary, whose `main` runs the zygote).
    pub fn with_python_sandbox(
        mut self,
        cfg: &Config,
        sandbox_cfg: SandboxConfig,
    ) -> Result<Self, String> {
        let sandbox = Arc::new(Sandbox::start(sandbox_cfg).map_err(|e| e.to_string())?);
        self.registry
            .add(Arc::new(PythonExecute::new(&cfg.python, sandbox.clone())))?;
        self.health.push((
            "sandbox",
            Arc::new(move || serde_json::json!({ "walls": sandbox.walls() })),
        ));
        Ok(self)
    }

    /// The `/healthz` extras: one field per component.
    pub fn health(&self) -> HealthFn {
        let parts = self.health.clone();
        Arc::new(move || {
            let mut obj = Map::new();
            for (name, part) in &parts {
                obj.insert((*name).to_owned(), part());
            }
            Value::Object(obj)
        })
    }

    /// The router's state for this set; `token` and `loopback_hosts_only` as in [`AppState`].
    pub fn app_state(&self, token: Option<&str>, loopback_hosts_only: bool) -> AppState {
        AppState {
            registry: Arc::new(self.registry.clone()),
            token: token.map(Arc::from),
            health: self.health(),
            loopback_hosts_only,
        }
    }
}
