//! The servers `ssh_run` may reach, and where they come from: `[servers.NAME]`
//! tables in `toolgate.toml`, or SSM Parameter Store (`ssm` module). The
//! listing is cached for a TTL, so a warm Lambda reads SSM once per TTL.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::doc::{ServerDoc, validate_server_name};
use super::hostkey::HostKeyPin;
use super::policy::Policy;

/// One server, ready to connect to.
#[derive(Clone)]
pub struct Server {
    /// The inventory name a call gives as `server_name`.
    pub name: String,
    /// The host name or address.
    pub host: String,
    /// The SSH port.
    pub port: u16,
    /// The remote user to log in as.
    pub username: String,
    /// Labels `list_servers` shows.
    pub tags: Vec<String>,
    /// The key the server must present.
    pub host_key: HostKeyPin,
    /// The commands this server refuses, checked before connecting.
    pub policy: Policy,
    /// Concurrent sessions on one connection (sshd's `MaxSessions`, default 10).
    pub max_sessions: usize,
    /// The private key in OpenSSH or PEM form. Never logged or displayed.
    pub private_key: Arc<str>,
}

// The key must never reach a log line through `{:?}`.
impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.name)
            .field("address", &self.address())
            .field("tags", &self.tags)
            .field("host_key", &self.host_key.fingerprint())
            .field("private_key", &"<redacted>")
            .finish()
    }
}

impl Server {
    /// `user@host:port`, as `list_servers` shows it.
    pub fn address(&self) -> String {
        format!("{}@{}:{}", self.username, self.host, self.port)
    }

    /// What a pooled connection was made for; a change (a rotated key, a
    /// new address) means a new connection.
    pub fn identity(&self) -> String {
        format!(
            "{}|{}|{}",
            self.address(),
            self.host_key.fingerprint(),
            fnv(self.private_key.as_bytes())
        )
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}

impl ServerDoc {
    /// Checks the document whole and makes it the server `name`, logging in
    /// with `private_key` (given apart: the config file's `key_file` is taken
    /// out and read first). `Err` says what is wrong.
    pub fn into_server(self, name: &str, private_key: Arc<str>) -> Result<Server, String> {
        validate_server_name(name)?;
        if self.key_file.is_some() {
            return Err(
                "key_file belongs in toolgate.toml; elsewhere the key is given apart".into(),
            );
        }
        if self.host.trim().is_empty() {
            return Err("host is empty".into());
        }
        if self.username.trim().is_empty() {
            return Err("username is empty".into());
        }
        if self.port == 0 {
            return Err("port must be 1-65535".into());
        }
        let max_sessions = self.max_sessions.unwrap_or(10);
        if !(1..=64).contains(&max_sessions) {
            return Err(format!("max_sessions must be 1-64, got {max_sessions}"));
        }
        // Fails early on a key we could never use, rather than at the first call.
        russh::keys::decode_secret_key(&private_key, None).map_err(|e| {
            format!(
                "the private key cannot be read ({e}); keys with a passphrase are not supported"
            )
        })?;
        Ok(Server {
            name: name.to_owned(),
            host: self.host.trim().to_owned(),
            port: self.port,
            username: self.username.trim().to_owned(),
            tags: self.tags,
            host_key: HostKeyPin::parse(&self.host_key)?,
            policy: Policy::compile(&self.policy.unwrap_or_default())?,
            max_sessions,
            private_key,
        })
    }
}

/// What a [`ServerSource`] returns: the servers, or why none could be read.
pub type ServersFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<Server>, String>> + Send + 'a>>;

/// Where servers come from. A source skips (and logs) a bad entry rather
/// than hiding every server behind it.
pub trait ServerSource: Send + Sync {
    /// For logs and `/healthz`: `config` or `ssm:/prefix/`.
    fn describe(&self) -> String;
    /// Reads the servers now; [`Inventory`] caches them.
    fn load(&self) -> ServersFuture<'_>;
}

/// Servers from the config file, already validated at startup.
pub struct ConfigServers(pub Vec<Server>);

impl ServerSource for ConfigServers {
    fn describe(&self) -> String {
        "config".into()
    }
    fn load(&self) -> ServersFuture<'_> {
        let servers = self.0.clone();
        Box::pin(async move { Ok(servers) })
    }
}

struct Cached {
    servers: Arc<BTreeMap<String, Server>>,
    due: Instant,
}

/// A source with its listing cached for `ttl`. A failed refresh keeps
/// serving the last good listing (and logs), so an SSM hiccup does not
/// take every server away.
pub struct Inventory {
    source: Box<dyn ServerSource>,
    ttl: Duration,
    cache: Mutex<Option<Cached>>,
}

impl Inventory {
    /// A cache over `source`, empty until the first [`Self::servers`].
    pub fn new(source: Box<dyn ServerSource>, ttl: Duration) -> Self {
        Self {
            source,
            ttl,
            cache: Mutex::new(None),
        }
    }

    /// The source, as it describes itself (`config`, `ssm:/prefix/`).
    pub fn describe(&self) -> String {
        self.source.describe()
    }

    /// The servers by name, read again from the source once `ttl` has passed.
    /// `Err` only while no listing has ever been read.
    pub async fn servers(&self) -> Result<Arc<BTreeMap<String, Server>>, String> {
        let mut cache = self.cache.lock().await;
        if let Some(c) = cache.as_ref()
            && Instant::now() < c.due
        {
            return Ok(c.servers.clone());
        }
        match self.source.load().await {
            Ok(list) => {
                let map: BTreeMap<String, Server> =
                    list.into_iter().map(|s| (s.name.clone(), s)).collect();
                let servers = Arc::new(map);
                *cache = Some(Cached {
                    servers: servers.clone(),
                    due: Instant::now() + self.ttl,
                });
                Ok(servers)
            }
            Err(e) => match cache.as_mut() {
                Some(c) => {
                    tracing::error!(source = %self.source.describe(), error = %e, "server inventory refresh failed; serving the last listing");
                    // Retry after a short pause, not on every call.
                    c.due = Instant::now() + Duration::from_secs(5).min(self.ttl);
                    Ok(c.servers.clone())
                }
                None => Err(e),
            },
        }
    }
}
