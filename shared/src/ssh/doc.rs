//! The inventory's documents as written (an SSM parameter's JSON, a
//! `[servers.NAME]` table): plain data, checked by `inventory` when built.

use serde::Deserialize;

/// The document describing a server (SSM parameter value, or a config
/// table minus `key_file`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ServerDoc {
    /// Config file only: where the private key is read from at startup.
    #[serde(default)]
    pub key_file: Option<String>,
    /// The host name or address.
    pub host: String,
    /// The SSH port (22 when unset).
    #[serde(default = "default_port")]
    pub port: u16,
    /// The remote user to log in as.
    pub username: String,
    /// Labels `list_servers` shows, to help pick a server.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The pinned host key: an OpenSSH public-key line or a `SHA256:`
    /// fingerprint (see `hostkey`).
    pub host_key: String,
    /// The command guard rail; without one every command may run.
    #[serde(default)]
    pub policy: Option<PolicySpec>,
    /// Sessions at once on one connection, 1 to 64 (sshd's `MaxSessions`; 10
    /// when unset).
    #[serde(default)]
    pub max_sessions: Option<usize>,
}

fn default_port() -> u16 {
    22
}

/// Server names appear in SSM paths, URLs and log lines.
pub fn validate_server_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "server name {name:?} must match ^[a-zA-Z0-9._-]{{1,64}}$"
        ))
    }
}

/// The policy as written in the inventory.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// `"readonly"`: only commands known to be read-only run
    /// (`ssh::readonly`); every other command is refused.
    #[serde(default)]
    pub preset: Option<String>,
    /// When non-empty, a command must match one of these.
    #[serde(default)]
    pub allow: Vec<String>,
    /// A command matching any of these is refused.
    #[serde(default)]
    pub deny: Vec<String>,
    /// A command matching any of these runs only once a person approves it
    /// (docs/approvals.md).
    #[serde(default)]
    pub approve: Vec<String>,
    /// `"readonly"`: every command not known to be read-only needs
    /// approval; `"all"`: every command does.
    #[serde(default)]
    pub approve_preset: Option<String>,
    /// Who may decide this server's approvals: `"channels"` (the default:
    /// the configured approvers) or `"client"` (also the caller's own
    /// person, in their MCP client; docs/approvals.md).
    #[serde(default)]
    pub approvers: Option<String>,
}
