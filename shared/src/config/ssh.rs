//! `[servers.NAME]`, `[ssh]` and `TOOLGATE_SSH_*`
//! (docs/contracts.md#server-inventory): the servers `ssh_run` may reach,
//! from the file or from SSM Parameter Store, and the SSH limits.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ConfigError;
use super::env::{Env, set_number};
use crate::ssh::doc::{ServerDoc, validate_server_name};

/// A `[servers.NAME]` table as this build uses it: natively, the table and
/// its key (read once, at load), made a server by [`SshConfig::servers`]
/// where the SSH tools start (so a binary without them links no host-key
/// parser); on the Worker, which has no SSH tools, its name only (no key
/// is read where no SSH tool runs).
#[cfg(not(target_arch = "wasm32"))]
#[derive(Clone)]
pub struct ConfigServer {
    /// The table's name.
    pub name: String,
    doc: ServerDoc,
    key: std::sync::Arc<str>,
}

// The key must never reach a log line through `{:?}`.
#[cfg(not(target_arch = "wasm32"))]
impl std::fmt::Debug for ConfigServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigServer")
            .field("name", &self.name)
            .field("host", &self.doc.host)
            .finish_non_exhaustive()
    }
}
/// See the native definition.
#[cfg(target_arch = "wasm32")]
pub type ConfigServer = String;

/// The SSH tools' servers and limits.
#[derive(Debug, Clone)]
pub struct SshConfig {
    /// The file's servers, checked at load.
    pub servers: Vec<ConfigServer>,
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
    /// Which commands need a person's approval on every server (or on
    /// those with one of `approve_tags`), besides each server's own
    /// `policy.approve`: `readonly` or `all` (`TOOLGATE_SSH_APPROVE_PRESET`).
    pub approve_preset: Option<String>,
    /// Where `approve_preset` applies; empty: every server
    /// (`TOOLGATE_SSH_APPROVE_TAGS`).
    pub approve_tags: Vec<String>,
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
            approve_preset: None,
            approve_tags: Vec::new(),
        }
    }
}

/// `[ssh]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSsh {
    ttl_secs: Option<u64>,
    max_timeout: Option<u64>,
    connect_timeout: Option<u64>,
    max_output_bytes: Option<u64>,
    approve_preset: Option<String>,
    #[serde(default)]
    approve_tags: Vec<String>,
}

