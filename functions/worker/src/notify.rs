//! clarify's notifications on the Worker: the webhook and Slack channels
//! post with the Workers `fetch`, and deliveries run after the answer
//! (`waitUntil`). SNS needs AWS's SDK, which is not built for the Worker:
//! such a channel is refused when the Worker starts.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{Either, select};
use worker::send::{SendFuture, SendWrapper};
use worker::{Context, Delay, Fetch, Headers, Method, Request, RequestInit, RequestRedirect};

use toolgate_shared::clarify::notify::Spawn;
use toolgate_shared::clarify::notify::post::{Post, Posted, Request as PostRequest};

/// POSTs with the Workers `fetch`, following no redirect.
pub struct WorkerFetch;

async fn post_once(r: &PostRequest, timeout: Duration) -> Result<u16, String> {
    let headers = Headers::new();
    headers
        .set("content-type", "application/json")
        .map_err(|e| e.to_string())?;
    for (k, v) in &r.headers {
        headers.set(k, v).map_err(|e| e.to_string())?;
    }
    let body = String::from_utf8(r.body.clone()).map_err(|e| e.to_string())?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual)
        .with_body(Some(body.into()));
    // The error never carries the URL (a Slack webhook's URL is its secret).
    let req = Request::new_with_init(&r.url, &init).map_err(|_| "not a valid URL".to_owned())?;
    let call = pin!(async move { Fetch::Request(req).send().await });
    let timer = pin!(Delay::from(timeout));
    match select(call, timer).await {
        Either::Left((Ok(resp), _)) => Ok(resp.status_code()),
        Either::Left((Err(e), _)) => Err(format!("fetch failed: {e}").replace(&r.url, "<url>")),
        Either::Right(_) => Err(format!("no answer within {}s", timeout.as_secs())),
    }
}

impl Post for WorkerFetch {
    fn post<'a>(&'a self, r: &'a PostRequest, timeout: Duration) -> Posted<'a> {
        Box::pin(SendFuture::new(post_once(r, timeout)))
    }
}

/// Runs deliveries after the response, for as long as the Workers runtime
/// lets `waitUntil` run (30 s past the response).
pub fn wait_until(ctx: Context) -> Spawn {
    let ctx = Arc::new(SendWrapper::new(ctx));
    Arc::new(move |f| ctx.wait_until(f))
}
