//! `[code_mode]`: whether a python.execute script may call the other tools
//! (`from toolgate import tools`), for whom, and how often per script.

use serde::Deserialize;

use super::ConfigError;
use super::env::{Env, set_number};

/// The most tool calls one script makes unless configured.
pub const DEFAULT_MAX_CALLS: u32 = 100;

/// How long a waiting script can be resumed unless configured: a day, as
/// long as a question waits by default.
pub const DEFAULT_RESUME_TTL_SECS: u64 = 86_400;

/// The longest a waiting script's journal may be kept: 30 days, as a
/// question's longest expiry.
const MAX_RESUME_TTL_SECS: u64 = 2_592_000;

/// Code mode's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeModeConfig {
    /// Scripts may call tools (`TOOLGATE_CODE_MODE`; on by default: a
    /// script can do nothing its caller could not do with direct calls).
    pub enabled: bool,
    /// Only these callers' scripts may (`None`: every caller's).
    pub callers: Option<Vec<String>>,
    /// The most tool calls one script makes; past it a call raises
    /// `quota_exceeded`.
    pub max_calls: u32,
    /// How long, in seconds, a script that waits for a person can be
    /// resumed (`TOOLGATE_CODE_MODE_RESUME_TTL`; 60 to 2,592,000).
    pub resume_ttl_secs: u64,
}

impl Default for CodeModeConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            callers: None,
            max_calls: DEFAULT_MAX_CALLS,
            resume_ttl_secs: DEFAULT_RESUME_TTL_SECS,
        }
    }
}

impl CodeModeConfig {
    /// Whether `caller`'s scripts may call tools.
    pub fn allows(&self, caller: Option<&str>) -> bool {
        self.enabled
            && match &self.callers {
                None => true,
                Some(list) => caller.is_some_and(|c| list.iter().any(|l| l == c)),
            }
    }

    /// The file's table, then the environment.
    pub(super) fn load(file: FileCodeMode, env: Env<'_>) -> Result<Self, ConfigError> {
        let mut c = Self::default();
        c.enabled = file.enabled.unwrap_or(c.enabled);
        c.callers = file.callers.or(c.callers);
        c.max_calls = file.max_calls.unwrap_or(c.max_calls);
        c.resume_ttl_secs = file.resume_ttl_secs.unwrap_or(c.resume_ttl_secs);
        if let Some(b) = env.flag("TOOLGATE_CODE_MODE")? {
            c.enabled = b;
        }
        if let Some(l) = env.list("TOOLGATE_CODE_MODE_CALLERS") {
            c.callers = Some(l);
        }
        set_number(
            env,
            &mut c.max_calls,
            "TOOLGATE_CODE_MODE_MAX_CALLS",
            "a whole number of calls",
        )?;
        set_number(
            env,
            &mut c.resume_ttl_secs,
            "TOOLGATE_CODE_MODE_RESUME_TTL",
            "a whole number of seconds",
        )?;
        if !(60..=MAX_RESUME_TTL_SECS).contains(&c.resume_ttl_secs) {
            return Err(ConfigError::BadValue {
                name: "code_mode.resume_ttl_secs",
                what: "between 60 and 2592000 seconds",
                value: c.resume_ttl_secs.to_string(),
            });
        }
        Ok(c)
    }
}

/// `[code_mode]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FileCodeMode {
    enabled: Option<bool>,
    callers: Option<Vec<String>>,
    max_calls: Option<u32>,
    resume_ttl_secs: Option<u64>,
}
