//! Tools served by sibling Lambda functions, listed and called from this
//! one. On AWS every function serves only its own tools, but API Gateway
//! sends `GET /tools`, `/openapi.json` and `/mcp` to one of them; this
//! source lets that function list the others' tools (each peer describes
//! itself when invoked with `{"toolgate": "describe"}`) and forward MCP
//! calls to them (the envelope, `crate::envelope`), through the Lambda
//! Invoke API. Listings are cached for a TTL; a peer that fails is retried
//! soon, and the others keep working.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use aws_sdk_lambda::primitives::Blob;
use serde_json::{Value, json};

use crate::envelope::{DESCRIBE, Envelope, SETTLED, code_of, untagged};
use toolgate_shared::error::{ErrorCode, ToolError};
use toolgate_shared::invoke::Transport;
use toolgate_shared::registry::{ReadyFuture, ToolSource, exported_name};
use toolgate_shared::tool::{CallContext, SettledFuture, Tool, ToolFuture, ToolSpec};

const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);
/// How long the first listing may hold the function's start: Lambda gives
/// init 10 s, and a peer that cannot answer (ssh in a VPC without a route
/// to SSM, an account that is down) must not take them; a cold start of
/// its own fits. Whatever is still being listed then finishes in the
/// background.
const FIRST_LISTING_BOUND: Duration = Duration::from_secs(7);
/// A peer's state until its first listing ends.
const NOT_LISTED_YET: &str = "not listed yet: its first listing is still running";
/// How long one listing may take before it counts as failed.
const LISTING_TIMEOUT: Duration = Duration::from_secs(30);

/// Sibling functions' tools, as one [`ToolSource`].
pub struct PeerTools {
    peers: Vec<Arc<Peer>>,
    runtime: tokio::runtime::Handle,
    /// Reached by scripts' calls only (python-execute's code mode).
    for_scripts: bool,
}

struct Peer {
    function: String,
    client: aws_sdk_lambda::Client,
    ttl: Duration,
    listing: RwLock<Listing>,
    refreshing: AtomicBool,
}

#[derive(Default)]
struct Listing {
    tools: Vec<Arc<RemoteTool>>,
    next_due: Option<Instant>,
    error: Option<String>,
}

struct RemoteTool {
    spec: ToolSpec,
    function: String,
    client: aws_sdk_lambda::Client,
}

/// Kept back from the caller's deadline when forwarding a call: the
/// answer's way back through the Invoke API and this function.
const FORWARD_MARGIN: Duration = Duration::from_millis(500);

fn unavailable(function: &str, why: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ErrorCode::UpstreamUnavailable,
        format!("function {function:?} is unavailable: {why}"),
    )
}

async fn invoke(
    client: &aws_sdk_lambda::Client,
    function: &str,
    payload: &Value,
) -> Result<Value, ToolError> {
    let out = client
        .invoke()
        .function_name(function)
        .payload(Blob::new(payload.to_string()))
        .send()
        .await
        .map_err(|e| {
            // AWS answers a function's error with 200 and a header, but
            // some Invoke endpoints (cargo lambda's, proxies) with an HTTP
            // error whose body is the function's: its error, not an outage.
            let body = e.raw_response().and_then(|r| r.body().bytes());
            function_error(body.unwrap_or_default()).unwrap_or_else(|| {
                unavailable(function, aws_sdk_lambda::error::DisplayErrorContext(e))
            })
        })?;
    let body = out.payload().map(|b| b.as_ref()).unwrap_or_default();
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| unavailable(function, format!("unreadable response: {e}")))?;
    if out.function_error().is_some() {
        let kind = value["errorType"].as_str().unwrap_or("Internal");
        let message = value["errorMessage"].as_str().unwrap_or("function error");
        return Err(ToolError::new(code_of(kind), message));
    }
    Ok(value)
}

/// A function's own error (`{"errorType", "errorMessage"}`) in `body`.
fn function_error(body: &[u8]) -> Option<ToolError> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let kind = v["errorType"].as_str()?;
    let message = v["errorMessage"].as_str()?;
    Some(ToolError::new(code_of(kind), message))
}

