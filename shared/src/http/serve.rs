//! `toolgate serve`'s connections, so that clients who send slowly or hold
//! connections open cannot stop others from being answered:
//! - HTTP/1.1 only (hyper's `http1` builder). An HTTP/2 preface, h2c with
//!   prior knowledge included, is closed unanswered: HTTP/2 requests carry
//!   no `Host` header, and axum's own `serve` (hyper-util's `auto` builder)
//!   would answer them, with no timer on its version sniff;
//! - a request's head must arrive within `header_timeout` (hyper's timer:
//!   without one set, its default timeout does nothing), which also closes
//!   keep-alive connections idle that long;
//! - its body within `body_timeout` in all and never stalled for a third of
//!   it (`Deadline`, read as `BodyTimeout`: 400);
//! - at most `max_connections` open at once (past it new ones wait in the
//!   kernel's backlog), and `per_client` from one client address (past it:
//!   429 and close).
//!
//! On shutdown it stops accepting, lets requests in flight finish and
//! closes idle connections (the caller bounds the wait).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::http::Request;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

use super::body::BodyTimeout;

mod deadline;
mod seats;
mod write_stall;

use crate::config::ServerConfig;
use deadline::Deadline;
use seats::{ClientKey, Seats};
use write_stall::WriteStall;

/// Descriptors kept for the rest of the process (the sandbox's spares,
/// SQLite, upstream clients) when `max_connections` is fitted to the limit.
const DESCRIPTOR_SPARE: u64 = 256;

/// Connections over their client's cap answered 429 at once; more are
/// closed unanswered.
const REFUSALS_AT_ONCE: usize = 32;

/// How [`serve`] bounds its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// A request's head must arrive within this; idle keep-alive
    /// connections close after it.
    pub header_timeout: Duration,
    /// A request's body must arrive within this (and never stall for a
    /// third of it: [`Self::body_idle`]).
    pub body_timeout: Duration,
    /// Connections open at once, in all.
    pub max_connections: usize,
    /// Connections open at once from one client address.
    pub per_client: usize,
}

impl ServeLimits {
    /// The limits `[server]` sets.
    pub fn from_config(s: &ServerConfig) -> Self {
        Self {
            header_timeout: Duration::from_secs(s.header_timeout_secs),
            body_timeout: Duration::from_secs(s.body_timeout_secs),
            max_connections: s.max_connections,
            per_client: s.max_connections_per_client,
        }
    }

    /// The longest a body may go without a byte: a third of the body
    /// timeout, at least a second.
    pub fn body_idle(&self) -> Duration {
        (self.body_timeout / 3)
            .max(Duration::from_secs(1))
            .min(self.body_timeout)
    }

    /// Raises the soft limit on open files to the hard one, and lowers
    /// `max_connections` to fit it with [`DESCRIPTOR_SPARE`] to spare: past
    /// the limit `accept` fails and nobody is answered. Returns the soft
    /// limit, when it could be read.
    pub fn fit_descriptors(&mut self) -> Option<u64> {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the limit into `lim`, which we own.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max.min(1 << 20),
                rlim_max: lim.rlim_max,
            };
            // SAFETY: setrlimit reads `raised`; a soft limit up to the hard
            // one needs no privilege, and a refusal leaves the old one.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                lim.rlim_cur = raised.rlim_cur;
            }
        }
        let room = lim.rlim_cur.saturating_sub(DESCRIPTOR_SPARE).max(16);
        self.max_connections = self
            .max_connections
            .min(usize::try_from(room).unwrap_or(usize::MAX));
        Some(lim.rlim_cur)
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` completes,
/// then waits for the connections still open to finish their requests.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    // The timer must come with the timeout: hyper panics on a configured
    // timeout without one, and ignores its default timeout.
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(
        limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
    ));
    let seats = Arc::new(Seats::new(limits.per_client));
    // Refusals answered at once: past these a connection over its cap is
    // closed unanswered, so that refusals never hold the server's slots.
    let refusals = Arc::new(Semaphore::new(REFUSALS_AT_ONCE));
    let (idle, total) = (limits.body_idle(), limits.body_timeout);
    tokio::pin!(shutdown);
    loop {
        // A full server stops accepting: new connections wait in the
        // kernel's backlog until one closes.
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(seat) = seats.take(ClientKey::of(peer.ip())) else {
            drop(permit);
            if let Ok(refusal) = refusals.clone().try_acquire_owned() {
                tokio::spawn(refuse_busy(stream, peer.ip(), limits.per_client, refusal));
            }
            continue;
        };
        let svc = service(app.clone(), peer, idle, total);
        // hyper has no write timeout: a client that stops reading its
        // answers (pipelining requests it never reads) would hold its
        // connection, seat and slot for ever.
        let io = TokioIo::new(WriteStall::new(stream, total));
        let conn = graceful.watch(http.serve_connection(io, svc));
        tokio::spawn(async move {
            // Its errors (a timeout, a reset, an HTTP/2 preface) concern
            // that client alone.
            let _ = conn.await;
            drop((seat, permit));
        });
    }
    // Connections arriving from now on are refused by the kernel.
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// One connection's service: `app`, each request's body under its
/// deadline, the peer's address as `ConnectInfo`.
fn service(
    app: Router,
    peer: SocketAddr,
    idle: Duration,
    total: Duration,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = impl Future<Output = Result<axum::response::Response, std::convert::Infallible>> + Send,
> + Clone {
    hyper::service::service_fn(move |req: Request<Incoming>| {
        let mut req = req.map(|b| Body::new(Deadline::new(b, idle, total)));
        req.extensions_mut().insert(ConnectInfo(peer));
        tower::ServiceExt::oneshot(app.clone(), req)
    })
}

/// `accept` failed. Out of descriptors (`EMFILE`) is the server's own
/// state: said, and retried after a pause; a client's reset is not.
async fn accept_failed(e: io::Error) {
    if matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::warn!(error = %e, "cannot accept a connection");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Answers a client over its connection cap with 429 and closes. What it
/// sent is read (a second at most) so that closing does not reset the
/// connection before it reads the answer.
async fn refuse_busy(
    mut stream: TcpStream,
    ip: IpAddr,
    per_client: usize,
    permit: OwnedSemaphorePermit,
) {
    let body = crate::error::ToolError::quota(format!(
        "Too many connections from {ip}: at most {per_client} at once \
         (TOOLGATE_MAX_CONNECTIONS_PER_CLIENT)"
    ))
    .body()
    .to_string();
    let answer = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut read = 0;
        while read < 64 * 1024 {
            match stream.read(&mut sink).await? {
                0 => break,
                n => read += n,
            }
        }
        Ok::<_, io::Error>(())
    })
    .await;
    drop(permit);
}

#[cfg(test)]
mod tests;
