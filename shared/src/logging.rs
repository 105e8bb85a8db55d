//! Structured logs through `tracing`: JSON when deployed (`TOOLGATE_LOG=json`,
//! or on Lambda), compact text otherwise. Level from `TOOLGATE_LOG_LEVEL`,
//! else the caller's default. On Lambda lines carry no timestamp, since
//! CloudWatch stamps each line itself. What a line may say of ids and of
//! user-supplied text: [`id_ref`], [`redact_ids`], [`field`].
//!
//! In text mode every field of every line, a library's included, is
//! escaped and cut as [`field`] does (JSON escapes its strings itself), so
//! no value can start a forged line or drive the operator's terminal.
//! Libraries that log what clients send at info (rmcp: a client's own
//! name, whole notifications) log warnings only, unless
//! `TOOLGATE_LOG_LEVEL` says otherwise ([`QUIET_LIBRARIES`]).

use std::fmt;

/// Directives added to the default level: libraries that log client text
/// at info, kept to warnings.
/// rmcp's client worker logs a cloud account's failure at error, with the
/// client's `Debug` form; Toolgate's own line says it in words.
pub const QUIET_LIBRARIES: &str =
    "rmcp=warn,rmcp::transport::worker=off,hyper=warn,h2=warn,russh=warn";

/// The filter when `TOOLGATE_LOG_LEVEL` is unset: `level` for everything
/// but [`QUIET_LIBRARIES`].
pub fn default_filter(level: &str) -> String {
    format!("{level},{QUIET_LIBRARIES}")
}

/// Installs the global subscriber (see the module); `default_level` applies
/// when `TOOLGATE_LOG_LEVEL` is unset. Once a subscriber is set, a later call
/// changes nothing. (The Worker logs through its own subscriber.)
///
/// Whatever the level, rmcp's debug lines (whole MCP messages) and two of
/// lambda_runtime's lines are never written, since they carry a payload
/// whole: a failed invocation's error, whose
/// message names the approval it is about (Step Functions reads the id
/// there), and at TRACE the raw event (task tokens, approval ids).
/// Toolgate's own line for the call says what failed, with ids as refs.
#[cfg(not(target_arch = "wasm32"))]
pub fn init(default_level: &str) {
    use tracing_subscriber::filter::FilterExt;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};

    let level = EnvFilter::try_from_env("TOOLGATE_LOG_LEVEL")
        .unwrap_or_else(|_| EnvFilter::new(default_filter(default_level)));
    // What lines show: no payloads, and no trace steps (a line's `span`
    // stays the request's).
    // TRACE as this filter's hint, so that the pair keeps the level's (the
    // `log` crate's bridge reads it: russh's debug lines stay unmade).
    let shown = level.and(
        tracing_subscriber::filter::filter_fn(|m| {
            !carries_a_payload(m) && m.target() != crate::traces::TARGET
        })
        .with_max_level_hint(tracing::level_filters::LevelFilter::TRACE),
    );
    let on_lambda = crate::metrics::on_lambda();
    let json =
        on_lambda || std::env::var("TOOLGATE_LOG").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let lines = if !json {
        // Colour only for a person at a terminal: not in a file, a pipe or
        // a journal, and never with NO_COLOR set (no-color.org).
        use std::io::IsTerminal;
        let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        text_layer(std::io::stderr, colour).boxed()
    } else {
        let json = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .json()
            .flatten_event(true)
            // The request's span (`http::request_id`) rides on every line of
            // it as `span.request_id`; no list of every enclosing span.
            .with_current_span(true)
            .with_span_list(false);
        if on_lambda {
            json.without_time().boxed()
        } else {
            json.boxed()
        }
    };
    // Traces follow OpenTelemetry's variables, not the log level.
    let (traces, said) = crate::traces::layer();
    // Off: no layer and no filter, so no step span is made for nobody.
    let traces = traces.map(|t| {
        t.with_filter(
            tracing_subscriber::filter::filter_fn(crate::traces::sent)
                .with_max_level_hint(tracing::level_filters::LevelFilter::INFO),
        )
    });
    let _ = tracing_subscriber::registry()
        .with(lines.with_filter(shown))
        .with(traces)
        .try_init();
    for warning in said {
        tracing::warn!(target: "toolgate::config", "{warning}");
    }
}

/// Lines never written (see [`init`]). lambda_runtime 1.x logs a handler's `Err(Diagnostic)` as
/// `error!("{error:?}")` (layers/panic.rs): an event whose one field is
/// the message. Its panic lines there have an `error` field and stay.
/// The raw event is `trace!(body = …)` (layers/api_response.rs).
#[cfg(not(target_arch = "wasm32"))]
fn carries_a_payload(m: &tracing::Metadata<'_>) -> bool {
    let only_message = || m.fields().iter().map(|f| f.name()).eq(["message"]);
    match m.target() {
        // rmcp's debug and trace lines hold whole MCP messages: a call's
        // arguments and results, approval ids among them.
        t if t == "rmcp" || t.starts_with("rmcp::") => *m.level() > tracing::Level::INFO,
        "lambda_runtime::layers::panic" => m.is_event() && only_message(),
        "lambda_runtime::layers::api_response" => m.fields().field("body").is_some(),
        _ => false,
    }
}

