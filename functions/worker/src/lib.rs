//! Toolgate on Cloudflare Workers: `python.execute` and `clarify` behind the
//! same HTTP API as `toolgate serve` (the shared axum router), so responses
//! are the same bytes.
//!
//! - `settings`: vars and the bearer secret, read with the shared config
//!   rules, and the refusal to serve without a secret;
//! - `python`: `python.execute`, run by the sandbox Worker over a service
//!   binding and raced against the timeout (a runaway script pins its
//!   isolate; this one still answers);
//! - `d1`: the clarify store on D1; `d1_sessions`: python.execute's
//!   sessions on D1;
//! - `notify`: clarify's notifications, posted with `fetch` after the
//!   answer;
//! - `log`: JSON log lines to the Workers console.
#![cfg(target_arch = "wasm32")]

mod d1;
mod d1_sessions;
mod log;
mod notify;
mod python;
mod settings;

use std::sync::Arc;
use std::time::Duration;

use tower_service::Service;
use worker::{Context, Env, HttpRequest, event};

use toolgate_shared::clarify::Clarify;
use toolgate_shared::http::{AppState, Origins, router};
use toolgate_shared::registry::Registry;
use toolgate_shared::sessions::Sessions;
use toolgate_shared::tools::clarify::ClarifyTool;

#[event(fetch)]
async fn fetch(
    req: HttpRequest,
    env: Env,
    ctx: Context,
) -> worker::Result<axum::http::Response<axum::body::Body>> {
    log::init();
    let settings = match settings::Settings::from_env(&env) {
        Ok(s) => s,
        Err(refusal) => return Ok(refusal),
    };
    let base_url = settings
        .public_url
        .clone()
        .unwrap_or_else(|| settings::origin(&req));
    let mut app = match app(&env, ctx, &settings, base_url).await {
        Ok(app) => app,
        Err(e) => {
            tracing::error!(error = %e, "the Worker cannot start");
            return Ok(axum::response::IntoResponse::into_response(
                toolgate_shared::error::ToolError::new(
                    toolgate_shared::error::ErrorCode::NotConfigured,
                    format!("The Worker cannot start: {e}"),
                ),
            ));
        }
    };
    Ok(app.call(req).await?)
}

async fn app(
    env: &Env,
    ctx: Context,
    settings: &settings::Settings,
    base_url: String,
) -> worker::Result<axum::Router> {
    let store = Arc::new(d1::D1Store::new(env.d1(d1::BINDING)?));
    let nap: toolgate_shared::clarify::Nap =
        Arc::new(|d: Duration| Box::pin(worker::send::SendFuture::new(worker::Delay::from(d))));
    let mut clarify = Clarify::new(
        store,
        None,
        base_url,
        Duration::from_secs(settings.config.clarify.expiry_secs),
    )
    .with_nap(nap.clone())
    .with_pending_limits(settings.config.clarify.pending_limits());
    let channels = &settings.config.clarify.notify;
    if !channels.is_empty() {
        let notifier = toolgate_shared::clarify::notify::from_config(
            channels,
            Arc::new(notify::WorkerFetch),
            nap.clone(),
            Some(notify::wait_until(ctx)),
            // The Worker gates no tool: its questions have no buttons.
            false,
            // Nor has it AWS's secrets or topics.
            None,
        )
        .await
        .map_err(worker::Error::RustError)?;
        clarify = clarify.with_notifier(notifier);
    }
    // MCP clients' retry states: sealed with the configured key (checked
    // when the settings load), else one kept in D1.
    use toolgate_shared::config::Secret;
    clarify = match &settings.config.clarify.mcp_state_key {
        Some(Secret::Value(v)) => clarify.with_state_key(
            toolgate_shared::elicit::state::StateKey::from_secret(v.as_bytes())
                .map_err(worker::Error::RustError)?,
        ),
        Some(Secret::Parameter(_)) => {
            return Err(worker::Error::RustError(
                "TOOLGATE_MCP_STATE_KEY_PARAMETER names an SSM parameter, which a Worker cannot \
                 read: set TOOLGATE_MCP_STATE_KEY as a secret (wrangler secret put), or neither"
                    .into(),
            ));
        }
        None => clarify.with_stored_state_key(),
    };
    let clarify = Arc::new(clarify);
    let mut registry = Registry::new();
    registry.set_mcp_names(settings.config.server.mcp_names);
    let sessions = Sessions::new(
        Arc::new(d1_sessions::D1Sessions::new(env.d1(d1::BINDING)?)),
        Duration::from_secs(settings.config.python.session_idle_secs),
    )
    .with_nap(nap.clone())
    .with_row_limit(d1_sessions::ROW_LIMIT);
    let (tool, python) = python::tool(
        &settings.config.python,
        env.service(python::BINDING)?,
        sessions,
    );
    let tool = tool
        .with_code_mode(&settings.config.code_mode)
        .with_clarify(clarify.clone());
    registry
        .add(Arc::new(tool))
        .map_err(worker::Error::RustError)?;
    registry
        .add(Arc::new(ClarifyTool::new(clarify.clone())))
        .map_err(worker::Error::RustError)?;
    let state = AppState {
        registry: Arc::new(registry),
        tokens: Arc::new(toolgate_shared::http::Tokens::new(
            &settings.config.server.tokens,
            &settings.config.approvals.approvers,
        )),
        health: Arc::new(move || {
            let python = python.clone();
            Box::pin(worker::send::SendFuture::new(async move {
                python.health().await
            }))
        }),
        metrics: None,
        loopback_hosts_only: false,
        // The Worker gates no tool (no ssh_run, no cloud tools): its inbox
        // lists questions, for approvers signed in with their token.
        approvals: Some(toolgate_shared::approvals::http::Routes {
            approvals: Arc::new(toolgate_shared::approvals::Approvals::new(
                clarify.clone(),
                false,
            )),
            slack: None,
        }),
        clarify: Some(clarify),
        resource: Arc::new(toolgate_shared::http::resource::ProtectedResource {
            public_url: settings.public_url.clone(),
            issuer: settings.config.server.oauth_issuer.clone(),
        }),
        // A Worker's request cannot outlive its caller's: no tasks.
        tasks: None,
    };
    // Its own pages are same-origin; others' only where allowed.
    let origins = Origins::new(
        &settings.config.server.allowed_origins,
        settings.public_url.as_deref(),
    );
    Ok(settings
        .guard(router(state, origins))
        .layer(axum::middleware::from_fn(read_body_first)))
}

/// Bodies past this are not read at all (the router answers 413 first):
/// above python.execute's body limit with the default files cap (21.3 MiB).
const DRAIN_LIMIT: usize = 32 << 20;

/// Reads the whole request body before routing. `wrangler dev`'s proxy
/// stalls the connection after a response sent without reading the body
/// (401, 413); the router's own limits then apply to the bytes read.
async fn read_body_first(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let (parts, body) = req.into_parts();
    match axum::body::to_bytes(body, DRAIN_LIMIT).await {
        Ok(bytes) => {
            let req = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes));
            next.run(req).await
        }
        Err(_) => {
            axum::response::IntoResponse::into_response(toolgate_shared::error::ToolError::new(
                toolgate_shared::error::ErrorCode::TooLarge,
                format!("Request body is larger than {DRAIN_LIMIT} bytes"),
            ))
        }
    }
}
