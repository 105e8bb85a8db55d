//! One thread that batches finished spans and posts them (OTLP/HTTP,
//! protobuf) where the settings say. A full queue drops spans (counted, said once per
//! batch); an export that fails is said in the log once until one works
//! again. Neither the headers (an API key, often) nor the endpoint's path
//! and query are ever logged.

use std::sync::atomic::{AtomicU64, Ordering};
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
    timeout: Duration,
}

impl Exporter {
    /// Starts the exporting thread for `s`.
    pub fn start(s: Settings) -> std::io::Result<Exporter> {
        let (tx, rx) = std::sync::mpsc::sync_channel(s.queue);
        let dropped = std::sync::Arc::new(AtomicU64::new(0));
        let timeout = s.timeout;
        let seen = dropped.clone();
        std::thread::Builder::new()
            .name("toolgate-traces".into())
            .spawn(move || run(s, rx, seen))?;
        Ok(Exporter {
            tx,
            dropped,
            timeout,
        })
    }

    /// Queues a finished span; drops it (counted) when the queue is full.
    pub(super) fn push(&self, span: Span) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(Msg::Span(span)) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sends every span finished so far and waits for the answer, up to
    /// the export timeout. On Lambda after each invocation: a frozen
    /// instance sends nothing.
    pub async fn flush(&self) {
        let (done, wait) = tokio::sync::oneshot::channel();
        // A full queue: the flush message waits its turn off the runtime.
        let tx = self.tx.clone();
        let sent = tokio::task::spawn_blocking(move || tx.send(Msg::Flush(done)).is_ok());
        if matches!(sent.await, Ok(true)) {
            let _ = tokio::time::timeout(self.timeout, wait).await;
        }
    }
}

/// The exporting thread: a batch goes when it is full, when its oldest span
/// has waited `delay`, or on a flush.
fn run(s: Settings, rx: Receiver<Msg>, dropped: std::sync::Arc<AtomicU64>) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let client = match client(&s) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "traces: no HTTP client; no traces are sent");
            return;
        }
    };
    let mut post = Post {
        s: &s,
        client,
        failing: false,
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
    match client(s) {
        Ok(c) => send(&c, s, body).await,
        Err(e) => Some(format!("no HTTP client: {e}")),
    }
}

fn client(s: &Settings) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(s.timeout)
        // A collector that redirects is misconfigured: say so, not follow.
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

async fn send(client: &reqwest::Client, s: &Settings, body: Vec<u8>) -> Option<String> {
    let mut req = client
        .post(&s.endpoint)
        .header("content-type", "application/x-protobuf")
        .body(body);
    for (k, v) in &s.headers {
        req = req.header(k, v);
    }
    match req.send().await {
        Ok(r) if r.status().is_success() => None,
        Ok(r) => Some(format!("the collector answered {}", r.status())),
        Err(e) if e.is_timeout() => Some(format!("no answer in {:?}", s.timeout)),
        Err(e) if e.is_connect() => Some("cannot connect".to_owned()),
        Err(_) => Some("the request failed".to_owned()),
    }
}

struct Post<'a> {
    s: &'a Settings,
    client: reqwest::Client,
    failing: bool,
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
        match send(&self.client, self.s, body).await {
            Some(why) if !self.failing => {
                self.failing = true;
                tracing::warn!(
                    endpoint = %shown(&self.s.endpoint),
                    spans = spans.len(),
                    "traces: cannot export ({why}); spans are dropped until an export works"
                );
            }
            None if self.failing => {
                self.failing = false;
                tracing::info!(endpoint = %shown(&self.s.endpoint), "traces: exports work again");
            }
            _ => {}
        }
    }
}
