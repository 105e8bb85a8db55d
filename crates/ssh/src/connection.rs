//! SSH connections, one per server, reused across calls in a warm process.
//! Each connection carries up to the server's `max_sessions` channels at
//! once (sshd's `MaxSessions`); further calls wait for a free session. A
//! dropped connection is re-established on the next call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use russh::client::{self, Handle, Msg};
use russh::keys::{PrivateKeyWithHashAlg, PublicKey, PublicKeyOrCertificate};
use russh::{Channel, Disconnect};
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};

use toolgate_shared::error::{ErrorCode, ToolError};
use toolgate_shared::ssh::hostkey::describe;
use toolgate_shared::ssh::inventory::Server;

/// Checks the host key during key exchange, before authentication, and
/// remembers what it saw for the error message.
struct Pinned {
    server: Server,
    seen: Arc<StdMutex<Option<PublicKey>>>,
}

impl client::Handler for Pinned {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let key = key.public_key();
        let ok = self.server.host_key.matches(&key);
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Some(key);
        }
        Ok(ok)
    }
}

/// An authenticated SSH connection to one server, whose host key matched the
/// pin.
pub struct Connection {
    handle: Handle<Pinned>,
    identity: String,
}

struct Slot {
    sessions: Arc<Semaphore>,
    live: Mutex<Option<Arc<Connection>>>,
}

/// An open session channel, holding its place among the server's sessions.
pub struct Session {
    /// The channel to run one command on.
    pub channel: Channel<Msg>,
    /// Whether the connection existed before this call.
    pub reused: bool,
    _conn: Arc<Connection>,
    _permit: OwnedSemaphorePermit,
}

/// This process's connections, one per server, each holding at most the
/// server's `max_sessions` sessions at once.
pub struct Pool {
    slots: StdMutex<HashMap<String, Arc<Slot>>>,
    connect_timeout: Duration,
}

/// How long a channel may take to open on a connection thought alive; a
/// connection frozen with its Lambda may be dead without knowing it.
const OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long refused session opens are retried.
const REFUSALS_FOR: Duration = Duration::from_secs(3);

fn unavailable(msg: String) -> ToolError {
    ToolError::new(ErrorCode::UpstreamUnavailable, msg)
}

impl Pool {
    /// An empty pool; `connect_timeout` bounds each TCP connect and handshake.
    pub fn new(connect_timeout: Duration) -> Self {
        Self {
            slots: StdMutex::new(HashMap::new()),
            connect_timeout,
        }
    }

    fn slot(&self, server: &Server) -> Arc<Slot> {
        let key = format!("{}#{}", server.name, server.max_sessions);
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Slot {
                    sessions: Arc::new(Semaphore::new(server.max_sessions)),
                    live: Mutex::new(None),
                })
            })
            .clone()
    }

    /// A session channel on `server`, connecting (or reconnecting) as needed.
    /// `wait` bounds the wait for a free session and the connect itself.
    pub async fn open(&self, server: &Server, wait: Duration) -> Result<Session, ToolError> {
        let slot = self.slot(server);
        let permit = tokio::time::timeout(wait, slot.sessions.clone().acquire_owned())
            .await
            .map_err(|_| {
                unavailable(format!(
                    "server {:?} has all {} sessions busy; try again",
                    server.name, server.max_sessions
                ))
            })?
            .map_err(|_| ToolError::internal("the session pool is closed"))?;
        let refusals_end = Instant::now() + wait.min(REFUSALS_FOR);
        let mut dead = None;
        loop {
            let (conn, reused) = self.connection(&slot, server, dead.take().as_ref()).await?;
            match open_channel(&conn).await {
                Ok(channel) => {
                    return Ok(Session {
                        channel,
                        reused,
                        _conn: conn,
                        _permit: permit,
                    });
                }
                // sshd frees a session slot a moment after the client sees
                // the close, so a refusal right after one is usually a race.
                Err(OpenError::Refused(e)) if Instant::now() < refusals_end => {
                    tracing::debug!(server = %server.name, error = %e, "session refused; retrying");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                // Dropped since the last call: one fresh connection, once.
                Err(OpenError::Dead(e)) if reused => {
                    tracing::info!(server = %server.name, error = %e, "reconnecting");
                    dead = Some(conn);
                }
                Err(OpenError::Refused(e) | OpenError::Dead(e)) => {
                    return Err(unavailable(format!(
                        "server {:?}: cannot open a session: {e}",
                        server.name
                    )));
                }
            }
        }
    }

    /// The live connection, or a new one when there is none, it closed, it
    /// was made for another identity, or it is `dead`.
    async fn connection(
        &self,
        slot: &Slot,
        server: &Server,
        dead: Option<&Arc<Connection>>,
    ) -> Result<(Arc<Connection>, bool), ToolError> {
        // Held while connecting, so 50 parallel first calls make one connection.
        let mut live = slot.live.lock().await;
        if let Some(c) = live.as_ref() {
            let is_dead = dead.is_some_and(|d| Arc::ptr_eq(d, c));
            if !is_dead && !c.handle.is_closed() && c.identity == server.identity() {
                return Ok((c.clone(), true));
            }
        }
        // Calls still running on the old connection keep it alive; it goes
        // away with the last of them.
        live.take();
        let conn = Arc::new(
            tokio::time::timeout(self.connect_timeout, connect(server))
                .await
                .map_err(|_| {
                    unavailable(format!(
                        "server {:?} ({}:{}) did not complete the SSH handshake within {} s",
                        server.name,
                        server.host,
                        server.port,
                        self.connect_timeout.as_secs()
                    ))
                })??,
        );
        *live = Some(conn.clone());
        Ok((conn, false))
    }

    /// Closes every connection (server shutdown).
    pub async fn close(&self) {
        let slots: Vec<Arc<Slot>> = {
            let mut s = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            s.drain().map(|(_, v)| v).collect()
        };
        for slot in slots {
            if let Some(c) = slot.live.lock().await.take() {
                let _ = c
                    .handle
                    .disconnect(Disconnect::ByApplication, "", "en")
                    .await;
            }
        }
    }

    /// How many connections are open, for `/healthz`.
    pub fn open_connections(&self) -> usize {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots
            .values()
            .filter(|s| {
                s.live
                    .try_lock()
                    .map(|l| l.as_ref().is_some_and(|c| !c.handle.is_closed()))
                    .unwrap_or(true)
            })
            .count()
    }
}

