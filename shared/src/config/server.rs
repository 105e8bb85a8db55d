//! `[server]`, `TOOLGATE_ADDR`, `TOOLGATE_TOKEN`, `TOOLGATE_ALLOW_ANONYMOUS`,
//! `TOOLGATE_SHUTDOWN_GRACE_SECS`, `TOOLGATE_ALLOWED_ORIGINS`, the
//! connection limits, `TOOLGATE_MCP_NAMES` and `TOOLGATE_OAUTH_ISSUER`: how `toolgate serve` listens, and who may call it.

use serde::Deserialize;

use super::ConfigError;
use super::env::{Env, set_number};
use super::tokens::{self, FileToken, MIN_TOKEN_CHARS, NamedToken, single_token_name};
use crate::registry::McpNames;

/// Where `toolgate serve` listens unless told otherwise: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";

/// How the local server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The address to bind (loopback by default).
    pub addr: String,
    /// The callers' bearer tokens: `[[server.tokens]]`, then the single
    /// token (`--token`, `TOOLGATE_TOKEN`, `server.token`) named
    /// `token-<first 12 hex of its SHA-256>`. When any is set, every tool
    /// route needs one of them.
    pub tokens: Vec<NamedToken>,
    /// Serve a non-loopback address without any caller token
    /// (`TOOLGATE_ALLOW_ANONYMOUS=true`).
    pub allow_anonymous: bool,
    /// How long SIGTERM lets calls in flight finish.
    pub shutdown_grace_secs: u64,
    /// The web origins whose pages may call (`TOOLGATE_ALLOWED_ORIGINS`,
    /// comma-separated), each `scheme://host[:port]` as
    /// `http::origin::normalize` keeps it. Every runtime.
    pub allowed_origins: Vec<String>,
    /// `toolgate serve`: a request's head must arrive within this; also how
    /// long an idle keep-alive connection stays open.
    pub header_timeout_secs: u64,
    /// `toolgate serve`: a request's body must arrive within this in all,
    /// and never stall for a third of it.
    pub body_timeout_secs: u64,
    /// `toolgate serve`: connections open at once, in all (lowered to fit
    /// the process's file descriptor limit). Past it, new ones wait in the
    /// kernel's backlog.
    pub max_connections: usize,
    /// `toolgate serve`: connections open at once from one client address
    /// (an IPv4 address, an IPv6 /64). Past it: 429.
    pub max_connections_per_client: usize,
    /// How `/mcp` names tools (`TOOLGATE_MCP_NAMES`): `portable`
    /// (`python__execute`, what model providers take) or `canonical`.
    pub mcp_names: McpNames,
    /// The issuer of the JWTs this deployment takes
    /// (`TOOLGATE_OAUTH_ISSUER`), named by its protected-resource metadata.
    pub oauth_issuer: Option<String>,
    /// `toolgate serve`: how long an MCP call runs before it answers as a
    /// task, for a client that declared MCP's tasks extension
    /// (`TOOLGATE_TASKS_AFTER_MS`).
    pub tasks_after_ms: u64,
    /// AWS Lambda: the table tasks are kept in (`TOOLGATE_TASKS_TABLE`,
    /// the clarify table): the gateway starts tasks there, every function
    /// runs the ones sent to it.
    pub tasks_table: Option<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            addr: DEFAULT_ADDR.into(),
            tokens: Vec::new(),
            allow_anonymous: false,
            shutdown_grace_secs: 10,
            allowed_origins: Vec::new(),
            header_timeout_secs: 30,
            body_timeout_secs: 60,
            max_connections: 1024,
            max_connections_per_client: 64,
            mcp_names: McpNames::Portable,
            oauth_issuer: None,
            tasks_after_ms: 10_000,
            tasks_table: None,
        }
    }
}

/// `[server]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FileServer {
    addr: Option<String>,
    token: Option<String>,
    #[serde(default)]
    tokens: Vec<FileToken>,
    allow_anonymous: Option<bool>,
    shutdown_grace_secs: Option<u64>,
    allowed_origins: Option<Vec<String>>,
    header_timeout_secs: Option<u64>,
    body_timeout_secs: Option<u64>,
    max_connections: Option<usize>,
    max_connections_per_client: Option<usize>,
    mcp_names: Option<String>,
    oauth_issuer: Option<String>,
    tasks_after_ms: Option<u64>,
}

const LIST: &str = "[[server.tokens]]";

