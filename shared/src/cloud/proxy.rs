//! The proxy: one MCP session per account, reused across calls; each
//! account's tool list cached for a TTL and refreshed in the background;
//! calls forwarded unchanged. One account being down or slow never holds up
//! another: each has its own session, lock and timeout.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use axum::http::{HeaderName, HeaderValue};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::account::{Account, AccountSource};
use super::names;
use crate::approvals::Approvals;
use crate::error::{ErrorCode, ToolError};
use crate::registry::ToolSource;
use crate::tool::{Tool, ToolSpec};

mod tool;
mod words;
pub use tool::ProxyTool;

type Client = RunningService<RoleClient, ()>;

/// A failed listing is retried this soon (or after the TTL, if shorter).
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);

/// The proxy's timings, the same for every account.
#[derive(Debug, Clone, Copy)]
pub struct CloudSettings {
    /// How long a tool listing is served before it is refreshed.
    pub ttl: Duration,
    /// Per request to an account: connect, list, or call.
    pub timeout: Duration,
}

/// Every account's tools, as one [`ToolSource`].
pub struct CloudTools {
    upstreams: BTreeMap<String, Arc<Upstream>>,
    settings: CloudSettings,
    runtime: tokio::runtime::Handle,
}

/// Which calls wait for a person's approval, and where approvals are kept.
#[derive(Default)]
struct Gate {
    /// Exported names (`*` globs), on every account.
    approve: Vec<String>,
    /// Where approvals are asked and kept; `None` where this deployment
    /// has none (a gated call is then refused).
    approvals: Option<Arc<Approvals>>,
}

/// The arguments a gated tool takes besides its own: stripped before the
/// call goes to the account.
const APPROVAL_ARG: &str = "toolgate_approval";
const WAIT_ARG: &str = "toolgate_wait";

struct Upstream {
    account: Account,
    gate: Arc<Gate>,
    settings: CloudSettings,
    session: tokio::sync::Mutex<Option<Arc<Client>>>,
    listing: RwLock<Listing>,
    refreshing: AtomicBool,
}

#[derive(Default)]
struct Listing {
    tools: Vec<Arc<ProxyTool>>,
    by_name: HashMap<String, Arc<ProxyTool>>,
    /// Whether a listing ever succeeded.
    listed: bool,
    /// When the listing is next refreshed; `None` before the first attempt.
    next_due: Option<Instant>,
    /// Why the last listing failed, while it keeps failing, or why a call
    /// found the account failing since.
    error: Option<String>,
    /// When a call last found the account failing.
    failed_at: Option<Instant>,
}

fn unavailable(account: &str, why: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        ErrorCode::UpstreamUnavailable,
        format!("Cloud account {account:?} is unavailable: {why}"),
    )
}

impl CloudTools {
    /// Loads the accounts and lists each enabled one's tools, all at once,
    /// each within the timeout; an account that fails is logged and retried
    /// when its listing is next due.
    /// Gated calls wait on `approvals`.
    pub async fn start(
        source: &dyn AccountSource,
        settings: CloudSettings,
        approve: Vec<String>,
        approvals: Option<Arc<Approvals>>,
    ) -> Result<Self, String> {
        let gate = Arc::new(Gate { approve, approvals });
        let accounts = source
            .load()
            .await
            .map_err(|e| format!("cannot load cloud accounts from {}: {e}", source.describe()))?;
        let mut upstreams = BTreeMap::new();
        for account in accounts {
            if !account.enabled {
                tracing::info!(account = %account.id, "cloud account disabled");
                continue;
            }
            let up = Arc::new(Upstream {
                account,
                gate: gate.clone(),
                settings,
                session: tokio::sync::Mutex::new(None),
                listing: RwLock::new(Listing::default()),
                refreshing: AtomicBool::new(false),
            });
            upstreams.insert(up.account.id.clone(), up);
        }
        let mut first = tokio::task::JoinSet::new();
        for up in upstreams.values() {
            let up = up.clone();
            first.spawn(async move { up.refresh().await });
        }
        while first.join_next().await.is_some() {}
        Ok(Self {
            upstreams,
            settings,
            runtime: tokio::runtime::Handle::current(),
        })
    }

    /// Per account: reachable or not, how many tools, and the last error.
    pub fn health(&self) -> Value {
        let accounts: serde_json::Map<String, Value> = self
            .upstreams
            .iter()
            .map(|(id, up)| {
                let l = up.listing.read().unwrap_or_else(|p| p.into_inner());
                let v = json!({
                    "ok": l.error.is_none() && l.listed,
                    "tools": l.tools.len(),
                    "error": l.error,
                });
                (id.clone(), v)
            })
            .collect();
        json!({ "accounts": accounts })
    }

    /// Ends every account's MCP session (HTTP DELETE), so stateful servers
    /// can free them; each within the timeout.
    pub async fn close(&self) {
        for up in self.upstreams.values() {
            let session = up.session.lock().await.take();
            if let Some(s) = session {
                close_session(&up.account.id, s, self.settings.timeout).await;
            }
        }
    }