impl SshConfig {
    /// The file's servers, each checked whole (host key, policy): an error
    /// names the first table that does not check.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn servers(&self) -> Result<Vec<crate::ssh::inventory::Server>, ConfigError> {
        self.servers
            .iter()
            .map(|c| {
                c.doc
                    .clone()
                    .into_server(&c.name, c.key.clone())
                    .map_err(|reason| ConfigError::BadServer {
                        server: c.name.clone(),
                        reason,
                    })
            })
            .collect()
    }

    /// Whether any server source is configured at all.
    pub fn is_configured(&self) -> bool {
        !self.servers.is_empty() || self.ssm_prefix.is_some()
    }

    /// The file's tables (a relative `key_file` is relative to the file),
    /// then the environment, checked.
    pub(super) fn load(
        tables: BTreeMap<String, ServerDoc>,
        file: FileSsh,
        file_path: &str,
        env: Env<'_>,
    ) -> Result<Self, ConfigError> {
        let mut s = Self::default();
        for (name, doc) in tables {
            let server = server_from(&name, doc, file_path, env).map_err(|reason| {
                ConfigError::BadServer {
                    server: name.clone(),
                    reason,
                }
            })?;
            s.servers.push(server);
        }
        s.ttl_secs = file.ttl_secs.unwrap_or(s.ttl_secs);
        s.max_timeout_secs = file.max_timeout.unwrap_or(s.max_timeout_secs);
        s.connect_timeout_secs = file.connect_timeout.unwrap_or(s.connect_timeout_secs);
        s.max_output_bytes = file.max_output_bytes.unwrap_or(s.max_output_bytes);
        s.approve_preset = file.approve_preset;
        s.approve_tags = file.approve_tags;
        if let Some(v) = env.text("TOOLGATE_SSH_APPROVE_PRESET") {
            s.approve_preset = (v != "none").then_some(v);
        }
        if let Some(v) = env.list("TOOLGATE_SSH_APPROVE_TAGS") {
            s.approve_tags = v;
        }
        s.ssm_prefix = env.text("TOOLGATE_SSH_SSM_PREFIX");
        let secs = "a whole number of seconds";
        set_number(env, &mut s.ttl_secs, "TOOLGATE_SSH_TTL_SECS", secs)?;
        set_number(
            env,
            &mut s.max_timeout_secs,
            "TOOLGATE_SSH_MAX_TIMEOUT",
            secs,
        )?;
        set_number(
            env,
            &mut s.connect_timeout_secs,
            "TOOLGATE_SSH_CONNECT_TIMEOUT",
            secs,
        )?;
        set_number(
            env,
            &mut s.max_output_bytes,
            "TOOLGATE_SSH_MAX_OUTPUT_BYTES",
            "a whole number of bytes",
        )?;
        s.validate()?;
        Ok(s)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if let Some(p) = &self.approve_preset
            && p != "readonly"
            && p != "all"
        {
            return Err(ConfigError::BadValue {
                name: "ssh approve_preset (TOOLGATE_SSH_APPROVE_PRESET)",
                what: "\"readonly\", \"all\" or \"none\"",
                value: p.clone(),
            });
        }
        for (name, value, min) in [
            ("ssh max_timeout", self.max_timeout_secs, 1),
            ("ssh connect_timeout", self.connect_timeout_secs, 1),
            // Below this, an ordinary command's output is cut.
            ("ssh max_output_bytes", self.max_output_bytes, 65_536),
        ] {
            if value < min {
                return Err(ConfigError::BadValue {
                    name,
                    what: "larger (see docs/ssh.md)",
                    value: value.to_string(),
                });
            }
        }
        Ok(())
    }
}

/// One table, checked whole (host key, policy, key), so that a typo fails
/// at startup rather than at the first call.
#[cfg(not(target_arch = "wasm32"))]
fn server_from(
    name: &str,
    mut doc: ServerDoc,
    file_path: &str,
    env: Env<'_>,
) -> Result<ConfigServer, String> {
    validate_server_name(name)?;
    let key_file = doc
        .key_file
        .take()
        .ok_or("key_file is required (the private key to log in with)")?;
    let key = read_key_file(&key_file, file_path, env)?;
    Ok(ConfigServer {
        name: name.to_owned(),
        doc,
        key: key.into(),
    })
}

/// Without the SSH tools, the name is checked and nothing is read.
#[cfg(target_arch = "wasm32")]
fn server_from(
    name: &str,
    doc: ServerDoc,
    _file_path: &str,
    _env: Env<'_>,
) -> Result<ConfigServer, String> {
    validate_server_name(name)?;
    doc.key_file
        .as_ref()
        .ok_or("key_file is required (the private key to log in with)")?;
    Ok(name.to_owned())
}

/// Reads a server's `key_file`: `~/` is the home directory, a relative
/// path is relative to the config file.
#[cfg(not(target_arch = "wasm32"))]
fn read_key_file(raw: &str, config_path: &str, env: Env<'_>) -> Result<String, String> {
    use std::path::{Path, PathBuf};
    let path = match raw.strip_prefix("~/") {
        Some(rest) => PathBuf::from(env.text("HOME").unwrap_or_default()).join(rest),
        None => {
            let p = PathBuf::from(raw);
            match Path::new(config_path).parent() {
                Some(dir) if p.is_relative() => dir.join(p),
                _ => p,
            }
        }
    };
    std::fs::read_to_string(&path).map_err(|e| format!("key_file {}: {e}", path.display()))
}