/// The text-mode layer over `writer`: compact lines whose every field
/// is [`Escaped`], coloured by level when `colour`.
#[cfg(not(target_arch = "wasm32"))]
pub fn text_layer<S, W>(writer: W, colour: bool) -> impl tracing_subscriber::Layer<S> + Send + Sync
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::field::MakeExt;
    let fields = tracing_subscriber::fmt::format::debug_fn(|w, field, value| {
        if field.name() == "message" {
            write!(w, "{}", Escaped(value))
        } else {
            write!(w, "{}={}", field.name(), Escaped(value))
        }
    })
    .delimited(" ");
    tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(colour)
        .compact()
        .fmt_fields(fields)
}

/// How much of a refused request's path its line keeps.
const REFUSED_PATH_CHARS: usize = 200;

/// One line for a request refused before any tool ran (a missing or wrong
/// token, a token on the wrong routes, a foreign `Host`, an MCP request a
/// client sent wrong): the status, the method and path (the caller's text,
/// escaped and cut), and whose token it was when it was one of ours. Never
/// the token itself.
pub fn refused(status: u16, method: &str, path: &str, caller: Option<&str>) {
    // Short: anyone may send these, as often as they like.
    let path: String = path.chars().take(REFUSED_PATH_CHARS).collect();
    tracing::info!(
        status,
        method = %field(method),
        path = %field(&redact_ids(&path)),
        caller,
        "request refused"
    );
}

/// A value as a text log line writes it: its `Debug` form (a `%` value's
/// `Display`) with controls and invisible or direction-changing characters
/// as `\u{…}` escapes, cut to [`FIELD_CHARS`].
pub struct Escaped<'a>(pub &'a dyn fmt::Debug);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut w = Bounded {
            out: f,
            chars: 0,
            dropped: 0,
        };
        fmt::write(&mut w, format_args!("{:?}", self.0))?;
        let dropped = w.dropped;
        if dropped > 0 {
            write!(f, "…[{dropped} more characters]")?;
        }
        Ok(())
    }
}

/// Writes through to `out`, escaped, until [`FIELD_CHARS`]; counts the rest.
struct Bounded<'a, 'b> {
    out: &'a mut fmt::Formatter<'b>,
    chars: usize,
    dropped: usize,
}

impl fmt::Write for Bounded<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            if self.chars == FIELD_CHARS {
                self.dropped += 1;
                continue;
            }
            self.chars += 1;
            if escaped(c) {
                write!(self.out, "{}", c.escape_unicode())?;
            } else {
                fmt::Write::write_char(self.out, c)?;
            }
        }
        Ok(())
    }
}

/// Whether a log line writes `c` as an escape: a control (newline and
/// ESC among them), or a character that is invisible or changes the
/// direction text reads in (the same set file names refuse).
fn escaped(c: char) -> bool {
    c.is_control() || crate::files::names::hides(c)
}

/// What a log line says for an id that is (or was) a capability: a
/// clarification's, an approval's, a task token. `ref:` and 16 hex digits
/// of a domain-separated SHA-256. Ids carry 160 random bits, so the
/// digest cannot be turned back into one; the same id gives the same ref
/// in every process, so a ref found in one function's logs is found in
/// another's, and the inbox shows it beside the approval.
pub fn id_ref(id: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(b"toolgate-log-ref\0")
        .chain_update(id.as_bytes())
        .finalize();
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("ref:{hex}")
}

