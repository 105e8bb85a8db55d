//! OpenTelemetry traces, sent over OTLP/HTTP (protobuf) when OpenTelemetry's
//! own variables name an endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`; the list
//! in `docs/http-api.md#traces`). One span per request (kind server), one
//! per tool call under it, and the tool's own steps under that: the sandbox
//! run, a session's open and save, an SSH connection and command, a cloud
//! account's call, an approval's check. Only those are sent ([`sent`]),
//! never a library's span. A request's W3C `traceparent` continues the
//! caller's trace, and a tool call's MCP `_meta.traceparent` continues the
//! MCP client's.
//!
//! Steps are spans with target [`TARGET`], which the log lines never show
//! (`logging::init` filters them from its layer), so a line's `span` stays
//! the request's. Their fields follow tracing-opentelemetry's names:
//! `otel.kind`, `otel.status_code`, `otel.status_message`.

pub mod export;
pub mod proto;
pub mod settings;

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

use proto::{Failed, Kind, Value};

/// The target of a step's span: sent as a trace, not shown in log lines.
/// (`invoke::STEPS`, which the Worker's lines filter on: one string.)
pub const TARGET: &str = "toolgate::trace";

/// The most characters of one attribute's text.
const VALUE_CHARS: usize = 1_000;

static EXPORTER: OnceLock<export::Exporter> = OnceLock::new();

/// The layer for the variables in this process's environment, and the
/// warnings to log once logging is up; `None` when traces are off.
pub fn layer() -> (Option<Layer>, Vec<String>) {
    let (settings, mut warnings) = settings::read(|k| std::env::var(k).ok());
    let Some(s) = settings else {
        return (None, warnings);
    };
    match export::Exporter::start(s) {
        Ok(e) => {
            let _ = EXPORTER.set(e);
            (Some(Layer), warnings)
        }
        Err(e) => {
            warnings.push(format!(
                "traces: cannot start the exporting thread ({e}); no traces are sent"
            ));
            (None, warnings)
        }
    }
}

/// Where traces go (`scheme://host:port`), when they are sent.
pub fn destination() -> Option<String> {
    EXPORTER
        .get()
        .map(|e| settings::shown(&e.settings.endpoint))
}

/// `toolgate check`'s view: `None` when traces are off; else whether the
/// collector takes an export (an empty one, which adds no span).
pub async fn probe() -> Option<Result<String, String>> {
    let s = &EXPORTER.get()?.settings;
    let shown = settings::shown(&s.endpoint);
    Some(match export::post(s, Vec::new()).await {
        None => Ok(format!("{shown} takes exports (http/protobuf)")),
        Some(why) => Err(format!("{shown}: {why}")),
    })
}

/// Sends every span finished so far, waiting at most `within` (and the
/// export timeout); nothing when traces are off, and no wait while the
/// collector is failing. Lambda calls it after each invocation with what
/// is left of its deadline, `toolgate serve` on its way out.
pub async fn flush(within: std::time::Duration) {
    if let Some(e) = EXPORTER.get() {
        e.flush(within).await;
    }
}

/// Whether a span is one this layer sends: a request's, and the steps'.
pub fn sent(m: &tracing::Metadata<'_>) -> bool {
    (m.target() == TARGET || m.target() == REQUEST_TARGET) && *m.level() <= tracing::Level::INFO
}

/// The target of a request's span (`http::request_id`), shown on its lines.
pub const REQUEST_TARGET: &str = "toolgate::request";

/// The tracing layer that turns Toolgate's spans into OTLP spans.
pub struct Layer;

/// What a live span carries until it closes.
struct Open {
    span: proto::Span,
    /// Whether its trace is sent (the caller's `traceparent` may say not).
    sampled: bool,
    /// `otel.status_code` and `otel.status_message`, in whichever order
    /// they were recorded: the span's status when it closes.
    status: Status,
}

