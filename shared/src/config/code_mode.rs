//! `[code_mode]`: whether a python.execute script may call the other tools
//! (`from toolgate import tools`), for whom, and how often per script.

use serde::Deserialize;

use super::ConfigError;
use super::env::{Env, set_number};

/// The most tool calls one script makes unless configured.
pub const DEFAULT_MAX_CALLS: u32 = 100;

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
}

impl Default for CodeModeConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            callers: None,
            max_calls: DEFAULT_MAX_CALLS,
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
}