/// `text` with every clarification or approval id in it (40 hex digits on
/// their own) replaced by its [`id_ref`]: error messages name the
/// approval they refuse, and a log line must not.
pub fn redact_ids(text: &str) -> String {
    let b = text.as_bytes();
    let hexdigit = |i: usize| b.get(i).is_some_and(u8::is_ascii_hexdigit);
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if hexdigit(i) && (i == 0 || !hexdigit(i - 1)) {
            let mut j = i;
            while hexdigit(j) {
                j += 1;
            }
            if j - i == 40 {
                out.push_str(&text[copied..i]);
                out.push_str(&id_ref(&text[i..j].to_ascii_lowercase()));
                copied = j;
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The most of one user-supplied value a log line carries.
pub const FIELD_CHARS: usize = 2_000;

/// A user-supplied value as a log line carries it: control characters
/// (newlines, ESC, bidi overrides included) as `\u{…}` escapes, so that it
/// cannot start a forged line or drive the operator's terminal, and cut to
/// [`FIELD_CHARS`] with the count left out.
pub fn field(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(FIELD_CHARS + 32));
    for (i, c) in text.chars().enumerate() {
        if i == FIELD_CHARS {
            let rest = text.chars().count() - i;
            out.push_str(&format!("…[{rest} more characters]"));
            break;
        }
        if escaped(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_are_stable_and_hide_the_id() {
        let id = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(id_ref(id), id_ref(id));
        assert_ne!(id_ref(id), id_ref(&id.replace('0', "1")));
        assert!(!id_ref(id).contains(&id[..8]));
        assert_eq!(id_ref(id).len(), "ref:".len() + 16);
    }

    #[test]
    fn ids_in_messages_become_refs() {
        let id = "0123456789abcdef0123456789abcdef01234567";
        let m = format!("approval {id} was not approved; sha {}", "ab".repeat(32));
        let r = redact_ids(&m);
        assert!(!r.contains(id), "{r}");
        assert!(r.contains(&id_ref(id)), "{r}");
        assert!(r.contains(&"ab".repeat(32)), "a 64-digit hash stays: {r}");
        assert_eq!(redact_ids("héllo"), "héllo");
    }

    #[test]
    fn fields_cannot_forge_lines_or_drive_terminals() {
        let f = field("uptime\ntoolgate::audit outcome=\"ran\"\u{1b}]0;x\u{7}\u{202e}");
        assert!(!f.chars().any(|c| c.is_control()), "{f}");
        assert!(f.contains("\\u{a}") && f.contains("\\u{1b}") && f.contains("\\u{202e}"));
        let long = field(&"x".repeat(FIELD_CHARS + 5));
        assert!(long.ends_with("…[5 more characters]"), "{long}");
    }

    /// What a text subscriber wrote.
    #[cfg(not(target_arch = "wasm32"))]
    #[derive(Clone, Default)]
    struct Capture(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    #[cfg(not(target_arch = "wasm32"))]
    impl std::io::Write for Capture {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn text_of(filter: &str, log: impl FnOnce()) -> String {
        use tracing_subscriber::Layer;
        use tracing_subscriber::layer::SubscriberExt;
        let out = Capture::default();
        let w = out.clone();
        let sub = tracing_subscriber::registry().with(
            text_layer(move || w.clone(), false)
                .with_filter(tracing_subscriber::EnvFilter::new(filter)),
        );
        tracing::subscriber::with_default(sub, log);
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    /// As [`text_of`], with `extra` as the lines' filter too, as `init`
    /// does.
    #[cfg(not(target_arch = "wasm32"))]
    fn text_of_filtered(
        filter: &str,
        extra: impl tracing_subscriber::layer::Filter<tracing_subscriber::Registry>
        + Send
        + Sync
        + 'static,
        log: impl FnOnce(),
    ) -> String {
        use tracing_subscriber::Layer;
        use tracing_subscriber::filter::FilterExt;
        use tracing_subscriber::layer::SubscriberExt;
        let out = Capture::default();
        let w = out.clone();
        let sub = tracing_subscriber::registry().with(
            text_layer(move || w.clone(), false)
                .with_filter(tracing_subscriber::EnvFilter::new(filter).and(extra)),
        );
        tracing::subscriber::with_default(sub, log);
        String::from_utf8(out.0.lock().unwrap().clone()).unwrap()
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn text_lines_cannot_be_forged() {
        let forged = "x\ntoolgate::audit outcome=\"ran\"\r\u{1b}]0;t\u{7}\u{202e}";
        let long = "y".repeat(1 << 20);
        let text = text_of("info", || {
            // A `%` value, a `?` value, a `&str`, and a message, as a
            // library writes them.
            tracing::warn!(error = %forged, detail = ?forged, name = forged, "call {forged}");
            tracing::warn!(error = %long, "long");
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(!text.contains('\r') && !text.contains("\u{1b}]") && !text.contains('\u{7}'));
        assert!(
            !text.contains('\u{202e}') && text.contains("\\u{202e}"),
            "{text}"
        );
        assert!(lines[1].len() < 3 * FIELD_CHARS, "{}", lines[1].len());
        assert!(lines[1].contains(&format!("…[{} more characters]", (1 << 20) - FIELD_CHARS)));
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn rmcp_debug_lines_are_never_written() {
        let filter = tracing_subscriber::filter::filter_fn(|m| !carries_a_payload(m));
        let text = text_of_filtered("debug", filter, || {
            tracing::debug!(target: "rmcp::service", "received request ref-of-nothing");
            tracing::info!(target: "rmcp::service", "rmcp info");
            tracing::debug!(target: "toolgate_shared::invoke", "own debug");
        });
        assert!(!text.contains("received request"), "{text}");
        assert!(
            text.contains("rmcp info") && text.contains("own debug"),
            "{text}"
        );
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn libraries_speak_at_warn_by_default() {
        let text = text_of(&default_filter("info"), || {
            tracing::info!(target: "rmcp::service", peer = "me", "Service initialized as server");
            tracing::warn!(target: "rmcp::service", "a warning");
            tracing::info!(target: "toolgate_shared::invoke", "tool call");
        });
        assert!(!text.contains("Service initialized"), "{text}");
        assert!(
            text.contains("a warning") && text.contains("tool call"),
            "{text}"
        );
    }
}
