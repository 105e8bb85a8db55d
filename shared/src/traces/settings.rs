//! Where spans go: OpenTelemetry's own variables, read once at start-up.
//! Warnings name a variable and what is done instead, never a header's
//! value (an API key, often).

use std::time::Duration;

use super::proto::Value;

/// What the variables say.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The URL spans are posted to (`…/v1/traces`).
    pub endpoint: String,
    /// Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS`).
    pub headers: Vec<(String, String)>,
    /// Per export.
    pub timeout: Duration,
    /// How long a finished span may wait for its batch.
    pub delay: Duration,
    /// Spans held at most; more are dropped.
    pub queue: usize,
    /// Spans per request at most.
    pub batch: usize,
    /// The resource every span is under (`service.name` first).
    pub resource: Vec<(String, Value)>,
}

/// Reads the variables through `var`: `None` when no endpoint is set, or
/// traces are turned off (`OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER`
/// other than `otlp`). Warnings name the variable and what is done instead.
pub fn read(var: impl Fn(&str) -> Option<String>) -> (Option<Settings>, Vec<String>) {
    let mut warnings = Vec::new();
    // A variable counts when it is set to something.
    let set = |name: &str| {
        var(name)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (name.to_owned(), v))
    };
    // The traces-only variable, else the one for every signal.
    let either = |traces: &str, all: &str| set(traces).or_else(|| set(all));
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return (None, warnings);
    }
    if let Some((_, e)) = set("OTEL_TRACES_EXPORTER")
        && !e.split(',').any(|x| x.trim() == "otlp")
    {
        return (None, warnings);
    }
    // Every trace is sent unless the caller's parent is unsampled (the
    // default, parent-based, sampler); `always_off` sends none.
    match var("OTEL_TRACES_SAMPLER").as_deref().map(str::trim) {
        None | Some("" | "always_on" | "parentbased_always_on") => {}
        Some("always_off") => return (None, warnings),
        Some(other) => warnings.push(format!(
            "OTEL_TRACES_SAMPLER={}: only parentbased_always_on, always_on and always_off are \
             known; parentbased_always_on is used",
            quoted(other)
        )),
    }
    for unsupported in [
        "OTEL_EXPORTER_OTLP_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_CLIENT_KEY",
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_COMPRESSION",
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    ] {
        if set(unsupported).is_some() {
            warnings.push(format!(
                "{unsupported} is not supported and is ignored (SSL_CERT_FILE names the roots \
                 a collector's certificate is checked against)"
            ));
        }
    }
    // The traces endpoint is used as it is; the general one gets the path.
    let endpoint = match either(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ) {
        Some((name, v)) if name == "OTEL_EXPORTER_OTLP_ENDPOINT" => (name, traces_url(v.trim())),
        Some((name, v)) => (name, v.trim().to_owned()),
        None => return (None, warnings),
    };
    let (name, endpoint) = endpoint;
    match endpoint.parse::<axum::http::Uri>() {
        Ok(u) if matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some() => {}
        _ => {
            warnings.push(format!(
                "{name} is not an http:// or https:// URL; no traces are sent"
            ));
            return (None, warnings);
        }
    }
    if let Some((name, p)) = either(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ) && p.trim() != "http/protobuf"
    {
        warnings.push(format!(
            "{name}={}: only http/protobuf is sent; traces go as http/protobuf",
            quoted(&p)
        ));
    }
    let mut headers = Vec::new();
    if let Some((name, h)) = either(
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_HEADERS",
    ) {
        for (i, pair) in h
            .split(',')
            .enumerate()
            .filter(|(_, p)| !p.trim().is_empty())
        {
            let parsed = pair.split_once('=').and_then(|(k, v)| {
                let k = percent_decode(k.trim())?;
                let v = percent_decode(v.trim())?;
                let ok = axum::http::HeaderName::from_bytes(k.as_bytes()).is_ok()
                    && axum::http::HeaderValue::from_str(&v).is_ok();
                ok.then_some((k, v))
            });
            match parsed {
                Some(kv) => headers.push(kv),
                // The value may be a key: only its place is named.
                None => warnings.push(format!(
                    "{name}: entry {} is not key=value with a valid header name and value; it is left out",
                    i + 1
                )),
            }
        }
    }
    let mut millis = |traces: &str, all: Option<&str>, default: u64| {
        let found = match all {
            Some(all) => either(traces, all),
            None => set(traces),
        };
        match found {
            None => default,
            Some((name, v)) => match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => n,
                _ => {
                    warnings.push(format!(
                        "{name}={} is not a positive whole number; {default} is used",
                        quoted(&v)
                    ));
                    default
                }
            },
        }
    };
    let timeout = millis(
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        Some("OTEL_EXPORTER_OTLP_TIMEOUT"),
        10_000,
    );
    let delay = millis("OTEL_BSP_SCHEDULE_DELAY", None, 5_000);
    // The queue is allocated whole: bounded.
    let queue = millis("OTEL_BSP_MAX_QUEUE_SIZE", None, 2_048).min(MAX_QUEUE);
    let batch = millis("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", None, 512);
    let resource = resource(&var, &mut warnings);
    let settings = Settings {
        endpoint,
        headers,
        timeout: Duration::from_millis(timeout),
        delay: Duration::from_millis(delay),
        queue: queue as usize,
        batch: batch.min(queue) as usize,
        resource,
    };
    (Some(settings), warnings)
}

/// The most spans held, whatever `OTEL_BSP_MAX_QUEUE_SIZE` says.
const MAX_QUEUE: u64 = 65_536;