impl Tool for RemoteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn runs_in(&self) -> Option<&str> {
        Some(&self.function)
    }

    /// A script's question waits for its answer, as the local tool's does.
    fn waits_on(&self, answer: &Value) -> Option<String> {
        self.is_clarify()
            .then(|| toolgate_shared::tools::clarify::pending_id(answer))
            .flatten()
    }

    /// Asked of the function that keeps the question.
    fn settled<'a>(&'a self, id: &'a str) -> SettledFuture<'a> {
        Box::pin(async move {
            if !self.is_clarify() {
                return Ok(None);
            }
            let ask = json!({"toolgate": SETTLED, "tool": self.spec.name, "id": id});
            let v = invoke(&self.client, &self.function, &ask).await?;
            Ok(Some(v["settled"].clone()).filter(|s| !s.is_null()))
        })
    }

    fn call<'a>(&'a self, args: Value, ctx: &'a CallContext) -> ToolFuture<'a> {
        Box::pin(async move {
            // A forwarded call came over HTTP or MCP, never from a Step
            // Functions workflow: it may not complete a workflow's task.
            if args.get("task_token").is_some() {
                return Err(toolgate_shared::error::ToolError::invalid_input(
                    toolgate_shared::tools::clarify::TASK_TOKEN_DIRECT_ONLY,
                ));
            }
            // A script's call (code mode) is answered with its outcome,
            // details included: an approval's id stops the script.
            let script = (ctx.transport == Some(Transport::Code))
                .then(|| ctx.parent.clone().unwrap_or_default());
            let tagged = script.is_some();
            // The function answers before the caller stops waiting, with
            // time left for its answer's way back through this one.
            let payload = Envelope {
                tool: self.spec.name.clone(),
                arguments: args,
                servers: ctx.servers.clone(),
                caller: ctx.caller.clone(),
                deadline_ms: ctx
                    .deadline
                    .map(|d| crate::envelope::epoch_ms(d.checked_sub(FORWARD_MARGIN).unwrap_or(d))),
                elicit: ctx.elicit.clone(),
                traceparent: ctx.traceparent.clone(),
                task: None,
                script,
            }
            .encode();
            let call = async {
                let answer = invoke(&self.client, &self.function, &payload).await?;
                if tagged { untagged(answer) } else { Ok(answer) }
            };
            let Some(deadline) = ctx.deadline else {
                return call.await;
            };
            // One that cannot (its cold start took the time): the caller
            // hears why, in the contract's shape, before it gives up.
            // Before this function's own end: Lambda stops it at its
            // deadline, and the caller would hear nothing.
            let answer_by = deadline
                .checked_sub(toolgate_shared::tool::DEADLINE_MARGIN)
                .unwrap_or(deadline);
            tokio::time::timeout_at(answer_by.into(), call)
                .await
                .unwrap_or_else(|_| {
                    Err(unavailable(
                        &self.function,
                        "it did not answer before the caller's deadline (API Gateway's 30 s)",
                    ))
                })
        })
    }
}

impl RemoteTool {
    fn is_clarify(&self) -> bool {
        self.spec.name == toolgate_shared::tools::clarify::NAME
    }
}

impl Peer {
    async fn refresh(&self) {
        let describe = json!({"toolgate": DESCRIBE});
        // The SDK waits for an answer without end: a listing that hangs
        // (a peer whose init hangs, a dead connection) fails and is retried.
        let outcome = tokio::time::timeout(
            LISTING_TIMEOUT,
            invoke(&self.client, &self.function, &describe),
        )
        .await
        .unwrap_or_else(|_| {
            Err(unavailable(
                &self.function,
                "its listing did not answer within 30 s",
            ))
        })
        .and_then(|v| {
            serde_json::from_value::<Vec<ToolSpec>>(v["tools"].clone())
                .map_err(|e| unavailable(&self.function, format!("unreadable tool list: {e}")))
        });
        let mut l = self.listing.write().unwrap_or_else(|p| p.into_inner());
        match outcome {
            Ok(specs) => {
                l.tools = specs
                    .into_iter()
                    .map(|spec| {
                        Arc::new(RemoteTool {
                            spec,
                            function: self.function.clone(),
                            client: self.client.clone(),
                        })
                    })
                    .collect();
                l.error = None;
                l.next_due = Some(Instant::now() + self.ttl);
            }
            Err(e) => {
                tracing::error!(function = %self.function, error = %e.message, "peer function listing failed");
                l.error = Some(e.message);
                l.next_due = Some(Instant::now() + RETRY_AFTER_FAILURE.min(self.ttl));
            }
        }
    }
}

impl PeerTools {
    /// Lists every peer now, concurrently (during Lambda's init phase), for
    /// at most [`FIRST_LISTING_BOUND`].
    pub async fn start(functions: &[String], ttl: Duration) -> Self {
        let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Self::start_with(aws_sdk_lambda::Client::new(&conf), functions, ttl).await
    }

    /// For python-execute's scripts (code mode): the peers' tools, listed
    /// when a script first needs them (a call that uses none pays
    /// nothing), and reached by scripts' calls only.
    pub async fn for_scripts(functions: &[String], ttl: Duration) -> Self {
        let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let mut peers = Self::unlisted(aws_sdk_lambda::Client::new(&conf), functions, ttl);
        for p in &peers.peers {
            p.refreshing.store(false, Ordering::Release);
        }
        peers.for_scripts = true;
        peers
    }

    fn unlisted(client: aws_sdk_lambda::Client, functions: &[String], ttl: Duration) -> Self {
        let peers: Vec<Arc<Peer>> = functions
            .iter()
            .map(|f| {
                Arc::new(Peer {
                    function: f.clone(),
                    client: client.clone(),
                    ttl,
                    listing: RwLock::new(Listing {
                        error: Some(NOT_LISTED_YET.into()),
                        ..Listing::default()
                    }),
                    // The first listing is running: no second one beside it.
                    refreshing: AtomicBool::new(true),
                })
            })
            .collect();
        Self {
            peers,
            runtime: tokio::runtime::Handle::current(),
            for_scripts: false,
        }
    }

