//! `[server]`, `TOOLGATE_ADDR`, `TOOLGATE_TOKEN`, `TOOLGATE_ALLOW_ANONYMOUS`
//! and `TOOLGATE_SHUTDOWN_GRACE_SECS`: how `toolgate serve` listens, and who
//! may call it.

use serde::Deserialize;

use super::ConfigError;
use super::env::{Env, set_number};
use super::tokens::{self, FileToken, MIN_TOKEN_CHARS, NamedToken, single_token_name};

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
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            addr: DEFAULT_ADDR.into(),
            tokens: Vec::new(),
            allow_anonymous: false,
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
    #[serde(default)]
    tokens: Vec<FileToken>,
    allow_anonymous: Option<bool>,
    shutdown_grace_secs: Option<u64>,
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
        Ok(s)
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
