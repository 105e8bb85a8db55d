//! The Worker's settings: `[vars]` in wrangler.toml and the bearer secrets
//! (`TOOLGATE_TOKEN`, a caller's; `TOOLGATE_APPROVER_TOKEN`, optional, an
//! approver's), read through the same `TOOLGATE_*` rules as the local
//! server.

use axum::body::Body;
use axum::http::Response;
use axum::middleware::{self, Next};
use axum::response::IntoResponse;
use worker::{Env, HttpRequest};

use toolgate_shared::config::Config;
use toolgate_shared::error::{ErrorCode, ToolError};
use toolgate_shared::http::identity::Route;

pub struct Settings {
    pub config: Config,
    pub public_url: Option<String>,
    /// Serve without a token (`TOOLGATE_ALLOW_ANONYMOUS = "true"`).
    pub anonymous: bool,
}

pub const NO_SECRET: &str = "This Worker has no bearer secret: run `wrangler secret put TOOLGATE_TOKEN` \
     (or set TOOLGATE_ALLOW_ANONYMOUS = \"true\" in wrangler.toml [vars] to serve without one)";

fn lookup(env: &Env, name: &str) -> Option<String> {
    env.var(name)
        .map(|v| v.to_string())
        .or_else(|_| env.secret(name).map(|v| v.to_string()))
        .ok()
}

impl Settings {
    /// The settings, or the response that refuses to serve with them.
    pub fn from_env(env: &Env) -> Result<Self, Response<Body>> {
        let config = Config::load(None, &|k| lookup(env, k)).map_err(|e| {
            tracing::error!(error = %e, "bad configuration");
            ToolError::new(ErrorCode::NotConfigured, format!("Bad configuration: {e}"))
                .into_response()
        })?;
        Ok(Self {
            public_url: config.clarify.public_url.clone(),
            anonymous: lookup(env, "TOOLGATE_ALLOW_ANONYMOUS").is_some_and(|v| v == "true"),
            config,
        })
    }

    /// With no caller secret, every tool route answers 503 naming the
    /// secret, unless anonymous use is chosen (open routes stay open;
    /// approver routes need an approver's token either way).
    pub fn guard(&self, app: axum::Router) -> axum::Router {
        if !self.config.server.tokens.is_empty() || self.anonymous {
            return app;
        }
        app.layer(middleware::from_fn(refuse_without_secret))
    }
}

async fn refuse_without_secret(req: axum::extract::Request, next: Next) -> Response<Body> {
    if Route::of(req.method(), req.uri().path()) != Route::Tool {
        return next.run(req).await;
    }
    ToolError::new(ErrorCode::NotConfigured, NO_SECRET).into_response()
}

/// `https://host` of the request: the base of `answer_url` when
/// `TOOLGATE_PUBLIC_URL` is unset.
pub fn origin(req: &HttpRequest) -> String {
    let uri = req.uri();
    match (uri.scheme_str(), uri.authority()) {
        (Some(scheme), Some(authority)) => format!("{scheme}://{authority}"),
        _ => String::new(),
    }
}
