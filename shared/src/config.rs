//! Configuration: an optional `toolgate.toml`, overridden by `TOOLGATE_*`
//! environment variables (docs/contracts.md#configuration).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::ssh::doc::{Secret, ServerDoc};

pub const DEFAULT_TIMEOUT_SECS: u64 = 20;
pub const MIN_TIMEOUT_SECS: u64 = 1;
pub const MAX_TIMEOUT_SECS: u64 = 1200;
pub const DEFAULT_MEMORY_MB: u64 = 256;
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";

pub use crate::allowlist::{DEFAULT_MODULES, FORBIDDEN_MODULES};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonConfig {
    pub namespace: String,
    pub timeout_secs: u64,
    /// Extra modules beyond [`DEFAULT_MODULES`], validated.
    pub extra_modules: Vec<String>,
    pub memory_mb: u64,
    pub require_seccomp: bool,
    /// Warm children kept forked ahead of calls.
    pub spare_children: usize,
    /// Calls that may run at once; more wait their turn.
    pub max_concurrency: usize,
    /// Calls one caller may run at once; `None` is three quarters of
    /// `max_concurrency`, so a burst always leaves room for others.
    pub max_per_caller: Option<usize>,
}

impl Default for PythonConfig {
    fn default() -> Self {
        Self {
            namespace: "python".into(),
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            extra_modules: Vec::new(),
            memory_mb: DEFAULT_MEMORY_MB,
            require_seccomp: false,
            spare_children: 2,
            max_concurrency: 16,
            max_per_caller: None,
        }
    }
}

impl PythonConfig {
    /// The share one caller may hold: the setting, else three quarters of
    /// the total (at least 1).
    pub fn per_caller(&self) -> usize {
        self.max_per_caller
            .unwrap_or((self.max_concurrency * 3 / 4).max(1))
    }

    pub fn tool_name(&self) -> String {
        format!("{}.execute", self.namespace)
    }

    /// Default and extra modules, sorted and de-duplicated.
    pub fn allowed_modules(&self) -> Vec<String> {
        let mut all: Vec<String> = DEFAULT_MODULES.iter().map(|s| s.to_string()).collect();
        all.extend(self.extra_modules.iter().cloned());
        all.sort();
        all.dedup();
        all
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub addr: String,
    pub token: Option<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            addr: DEFAULT_ADDR.into(),
            token: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    pub server: ServerConfig,
    pub python: PythonConfig,
    pub cloud: CloudConfig,
    pub ssh: SshConfig,
    /// Lambda functions whose tools this one lists and forwards to
    /// (`TOOLGATE_PEER_FUNCTIONS`, comma-separated names or ARNs).
    pub peer_functions: Vec<String>,
    pub clarify: ClarifyConfig,
}

/// `clarify` (docs/contracts.md#configuration): `[clarify]` in the file, `TOOLGATE_CLARIFY_*`.
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
}

impl Default for ClarifyConfig {
    fn default() -> Self {
        Self {
            expiry_secs: 86_400,
            public_url: None,
            db_path: default_data_dir().join("clarify.sqlite3"),
            table: None,
            step_functions: false,
        }
    }
}

/// `TOOLGATE_DATA_DIR`, else `$XDG_DATA_HOME/toolgate`, else
/// `~/.local/share/toolgate`.
fn default_data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TOOLGATE_DATA_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME") {
        return PathBuf::from(d).join("toolgate");
    }
    PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
        .join(".local/share/toolgate")
}

