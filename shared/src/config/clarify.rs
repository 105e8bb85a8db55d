//! `[clarify]` and `TOOLGATE_CLARIFY_*` (docs/contracts.md#configuration):
//! where questions wait for their answers.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;
use super::env::{Env, set_number};

/// Where questions are kept, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClarifyConfig {
    /// Seconds until an unanswered clarification expires (default 24 h).
    pub expiry_secs: u64,
    /// The base of `answer_url` (`TOOLGATE_PUBLIC_URL`); locally the bound
    /// address when unset.
    pub public_url: Option<String>,
    /// The SQLite file (`TOOLGATE_CLARIFY_DB`; default in the data folder).
    pub db_path: PathBuf,
    /// A DynamoDB table instead of SQLite (`TOOLGATE_CLARIFY_TABLE`).
    pub table: Option<String>,
    /// Complete Step Functions tasks (`TOOLGATE_CLARIFY_STEP_FUNCTIONS`;
    /// on by default with a DynamoDB table).
    pub step_functions: bool,
    /// Where people hear of clarifications (`[[clarify.notify]]`).
    pub notify: Vec<super::NotifyChannel>,
    /// Questions one caller may have waiting for an answer
    /// (`TOOLGATE_CLARIFY_MAX_PENDING_PER_CALLER`; 0: no bound).
    pub max_pending_per_caller: u64,
    /// Questions all callers may have waiting
    /// (`TOOLGATE_CLARIFY_MAX_PENDING`; 0: no bound).
    pub max_pending: u64,
    /// How often `toolgate serve` sweeps expired clarifications
    /// (`TOOLGATE_CLARIFY_SWEEP_SECS`; on AWS the template's schedule
    /// sweeps instead).
    pub sweep_secs: u64,
    /// Seals the state an MCP client's retry brings back
    /// (`TOOLGATE_MCP_STATE_KEY`, or on AWS the SSM SecureString
    /// `TOOLGATE_MCP_STATE_KEY_PARAMETER` names; at least 32 bytes). Without
    /// one, a SQLite store keeps a key file beside its database.
    pub mcp_state_key: Option<super::notify::Secret>,
}

impl Default for ClarifyConfig {
    fn default() -> Self {
        Self {
            expiry_secs: 86_400,
            public_url: None,
            // `load` puts it in the data folder the environment names.
            db_path: PathBuf::from(DB_FILE),
            table: None,
            step_functions: false,
            notify: Vec::new(),
            max_pending_per_caller: crate::clarify::DEFAULT_MAX_PENDING_PER_CALLER,
            max_pending: crate::clarify::DEFAULT_MAX_PENDING,
            sweep_secs: DEFAULT_SWEEP_SECS,
            mcp_state_key: None,
        }
    }
}

/// How often `toolgate serve` sweeps unless told otherwise.
pub const DEFAULT_SWEEP_SECS: u64 = 30;

const DB_FILE: &str = "clarify.sqlite3";

/// `[clarify]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FileClarify {
    expiry_secs: Option<u64>,
    public_url: Option<String>,
    db: Option<String>,
    max_pending_per_caller: Option<u64>,
    max_pending: Option<u64>,
    sweep_secs: Option<u64>,
    #[serde(default)]
    notify: Vec<super::notify::FileChannel>,
}

impl ClarifyConfig {
    /// The file's table (a relative `db` is relative to the file), then the
    /// environment, checked.
    pub(super) fn load(
        file: FileClarify,
        file_path: &str,
        env: Env<'_>,
    ) -> Result<Self, ConfigError> {
        let mut c = Self {
            db_path: super::env::data_dir(env).join(DB_FILE),
            ..Self::default()
        };
        c.expiry_secs = file.expiry_secs.unwrap_or(c.expiry_secs);
        c.max_pending_per_caller = file
            .max_pending_per_caller
            .unwrap_or(c.max_pending_per_caller);
        c.max_pending = file.max_pending.unwrap_or(c.max_pending);
        c.sweep_secs = file.sweep_secs.unwrap_or(c.sweep_secs);
        c.public_url = file.public_url;
        if let Some(v) = file.db {
            c.db_path = match Path::new(file_path).parent() {
                Some(dir) if Path::new(&v).is_relative() => dir.join(v),
                _ => PathBuf::from(v),
            };
        }
        set_number(
            env,
            &mut c.expiry_secs,
            "TOOLGATE_CLARIFY_EXPIRY_SECS",
            "a whole number of seconds",
        )?;
        set_number(
            env,
            &mut c.max_pending_per_caller,
            "TOOLGATE_CLARIFY_MAX_PENDING_PER_CALLER",
            "a whole number (0: no limit)",
        )?;
        set_number(
            env,
            &mut c.max_pending,
            "TOOLGATE_CLARIFY_MAX_PENDING",
            "a whole number (0: no limit)",
        )?;
        set_number(
            env,
            &mut c.sweep_secs,
            "TOOLGATE_CLARIFY_SWEEP_SECS",
            "a whole number of seconds",
        )?;
        if let Some(v) = env.text("TOOLGATE_PUBLIC_URL") {
            c.public_url = Some(v);
        }
        if let Some(v) = env.text("TOOLGATE_CLARIFY_DB") {
            c.db_path = PathBuf::from(v);
        }
        if let Some(v) = env.text("TOOLGATE_CLARIFY_TABLE") {
            c.table = Some(v);
            c.step_functions = true;
        }
        if let Some(b) = env.flag("TOOLGATE_CLARIFY_STEP_FUNCTIONS")? {
            c.step_functions = b;
        }
        let bad_key = |reason: String| ConfigError::BadToken {
            table: "TOOLGATE_MCP_STATE_KEY".into(),
            reason,
        };
        c.mcp_state_key = super::notify::secret_from_env(
            env,
            "TOOLGATE_MCP_STATE_KEY",
            "TOOLGATE_MCP_STATE_KEY_PARAMETER",
        )
        .map_err(bad_key)?;
        if let Some(super::notify::Secret::Value(v)) = &c.mcp_state_key {
            crate::elicit::state::StateKey::from_secret(v.as_bytes()).map_err(bad_key)?;
        }
        c.notify = super::notify::load(file.notify, env)?;
        c.validate()?;
        Ok(c)
    }

    /// The pending quotas these settings name.
    pub fn pending_limits(&self) -> crate::clarify::PendingLimits {
        crate::clarify::PendingLimits {
            per_caller: self.max_pending_per_caller,
            total: self.max_pending,
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if let Some(u) = &self.public_url
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            return Err(ConfigError::BadValue {
                name: "public_url",
                what: "an http(s):// URL",
                value: u.clone(),
            });
        }
        if !(1..=3600).contains(&self.sweep_secs) {
            return Err(ConfigError::BadValue {
                name: "clarify sweep_secs",
                what: "between 1 and 3600",
                value: self.sweep_secs.to_string(),
            });
        }
        if !(1..=30 * 86_400).contains(&self.expiry_secs) {
            return Err(ConfigError::BadValue {
                name: "clarify expiry_secs",
                what: "between 1 and 2592000 (30 days)",
                value: self.expiry_secs.to_string(),
            });
        }
        Ok(())
    }
}