impl<S> tracing_subscriber::Layer<S> for Layer
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        if !sent(span.metadata()) {
            return;
        }
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let inherited = span.scope().skip(1).find_map(|s| {
            s.extensions()
                .get::<Open>()
                .map(|o| (o.span.trace_id, o.span.span_id, o.sampled))
        });
        // A span's own `traceparent` (the request's header; a tool call's
        // MCP `_meta`) continues the caller's trace, even under a span of
        // ours, and is sent only when the caller samples it
        // (OpenTelemetry's default, parent-based, sampler).
        let own = fields
            .traceparent
            .as_deref()
            .and_then(crate::http::traceparent::parse);
        let (trace_id, parent, sampled) = match (own, inherited) {
            (Some(p), _) => (p.trace, Some(p.span), p.sampled),
            (None, Some((t, p, sampled))) => (t, Some(p), sampled),
            (None, None) => (random_id(), None, true),
        };
        // A span with no span of ours above it, or continuing a caller's
        // trace, answers a request.
        let kind = fields
            .kind
            .unwrap_or(if inherited.is_none() || own.is_some() {
                Kind::Server
            } else {
                Kind::Internal
            });
        let open = Open {
            span: proto::Span {
                trace_id,
                span_id: random_id(),
                parent,
                name: span.metadata().name().to_owned(),
                kind,
                start_ns: now_ns(),
                end_ns: 0,
                attributes: fields.attributes,
                failed: None,
            },
            status: fields.status,
            sampled,
        };
        span.extensions_mut().insert(open);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut ext = span.extensions_mut();
        let Some(open) = ext.get_mut::<Open>() else {
            return;
        };
        let mut fields = Fields::default();
        values.record(&mut fields);
        for (k, v) in fields.attributes {
            open.span.attributes.retain(|(key, _)| *key != k);
            open.span.attributes.push((k, v));
        }
        open.status.error |= fields.status.error;
        if fields.status.message.is_some() {
            open.status.message = fields.status.message;
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(mut open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        open.span.end_ns = now_ns().max(open.span.start_ns);
        let Status { error, message } = open.status;
        open.span.failed = error.then(|| Failed(message.unwrap_or_default()));
        if !open.sampled {
            return;
        }
        if let Some(e) = EXPORTER.get() {
            e.push(open.span);
        }
    }
}

/// A span's fields: its attributes, and the ones that say how to send it.
#[derive(Default)]
struct Fields {
    attributes: Vec<(String, Value)>,
    kind: Option<Kind>,
    status: Status,
    traceparent: Option<String>,
}

/// What `otel.status_code` (`error`) and `otel.status_message` said.
#[derive(Default)]
struct Status {
    error: bool,
    message: Option<String>,
}

impl Fields {
    fn put(&mut self, field: &Field, v: Value) {
        let text = || match &v {
            Value::Str(s) => s.clone(),
            other => format!("{other:?}"),
        };
        match field.name() {
            "otel.kind" => {
                self.kind = match text().as_str() {
                    "server" => Some(Kind::Server),
                    "client" => Some(Kind::Client),
                    "internal" => Some(Kind::Internal),
                    _ => None,
                }
            }
            "otel.status_code" => self.status.error |= text().eq_ignore_ascii_case("error"),
            "otel.status_message" => self.status.message = Some(text()),
            "traceparent" => self.traceparent = Some(text()),
            name => self.attributes.push((name.to_owned(), v)),
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut s = format!("{value:?}");
        if let Some((i, _)) = s.char_indices().nth(VALUE_CHARS) {
            s.truncate(i);
        }
        self.put(field, Value::Str(s));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let s: String = value.chars().take(VALUE_CHARS).collect();
        self.put(field, Value::Str(s));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::Int(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::Int(i64::try_from(value).unwrap_or(i64::MAX)));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::Double(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }
}

fn random_id<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    while b == [0; N] {
        if getrandom::fill(&mut b).is_err() {
            // No randomness: the clock, which is at least not zero.
            let n = now_ns().to_le_bytes();
            for (i, x) in b.iter_mut().enumerate() {
                *x = n[i % 8] ^ (i as u8).wrapping_mul(31);
            }
        }
    }
    b
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    #[test]
    fn steps_have_one_target_everywhere() {
        assert_eq!(super::TARGET, crate::invoke::STEPS);
    }
}