    fn refresh_if_due(&self, up: &Arc<Upstream>) {
        if up.is_due() && !up.refreshing.swap(true, Ordering::AcqRel) {
            let up = up.clone();
            self.runtime.spawn(async move { up.refresh().await });
        }
    }
}

async fn close_session(account: &str, session: Arc<Client>, within: Duration) {
    match Arc::try_unwrap(session) {
        Ok(mut client) => {
            if let Ok(None) = client.close_with_timeout(within).await {
                tracing::warn!(account, "MCP session did not close in time");
            }
        }
        // A call still holds it; dropping the last handle cancels the
        // session, and rmcp then sends the DELETE itself.
        Err(shared) => drop(shared),
    }
}

impl ToolSource for CloudTools {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut all: Vec<Arc<dyn Tool>> = Vec::new();
        for up in self.upstreams.values() {
            self.refresh_if_due(up);
            let l = up.listing.read().unwrap_or_else(|p| p.into_inner());
            all.extend(l.tools.iter().map(|t| t.clone() as Arc<dyn Tool>));
        }
        all
    }

    fn resolve(&self, name: &str) -> Option<Result<Arc<dyn Tool>, ToolError>> {
        // Account ids hold no '_', so the first "__" ends the account.
        let (account, _) = name.split_once("__")?;
        let up = self.upstreams.get(account)?;
        self.refresh_if_due(up);
        let l = up.listing.read().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = l.by_name.get(name) {
            return Some(Ok(t.clone() as Arc<dyn Tool>));
        }
        Some(Err(match (&l.error, l.listed) {
            // Said whole when it was met.
            (Some(e), _) => ToolError::new(ErrorCode::UpstreamUnavailable, e.clone()),
            (None, false) => unavailable(account, "its tools have not been listed yet"),
            (None, true) => ToolError::new(
                ErrorCode::UnknownTool,
                format!(
                    "Unknown tool: {name:?}. Cloud account {account:?} has: {}",
                    l.tools
                        .iter()
                        .map(|t| t.spec.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        }))
    }
}

impl Upstream {
    fn is_due(&self) -> bool {
        let l = self.listing.read().unwrap_or_else(|p| p.into_inner());
        l.next_due.is_none_or(|t| Instant::now() >= t)
    }

    /// The account's session, connecting (MCP initialize) when there is none.
    async fn client(&self) -> Result<Arc<Client>, ToolError> {
        let mut slot = self.session.lock().await;
        if let Some(c) = slot.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let a = &self.account;
        let mut cfg = StreamableHttpClientTransportConfig::with_uri(a.url.clone());
        if let Some(t) = &a.token {
            cfg = cfg.auth_header(t.clone());
        }
        let mut headers = HashMap::new();
        for (k, v) in &a.headers {
            let name = HeaderName::try_from(k.as_str())
                .map_err(|_| unavailable(&a.id, format!("header name {k:?} is not valid")))?;
            let value = HeaderValue::try_from(v.as_str()).map_err(|_| {
                unavailable(&a.id, format!("the value of header {k:?} is not valid"))
            })?;
            headers.insert(name, value);
        }
        cfg = cfg.custom_headers(headers);
        let connect = ().serve(StreamableHttpClientTransport::from_config(cfg));
        let client = match tokio::time::timeout(self.settings.timeout, connect).await {
            Ok(Ok(c)) => Arc::new(c),
            Ok(Err(e)) => return Err(unavailable(&a.id, words::in_words(&a.url, &e))),
            Err(_) => {
                return Err(unavailable(
                    &a.id,
                    format!(
                        "no answer from {} within {:?}",
                        words::shown_url(&a.url),
                        self.settings.timeout
                    ),
                ));
            }
        };
        *slot = Some(client.clone());
        Ok(client)
    }

    /// A call found the account failing: `/healthz` and `toolgate check`
    /// say so at once, and its tools are listed again at the next chance.
    fn failed(&self, why: &str) {
        let mut l = self.listing.write().unwrap_or_else(|p| p.into_inner());
        l.error = Some(why.to_owned());
        l.failed_at = Some(Instant::now());
        l.next_due = Some(Instant::now());
    }

    /// A call that started at `started` went through: a failure a call
    /// found before then no longer holds (one found since still does).
    fn answered(&self, started: Instant) {
        let mut l = self.listing.write().unwrap_or_else(|p| p.into_inner());
        if l.listed && l.failed_at.is_some_and(|at| at < started) {
            l.error = None;
            l.failed_at = None;
        }
    }

    /// Drops a session that failed, closing it in the background.
    async fn discard(&self, failed: &Arc<Client>) {
        let mut slot = self.session.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, failed)) {
            let old = slot.take();
            drop(slot);
            if let Some(old) = old {
                let id = self.account.id.clone();
                let within = self.settings.timeout;
                tokio::spawn(async move { close_session(&id, old, within).await });
            }
        }
    }

    async fn refresh(self: Arc<Self>) {
        let started = Instant::now();
        let id = self.account.id.clone();
        let outcome = async {
            let client = self.client().await?;
            match tokio::time::timeout(self.settings.timeout, client.list_all_tools()).await {
                Ok(Ok(tools)) => Ok(tools),
                Ok(Err(e)) => {
                    self.discard(&client).await;
                    Err(unavailable(
                        &id,
                        format!(
                            "listing its tools failed: {}",
                            words::in_words(&self.account.url, &e)
                        ),
                    ))
                }
                Err(_) => Err(unavailable(
                    &id,
                    format!("listing tools took longer than {:?}", self.settings.timeout),
                )),
            }
        }
        .await;
        let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        {
            let mut l = self.listing.write().unwrap_or_else(|p| p.into_inner());
            match outcome {
                Ok(tools) => {
                    let proxies = self.proxies(tools);
                    tracing::info!(account = %id, tools = proxies.len(), duration_ms, "cloud account listed");
                    l.by_name = proxies
                        .iter()
                        .map(|p| (p.spec.name.clone(), p.clone()))
                        .collect();
                    l.tools = proxies;
                    l.listed = true;
                    l.next_due = Some(Instant::now() + self.settings.ttl);
                    l.error = None;
                    l.failed_at = None;
                }
                Err(e) => {
                    tracing::warn!(account = %id, error = %e.message, duration_ms, "cloud account unavailable");
                    // Keep serving the last good list: a call will say why it fails.
                    l.error = Some(e.message.clone());
                    // Try again after a short pause rather than a whole TTL.
                    l.next_due = Some(Instant::now() + self.settings.ttl.min(RETRY_AFTER_FAILURE));
                }
            }
        }
        self.refreshing.store(false, Ordering::Release);
    }

    fn proxies(self: &Arc<Self>, tools: Vec<rmcp::model::Tool>) -> Vec<Arc<ProxyTool>> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::with_capacity(tools.len());
        for t in tools {
            let remote = t.name.to_string();
            let mut name = names::exported(&self.account.id, &remote);
            if seen.contains(&name) {
                name = names::with_hash(&name, &remote);
            }
            seen.insert(name.clone());
            let description = t
                .description
                .as_deref()
                .or(t.title.as_deref())
                .unwrap_or("")
                .to_owned();
            let gated = self
                .account
                .approve
                .iter()
                .any(|g| names::glob_match(g, &remote))
                || self
                    .gate
                    .approve
                    .iter()
                    .any(|g| names::glob_match(g, &name));
            let mut input_schema = Value::Object((*t.input_schema).clone());
            if gated && let Some(props) = input_schema["properties"].as_object_mut() {
                props.insert(APPROVAL_ARG.into(), json!({"type": "string", "pattern": "^[0-9a-f]{40}$", "description": "This tool's calls need a person's approval: the id from the approval_required error, once approved. Used once, for exactly these arguments"}));
                props.insert(WAIT_ARG.into(), json!({"type": "integer", "minimum": 0, "maximum": crate::clarify::MAX_WAIT_SECS, "description": "Seconds to wait for a person's approval before answering approval_required"}));
            }
            out.push(Arc::new(ProxyTool {
                spec: ToolSpec {
                    name,
                    description,
                    input_schema,
                    output_schema: result_schema(t.output_schema.as_deref()),
                    // The account's own hints, as its server gave them.
                    hints: t.annotations.as_ref().map(hints).unwrap_or_default(),
                    mcp_result: true,
                },
                remote,
                gated,
                upstream: self.clone(),
            }));
        }
        out
    }
}