    async fn start_with(
        client: aws_sdk_lambda::Client,
        functions: &[String],
        ttl: Duration,
    ) -> Self {
        let this = Self::unlisted(client, functions, ttl);
        let mut tasks = Vec::new();
        for p in &this.peers {
            let p = p.clone();
            tasks.push(tokio::spawn(async move {
                p.refresh().await;
                p.refreshing.store(false, Ordering::Release);
            }));
        }
        let all = async {
            for t in tasks {
                let _ = t.await;
            }
        };
        if tokio::time::timeout(FIRST_LISTING_BOUND, all)
            .await
            .is_err()
        {
            tracing::warn!(
                bound_s = FIRST_LISTING_BOUND.as_secs(),
                "peer functions still being listed: they join when they answer"
            );
        }
        this
    }

    fn refresh_if_due(&self, peer: &Arc<Peer>) {
        let due = peer
            .listing
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .next_due
            .is_none_or(|d| Instant::now() >= d);
        if due && !peer.refreshing.swap(true, Ordering::AcqRel) {
            let peer = peer.clone();
            self.runtime.spawn(async move {
                peer.refresh().await;
                peer.refreshing.store(false, Ordering::Release);
            });
        }
    }

    /// `/healthz`'s peers part: per function, whether its last listing worked,
    /// how many tools it has, and the error if not.
    pub fn health(&self) -> Value {
        let peers: serde_json::Map<String, Value> = self
            .peers
            .iter()
            .map(|p| {
                let l = p.listing.read().unwrap_or_else(|e| e.into_inner());
                let mut state = json!({"ok": l.error.is_none(), "tools": l.tools.len()});
                if let Some(why) = &l.error {
                    state["error"] = json!(why);
                }
                (p.function.clone(), state)
            })
            .collect();
        json!({ "functions": peers })
    }
}

impl ToolSource for PeerTools {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut all: Vec<Arc<dyn Tool>> = Vec::new();
        for p in &self.peers {
            self.refresh_if_due(p);
            let l = p.listing.read().unwrap_or_else(|e| e.into_inner());
            all.extend(l.tools.iter().map(|t| t.clone() as Arc<dyn Tool>));
        }
        all
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn for_scripts_only(&self) -> bool {
        self.for_scripts
    }

    /// Until every peer answered (or failed) its first listing.
    fn ready(&self, within: Duration) -> ReadyFuture<'_> {
        Box::pin(async move {
            let until = Instant::now() + within;
            for p in &self.peers {
                self.refresh_if_due(p);
            }
            let listed = |p: &Arc<Peer>| {
                let l = p.listing.read().unwrap_or_else(|e| e.into_inner());
                l.next_due.is_some()
            };
            while !self.peers.iter().all(listed) && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    }

    fn resolve(&self, name: &str) -> Option<Result<Arc<dyn Tool>, ToolError>> {
        for p in &self.peers {
            self.refresh_if_due(p);
            let l = p.listing.read().unwrap_or_else(|e| e.into_inner());
            for t in &l.tools {
                if t.spec.name == name || exported_name(&t.spec.name) == name {
                    return Some(Ok(t.clone() as Arc<dyn Tool>));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Lambda client whose Invoke endpoint takes connections and never
    /// answers: a peer that cannot answer during init.
    async fn silent_endpoint() -> (aws_sdk_lambda::Client, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let held = tokio::spawn(async move {
            let mut open = Vec::new();
            while let Ok((s, _)) = listener.accept().await {
                open.push(s);
            }
        });
        let conf = aws_sdk_lambda::Config::builder()
            .behavior_version(aws_sdk_lambda::config::BehaviorVersion::latest())
            .region(aws_sdk_lambda::config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_lambda::config::Credentials::new(
                "testing", "testing", None, None, "test",
            ))
            .endpoint_url(format!("http://{addr}"))
            .build();
        (aws_sdk_lambda::Client::from_conf(conf), held)
    }

    #[tokio::test]
    async fn a_peer_that_does_not_answer_holds_the_start_only_so_long() {
        let (client, held) = silent_endpoint().await;
        let started = Instant::now();
        let peers = PeerTools::start_with(client, &["ssh".into()], Duration::from_secs(300)).await;
        let took = started.elapsed();
        // Inside Lambda's 10 s of init, with room for the rest of it.
        assert!(
            took >= FIRST_LISTING_BOUND && took < Duration::from_secs(9),
            "{took:?}"
        );
        assert_eq!(
            peers.health()["functions"]["ssh"],
            json!({"ok": false, "tools": 0, "error": NOT_LISTED_YET})
        );
        // Its listing goes on: no second one starts beside it.
        assert!(peers.tools().is_empty());
        assert!(peers.peers[0].refreshing.load(Ordering::Acquire));
        held.abort();
    }
}
