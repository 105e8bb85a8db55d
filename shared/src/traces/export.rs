//! One thread that batches finished spans and posts them (OTLP/HTTP,
//! protobuf) where the settings say. A full queue drops spans (counted, said once per
//! batch); an export that fails is said in the log once until one works
//! again. Neither the headers (an API key, often) nor the endpoint's path
//! and query are ever logged.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use super::proto::{self, Span};
use super::settings::{Settings, shown};

pub(super) enum Msg {
    Span(Span),
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// The sending half: what the layer pushes finished spans into.
pub struct Exporter {
    tx: SyncSender<Msg>,
    dropped: std::sync::Arc<AtomicU64>,
    /// The last export failed.
    failing: std::sync::Arc<AtomicBool>,
    /// What it was started with.
    pub settings: Settings,
}

impl Exporter {
    /// Starts the exporting thread for `s`.
    pub fn start(s: Settings) -> std::io::Result<Exporter> {
        let (tx, rx) = std::sync::mpsc::sync_channel(s.queue);
        let dropped = std::sync::Arc::new(AtomicU64::new(0));
        let failing = std::sync::Arc::new(AtomicBool::new(false));
        let (settings, seen, said) = (s.clone(), dropped.clone(), failing.clone());
        std::thread::Builder::new()
            .name("toolgate-traces".into())
            .spawn(move || run(s, rx, seen, said))?;
        Ok(Exporter {
            tx,
            dropped,
            failing,
            settings,
        })
    }