impl ServerConfig {
    /// The file's table, then the environment.
    pub(super) fn load(file: FileServer, env: Env<'_>) -> Result<Self, ConfigError> {
        let mut s = Self::default();
        s.addr = file.addr.unwrap_or(s.addr);
        s.tokens = tokens::load(LIST, file.tokens, env)?;
        tokens::check_unique(LIST, &s.tokens)?;
        s.allow_anonymous = file.allow_anonymous.unwrap_or(false);
        s.shutdown_grace_secs = file.shutdown_grace_secs.unwrap_or(s.shutdown_grace_secs);
        s.allowed_origins = file.allowed_origins.unwrap_or_default();
        s.header_timeout_secs = file.header_timeout_secs.unwrap_or(s.header_timeout_secs);
        s.body_timeout_secs = file.body_timeout_secs.unwrap_or(s.body_timeout_secs);
        s.max_connections = file.max_connections.unwrap_or(s.max_connections);
        s.max_connections_per_client = file
            .max_connections_per_client
            .unwrap_or(s.max_connections_per_client);
        if let Some(v) = env.text("TOOLGATE_MCP_NAMES").or(file.mcp_names) {
            s.mcp_names = McpNames::parse(&v).ok_or(ConfigError::BadValue {
                name: "TOOLGATE_MCP_NAMES (server.mcp_names)",
                what: "portable (python__execute, the default) or canonical (python.execute)",
                value: v,
            })?;
        }
        s.oauth_issuer = env.text("TOOLGATE_OAUTH_ISSUER").or(file.oauth_issuer);
        s.tasks_after_ms = file.tasks_after_ms.unwrap_or(s.tasks_after_ms);
        set_number(
            env,
            &mut s.tasks_after_ms,
            "TOOLGATE_TASKS_AFTER_MS",
            "a whole number of milliseconds",
        )?;
        s.tasks_table = env.text("TOOLGATE_TASKS_TABLE");
        if let Some(v) = &s.oauth_issuer
            && !(v.starts_with("https://") || v.starts_with("http://"))
        {
            return Err(ConfigError::BadValue {
                name: "TOOLGATE_OAUTH_ISSUER (server.oauth_issuer)",
                what: "the issuer URL of the JWTs this deployment takes (https://…)",
                value: v.clone(),
            });
        }
        if let Some(v) = env.raw("TOOLGATE_ADDR") {
            s.addr = v;
        }
        let single = env
            .raw("TOOLGATE_TOKEN")
            .filter(|v| !v.is_empty())
            .or(file.token);
        if let Some(t) = single {
            s.set_single_token(&t)?;
        }
        if let Some(b) = env.flag("TOOLGATE_ALLOW_ANONYMOUS")? {
            s.allow_anonymous = b;
        }
        set_number(
            env,
            &mut s.shutdown_grace_secs,
            "TOOLGATE_SHUTDOWN_GRACE_SECS",
            "a whole number of seconds",
        )?;
        if let Some(list) = env.list("TOOLGATE_ALLOWED_ORIGINS") {
            s.allowed_origins = list;
        }
        let secs = "a whole number of seconds, at least 1";
        let count = "a whole number, at least 1";
        set_number(
            env,
            &mut s.header_timeout_secs,
            "TOOLGATE_HEADER_TIMEOUT_SECS",
            secs,
        )?;
        set_number(
            env,
            &mut s.body_timeout_secs,
            "TOOLGATE_BODY_TIMEOUT_SECS",
            secs,
        )?;
        set_number(
            env,
            &mut s.max_connections,
            "TOOLGATE_MAX_CONNECTIONS",
            count,
        )?;
        set_number(
            env,
            &mut s.max_connections_per_client,
            "TOOLGATE_MAX_CONNECTIONS_PER_CLIENT",
            count,
        )?;
        s.check_edges()?;
        Ok(s)
    }

    /// The origins as kept, and no zero among the limits.
    fn check_edges(&mut self) -> Result<(), ConfigError> {
        let mut kept = Vec::with_capacity(self.allowed_origins.len());
        for o in &self.allowed_origins {
            kept.push(
                crate::http::origin::normalize(o).ok_or_else(|| ConfigError::BadValue {
                    name: "TOOLGATE_ALLOWED_ORIGINS (server.allowed_origins)",
                    what: "a list of origins such as https://app.example or http://localhost:3000 \
                           (a scheme, a host and an optional port; no path), or null",
                    value: o.clone(),
                })?,
            );
        }
        self.allowed_origins = kept;
        // Past a day a timeout is no bound, and far enough past it the
        // deadline's arithmetic would overflow.
        for (name, secs) in [
            (
                "TOOLGATE_HEADER_TIMEOUT_SECS (server.header_timeout_secs)",
                self.header_timeout_secs,
            ),
            (
                "TOOLGATE_BODY_TIMEOUT_SECS (server.body_timeout_secs)",
                self.body_timeout_secs,
            ),
        ] {
            if !(1..=86_400).contains(&secs) {
                return Err(ConfigError::BadValue {
                    name,
                    what: "between 1 and 86400 seconds",
                    value: secs.to_string(),
                });
            }
        }
        for (name, count) in [
            (
                "TOOLGATE_MAX_CONNECTIONS (server.max_connections)",
                self.max_connections,
            ),
            (
                "TOOLGATE_MAX_CONNECTIONS_PER_CLIENT (server.max_connections_per_client)",
                self.max_connections_per_client,
            ),
        ] {
            if count == 0 {
                return Err(ConfigError::BadValue {
                    name,
                    what: "at least 1",
                    value: "0".into(),
                });
            }
        }
        Ok(())
    }

