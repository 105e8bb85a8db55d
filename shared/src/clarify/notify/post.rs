//! The HTTP POST the webhook and Slack channels share, and its retries:
//! three attempts, 0.5 s then 2 s apart, after a network error, a 429 or a
//! 5xx; any other answer is final. The transport is a trait because the
//! Worker posts with its own `fetch`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::super::Nap;

/// A POST to send: the body is JSON.
pub struct Request {
    /// Secret for Slack (the URL is the credential): never logged or shown.
    pub url: String,
    /// Extra headers, besides `Content-Type: application/json`.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Vec<u8>,
}

/// The receiver's HTTP status, or why there was none (no URL in it).
pub type Posted<'a> = Pin<Box<dyn Future<Output = Result<u16, String>> + Send + 'a>>;

/// Sends one POST, giving up after `timeout`.
pub trait Post: Send + Sync {
    /// Sends `r`; the receiver's status.
    fn post<'a>(&'a self, r: &'a Request, timeout: Duration) -> Posted<'a>;
}

/// Where an HTTP channel posts, and how.
pub struct Target {
    /// Secret for Slack (the URL is the credential): never logged or shown.
    pub url: String,
    /// The transport.
    pub post: Arc<dyn Post>,
    /// The timer retries wait on.
    pub nap: Nap,
}

impl Target {
    /// POSTs `body` with the headers `headers()` makes for each attempt.
    pub async fn send(
        &self,
        body: &[u8],
        headers: impl Fn() -> Vec<(String, String)>,
    ) -> Result<(), String> {
        let make = || {
            Ok(Request {
                url: self.url.clone(),
                headers: headers(),
                body: body.to_vec(),
            })
        };
        deliver(self.post.as_ref(), &self.nap, make).await
    }
}

/// How long one attempt may take.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// The waits before the second and third attempts.
pub const BACKOFF: [Duration; 2] = [Duration::from_millis(500), Duration::from_secs(2)];

/// Sends `make()` (made afresh per attempt: a signature carries its time)
/// until the receiver takes it, as the module says.
pub async fn deliver(
    post: &dyn Post,
    nap: &Nap,
    make: impl Fn() -> Result<Request, String>,
) -> Result<(), String> {
    let mut last = String::new();
    for attempt in 0..=BACKOFF.len() {
        if attempt > 0 {
            nap(BACKOFF[attempt - 1]).await;
        }
        let r = make()?;
        match post.post(&r, ATTEMPT_TIMEOUT).await {
            Ok(s) if (200..300).contains(&s) => return Ok(()),
            Ok(s) if s == 429 || s >= 500 => last = format!("HTTP {s}"),
            Ok(s) => return Err(format!("HTTP {s} (not retried)")),
            Err(e) => last = e,
        }
    }
    Err(format!("{last} after {} attempts", BACKOFF.len() + 1))
}

/// The native transport (reqwest, rustls).
#[cfg(not(target_arch = "wasm32"))]
pub struct Reqwest(reqwest::Client);

#[cfg(not(target_arch = "wasm32"))]
impl Reqwest {
    /// A client that follows no redirect.
    pub fn new() -> Result<Self, String> {
        reqwest::Client::builder()
            .user_agent("toolgate")
            // A receiver must answer itself: a redirect could point the
            // signed event anywhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map(Self)
            .map_err(|e| format!("HTTP client: {e}"))
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Post for Reqwest {
    fn post<'a>(&'a self, r: &'a Request, timeout: Duration) -> Posted<'a> {
        Box::pin(async move {
            let mut req = self
                .0
                .post(&r.url)
                .timeout(timeout)
                .header("content-type", "application/json")
                .body(r.body.clone());
            for (k, v) in &r.headers {
                req = req.header(k, v);
            }
            match req.send().await {
                Ok(resp) => Ok(resp.status().as_u16()),
                Err(e) if e.is_timeout() => Err(format!("no answer within {}s", timeout.as_secs())),
                Err(e) => Err(e.without_url().to_string()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A scripted receiver: no network in a unit test (the e2e tests post
    /// to real receivers on loopback).
    struct Script(Mutex<Vec<Result<u16, String>>>, Mutex<usize>);

    impl Post for Script {
        fn post<'a>(&'a self, _r: &'a Request, _t: Duration) -> Posted<'a> {
            *self.1.lock().unwrap() += 1;
            let next = self.0.lock().unwrap().remove(0);
            Box::pin(async move { next })
        }
    }

    fn attempts(script: Vec<Result<u16, String>>) -> (Result<(), String>, usize) {
        let s = Script(Mutex::new(script), Mutex::new(0));
        let nap: Nap = Arc::new(|_| Box::pin(async {}));
        let make = || {
            Ok(Request {
                url: "http://127.0.0.1:9/".into(),
                headers: vec![],
                body: b"{}".to_vec(),
            })
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let r = rt.block_on(deliver(&s, &nap, make));
        let n = *s.1.lock().unwrap();
        (r, n)
    }

    #[test]
    fn retries_only_what_may_succeed_later() {
        assert_eq!(attempts(vec![Ok(204)]), (Ok(()), 1));
        assert_eq!(
            attempts(vec![Ok(503), Err("reset".into()), Ok(200)]),
            (Ok(()), 3)
        );
        assert_eq!(
            attempts(vec![Ok(500), Ok(429), Ok(502)]),
            (Err("HTTP 502 after 3 attempts".into()), 3)
        );
        assert_eq!(
            attempts(vec![Ok(401)]),
            (Err("HTTP 401 (not retried)".into()), 1)
        );
    }
}