    /// Queues a finished span; drops it (counted) when the queue is full.
    pub(super) fn push(&self, span: Span) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(Msg::Span(span)) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sends every span finished so far and waits for the answer, at most
    /// `within` and the export timeout. On Lambda after each invocation (a
    /// frozen instance sends nothing), with what is left of its deadline.
    /// No wait while the collector fails, nor when the queue is full (the
    /// thread is sending already): a collector that is down costs nothing.
    pub async fn flush(&self, within: Duration) {
        if self.failing.load(Ordering::Relaxed) {
            return;
        }
        let (done, wait) = tokio::sync::oneshot::channel();
        if self.tx.try_send(Msg::Flush(done)).is_ok() {
            let _ = tokio::time::timeout(within.min(self.settings.timeout), wait).await;
        }
    }
}

/// The exporting thread: a batch goes when it is full, when its oldest span
/// has waited `delay`, or on a flush.
fn run(
    s: Settings,
    rx: Receiver<Msg>,
    dropped: std::sync::Arc<AtomicU64>,
    failing: std::sync::Arc<AtomicBool>,
) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let client = match client() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("traces: {e}; no traces are sent");
            return;
        }
    };
    let mut post = Post {
        s: &s,
        client,
        failing,
    };
    let mut batch: Vec<Span> = Vec::new();
    let mut oldest: Option<Instant> = None;
    loop {
        let wait = oldest.map_or(Duration::from_secs(3600), |t| {
            s.delay.saturating_sub(t.elapsed())
        });
        match rx.recv_timeout(wait) {
            Ok(Msg::Span(span)) => {
                oldest.get_or_insert_with(Instant::now);
                batch.push(span);
                if batch.len() >= s.batch {
                    rt.block_on(post.send(std::mem::take(&mut batch), &dropped));
                    oldest = None;
                }
            }
            Ok(Msg::Flush(done)) => {
                // Everything queued before the flush is in the batch: the
                // channel is in order.
                while !batch.is_empty() {
                    let rest = batch.split_off(batch.len().min(s.batch));
                    let first = std::mem::replace(&mut batch, rest);
                    rt.block_on(post.send(first, &dropped));
                }
                oldest = None;
                let _ = done.send(());
            }
            Err(RecvTimeoutError::Timeout) => {
                if !batch.is_empty() {
                    rt.block_on(post.send(std::mem::take(&mut batch), &dropped));
                }
                oldest = None;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Posts `body` (an empty one is an export of nothing) with a client of
/// its own; why it failed, or `None`.
pub async fn post(s: &Settings, body: Vec<u8>) -> Option<String> {
    match client() {
        Ok(c) => send(&c, s, body).await,
        Err(e) => Some(e),
    }
}

/// TLS with the system's roots, over the rustls the AWS SDK already links.
/// The exchange itself is one HTTP/1.1 POST per batch on a connection of
/// its own: a pooling client (hyper's, reqwest's) would add a third of a
/// megabyte to python-execute's zip, which is held under 20 MiB.
type Client = tokio_rustls::TlsConnector;

fn client() -> Result<Client, String> {
    use hyper_rustls::ConfigBuilderExt;
    let config = tokio_rustls::rustls::ClientConfig::builder()
        .with_native_roots()
        .map_err(|e| format!("no TLS root certificates: {e}"))?
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(std::sync::Arc::new(
        config,
    )))
}

async fn send(tls: &Client, s: &Settings, body: Vec<u8>) -> Option<String> {
    match tokio::time::timeout(s.timeout, exchange(tls, s, &body)).await {
        Ok(Ok(status)) if (200..300).contains(&status) => None,
        Ok(Ok(status)) => Some(format!("the collector answered {status}")),
        Ok(Err(why)) => Some(why),
        Err(_) => Some(format!("no answer in {:?}", s.timeout)),
    }
}

/// Connects, sends the request, and reads the status code. Redirects are
/// not followed: a collector that redirects is misconfigured.
async fn exchange(tls: &Client, s: &Settings, body: &[u8]) -> Result<u16, String> {
    let uri: axum::http::Uri = s.endpoint.parse().map_err(|_| "not a URL".to_owned())?;
    let https = uri.scheme_str() == Some("https");
    let host = uri.host().ok_or("no host")?;
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let authority = uri.authority().map_or(host, |a| a.as_str());
    // Userinfo is not sent (OTLP authenticates with headers).
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    // Header names and values were checked at start-up (no CR or LF).
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/x-protobuf\r\n\
         Content-Length: {}\r\nConnection: close\r\nUser-Agent: toolgate/{}\r\n",
        body.len(),
        env!("CARGO_PKG_VERSION")
    );
    for (k, v) in &s.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let tcp = tokio::net::TcpStream::connect((bare, port))
        .await
        .map_err(|_| "cannot connect".to_owned())?;
    if https {
        let name = tokio_rustls::rustls::pki_types::ServerName::try_from(bare.to_owned())
            .map_err(|_| "its host is not a TLS server name".to_owned())?;
        let stream = tls
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS: {e}"))?;
        status(stream, &head, body).await
    } else {
        status(tcp, &head, body).await
    }
}

async fn status<S>(mut io: S, head: &str, body: &[u8]) -> Result<u16, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let failed = |_| "the request failed".to_owned();
    io.write_all(head.as_bytes()).await.map_err(failed)?;
    io.write_all(body).await.map_err(failed)?;
    io.flush().await.map_err(failed)?;
    // The status line alone: `HTTP/1.1 200 OK`.
    let mut line = Vec::with_capacity(64);
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") && line.len() < 1024 {
        if io.read(&mut byte).await.map_err(failed)? == 0 {
            break;
        }
        line.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&line);
    let mut parts = text.split(' ');
    match (
        parts.next(),
        parts.next().and_then(|c| c.trim().parse::<u16>().ok()),
    ) {
        (Some(v), Some(code)) if v.starts_with("HTTP/1.") => Ok(code),
        _ => Err("the collector's answer is not HTTP/1.1".to_owned()),
    }
}

struct Post<'a> {
    s: &'a Settings,
    client: Client,
    /// Shared with the [`Exporter`]: a flush does not wait while set.
    failing: std::sync::Arc<AtomicBool>,
}

impl Post<'_> {
    async fn send(&mut self, spans: Vec<Span>, dropped: &AtomicU64) {
        let lost = dropped.swap(0, Ordering::Relaxed);
        if lost > 0 {
            tracing::warn!(
                dropped = lost,
                "traces: the queue was full; spans were dropped (OTEL_BSP_MAX_QUEUE_SIZE)"
            );
        }
        let body = proto::export_request(
            &self.s.resource,
            "toolgate",
            env!("CARGO_PKG_VERSION"),
            &spans,
        );
        let was = self.failing.load(Ordering::Relaxed);
        match send(&self.client, self.s, body).await {
            Some(why) if !was => {
                self.failing.store(true, Ordering::Relaxed);
                tracing::warn!(
                    endpoint = %shown(&self.s.endpoint),
                    spans = spans.len(),
                    "traces: cannot export ({why}); spans are dropped until an export works"
                );
            }
            None if was => {
                self.failing.store(false, Ordering::Relaxed);
                tracing::info!(endpoint = %shown(&self.s.endpoint), "traces: exports work again");
            }
            _ => {}
        }
    }
}