/// SSH servers (docs/contracts.md#server-inventory): `[servers.NAME]` tables with `key_file`, or
/// SSM when `TOOLGATE_SSH_SSM_PREFIX` is set; `[ssh]` holds the limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshConfig {
    /// Name, document and private key, as read at startup.
    pub servers: Vec<(String, ServerDoc, Secret)>,
    /// Read servers from SSM Parameter Store under this path instead.
    pub ssm_prefix: Option<String>,
    /// Seconds the inventory is cached (`TOOLGATE_SSH_TTL_SECS`, default 300).
    pub ttl_secs: u64,
    /// The largest timeout a call may ask for (`TOOLGATE_SSH_MAX_TIMEOUT`, default 600).
    pub max_timeout_secs: u64,
    /// Seconds allowed for TCP connect and handshake (`TOOLGATE_SSH_CONNECT_TIMEOUT`, default 10).
    pub connect_timeout_secs: u64,
    /// Output bytes read before a flooding command is stopped
    /// (`TOOLGATE_SSH_MAX_OUTPUT_BYTES`, default 8 MiB).
    pub max_output_bytes: u64,
}

impl Default for SshConfig {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            ssm_prefix: None,
            ttl_secs: 300,
            max_timeout_secs: 600,
            connect_timeout_secs: 10,
            max_output_bytes: 8 << 20,
        }
    }
}

impl SshConfig {
    /// Whether any server source is configured at all.
    pub fn is_configured(&self) -> bool {
        !self.servers.is_empty() || self.ssm_prefix.is_some()
    }
}

/// Cloud accounts (docs/contracts.md#cloud-tools): `[clouds.NAME]` tables, or SSM when
/// `TOOLGATE_CLOUD_SSM_PREFIX` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudConfig {
    pub accounts: Vec<crate::cloud::Account>,
    /// Read accounts from SSM Parameter Store under this path instead.
    pub ssm_prefix: Option<String>,
    /// Seconds a tool listing is cached (`TOOLGATE_CLOUD_TTL_SECS`, default 300).
    pub ttl_secs: u64,
    /// Seconds allowed per request to an account (`TOOLGATE_CLOUD_TIMEOUT_SECS`, default 10).
    pub timeout_secs: u64,
}

impl Default for CloudConfig {
    fn default() -> Self {
        Self {
            accounts: Vec::new(),
            ssm_prefix: None,
            ttl_secs: 300,
            timeout_secs: 10,
        }
    }
}

impl CloudConfig {
    /// Whether any cloud account is configured at all.
    pub fn is_configured(&self) -> bool {
        !self.accounts.is_empty() || self.ssm_prefix.is_some()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("invalid config file {path}: {reason}")]
    Parse { path: String, reason: String },
    #[error(
        "module {0:?} cannot be allowed: it reaches the host or the interpreter itself, and does not exist in the sandbox"
    )]
    ForbiddenModule(String),
    #[error("{0:?} is not a valid module name")]
    BadModuleName(String),
    #[error("namespace {0:?} must match ^[a-zA-Z0-9_-]{{1,40}}$")]
    BadNamespace(String),
    #[error("[clouds.{account}]: {reason}")]
    BadCloud { account: String, reason: String },
    #[error("[servers.{server}]: {reason}")]
    BadServer { server: String, reason: String },
    #[error("{name} must be {what}, got {value:?}")]
    BadValue {
        name: &'static str,
        what: &'static str,
        value: String,
    },
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    server: FileServer,
    #[serde(default)]
    python: FilePython,
    // Tables that other tools read (docs/contracts.md#configuration); accepted here so that one
    // file configures everything, while a misspelt table is still an error.
    #[serde(default)]
    servers: std::collections::BTreeMap<String, ServerDoc>,
    #[serde(default)]
    ssh: FileSsh,
    #[serde(default)]
    clouds: std::collections::BTreeMap<String, FileCloud>,
    #[serde(default)]
    clarify: FileClarify,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCloud {
    url: String,
    #[serde(default = "enabled_by_default")]
    enabled: bool,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    /// The name of an environment variable holding the bearer token, so
    /// that the file itself holds no secret.
    token_env: Option<String>,
}

