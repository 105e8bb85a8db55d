//! `toolgate serve`: binds, refuses an open address without a caller
//! token, builds the tools, serves until SIGTERM or Ctrl-C, then drains.

use std::process::ExitCode;
use std::sync::Arc;

use toolgate_shared::config::Config;
use toolgate_shared::error::{ErrorCode, ToolError};
use toolgate_shared::http::serve::ServeLimits;
use toolgate_shared::http::{Origins, Tokens, router};

use crate::{build, fatal};

/// Why `cfg` must not be served on `bound`: a non-loopback address
/// without any caller token lets anyone who reaches it run code. Judged on
/// the address actually bound, not on a name looked up before binding
/// (whose answer may change in between).
fn refuse_anonymous(cfg: &Config, bound: std::net::SocketAddr) -> Option<String> {
    if !cfg.server.tokens.is_empty() || bound.ip().to_canonical().is_loopback() {
        return None;
    }
    if cfg.server.allow_anonymous {
        tracing::warn!(
            addr = %cfg.server.addr,
            "serving a non-loopback address without a caller token (TOOLGATE_ALLOW_ANONYMOUS): anyone who reaches it can run code"
        );
        return None;
    }
    Some(format!(
        "refusing to serve {} without a caller token: anyone who reaches it could run code. \
         Give one with --token, TOOLGATE_TOKEN or [[server.tokens]] in the config file, \
         or bind 127.0.0.1 (--addr 127.0.0.1:8080); \
         TOOLGATE_ALLOW_ANONYMOUS=true serves it anyway",
        cfg.server.addr
    ))
}

/// Serves `cfg` until a signal, then drains calls for the grace period.
pub async fn run(cfg: Config) -> ExitCode {
    let listener = match tokio::net::TcpListener::bind(&cfg.server.addr).await {
        Ok(l) => l,
        Err(e) => return fatal(&format!("cannot bind {}: {e}", cfg.server.addr)),
    };
    let bound = listener.local_addr().ok();
    if let Some(why) = bound.and_then(|b| refuse_anonymous(&cfg, b)) {
        return fatal(&why);
    }
    toolgate_shared::sqlite_file::keep_private(&cfg.data_dir);
    let app = match build(&cfg, true).await {
        Ok(a) => a,
        Err(e) => return fatal(&e),
    };
    let local = bound
        .map(|a| a.to_string())
        .unwrap_or_else(|| cfg.server.addr.clone());
    // answer_url points at the address actually bound (a port chosen at bind).
    if let (Some(c), None) = (app.clarify(), &cfg.clarify.public_url) {
        c.set_base_url(format!("http://{local}"));
    }
    // Bound to loopback: answer only loopback Host names (DNS rebinding).
    let mut state = app.app_state(
        Tokens::new(&cfg.server.tokens, &cfg.approvals.approvers),
        bound.is_some_and(|a| a.ip().to_canonical().is_loopback()),
    );
    // Long calls run on in this process as tasks.
    state.tasks = Some(Arc::new(toolgate_shared::tasks::local::LocalTasks::new(
        state.registry.clone(),
        std::time::Duration::from_millis(cfg.server.tasks_after_ms),
    )));
    let mut limits = ServeLimits::from_config(&cfg.server);
    let open_files = limits.fit_descriptors();
    tracing::info!(
        addr = %local,
        config = %cfg.file.as_ref().map_or("none (defaults and TOOLGATE_* variables)".into(), |f| f.display().to_string()),
        data_dir = %cfg.data_dir.display(),
        auth = !cfg.server.tokens.is_empty(),
        max_connections = limits.max_connections,
        max_connections_per_client = limits.per_client,
        open_files_limit = open_files,
        callers = cfg.server.tokens.len(),
        approvers = cfg.approvals.approvers.len(),
        traces = %toolgate_shared::traces::destination().unwrap_or_else(|| "off".into()),
        tools = ?app.registry.tools().iter().map(|t| t.spec().name.clone()).collect::<Vec<_>>(),
        "toolgate listening on http://{local}"
    );
    // On SIGTERM or Ctrl-C: stop accepting, let calls in flight finish
    // within the grace period; then each call still running is answered
    // 503 `unavailable` (its future dropped, which ends its sandbox child)
    // and its connection closed once that answer is written.
    let grace = std::time::Duration::from_secs(cfg.server.shutdown_grace_secs);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (cut_tx, cut_rx) = tokio::sync::watch::channel(false);
    let app_router = router(state, Origins::from_config(&cfg)).layer(axum::middleware::from_fn(
        move |req, next| cut_at_grace_end(cut_rx.clone(), req, next),
    ));
    let server = toolgate_shared::http::serve::serve(listener, app_router, limits, async move {
        shutdown_signal().await;
        tracing::info!(grace_secs = grace.as_secs(), "shutting down");
        let _ = stop_tx.send(());
    });
    tokio::pin!(server);
    let served = tokio::select! {
        r = &mut server => r,
        _ = async {
            let _ = stop_rx.await;
            tokio::time::sleep(grace).await;
        } => {
            tracing::warn!("calls still running after the grace period: each is answered 503 and stopped");
            let _ = cut_tx.send(true);
            // Long enough to write the answers; a client that does not
            // read its answer does not hold the shutdown.
            tokio::time::timeout(ANSWER_WRITE, &mut server)
                .await
                .unwrap_or(Ok(()))
        }
    };
    // Close upstream sessions; dropping the tools kills the sandbox's children.
    app.shutdown().await;
    drop(app);
    match served {
        Ok(()) => {
            tracing::info!("toolgate stopped");
            ExitCode::SUCCESS
        }
        Err(e) => fatal(&format!("server error: {e}")),
    }
}

/// How long the answers of calls cut at the end of the grace period may
/// take to be written before the server stops anyway.
const ANSWER_WRITE: std::time::Duration = std::time::Duration::from_secs(2);

/// What a call still running at the end of the grace period is answered.
pub const CUT: &str = "The server is shutting down and stopped this call at the end of its grace \
     period (TOOLGATE_SHUTDOWN_GRACE_SECS): make it again";

/// Runs the request, unless the grace period ends first: then 503.
async fn cut_at_grace_end(
    mut cut: tokio::sync::watch::Receiver<bool>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let path = req.uri().path().to_owned();
    tokio::select! {
        res = next.run(req) => res,
        _ = cut.wait_for(|c| *c) => {
            tracing::warn!(
                path = %toolgate_shared::logging::field(&toolgate_shared::logging::redact_ids(&path)),
                outcome = "unavailable",
                "call stopped at the end of the grace period"
            );
            ToolError::new(ErrorCode::Unavailable, CUT).into_response()
        }
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = tokio::signal::ctrl_c() => {},
    }
}
