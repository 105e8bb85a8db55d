//! The one path every tool call takes, whatever carried it: the name
//! resolved to the canonical tool, the arguments read, the call, and the
//! one log line. Adapters (HTTP, MCP, Lambda, the CLI; the Worker through
//! the HTTP router) only decode a request into this and encode its outcome.

use serde_json::Value;
use tracing::Instrument;

use crate::clock::Instant;
use crate::error::ToolError;
use crate::registry::Registry;
use crate::tool::CallContext;

pub use crate::tool::Transport;

/// The target of the spans a call's steps make (the call's own, the
/// sandbox's, SSH's, …): sent as traces where traces are on, never shown in
/// log lines.
pub const STEPS: &str = "toolgate::trace";

/// A requested name is logged as sent only when it named no tool; this
/// many characters of it, so that a hostile name cannot flood the log.
const LOGGED_NAME_CHARS: usize = 80;

/// Resolves `name`, then reads the arguments (`args` runs only for a known
/// tool, given the largest body that tool takes, so an unknown name is
/// answered before a body is read), calls, and logs one line: the
/// canonical name, transport, caller, duration and outcome. The tool sees
/// `transport` in its context.
pub async fn invoke<F: Future<Output = Result<Value, ToolError>>>(
    registry: &Registry,
    transport: Transport,
    name: &str,
    args: impl FnOnce(usize) -> F,
    ctx: &CallContext,
) -> Result<Value, ToolError> {
    let started = Instant::now();
    let ctx = &CallContext {
        transport: Some(transport),
        ..ctx.clone()
    };
    // A script's call also reaches the tools kept for scripts (code mode
    // on AWS: the other functions' tools, which python-execute's own
    // transports never serve).
    let found = match transport {
        Transport::Code => registry.get_for_script(name),
        _ => registry.get(name),
    };
    let tool = match found {
        Ok(t) => t,
        Err(e) => {
            // The caller's own text: cut, and no id in it reaches the log.
            let cut: String = name.chars().take(LOGGED_NAME_CHARS).collect();
            let shown = crate::logging::redact_ids(&cut);
            let outcome = Err(e);
            log(&shown, false, transport, ctx, started, &outcome);
            return outcome;
        }
    };
    // A trace's span for the call (`traces`): its outcome is the error
    // code, never the message (which may hold the caller's text).
    let span = tracing::info_span!(
        target: "toolgate::trace",
        "tool call",
        tool = %tool.spec().name,
        transport = transport.as_str(),
        caller = ctx.caller.as_deref(),
        traceparent = ctx.traceparent.as_deref(),
        outcome = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_message = tracing::field::Empty,
    );
    let outcome = async {
        match args(tool.max_body_bytes()).await {
            Ok(args) => tool.call_in(args, ctx, registry).await,
            Err(e) => Err(e),
        }
    }
    .instrument(span.clone())
    .await;
    match &outcome {
        Ok(v) => span.record("outcome", said_of(v)),
        Err(e) => span
            .record("outcome", e.code.as_str())
            .record("otel.status_message", e.code.as_str())
            .record("otel.status_code", "error"),
    };
    drop(span);
    log(&tool.spec().name, true, transport, ctx, started, &outcome);
    outcome
}

/// A result's outcome: `ok`, or `input_required` for a question to the
/// caller's person, which is not the call's end.
fn said_of(v: &Value) -> &'static str {
    if crate::elicit::is_input_required(v) {
        crate::elicit::INPUT_REQUIRED
    } else {
        "ok"
    }
}

