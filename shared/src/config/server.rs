//! `[server]`, `TOOLGATE_ADDR`, `TOOLGATE_TOKEN` and
//! `TOOLGATE_SHUTDOWN_GRACE_SECS`: how `toolgate serve` listens.

use serde::Deserialize;

use super::ConfigError;
use super::env::{Env, set_number};

/// Where `toolgate serve` listens unless told otherwise: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// How the local server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The address to bind (loopback by default).
    pub addr: String,
    /// A bearer token every call must carry, when set.
    pub token: Option<String>,
    /// How long SIGTERM lets calls in flight finish.
    pub shutdown_grace_secs: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            addr: DEFAULT_ADDR.into(),
            token: None,
            shutdown_grace_secs: 10,
        }
    }
}

/// `[server]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FileServer {
    addr: Option<String>,
    token: Option<String>,
    shutdown_grace_secs: Option<u64>,
}

impl ServerConfig {
    /// The file's table, then the environment.
    pub(super) fn load(file: FileServer, env: Env<'_>) -> Result<Self, ConfigError> {
        let mut s = Self::default();
        s.addr = file.addr.unwrap_or(s.addr);
        s.token = file.token;
        s.shutdown_grace_secs = file.shutdown_grace_secs.unwrap_or(s.shutdown_grace_secs);
        if let Some(v) = env.raw("TOOLGATE_ADDR") {
            s.addr = v;
        }
        if let Some(v) = env.raw("TOOLGATE_TOKEN").filter(|v| !v.is_empty()) {
            s.token = Some(v);
        }
        set_number(
            env,
            &mut s.shutdown_grace_secs,
            "TOOLGATE_SHUTDOWN_GRACE_SECS",
            "a whole number of seconds",
        )?;
        Ok(s)
    }
}