fn enabled_by_default() -> bool {
    true
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileClarify {
    expiry_secs: Option<u64>,
    public_url: Option<String>,
    db: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileSsh {
    ttl_secs: Option<u64>,
    max_timeout: Option<u64>,
    connect_timeout: Option<u64>,
    max_output_bytes: Option<u64>,
}

/// Reads a server's `key_file`: `~/` is the home directory, a relative
/// path is relative to the config file.
fn read_key_file(raw: &str, config_path: &str) -> Result<Secret, String> {
    let path = match raw.strip_prefix("~/") {
        Some(rest) => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(rest),
        None => {
            let p = PathBuf::from(raw);
            match Path::new(config_path).parent() {
                Some(dir) if p.is_relative() => dir.join(p),
                _ => p,
            }
        }
    };
    std::fs::read_to_string(&path)
        .map(|k| Secret(k.into()))
        .map_err(|e| format!("key_file {}: {e}", path.display()))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileServer {
    addr: Option<String>,
    token: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FilePython {
    namespace: Option<String>,
    timeout: Option<i64>,
    allowed_modules: Option<Vec<String>>,
    memory_mb: Option<u64>,
    require_seccomp: Option<bool>,
    spare_children: Option<usize>,
    max_concurrency: Option<usize>,
    max_per_caller: Option<usize>,
}

/// `TOOLGATE_PYTHON_TIMEOUT`: anything that does not parse falls back to 20;
/// the value is clamped to 1–1200 (docs/contracts.md#sandbox-limits).
pub fn parse_timeout(raw: &str) -> u64 {
    raw.trim()
        .parse::<i64>()
        .map(clamp_timeout)
        .unwrap_or(DEFAULT_TIMEOUT_SECS)
}

pub fn clamp_timeout(secs: i64) -> u64 {
    secs.clamp(MIN_TIMEOUT_SECS as i64, MAX_TIMEOUT_SECS as i64) as u64
}

/// A comma-separated module list; blanks are ignored.
pub fn parse_module_list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn validate_module(name: &str) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && name.split('.').all(|part| {
            let mut cs = part.chars();
            matches!(cs.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
                && cs.all(|c| c == '_' || c.is_ascii_alphanumeric())
        });
    if !ok {
        return Err(ConfigError::BadModuleName(name.to_owned()));
    }
    let top = name.split('.').next().unwrap_or(name);
    if FORBIDDEN_MODULES.contains(&top) {
        return Err(ConfigError::ForbiddenModule(name.to_owned()));
    }
    Ok(())
}

fn validate_namespace(ns: &str) -> Result<(), ConfigError> {
    let ok = (1..=40).contains(&ns.len())
        && ns
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ConfigError::BadNamespace(ns.to_owned()))
    }
}

fn env_bool(name: &'static str, raw: &str) -> Result<bool, ConfigError> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" | "" => Ok(false),
        _ => Err(ConfigError::BadValue {
            name,
            what: "a boolean (1/0, true/false)",
            value: raw.to_owned(),
        }),
    }
}

fn env_number<T: std::str::FromStr>(
    name: &'static str,
    raw: &str,
    what: &'static str,
) -> Result<T, ConfigError> {
    raw.trim().parse::<T>().map_err(|_| ConfigError::BadValue {
        name,
        what,
        value: raw.to_owned(),
    })
}

impl Config {
    /// Reads `path` when given, else `./toolgate.toml` when present, then
    /// applies the environment.
    pub fn load(
        path: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
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
        Self::from_parts(&text, &shown, env)
    }

    /// Builds a config from TOML text and an environment lookup.
    pub fn from_parts(
        toml_text: &str,
        path_for_errors: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let file: FileConfig = toml::from_str(toml_text).map_err(|e| ConfigError::Parse {
            path: path_for_errors.to_owned(),
            reason: e.to_string(),
        })?;
        let mut cfg = Config::default();
        if let Some(a) = file.server.addr {
            cfg.server.addr = a;
        }
        cfg.server.token = file.server.token;
        let p = &mut cfg.python;
        if let Some(ns) = file.python.namespace {
            p.namespace = ns;
        }
        if let Some(t) = file.python.timeout {
            p.timeout_secs = clamp_timeout(t);
        }
        if let Some(m) = file.python.allowed_modules {
            p.extra_modules = m;
        }
        if let Some(m) = file.python.memory_mb {
            p.memory_mb = m;
        }
        if let Some(b) = file.python.require_seccomp {
            p.require_seccomp = b;
        }
        if let Some(n) = file.python.spare_children {
            p.spare_children = n;
        }
        if let Some(n) = file.python.max_concurrency {
            p.max_concurrency = n;
        }
        if let Some(n) = file.python.max_per_caller {
            p.max_per_caller = Some(n);
        }

        for (id, c) in file.clouds {
            let bad = |reason: String| ConfigError::BadCloud {
                account: id.clone(),
                reason,
            };
            crate::cloud::validate_account_id(&id).map_err(bad)?;
            if !(c.url.starts_with("http://") || c.url.starts_with("https://")) {
                return Err(bad(format!("url must be http(s)://..., got {:?}", c.url)));
            }
            let token =
                match &c.token_env {
                    Some(var) => Some(env(var).filter(|t| !t.is_empty()).ok_or_else(|| {
                        bad(format!("token_env names {var:?}, which is not set"))
                    })?),
                    None => None,
                };
            cfg.cloud.accounts.push(crate::cloud::Account {
                id: id.clone(),
                url: c.url,
                enabled: c.enabled,
                headers: c.headers,
                token,
            });
        }
        for (name, mut doc) in file.servers {
            let bad = |reason: String| ConfigError::BadServer {
                server: name.clone(),
                reason,
            };
            crate::ssh::doc::validate_server_name(&name).map_err(bad)?;
            let key_file = doc.key_file.take().ok_or_else(|| {
                bad("key_file is required (the private key to log in with)".into())
            })?;
            let key = read_key_file(&key_file, path_for_errors).map_err(bad)?;
            cfg.ssh.servers.push((name, doc, key));
        }
        let s = &mut cfg.ssh;
        if let Some(v) = file.ssh.ttl_secs {
            s.ttl_secs = v;
        }
        if let Some(v) = file.ssh.max_timeout {
            s.max_timeout_secs = v;
        }
        if let Some(v) = file.ssh.connect_timeout {
            s.connect_timeout_secs = v;
        }
        if let Some(v) = file.ssh.max_output_bytes {
            s.max_output_bytes = v;
        }
        if let Some(v) = env("TOOLGATE_SSH_SSM_PREFIX").filter(|v| !v.trim().is_empty()) {
            s.ssm_prefix = Some(v.trim().to_owned());
        }
        for (var, field, what) in [
            (
                "TOOLGATE_SSH_TTL_SECS",
                &mut s.ttl_secs,
                "a whole number of seconds",
            ),
            (
                "TOOLGATE_SSH_MAX_TIMEOUT",
                &mut s.max_timeout_secs,
                "a whole number of seconds",
            ),
            (
                "TOOLGATE_SSH_CONNECT_TIMEOUT",
                &mut s.connect_timeout_secs,
                "a whole number of seconds",
            ),
            (
                "TOOLGATE_SSH_MAX_OUTPUT_BYTES",
                &mut s.max_output_bytes,
                "a whole number of bytes",
            ),
        ] {
            if let Some(v) = env(var) {
                *field = env_number(var, &v, what)?;
            }
        }

        let c = &mut cfg.clarify;
        if let Some(v) = file.clarify.expiry_secs {
            c.expiry_secs = v;
        }
        c.public_url = file.clarify.public_url;
        if let Some(v) = file.clarify.db {
            c.db_path = match Path::new(path_for_errors).parent() {
                Some(dir) if Path::new(&v).is_relative() => dir.join(v),
                _ => PathBuf::from(v),
            };
        }
        if let Some(v) = env("TOOLGATE_CLARIFY_EXPIRY_SECS") {
            c.expiry_secs = env_number(
                "TOOLGATE_CLARIFY_EXPIRY_SECS",
                &v,
                "a whole number of seconds",
            )?;
        }
        if let Some(v) = env("TOOLGATE_PUBLIC_URL").filter(|v| !v.trim().is_empty()) {
            c.public_url = Some(v.trim().to_owned());
        }
        if let Some(v) = env("TOOLGATE_CLARIFY_DB").filter(|v| !v.trim().is_empty()) {
            c.db_path = PathBuf::from(v);
        }
        if let Some(v) = env("TOOLGATE_CLARIFY_TABLE").filter(|v| !v.trim().is_empty()) {
            c.table = Some(v.trim().to_owned());
            c.step_functions = true;
        }
        if let Some(v) = env("TOOLGATE_CLARIFY_STEP_FUNCTIONS") {
            c.step_functions = env_bool("TOOLGATE_CLARIFY_STEP_FUNCTIONS", &v)?;
        }
        if let Some(u) = &c.public_url
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            return Err(ConfigError::BadValue {
                name: "public_url",
                what: "an http(s):// URL",
                value: u.clone(),
            });
        }
        if !(1..=30 * 86_400).contains(&c.expiry_secs) {
            return Err(ConfigError::BadValue {
                name: "clarify expiry_secs",
                what: "between 1 and 2592000 (30 days)",
                value: c.expiry_secs.to_string(),
            });
        }
        if let Some(v) = env("TOOLGATE_PEER_FUNCTIONS") {
            cfg.peer_functions = v
                .split(',')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .map(str::to_owned)
                .collect();
        }
        if let Some(v) = env("TOOLGATE_CLOUD_SSM_PREFIX").filter(|v| !v.trim().is_empty()) {
            cfg.cloud.ssm_prefix = Some(v.trim().to_owned());
        }
        if let Some(v) = env("TOOLGATE_CLOUD_TTL_SECS") {
            cfg.cloud.ttl_secs =
                env_number("TOOLGATE_CLOUD_TTL_SECS", &v, "a whole number of seconds")?;
        }
        if let Some(v) = env("TOOLGATE_CLOUD_TIMEOUT_SECS") {
            cfg.cloud.timeout_secs = env_number(
                "TOOLGATE_CLOUD_TIMEOUT_SECS",
                &v,
                "a whole number of seconds",
            )?;
            if cfg.cloud.timeout_secs == 0 {
                return Err(ConfigError::BadValue {
                    name: "TOOLGATE_CLOUD_TIMEOUT_SECS",
                    what: "at least 1",
                    value: v,
                });
            }
        }

        if let Some(v) = env("TOOLGATE_ADDR") {
            cfg.server.addr = v;
        }
        if let Some(v) = env("TOOLGATE_TOKEN").filter(|v| !v.is_empty()) {
            cfg.server.token = Some(v);
        }
        let p = &mut cfg.python;
        if let Some(v) = env("TOOLGATE_PYTHON_TIMEOUT") {
            p.timeout_secs = parse_timeout(&v);
        }
        if let Some(v) = env("TOOLGATE_PYTHON_ALLOWED_MODULES") {
            p.extra_modules.extend(parse_module_list(&v));
        }
        if let Some(v) = env("TOOLGATE_PYTHON_NAMESPACE") {
            p.namespace = v.trim().to_owned();
        }
        if let Some(v) = env("TOOLGATE_PYTHON_MEMORY_MB") {
            p.memory_mb = env_number("TOOLGATE_PYTHON_MEMORY_MB", &v, "a whole number of MiB")?;
        }
        if let Some(v) = env("TOOLGATE_PYTHON_REQUIRE_SECCOMP") {
            p.require_seccomp = env_bool("TOOLGATE_PYTHON_REQUIRE_SECCOMP", &v)?;
        }
        if let Some(v) = env("TOOLGATE_PYTHON_SPARE_CHILDREN") {
            p.spare_children = env_number("TOOLGATE_PYTHON_SPARE_CHILDREN", &v, "a whole number")?;
        }
        if let Some(v) = env("TOOLGATE_PYTHON_MAX_CONCURRENCY") {
            p.max_concurrency =
                env_number("TOOLGATE_PYTHON_MAX_CONCURRENCY", &v, "a whole number")?;
        }
        if let Some(v) = env("TOOLGATE_PYTHON_MAX_PER_CALLER") {
            p.max_per_caller = Some(env_number(
                "TOOLGATE_PYTHON_MAX_PER_CALLER",
                &v,
                "a whole number",
            )?);
        }
        cfg.validate()?;
        Ok(cfg)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let p = &self.python;
        validate_namespace(&p.namespace)?;
        for m in &p.extra_modules {
            validate_module(m)?;
        }
        if !(16..=65_536).contains(&p.memory_mb) {
            return Err(ConfigError::BadValue {
                name: "memory_mb",
                what: "between 16 and 65536",
                value: p.memory_mb.to_string(),
            });
        }
        if !(1..=1024).contains(&p.max_concurrency) {
            return Err(ConfigError::BadValue {
                name: "max_concurrency",
                what: "between 1 and 1024",
                value: p.max_concurrency.to_string(),
            });
        }
        if !(1..=p.max_concurrency).contains(&p.per_caller()) {
            return Err(ConfigError::BadValue {
                name: "max_per_caller",
                what: "between 1 and max_concurrency",
                value: p.per_caller().to_string(),
            });
        }
        let s = &self.ssh;
        for (name, value, min) in [
            ("ssh max_timeout", s.max_timeout_secs, 1),
            ("ssh connect_timeout", s.connect_timeout_secs, 1),
            ("ssh max_output_bytes", s.max_output_bytes, 65_536),
        ] {
            if value < min {
                return Err(ConfigError::BadValue {
                    name,
                    what: "larger (see README, SSH tools)",
                    value: value.to_string(),
                });
            }
        }
        // The whole server entry is checked now (host key, policy, key), so
        // a typo fails at startup rather than at the first call.
        #[cfg(feature = "ssh")]
        for (name, doc, key) in &s.servers {
            doc.clone()
                .into_server(name, key.0.clone())
                .map_err(|reason| ConfigError::BadServer {
                    server: name.clone(),
                    reason,
                })?;
        }
        if p.spare_children > 64 {
            return Err(ConfigError::BadValue {
                name: "spare_children",
                what: "at most 64",
                value: p.spare_children.to_string(),
            });
        }
        Ok(())
    }

    /// Reads the process environment.
    pub fn from_env_and_file(path: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load(path, &|k| std::env::var(k).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::BTreeMap;

    fn with_env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn timeout_parsing_falls_back_and_clamps() {
        assert_eq!(parse_timeout("30"), 30);
        assert_eq!(parse_timeout(" 7 "), 7);
        assert_eq!(parse_timeout("abc"), 20);
        assert_eq!(parse_timeout(""), 20);
        assert_eq!(parse_timeout("1.5"), 20);
        assert_eq!(parse_timeout("0"), 1);
        assert_eq!(parse_timeout("-5"), 1);
        assert_eq!(parse_timeout("99999"), 1200);
        assert_eq!(parse_timeout("99999999999999999999999"), 20);
    }

    #[test]
    fn env_overrides_file() {
        let toml = "[python]\ntimeout = 5\nallowed_modules = [\"html\"]\n";
        let c = Config::from_parts(
            toml,
            "t.toml",
            &with_env(&[("TOOLGATE_PYTHON_TIMEOUT", "9")]),
        )
        .unwrap();
        assert_eq!(c.python.timeout_secs, 9);
        assert_eq!(c.python.extra_modules, vec!["html"]);
        let c = Config::from_parts(toml, "t.toml", &with_env(&[])).unwrap();
        assert_eq!(c.python.timeout_secs, 5);
        let c = Config::from_parts("[python]\ntimeout = 5000\n", "t", &with_env(&[])).unwrap();
        assert_eq!(c.python.timeout_secs, 1200);
    }

    #[test]
    fn module_lists_are_parsed_and_merged() {
        assert_eq!(
            parse_module_list(" html, ,xml.dom ,"),
            vec!["html", "xml.dom"]
        );
        let c = Config::from_parts(
            "",
            "",
            &with_env(&[("TOOLGATE_PYTHON_ALLOWED_MODULES", "html,math")]),
        )
        .unwrap();
        let all = c.python.allowed_modules();
        assert_eq!(all.len(), 34, "math is a default and is not doubled");
        assert!(all.contains(&"html".to_string()));
        assert!(all.windows(2).all(|w| w[0] < w[1]), "sorted");
    }

    #[test]
    fn dangerous_or_malformed_modules_are_refused() {
        for bad in [
            "os",
            "sys",
            "os.path",
            "subprocess",
            "ctypes",
            "importlib.util",
            "builtins",
        ] {
            let e = Config::from_parts(
                "",
                "",
                &with_env(&[("TOOLGATE_PYTHON_ALLOWED_MODULES", bad)]),
            )
            .unwrap_err();
            assert_eq!(e, ConfigError::ForbiddenModule(bad.into()), "{bad}");
        }
        for bad in ["1abc", "a-b", "a..b", "a b"] {
            let e = Config::from_parts(
                "",
                "",
                &with_env(&[("TOOLGATE_PYTHON_ALLOWED_MODULES", bad)]),
            )
            .unwrap_err();
            assert_eq!(e, ConfigError::BadModuleName(bad.into()), "{bad}");
        }
    }

    #[test]
    fn namespace_and_defaults() {
        let c = Config::from_parts("", "", &with_env(&[])).unwrap();
        assert_eq!(c.python.tool_name(), "python.execute");
        assert_eq!(c.python.memory_mb, 256);
        assert_eq!(c.server.addr, "127.0.0.1:8080");
        let c =
            Config::from_parts("", "", &with_env(&[("TOOLGATE_PYTHON_NAMESPACE", "py")])).unwrap();
        assert_eq!(c.python.tool_name(), "py.execute");
        let e = Config::from_parts("", "", &with_env(&[("TOOLGATE_PYTHON_NAMESPACE", "a.b")]))
            .unwrap_err();
        assert!(matches!(e, ConfigError::BadNamespace(_)));
    }

    #[test]
    fn bad_file_and_bad_numbers_are_clear_errors() {
        let e = Config::from_parts("[python]\ntimeout = \"x\"\n", "f.toml", &with_env(&[]))
            .unwrap_err();
        assert!(matches!(e, ConfigError::Parse { .. }));
        assert!(e.to_string().contains("f.toml"));
        let e = Config::from_parts("[pyhton]\n", "f.toml", &with_env(&[])).unwrap_err();
        assert!(e.to_string().contains("pyhton"), "{e}");
        let ok = Config::from_parts("[clarify]\n", "f.toml", &with_env(&[]));
        assert!(ok.is_ok(), "other tools' tables are accepted");
        let e = Config::from_parts("[python]\ntimout = 3\n", "f.toml", &with_env(&[])).unwrap_err();
        assert!(e.to_string().contains("timout"));
        let e = Config::from_parts("", "", &with_env(&[("TOOLGATE_PYTHON_MEMORY_MB", "lots")]))
            .unwrap_err();
        assert!(e.to_string().contains("TOOLGATE_PYTHON_MEMORY_MB"));
    }

    #[test]
    fn a_callers_share_defaults_to_three_quarters_and_is_checked() {
        let c = Config::from_parts("", "", &with_env(&[])).unwrap();
        assert_eq!(c.python.per_caller(), 12, "3/4 of the default 16");
        let c = Config::from_parts("[python]\nmax_concurrency = 1\n", "f.toml", &with_env(&[]))
            .unwrap();
        assert_eq!(c.python.per_caller(), 1, "never below one place");
        let c = Config::from_parts(
            "",
            "",
            &with_env(&[("TOOLGATE_PYTHON_MAX_PER_CALLER", "16")]),
        )
        .unwrap();
        assert_eq!(
            c.python.per_caller(),
            16,
            "a share of all turns fairness off"
        );
        for bad in ["0", "17"] {
            let e = Config::from_parts(
                "",
                "",
                &with_env(&[("TOOLGATE_PYTHON_MAX_PER_CALLER", bad)]),
            )
            .unwrap_err();
            assert!(e.to_string().contains("max_per_caller"), "{bad}: {e}");
        }
    }

    #[test]
    fn server_tables_are_checked_at_load() {
        let dir = std::env::temp_dir().join(format!("toolgate-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A throwaway ed25519 key, generated for this test only.
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACDjqux70ylHyacqbt3+L/Xc8e/1M3tdKd8tlJTn/de9JAAAAIiKXDo0ilw6
NAAAAAtzc2gtZWQyNTUxOQAAACDjqux70ylHyacqbt3+L/Xc8e/1M3tdKd8tlJTn/de9JA
AAAECpXrnlppClY/PkrhQGsx4VmnlE3b/Rp/qWoz8ubaJ55OOq7HvTKUfJpypu3f4v9dzx
7/Uze10p3y2UlOf9170kAAAABHRlc3QB
-----END OPENSSH PRIVATE KEY-----
";
        std::fs::write(dir.join("id"), key).unwrap();
        let cfg_path = dir.join("toolgate.toml");
        let cfg_path = cfg_path.to_str().unwrap();
        let table = |extra: &str| {
            format!(
                "[servers.web]\nhost = \"10.0.0.5\"\nusername = \"ops\"\nhost_key = \"{}\"\n{extra}",
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOOq7HvTKUfJpypu3f4v9dzx7/Uze10p3y2UlOf9170k"
            )
        };
        // key_file relative to the config file.
        let c =
            Config::from_parts(&table("key_file = \"id\"\n"), cfg_path, &with_env(&[])).unwrap();
        assert_eq!(c.ssh.servers.len(), 1);
        assert_eq!(c.ssh.servers[0].1.port, 22);
        assert!(
            !format!("{c:?}").contains("PRIVATE KEY"),
            "the key never shows in Debug"
        );
        for (text, says) in [
            (table(""), "key_file is required"),
            (table("key_file = \"nope\"\n"), "key_file"),
            (
                table("key_file = \"id\"\n[servers.web.policy]\npreset = \"strict\"\n"),
                "preset",
            ),
            (
                table("key_file = \"id\"\n[servers.web.policy]\ndeny = [\"(\"]\n"),
                "not a valid regex",
            ),
            (
                table("key_file = \"id\"\n").replace("AAAAC3", "AAAAC4"),
                "host_key",
            ),
            (
                table("key_file = \"id\"\n").replace("[servers.web]", "[servers.\"a b\"]"),
                "server name",
            ),
            (
                table("key_file = \"id\"\nmax_sessions = 0\n"),
                "max_sessions",
            ),
        ] {
            let e = Config::from_parts(&text, cfg_path, &with_env(&[])).unwrap_err();
            assert!(e.to_string().contains(says), "{text}\n=> {e}");
        }
        let e = Config::from_parts("[servers.web]\nhost = \"h\"\n", "f.toml", &with_env(&[]))
            .unwrap_err();
        assert!(e.to_string().contains("username"), "{e}");
        let e = Config::from_parts("", "", &with_env(&[("TOOLGATE_SSH_MAX_TIMEOUT", "0")]))
            .unwrap_err();
        assert!(e.to_string().contains("max_timeout"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
