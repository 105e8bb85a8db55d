//! Code mode's host: a script's `tools.<name>(**arguments)` reaches here
//! (through the sandbox's socket) and goes through the one invocation path,
//! `invoke`, with the script's caller, scopes and trace, as transport
//! `code`: the same scopes, approval gates and audit as a direct call. A
//! script can do nothing its caller could not do with direct calls.
//!
//! The script is untrusted: its request is checked here, its calls are
//! counted here (not in the child), and it never reaches python.execute.
//!
//! A call that waits for a person stops the script, and its journal lets
//! a later call go on from there (`wait`, `journal`).

mod journal;
mod signature;
mod wait;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::clock::Instant;
use crate::error::{ErrorCode, ToolError};
use crate::invoke::invoke;
use crate::registry::{Registry, exported_name};
use crate::tool::{CallContext, Transport};
use toolgate_core::code::{MAX_ANSWER, ToolAnswer, ToolHost};

pub use journal::{Journal, On};
pub use signature::signature;
use wait::{Book, Reply};
pub use wait::{Ending, Halt};

/// The longest request a script sends: a tool's largest body, and room
/// for the envelope.
use toolgate_core::code::MAX_REQUEST;
/// How long a request waits, at most, for tools listed when first needed
/// (a cold peer function's start fits).
const LISTING_WAIT: Duration = Duration::from_secs(10);

/// One script's tools.
pub struct CodeHost<'a> {
    registry: &'a Registry,
    ctx: CallContext,
    /// python.execute's own name: never callable from a script.
    own: &'a str,
    calls: AtomicU32,
    max_calls: u32,
    /// `random`'s seed in the script (kept in its journal).
    seed: u128,
    /// A call that waits for a person stops the script, to be resumed;
    /// otherwise the script gets the tool's answer as it is.
    can_wait: bool,
    /// The most bytes its journal may hold.
    journal_cap: usize,
    /// Spends the journal a resumed script came from.
    spend_first: Option<SpendFirst<'a>>,
    book: Mutex<Book>,
}

/// What spends a resumed script's journal in its store, before the call it
/// waited on goes on.
pub type SpendFirst<'a> = &'a (
        dyn Fn() -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<(), ToolError>> + Send + 'a>,
> + Send
            + Sync
    );

impl<'a> CodeHost<'a> {
    /// The tools of `registry` for a script run under `ctx` by the tool
    /// named `own`, at most `max_calls` requests.
    pub fn new(registry: &'a Registry, ctx: &CallContext, own: &'a str, max_calls: u32) -> Self {
        let ctx = CallContext {
            // A person answers in the client of a direct call only.
            elicit: None,
            // The answer goes to the script, not to a transport.
            response_limit: None,
            parent: Some(format!(
                "{own}#{}",
                crate::logging::id_ref(&crate::clarify::new_id().unwrap_or_default())
            )),
            ..ctx.clone()
        };
        Self {
            registry,
            ctx,
            own,
            calls: AtomicU32::new(0),
            max_calls,
            seed: fresh_seed(),
            can_wait: false,
            journal_cap: 0,
            spend_first: None,
            book: Mutex::new(Book::default()),
        }
    }

    /// A call that waits for a person stops the script, which its
    /// journal, of at most `cap` bytes, can resume. Past the cap it no
    /// longer stops (it could not be resumed).
    pub fn stopping_to_wait(mut self, cap: usize) -> Self {
        self.can_wait = true;
        self.journal_cap = cap;
        self
    }

    /// The script goes on from `journal`: its recorded calls are answered
    /// from it, with its seed; `spend` spends it before its waited call
    /// goes on.
    pub fn resuming(mut self, journal: Journal, spend: SpendFirst<'a>) -> Self {
        self.spend_first = Some(spend);
        self.seed = journal.seed().unwrap_or(self.seed);
        self.book = Mutex::new(Book::resuming(journal));
        self
    }

    /// Whether `name` is python.execute itself (canonical or exported).
    fn is_own(&self, name: &str) -> bool {
        self.registry
            .get(name)
            .is_ok_and(|t| t.spec().name == self.own)
    }

    /// Runs the call through `invoke`, its answer fitted to what a script
    /// takes.
    async fn live(&self, name: &str, args: Value, ctx: &CallContext) -> Result<Value, ToolError> {
        let mut out = self.call(name, args, ctx).await?;
        // As a transport does: a result past what a script takes leaves
        // its files out, else is refused.
        crate::response_limit::fit_answer(
            &mut out,
            MAX_ANSWER - 1024,
            &crate::response_limit::json_len,
        )?;
        Ok(out)
    }

