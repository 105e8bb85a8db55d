//! Configuration: an optional `toolgate.toml`, overridden by `TOOLGATE_*`
//! environment variables (docs/contracts.md#configuration). Each section
//! reads its table and its variables and checks itself in its own file;
//! every variable is read through the injected lookup (`env`).

mod approvals;
mod clarify;
mod cloud;
mod code_mode;
mod env;
mod notify;
mod python;
mod server;
mod ssh;
mod tokens;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use approvals::{ApprovalsConfig, DEFAULT_JWT_CLAIM, ENV_APPROVER};
pub use clarify::ClarifyConfig;
pub use cloud::CloudConfig;
pub use code_mode::CodeModeConfig;
pub use env::Lookup;
pub use notify::{NotifyChannel, NotifyKind, Secret};
pub use python::{
    DEFAULT_MEMORY_MB, DEFAULT_MODULES, DEFAULT_TIMEOUT_SECS, FORBIDDEN_MODULES, MAX_TIMEOUT_SECS,
    MIN_TIMEOUT_SECS, PythonConfig, clamp_timeout, parse_timeout,
};
pub use server::{DEFAULT_ADDR, ServerConfig};
pub use ssh::{ConfigServer, SshConfig};
pub use tokens::{MIN_TOKEN_CHARS, NamedToken, single_token_name};

use crate::ssh::doc::ServerDoc;
use env::Env;

/// Everything a Toolgate binary is configured with.
#[derive(Debug, Clone)]
pub struct Config {
    /// `[server]`: how `toolgate serve` listens.
    pub server: ServerConfig,
    /// `[python]`: how `python.execute` runs.
    pub python: PythonConfig,
    /// `[clouds.*]`: the cloud accounts whose tools are proxied.
    pub cloud: CloudConfig,
    /// `[servers.*]` and `[ssh]`: the servers the SSH tools reach, and their
    /// limits.
    pub ssh: SshConfig,
    /// Lambda functions whose tools this one lists and forwards to
    /// (`TOOLGATE_PEER_FUNCTIONS`, comma-separated names or ARNs).
    pub peer_functions: Vec<String>,
    /// `[clarify]`: where questions wait for their answers.
    pub clarify: ClarifyConfig,
    /// `[approvals]`: who may decide approvals.
    pub approvals: ApprovalsConfig,
    /// `[code_mode]`: python.execute scripts calling the other tools.
    pub code_mode: CodeModeConfig,
    /// The data folder (`TOOLGATE_DATA_DIR`, else `$XDG_DATA_HOME/toolgate`,
    /// else `~/.local/share/toolgate`): the local stores' home, kept
    /// private (0700).
    pub data_dir: PathBuf,
    /// The config file read, if any.
    pub file: Option<PathBuf>,
    /// What the operator should hear about, once, at start-up: values the
    /// contract clamped or replaced by a default, and `TOOLGATE_*`
    /// variables nothing reads (with the closest name that is read).
    pub warnings: Vec<String>,
}