/// An account's MCP annotations as this runtime's hints.
fn hints(a: &rmcp::model::ToolAnnotations) -> crate::tool::Hints {
    crate::tool::Hints {
        read_only_hint: a.read_only_hint,
        destructive_hint: a.destructive_hint,
        idempotent_hint: a.idempotent_hint,
        open_world_hint: a.open_world_hint,
    }
}

/// The shape every proxied call returns: the MCP `CallToolResult`, its
/// `structuredContent` in the account's own output schema when it has one
/// (`/mcp` lists that one).
fn result_schema(own: Option<&rmcp::model::JsonObject>) -> Value {
    let structured = own.map_or_else(|| json!({"type": "object"}), |o| Value::Object(o.clone()));
    let mut wrapper = json!({
        "type": "object",
        "description": "The MCP server's CallToolResult, passed through; isError marks the tool's own failure",
        "properties": {
            "content": {"type": "array", "items": {"type": "object"}},
            "structuredContent": structured,
            "isError": {"type": "boolean"}
        },
        "required": ["content"]
    });
    // The account's `$ref`s ("#/$defs/X") point at its schema's root, which
    // is now the wrapper's: its definitions go there too.
    for defs in ["$defs", "definitions"] {
        if let Some(d) = own.and_then(|o| o.get(defs)) {
            wrapper[defs] = d.clone();
        }
    }
    wrapper
}

#[cfg(test)]
mod tests;