/// One structured line per call, and its count (`known`: a tool has this
/// name; else the call counts as `metrics::UNKNOWN_TOOL`).
pub fn log(
    tool: &str,
    known: bool,
    transport: Transport,
    ctx: &CallContext,
    started: Instant,
    outcome: &Result<Value, ToolError>,
) {
    let seconds = started.elapsed().as_secs_f64();
    let duration_ms = seconds * 1000.0;
    let transport = transport.as_str();
    let caller = ctx.caller.as_deref();
    let traceparent = ctx.traceparent.as_deref();
    let parent = ctx.parent.as_deref();
    // A name no tool has is the caller's text, whatever the lookup said
    // (a cloud account that is down answers 502 for any name of its own).
    let counted = if known {
        tool
    } else {
        crate::metrics::UNKNOWN_TOOL
    };
    let said = outcome.as_ref().map_or_else(|e| e.code.as_str(), said_of);
    crate::metrics::call(counted, transport, said, seconds);
    if crate::metrics::on_lambda() {
        use std::io::Write;
        let line = crate::metrics::emf_line(
            counted,
            transport,
            said,
            duration_ms,
            crate::clock::unix_ms(),
        );
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
    match outcome {
        Ok(v) => tracing::info!(
            tool,
            transport,
            caller,
            traceparent,
            parent,
            duration_ms,
            outcome = said,
            exit_code = v.get("exit_code").and_then(serde_json::Value::as_i64),
            timed_out = v.get("timed_out").and_then(serde_json::Value::as_bool),
            "tool call"
        ),
        Err(e) => tracing::warn!(
            tool,
            transport,
            caller,
            traceparent,
            parent,
            duration_ms,
            outcome = e.code.as_str(),
            error = %crate::logging::field(&crate::logging::redact_ids(&e.message)),
            "tool call"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use crate::tool::ToolSpec;
    use crate::tool::testing::Echo;
    use serde_json::json;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn registry() -> Registry {
        let mut r = Registry::new();
        r.add(Arc::new(Echo(ToolSpec {
            name: "python.execute".into(),
            description: "echoes".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({"type": "object"}),
            ..Default::default()
        })))
        .unwrap();
        r
    }

    /// Runs a future that never waits (the echo tool's): no runtime needed.
    fn now<F: Future>(f: F) -> F::Output {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match std::pin::pin!(f).poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("the echo tool never waits"),
        }
    }

    #[test]
    fn an_unknown_name_is_answered_before_the_arguments_are_read() {
        let read = AtomicBool::new(false);
        let args = |_| async {
            read.store(true, Ordering::SeqCst);
            Ok(json!({}))
        };
        let ctx = CallContext::default();
        let out = now(invoke(&registry(), Transport::Http, "nope", args, &ctx));
        assert_eq!(out.unwrap_err().code, ErrorCode::UnknownTool);
        assert!(!read.load(Ordering::SeqCst));
    }

    /// A tool that answers with the transport its context names.
    struct Transports(ToolSpec);

    impl crate::tool::Tool for Transports {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn call<'a>(&'a self, _: Value, ctx: &'a CallContext) -> crate::tool::ToolFuture<'a> {
            let t = ctx.transport.map(Transport::as_str);
            Box::pin(async move { Ok(json!(t)) })
        }
    }

    #[test]
    fn the_tool_sees_what_carried_the_call() {
        let mut r = Registry::new();
        r.add(Arc::new(Transports(ToolSpec {
            name: "clarify".into(),
            description: "names its transport".into(),
            input_schema: json!({"type": "object"}),
            output_schema: json!({}),
            ..Default::default()
        })))
        .unwrap();
        let ctx = CallContext::default();
        for t in [
            Transport::Http,
            Transport::Mcp,
            Transport::Lambda,
            Transport::Cli,
        ] {
            let ready = |_| std::future::ready(Ok(json!({})));
            assert_eq!(
                now(invoke(&r, t, "clarify", ready, &ctx)).unwrap(),
                json!(t.as_str())
            );
        }
    }

    #[test]
    fn both_names_reach_the_same_tool_and_unreadable_arguments_are_the_call_error() {
        let r = registry();
        let ctx = CallContext::default();
        let args = json!({"code": "1"});
        for name in ["python.execute", "python__execute"] {
            let ready = |_| std::future::ready(Ok(args.clone()));
            assert_eq!(
                now(invoke(&r, Transport::Mcp, name, ready, &ctx)).unwrap(),
                args
            );
        }
        let bad = |_| std::future::ready(Err(ToolError::invalid_input("not JSON")));
        let out = now(invoke(&r, Transport::Cli, "python.execute", bad, &ctx));
        assert_eq!(out.unwrap_err().code, ErrorCode::InvalidInput);
    }
}