enum OpenError {
    /// The server answered no (too many sessions, or a policy).
    Refused(String),
    /// The connection is gone or does not answer.
    Dead(String),
}

async fn open_channel(conn: &Connection) -> Result<Channel<Msg>, OpenError> {
    match tokio::time::timeout(OPEN_TIMEOUT, conn.handle.channel_open_session()).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) if conn.handle.is_closed() => Err(OpenError::Dead(e.to_string())),
        Ok(Err(e @ russh::Error::ChannelOpenFailure(_))) => Err(OpenError::Refused(e.to_string())),
        Ok(Err(e)) => Err(OpenError::Dead(e.to_string())),
        Err(_) => Err(OpenError::Dead(format!(
            "no answer within {} s",
            OPEN_TIMEOUT.as_secs()
        ))),
    }
}

fn client_config() -> Arc<client::Config> {
    Arc::new(client::Config {
        // Notices a dead peer on an idle pooled connection.
        keepalive_interval: Some(Duration::from_secs(15)),
        keepalive_max: 3,
        inactivity_timeout: None,
        nodelay: true,
        ..Default::default()
    })
}

async fn connect(server: &Server) -> Result<Connection, ToolError> {
    let name = &server.name;
    let addr = format!("{}:{}", server.host, server.port);
    let stream = tokio::net::TcpStream::connect((server.host.as_str(), server.port))
        .await
        .map_err(|e| unavailable(format!("server {name:?}: cannot connect to {addr}: {e}")))?;
    let seen = Arc::new(StdMutex::new(None));
    let handler = Pinned {
        server: server.clone(),
        seen: seen.clone(),
    };
    let mut handle = match client::connect_stream(client_config(), stream, handler).await {
        Ok(h) => h,
        Err(e) => {
            let seen = seen.lock().ok().and_then(|s| s.clone());
            return Err(match seen {
                Some(key) if !server.host_key.matches(&key) => unavailable(format!(
                    "host key verification failed for server {name:?} ({addr}): it presented {}, \
                     but the inventory pins {}; refusing to authenticate",
                    describe(&key),
                    server.host_key.fingerprint()
                )),
                _ => unavailable(format!(
                    "server {name:?}: SSH handshake with {addr} failed: {e}"
                )),
            });
        }
    };
    let key = russh::keys::decode_secret_key(&server.private_key, None).map_err(|e| {
        ToolError::internal(format!("server {name:?}: private key unreadable: {e}"))
    })?;
    let hash = handle
        .best_supported_rsa_hash()
        .await
        .map_err(|e| unavailable(format!("server {name:?}: {e}")))?
        .flatten();
    let auth = handle
        .authenticate_publickey(
            server.username.clone(),
            PrivateKeyWithHashAlg::new(Arc::new(key), hash),
        )
        .await
        .map_err(|e| unavailable(format!("server {name:?}: authentication error: {e}")))?;
    if !auth.success() {
        return Err(unavailable(format!(
            "server {name:?}: the server refused key authentication as {:?}",
            server.username
        )));
    }
    Ok(Connection {
        handle,
        identity: server.identity(),
    })
}