    /// Makes `token` the single token (in place of any earlier one); an
    /// empty one is no token. A short one is still accepted, as it always
    /// was, with a warning.
    pub(super) fn set_single_token(&mut self, token: &str) -> Result<(), ConfigError> {
        self.tokens
            .retain(|t| t.name != single_token_name(&t.token));
        if token.is_empty() {
            return Ok(());
        }
        if let Some(same) = self.tokens.iter().find(|t| t.token == token) {
            return Err(ConfigError::BadToken {
                table: "the single token (--token, TOOLGATE_TOKEN, server.token)".into(),
                reason: format!(
                    "it is also {LIST} {:?}'s token: keep one of them",
                    same.name
                ),
            });
        }
        // Once per process: the Worker reads its settings on every request.
        static SHORT: std::sync::Once = std::sync::Once::new();
        if token.chars().count() < MIN_TOKEN_CHARS {
            SHORT.call_once(|| {
                tracing::warn!(
                    "the caller token (--token, TOOLGATE_TOKEN, server.token) is shorter than \
                     {MIN_TOKEN_CHARS} characters: use a longer, random one"
                )
            });
        }
        self.tokens.push(NamedToken {
            name: single_token_name(token),
            token: token.to_owned(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(toml: &str, pairs: &[(&str, &str)]) -> Result<ServerConfig, ConfigError> {
        let file: FileServer = toml::from_str(toml).unwrap();
        let lookup = |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        ServerConfig::load(file, Env(&lookup))
    }

    #[test]
    fn origins_and_connection_limits() {
        let s = load("", &[]).unwrap();
        assert!(s.allowed_origins.is_empty());
        assert_eq!((s.header_timeout_secs, s.body_timeout_secs), (30, 60));
        assert_eq!(
            (s.max_connections, s.max_connections_per_client),
            (1024, 64)
        );
        let s = load(
            "allowed_origins = [\"https://A.example:443/\"]\nheader_timeout_secs = 5\n\
             max_connections = 10",
            &[("TOOLGATE_MAX_CONNECTIONS_PER_CLIENT", "3")],
        )
        .unwrap();
        assert_eq!(s.allowed_origins, ["https://a.example"]);
        assert_eq!(
            (
                s.header_timeout_secs,
                s.max_connections,
                s.max_connections_per_client
            ),
            (5, 10, 3)
        );
        // The variable replaces the file's list.
        let s = load(
            "allowed_origins = [\"https://a.example\"]",
            &[("TOOLGATE_ALLOWED_ORIGINS", "http://localhost:3000, null")],
        )
        .unwrap();
        assert_eq!(s.allowed_origins, ["http://localhost:3000", "null"]);
        for (toml, env, named) in [
            (
                "",
                ("TOOLGATE_ALLOWED_ORIGINS", "app.example"),
                "TOOLGATE_ALLOWED_ORIGINS",
            ),
            (
                "allowed_origins = [\"https://a.example/x\"]",
                ("UNSET", ""),
                "TOOLGATE_ALLOWED_ORIGINS",
            ),
            (
                "",
                ("TOOLGATE_HEADER_TIMEOUT_SECS", "0"),
                "TOOLGATE_HEADER_TIMEOUT_SECS",
            ),
            (
                "",
                ("TOOLGATE_BODY_TIMEOUT_SECS", "soon"),
                "TOOLGATE_BODY_TIMEOUT_SECS",
            ),
            (
                "max_connections = 0",
                ("UNSET", ""),
                "TOOLGATE_MAX_CONNECTIONS",
            ),
            (
                "",
                ("TOOLGATE_MAX_CONNECTIONS_PER_CLIENT", "0"),
                "TOOLGATE_MAX_CONNECTIONS_PER_CLIENT",
            ),
        ] {
            let e = load(toml, &[env]).unwrap_err().to_string();
            assert!(e.contains(named), "{toml} {env:?}: {e}");
        }
    }
}