    async fn call(&self, name: &str, args: Value, ctx: &CallContext) -> Result<Value, ToolError> {
        let refused = self.is_own(name).then(|| {
            ToolError::new(
                ErrorCode::Forbidden,
                format!("{} cannot be called from a script", self.own),
            )
        });
        if let Some(e) = refused {
            // Audited as any call: one line, under the name it resolves to.
            let outcome = Err(e);
            let known = self.registry.get(name).ok();
            let tool = match &known {
                Some(t) => t.spec().name.clone(),
                None => crate::logging::redact_ids(&name.chars().take(80).collect::<String>()),
            };
            let ctx = &self.ctx;
            crate::invoke::log(
                &tool,
                known.is_some(),
                Transport::Code,
                ctx,
                Instant::now(),
                &outcome,
            );
            return outcome;
        }
        let args = move |limit: usize| {
            let fits = crate::response_limit::json_len(&args) <= limit;
            std::future::ready(if fits {
                Ok(args)
            } else {
                Err(ToolError::new(
                    ErrorCode::TooLarge,
                    format!("The arguments are over the {limit} bytes this tool takes"),
                ))
            })
        };
        invoke(self.registry, Transport::Code, name, args, ctx).await
    }

    /// The tools a script may call, with their Python signatures.
    fn list(&self) -> Value {
        let tools: Vec<Value> = self
            .registry
            .script_tools()
            .iter()
            .filter(|t| t.spec().name != self.own)
            .map(|t| {
                let spec = t.spec();
                let name = exported_name(&spec.name);
                json!({
                    "name": name,
                    "signature": signature(&name, &spec.input_schema),
                    "description": spec.description,
                })
            })
            .collect();
        Value::Array(tools)
    }

    async fn answer(&self, request: &[u8], left: Duration) -> Result<Reply, ToolError> {
        // Every request counts, answered or refused: a script cannot make
        // the server work (or log) without bound.
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        if n >= self.max_calls {
            let e = ToolError::new(
                ErrorCode::QuotaExceeded,
                format!(
                    "A script may make at most {} tool requests (code_mode.max_calls)",
                    self.max_calls
                ),
            );
            if n == self.max_calls {
                let outcome = Err(e.clone());
                crate::invoke::log(
                    "(code mode)",
                    false,
                    Transport::Code,
                    &self.ctx,
                    Instant::now(),
                    &outcome,
                );
            }
            return Err(e);
        }
        // Refused unread past any tool's body (python.execute's, the
        // largest, is never called from here).
        if request.len() > MAX_REQUEST {
            return Err(ToolError::new(
                ErrorCode::TooLarge,
                format!("A tool request is at most {MAX_REQUEST} bytes"),
            ));
        }
        let bad = |why: &str| ToolError::invalid_input(format!("a bad tool request: {why}"));
        let Ok(Value::Object(mut req)) = serde_json::from_slice::<Value>(request) else {
            return Err(bad("not a JSON object"));
        };
        // Tools listed when first needed (other functions') are listed
        // before the script sees them, or calls one not listed yet.
        let wait = left.min(LISTING_WAIT);
        if req.get("list").is_some() {
            self.registry.ready(wait).await;
            return Ok(Reply::Send(json!({ "ok": self.list() })));
        }
        let Some(Value::String(name)) = req.remove("call") else {
            return Err(bad("no tool named"));
        };
        if self.registry.get_for_script(&name).is_err() {
            self.registry.ready(wait).await;
        }
        let args = match req.remove("arguments") {
            Some(Value::Object(a)) => Value::Object(a),
            None => Value::Object(Map::new()),
            Some(_) => return Err(bad("the arguments are not keywords")),
        };
        // The tool ends by the script's deadline (an `ssh_run` command's
        // remote timeout fits it, so it does not outlive the script).
        let ctx = CallContext {
            deadline: Some(Instant::now() + left),
            ..self.ctx.clone()
        };
        Ok(self.made(&name, args, &ctx).await)
    }
}

impl ToolHost for CodeHost<'_> {
    fn serve<'b>(&'b self, request: &'b [u8], left: Duration) -> ToolAnswer<'b> {
        Box::pin(async move {
            let reply = match self.answer(request, left).await {
                Ok(Reply::Send(v)) => v,
                Ok(Reply::Halt) => return None,
                Err(e) => json!({ "error": e.body()["error"] }),
            };
            Some(serde_json::to_vec(&reply).unwrap_or_default())
        })
    }

    fn seed(&self) -> Option<u128> {
        Some(self.seed)
    }
}

/// 128 random bits (the script's own, unless a journal gives them).
fn fresh_seed() -> u128 {
    let mut b = [0u8; 16];
    let _ = getrandom::fill(&mut b);
    u128::from_le_bytes(b)
}
