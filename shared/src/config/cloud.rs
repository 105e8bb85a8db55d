//! `[clouds.NAME]` and `TOOLGATE_CLOUD_*` (docs/contracts.md#cloud-tools):
//! the accounts whose MCP servers' tools are proxied.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ConfigError;
use super::env::{Env, set_number};

/// The cloud accounts and how they are reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudConfig {
    /// The file's accounts, checked at load.
    pub accounts: Vec<crate::cloud::Account>,
    /// Read accounts from SSM Parameter Store under this path instead.
    pub ssm_prefix: Option<String>,
    /// Seconds a tool listing is cached (`TOOLGATE_CLOUD_TTL_SECS`, default 300).
    pub ttl_secs: u64,
    /// Seconds allowed per request to an account (`TOOLGATE_CLOUD_TIMEOUT_SECS`, default 10).
    pub timeout_secs: u64,
    /// Exported tool names (`*` matches any run) whose calls wait for a
    /// person's approval, on every account (`TOOLGATE_CLOUD_APPROVE_TOOLS`).
    pub approve_tools: Vec<String>,
}

impl Default for CloudConfig {
    fn default() -> Self {
        Self {
            accounts: Vec::new(),
            ssm_prefix: None,
            ttl_secs: 300,
            timeout_secs: 10,
            approve_tools: Vec::new(),
        }
    }
}

/// `[clouds.NAME]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileCloud {
    url: String,
    #[serde(default = "enabled_by_default")]
    enabled: bool,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// The name of an environment variable holding the bearer token, so
    /// that the file itself holds no secret.
    token_env: Option<String>,
    /// The account's tool names whose calls need approval.
    #[serde(default)]
    approve: Vec<String>,
    /// Who decides its approvals: `"channels"` (default) or `"client"`.
    approvers: Option<String>,
}

fn enabled_by_default() -> bool {
    true
}

impl CloudConfig {
    /// Whether any cloud account is configured at all.
    pub fn is_configured(&self) -> bool {
        !self.accounts.is_empty() || self.ssm_prefix.is_some()
    }

    /// The file's tables (a token named by `token_env` is read through
    /// the lookup), then the environment, checked.
    pub(super) fn load(
        tables: BTreeMap<String, FileCloud>,
        env: Env<'_>,
    ) -> Result<Self, ConfigError> {
        let mut c = Self::default();
        for (id, table) in tables {
            let bad = |reason: String| ConfigError::BadCloud {
                account: id.clone(),
                reason,
            };
            crate::cloud::validate_account_id(&id).map_err(bad)?;
            if !(table.url.starts_with("http://") || table.url.starts_with("https://")) {
                return Err(bad(format!(
                    "url must be http(s)://..., got {:?}",
                    table.url
                )));
            }
            let token =
                match &table.token_env {
                    Some(var) => Some(env.raw(var).filter(|t| !t.is_empty()).ok_or_else(|| {
                        bad(format!("token_env names {var:?}, which is not set"))
                    })?),
                    None => None,
                };
            c.accounts.push(crate::cloud::Account {
                id: id.clone(),
                url: table.url,
                enabled: table.enabled,
                headers: table.headers,
                token,
                approve: table.approve,
                client_approves: crate::approvals::client_approves(table.approvers.as_deref())
                    .map_err(bad)?,
            });
        }
        c.ssm_prefix = env.text("TOOLGATE_CLOUD_SSM_PREFIX");
        if let Some(v) = env.list("TOOLGATE_CLOUD_APPROVE_TOOLS") {
            c.approve_tools = v;
        }
        let secs = "a whole number of seconds";
        set_number(env, &mut c.ttl_secs, "TOOLGATE_CLOUD_TTL_SECS", secs)?;
        set_number(
            env,
            &mut c.timeout_secs,
            "TOOLGATE_CLOUD_TIMEOUT_SECS",
            secs,
        )?;
        if c.timeout_secs == 0 {
            return Err(ConfigError::BadValue {
                name: "TOOLGATE_CLOUD_TIMEOUT_SECS",
                what: "at least 1",
                value: "0".into(),
            });
        }
        Ok(c)
    }
}