/// A base endpoint with the traces path after its own path, before any
/// query (`http://c:4318/base?x=1` → `http://c:4318/base/v1/traces?x=1`).
fn traces_url(base: &str) -> String {
    let (head, query) = match base.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (base, None),
    };
    let mut url = format!("{}/v1/traces", head.trim_end_matches('/'));
    if let Some(q) = query {
        url.push('?');
        url.push_str(q);
    }
    url
}

/// `service.name` (`OTEL_SERVICE_NAME`, else `toolgate`), `service.version`,
/// on Lambda the function and region, then `OTEL_RESOURCE_ATTRIBUTES`.
fn resource(
    var: &impl Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Vec<(String, Value)> {
    let mut attrs: Vec<(String, Value)> = Vec::new();
    let mut set = |k: &str, v: String| {
        attrs.retain(|(key, _)| key != k);
        attrs.push((k.to_owned(), Value::Str(v)));
    };
    set("service.version", env!("CARGO_PKG_VERSION").to_owned());
    if let Some(f) = var("AWS_LAMBDA_FUNCTION_NAME") {
        set("cloud.provider", "aws".into());
        set("faas.name", f);
        if let Some(r) = var("AWS_REGION") {
            set("cloud.region", r);
        }
    }
    let mut service = None;
    if let Some(list) = var("OTEL_RESOURCE_ATTRIBUTES") {
        for (i, pair) in list
            .split(',')
            .enumerate()
            .filter(|(_, p)| !p.trim().is_empty())
        {
            match pair
                .split_once('=')
                .and_then(|(k, v)| Some((percent_decode(k.trim())?, percent_decode(v.trim())?)))
            {
                Some((k, v)) if !k.is_empty() => {
                    if k == "service.name" {
                        service = Some(v);
                    } else {
                        set(&k, v);
                    }
                }
                _ => warnings.push(format!(
                    "OTEL_RESOURCE_ATTRIBUTES: entry {} is not key=value; it is left out",
                    i + 1
                )),
            }
        }
    }
    let service = var("OTEL_SERVICE_NAME")
        .filter(|v| !v.trim().is_empty())
        .or(service)
        .unwrap_or_else(|| "toolgate".into());
    attrs.insert(0, ("service.name".into(), Value::Str(service)));
    attrs
}

/// A variable's value as a warning quotes it: escaped, and cut.
fn quoted(v: &str) -> String {
    let cut: String = v.trim().chars().take(60).collect();
    format!("{cut:?}")
}

/// `%XX` escapes decoded (W3C Baggage's form, which the headers and
/// attributes variables use); `None` for a bad escape or bad UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The endpoint as a log line may name it: scheme, host and port.
pub fn shown(endpoint: &str) -> String {
    match endpoint.parse::<axum::http::Uri>() {
        Ok(u) => match (u.scheme_str(), u.host(), u.port_u16()) {
            (Some(s), Some(h), Some(p)) => format!("{s}://{h}:{p}"),
            (Some(s), Some(h), None) => format!("{s}://{h}"),
            _ => "(no host)".into(),
        },
        Err(_) => "(not a URL)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn given(vars: &[(&str, &str)]) -> (Option<Settings>, Vec<String>) {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        read(|k| map.get(k).cloned())
    }

    #[test]
    fn no_endpoint_or_turned_off_sends_nothing() {
        assert_eq!(given(&[]).0, None);
        let on = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        assert!(given(&[on]).0.is_some());
        assert_eq!(given(&[on, ("OTEL_SDK_DISABLED", "true")]).0, None);
        assert_eq!(given(&[on, ("OTEL_TRACES_EXPORTER", "none")]).0, None);
        assert_eq!(given(&[on, ("OTEL_TRACES_SAMPLER", "always_off")]).0, None);
        let (s, w) = given(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/base?k=1"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "999999999999"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
        ]);
        let s = s.unwrap();
        assert_eq!(s.endpoint, "http://c:4318/base/v1/traces?k=1");
        assert_eq!(s.queue, MAX_QUEUE as usize);
        assert!(
            w[0].contains("OTEL_EXPORTER_OTLP_COMPRESSION is not supported"),
            "{w:?}"
        );
        let (s, w) = given(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4318")]);
        assert!(s.is_none() && w[0].contains("not an http"), "{w:?}");
    }

    #[test]
    fn the_endpoint_headers_and_resource_follow_the_spec() {
        let (s, w) = given(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b, x=1,bad,=v"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "service.name=r,deployment.environment=prod",
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_BSP_SCHEDULE_DELAY", "soon"),
        ]);
        let s = s.unwrap();
        assert_eq!(s.endpoint, "http://c:4318/v1/traces");
        assert_eq!(
            s.headers,
            [("api-key".into(), "a b".into()), ("x".into(), "1".into())]
        );
        assert_eq!(
            s.resource[0],
            ("service.name".into(), Value::Str("r".into()))
        );
        assert!(
            s.resource
                .contains(&("deployment.environment".into(), Value::Str("prod".into())))
        );
        assert_eq!(s.delay, Duration::from_millis(5_000));
        let said = w.join("\n");
        assert!(
            said.contains("entry 3") && said.contains("entry 4"),
            "{said}"
        );
        assert!(said.contains("only http/protobuf") && said.contains("OTEL_BSP_SCHEDULE_DELAY"));
        assert!(!said.contains("a%20b") && !said.contains("a b"), "{said}");
        let (s, _) = given(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://t/custom"),
            ("OTEL_SERVICE_NAME", "svc"),
        ]);
        let s = s.unwrap();
        assert_eq!(s.endpoint, "https://t/custom");
        assert_eq!(s.resource[0].1, Value::Str("svc".into()));
    }

    #[test]
    fn logs_name_only_scheme_host_and_port() {
        assert_eq!(
            shown("https://u:p@c.example:4318/v1/traces?k=s"),
            "https://c.example:4318"
        );
    }
}
