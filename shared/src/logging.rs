//! Structured logs through `tracing`: JSON when deployed (`TOOLGATE_LOG=json`,
//! or on Lambda), compact text otherwise. Level from `TOOLGATE_LOG_LEVEL`,
//! else the caller's default. On Lambda lines carry no timestamp, since
//! CloudWatch stamps each line itself. What a line may say of ids and of
//! user-supplied text: [`id_ref`], [`redact_ids`], [`field`].

/// Installs the global subscriber (see the module); `default_level` applies
/// when `TOOLGATE_LOG_LEVEL` is unset. Once a subscriber is set, a later call
/// changes nothing. (The Worker logs through its own subscriber.)
///
/// Whatever the level, two of lambda_runtime's lines are never written,
/// since they carry a payload whole: a failed invocation's error, whose
/// message names the approval it is about (Step Functions reads the id
/// there), and at TRACE the raw event (task tokens, approval ids).
/// Toolgate's own line for the call says what failed, with ids as refs.
#[cfg(feature = "native")]
pub fn init(default_level: &str) {
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    /// lambda_runtime 1.x logs a handler's `Err(Diagnostic)` as
    /// `error!("{error:?}")` (layers/panic.rs): an event whose one field is
    /// the message. Its panic lines there have an `error` field and stay.
    /// The raw event is `trace!(body = …)` (layers/api_response.rs).
    fn carries_a_payload(m: &tracing::Metadata<'_>) -> bool {
        let only_message = || m.fields().iter().map(|f| f.name()).eq(["message"]);
        match m.target() {
            "lambda_runtime::layers::panic" => m.is_event() && only_message(),
            "lambda_runtime::layers::api_response" => m.fields().field("body").is_some(),
            _ => false,
        }
    }

    let filter = EnvFilter::try_from_env("TOOLGATE_LOG_LEVEL")
        .unwrap_or_else(|_| EnvFilter::new(default_level));
    let payload_free = tracing_subscriber::filter::filter_fn(|m| !carries_a_payload(m));
    let on_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let json =
        on_lambda || std::env::var("TOOLGATE_LOG").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match (json, on_lambda) {
        (true, true) => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .without_time()
            .finish()
            .with(payload_free)
            .try_init(),
        (true, false) => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .finish()
            .with(payload_free)
            .try_init(),
        _ => builder.compact().finish().with(payload_free).try_init(),
    };
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
        let invisible = c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{061c}');
        if invisible {
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
}
