//! What a process served, as numbers: every tool call counted by tool,
//! transport and outcome, with its duration in a histogram, plus what each
//! component reports when asked (spare sandbox processes, zygotes started,
//! questions and approvals waiting). `toolgate serve` answers them at
//! `GET /metrics` in Prometheus's text format (version 0.0.4).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex};

/// The histogram's upper bounds, in seconds: a script's milliseconds to an
/// SSH command's minutes.
const BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// The label a call to no tool is counted under (its name is the caller's
/// text: one series per name would grow without bound).
pub const UNKNOWN_TOOL: &str = "(unknown)";

#[derive(Default)]
struct Histogram {
    /// Calls at or under each bound (not cumulative; summed when written).
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

#[derive(Default)]
struct Calls {
    /// By tool, transport and outcome (`ok` or an error code).
    count: BTreeMap<(String, &'static str, &'static str), u64>,
    /// By tool and transport.
    seconds: BTreeMap<(String, &'static str), Histogram>,
}

static CALLS: LazyLock<Mutex<Calls>> = LazyLock::new(Mutex::default);

/// Counts one call of `tool` that took `seconds`.
pub fn call(tool: &str, transport: &'static str, outcome: &'static str, seconds: f64) {
    let mut c = CALLS.lock().unwrap_or_else(|p| p.into_inner());
    *c.count
        .entry((tool.to_owned(), transport, outcome))
        .or_default() += 1;
    let h = c.seconds.entry((tool.to_owned(), transport)).or_default();
    if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
        h.counts[i] += 1;
    }
    h.sum += seconds;
    h.count += 1;
}

/// One value a component reports when asked: a gauge (or a counter, when
/// its name ends in `_total`).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The metric's name (`toolgate_sandbox_spares`).
    pub name: &'static str,
    /// What it measures, for `# HELP`.
    pub help: &'static str,
    /// Its labels.
    pub labels: Vec<(&'static str, String)>,
    /// Its value.
    pub value: f64,
}

/// A component's samples, read at each scrape.
pub type SampleFn =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Vec<Sample>> + Send>> + Send + Sync>;

/// A label value as the text format writes it.
fn escaped(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escaped(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// The calls so far and `samples`, in the text format.
pub fn render(samples: &[Sample]) -> String {
    let mut out = String::new();
    let c = CALLS.lock().unwrap_or_else(|p| p.into_inner());
    out.push_str("# HELP toolgate_calls_total Tool calls, by tool, transport and outcome (ok, or the error code).\n");
    out.push_str("# TYPE toolgate_calls_total counter\n");
    for ((tool, transport, outcome), n) in &c.count {
        let l = labels(&[
            ("tool", tool),
            ("transport", transport),
            ("outcome", outcome),
        ]);
        let _ = writeln!(out, "toolgate_calls_total{l} {n}");
    }
    out.push_str(
        "# HELP toolgate_call_duration_seconds How long tool calls took, by tool and transport.\n",
    );
    out.push_str("# TYPE toolgate_call_duration_seconds histogram\n");
    for ((tool, transport), h) in &c.seconds {
        let mut below = 0;
        for (bound, n) in BUCKETS.iter().zip(h.counts) {
            below += n;
            let l = labels(&[
                ("tool", tool),
                ("transport", transport),
                ("le", &bound.to_string()),
            ]);
            let _ = writeln!(out, "toolgate_call_duration_seconds_bucket{l} {below}");
        }
        let l = labels(&[("tool", tool), ("transport", transport), ("le", "+Inf")]);
        let _ = writeln!(out, "toolgate_call_duration_seconds_bucket{l} {}", h.count);
        let l = labels(&[("tool", tool), ("transport", transport)]);
        let _ = writeln!(out, "toolgate_call_duration_seconds_sum{l} {}", h.sum);
        let _ = writeln!(out, "toolgate_call_duration_seconds_count{l} {}", h.count);
    }
    drop(c);
    let mut by_name: BTreeMap<&str, Vec<&Sample>> = BTreeMap::new();
    for s in samples {
        by_name.entry(s.name).or_default().push(s);
    }
    for (name, group) in by_name {
        let kind = if name.ends_with("_total") {
            "counter"
        } else {
            "gauge"
        };
        let _ = writeln!(out, "# HELP {name} {}", group[0].help);
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for s in group {
            let pairs: Vec<(&str, &str)> = s.labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let _ = writeln!(out, "{name}{} {}", labels(&pairs), s.value);
        }
    }
    out
}

/// One call as a CloudWatch embedded-metric-format line: Lambda sends a
/// function's stdout to CloudWatch Logs, which makes `Calls`, `Errors` and
/// `Duration` metrics of it (namespace `Toolgate`, by `tool` and
/// `transport`, and by `tool` alone).
pub fn emf_line(tool: &str, transport: &str, outcome: &str, ms: f64, now_ms: i64) -> String {
    serde_json::json!({
        "_aws": {
            "Timestamp": now_ms,
            "CloudWatchMetrics": [{
                "Namespace": "Toolgate",
                "Dimensions": [["tool", "transport"], ["tool"]],
                "Metrics": [
                    {"Name": "Calls", "Unit": "Count"},
                    {"Name": "Errors", "Unit": "Count"},
                    {"Name": "Duration", "Unit": "Milliseconds"}
                ]
            }]
        },
        "tool": tool,
        "transport": transport,
        "outcome": outcome,
        "Calls": 1,
        "Errors": u8::from(outcome != "ok" && outcome != crate::elicit::INPUT_REQUIRED),
        "Duration": (ms * 1000.0).round() / 1000.0,
    })
    .to_string()
}

/// Whether this process is a Lambda function's (its stdout is CloudWatch's).
#[cfg(not(target_arch = "wasm32"))]
pub fn on_lambda() -> bool {
    static ON: LazyLock<bool> =
        LazyLock::new(|| std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some());
    *ON
}

/// The Worker has no environment of its own to ask.
#[cfg(target_arch = "wasm32")]
pub fn on_lambda() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_and_samples_are_written_in_the_text_format() {
        call("metrics.test", "http", "ok", 0.003);
        call("metrics.test", "http", "ok", 0.2);
        call("metrics.test", "http", "invalid_input", 7.0);
        let text = render(&[Sample {
            name: "toolgate_test_gauge",
            help: "A gauge for this test.",
            labels: vec![("account", "a\"b".into())],
            value: 2.0,
        }]);
        for line in [
            r#"toolgate_calls_total{tool="metrics.test",transport="http",outcome="ok"} 2"#,
            r#"toolgate_calls_total{tool="metrics.test",transport="http",outcome="invalid_input"} 1"#,
            r#"toolgate_call_duration_seconds_bucket{tool="metrics.test",transport="http",le="0.005"} 1"#,
            r#"toolgate_call_duration_seconds_bucket{tool="metrics.test",transport="http",le="0.25"} 2"#,
            r#"toolgate_call_duration_seconds_bucket{tool="metrics.test",transport="http",le="5"} 2"#,
            r#"toolgate_call_duration_seconds_bucket{tool="metrics.test",transport="http",le="10"} 3"#,
            r#"toolgate_call_duration_seconds_bucket{tool="metrics.test",transport="http",le="+Inf"} 3"#,
            r#"toolgate_call_duration_seconds_count{tool="metrics.test",transport="http"} 3"#,
            "# TYPE toolgate_test_gauge gauge",
            r#"toolgate_test_gauge{account="a\"b"} 2"#,
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in:\n{text}");
        }
    }
}