/// What is wrong with the configuration, one message per kind.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {reason}")]
    Read {
        /// The file, as given.
        path: String,
        /// The system's error.
        reason: String,
    },
    /// The file is not TOML of the expected shape (a misspelt table or key is
    /// an error too).
    #[error("invalid config file {path}: {reason}")]
    Parse {
        /// The file, as given (empty for text that came from no file).
        path: String,
        /// The TOML reader's error.
        reason: String,
    },
    /// An allowed module that the sandbox can never have (`FORBIDDEN_MODULES`),
    /// as written.
    #[error(
        "module {0:?} cannot be allowed: it reaches the host or the interpreter itself, and does not exist in the sandbox"
    )]
    ForbiddenModule(String),
    /// An allowed module whose name is not a dotted Python name, as written.
    #[error("{0:?} is not a valid module name")]
    BadModuleName(String),
    /// A `python` namespace that cannot start a tool name, as written.
    #[error("namespace {0:?} must match ^[a-zA-Z0-9_-]{{1,40}}$")]
    BadNamespace(String),
    /// A `[clouds.NAME]` table that does not check.
    #[error("[clouds.{account}]: {reason}")]
    BadCloud {
        /// The account, as the table names it.
        account: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `[servers.NAME]` table that does not check (its key file included).
    #[error("[servers.{server}]: {reason}")]
    BadServer {
        /// The server, as the table names it.
        server: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A notification channel that does not check (never shows a secret).
    #[error("[[clarify.notify]] {channel}: {reason}")]
    BadNotify {
        /// The channel's name (its kind when unnamed).
        channel: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A named token (`[[server.tokens]]`, `[[approvals.approvers]]`, the
    /// single token) that does not check; never shows a token.
    #[error("{table}: {reason}")]
    BadToken {
        /// The list and the entry's name, or the setting.
        table: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A setting or variable whose value is of the wrong kind or out of range.
    #[error("{name} must be {what}, got {value:?}")]
    BadValue {
        /// The setting or variable, as the message names it.
        name: &'static str,
        /// What it must be ("a whole number of seconds").
        what: &'static str,
        /// The value it was given.
        value: String,
    },
}

/// The whole file as written. Every tool's tables are accepted in every
/// build, so one file configures everything, while a misspelt table is
/// still an error.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    server: server::FileServer,
    #[serde(default)]
    python: python::FilePython,
    #[serde(default)]
    servers: BTreeMap<String, ServerDoc>,
    #[serde(default)]
    ssh: ssh::FileSsh,
    #[serde(default)]
    clouds: BTreeMap<String, cloud::FileCloud>,
    #[serde(default)]
    clarify: clarify::FileClarify,
    #[serde(default)]
    approvals: approvals::FileApprovals,
    #[serde(default)]
    code_mode: code_mode::FileCodeMode,
}

impl Config {
    /// Reads `path` when given, else `./toolgate.toml` when present, then
    /// applies the environment.
    pub fn load(path: Option<&Path>, env: Lookup<'_>) -> Result<Self, ConfigError> {
        let default_path = PathBuf::from("toolgate.toml");
        let chosen = match path {
            Some(p) => Some(p.to_path_buf()),
            None if default_path.exists() => Some(default_path),
            None => None,
        };
        let text = match &chosen {
            Some(p) => std::fs::read_to_string(p).map_err(|e| ConfigError::Read {
                path: p.display().to_string(),
                reason: e.to_string(),
            })?,
            None => String::new(),
        };
        let shown = chosen
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let mut c = Self::from_parts(&text, &shown, env)?;
        c.file = chosen;
        Ok(c)
    }

    /// Builds a config from TOML text and an environment lookup;
    /// `path_for_errors` names the file in errors and anchors its relative
    /// paths.
    pub fn from_parts(
        toml_text: &str,
        path_for_errors: &str,
        lookup: Lookup<'_>,
    ) -> Result<Self, ConfigError> {
        let file: FileConfig = toml::from_str(toml_text).map_err(|e| ConfigError::Parse {
            path: path_for_errors.to_owned(),
            reason: parse_reason(&e, toml_text),
        })?;
        let env = Env(lookup);
        let warnings = python::timeout_warnings(&file.python, env);
        let c = Self {
            server: ServerConfig::load(file.server, env)?,
            python: PythonConfig::load(file.python, env)?,
            cloud: CloudConfig::load(file.clouds, env)?,
            ssh: SshConfig::load(file.servers, file.ssh, path_for_errors, env)?,
            peer_functions: env.list("TOOLGATE_PEER_FUNCTIONS").unwrap_or_default(),
            clarify: ClarifyConfig::load(file.clarify, path_for_errors, env)?,
            approvals: ApprovalsConfig::load(file.approvals, env)?,
            code_mode: CodeModeConfig::load(file.code_mode, env)?,
            data_dir: env::data_dir(env),
            file: None,
            warnings,
        };
        tokens::check_apart(&c.server.tokens, &c.approvals.approvers)?;
        Ok(c)
    }

    /// Makes `token` the single caller token (`toolgate serve --token`), in
    /// place of `TOOLGATE_TOKEN`'s or `server.token`'s; checked as at load.
    pub fn set_caller_token(&mut self, token: &str) -> Result<(), ConfigError> {
        self.server.set_single_token(token)?;
        tokens::check_apart(&self.server.tokens, &self.approvals.approvers)
    }

    /// Reads the process environment; a `TOOLGATE_*` variable that nothing
    /// reads is named in [`Config::warnings`].
    pub fn from_env_and_file(path: Option<&Path>) -> Result<Self, ConfigError> {
        let asked = std::sync::Mutex::new(std::collections::BTreeSet::new());
        let mut c = Self::load(path, &|k| {
            asked
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(k.to_owned());
            std::env::var(k).ok()
        })?;
        let asked = asked.into_inner().unwrap_or_else(|p| p.into_inner());
        let set: Vec<String> = std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .collect();
        c.warnings.extend(env::unknown_variables(
            set.iter().map(String::as_str),
            &asked,
        ));
        Ok(c)
    }
}

/// The TOML reader's error with its line and column, but not the line
/// itself: the line may hold a token or a secret.
fn parse_reason(e: &toml::de::Error, text: &str) -> String {
    let message = e.message().trim_end();
    match e.span() {
        Some(span) => {
            let before = text.get(..span.start).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            format!("{message} (line {line}, column {column})")
        }
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests;
