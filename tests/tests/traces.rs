//! OpenTelemetry traces from `toolgate serve` to an OTLP/HTTP receiver on
//! loopback (`support/otlp_receiver.py`), which reads each export with
//! OpenTelemetry's own protobuf bindings as a collector does: one span per
//! request continuing the caller's `traceparent`, one per tool call under
//! it, and the tool's own steps (the sandbox, a session's open and save,
//! SSH's connect and command) under that; the collector's headers sent and
//! never logged; a collector that is down costs the calls nothing and is
//! said once.

use std::time::Duration;

use serde_json::{Value, json};
use toolgate_e2e::otlp::{child_of, named, receiver, spans_when};
use toolgate_e2e::sshd::Sshd;
use toolgate_e2e::{Server, temp_file};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const COLLECTOR_KEY: &str = "otlp-collector-key-5f2a9c";

#[test]
fn a_call_is_a_trace_with_the_tools_own_steps() {
    let (_receiver, base) = receiver();
    let d = Sshd::start();
    let cfg = temp_file("toolgate-traces", &d.server_toml("box", ""));
    let headers = format!("authorization=Bearer%20{COLLECTOR_KEY}");
    let s = Server::start_with_args(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &base),
            ("OTEL_EXPORTER_OTLP_HEADERS", &headers),
            ("OTEL_SERVICE_NAME", "toolgate-under-test"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
        &["--config", cfg.0.to_str().unwrap()],
    );
    let traceparent = format!("00-{TRACE}-{CALLER_SPAN}-01");
    let call = |path: &str, body: &Value| {
        s.request(
            "POST",
            path,
            &[
                ("Content-Type", "application/json"),
                ("traceparent", &traceparent),
            ],
            body.to_string().as_bytes(),
        )
    };
    let first = call(
        "/tools/python.execute",
        &json!({"code": "x = 6 * 7", "session": "new"}),
    );
    assert_eq!(
        first.status,
        200,
        "{}",
        String::from_utf8_lossy(&first.body)
    );
    let request_id = first.header("x-request-id").unwrap().to_owned();
    let bad = call("/tools/python.execute", &json!({"cod": "1"}));
    assert_eq!(bad.status, 400);
    let ran = call(
        "/tools/ssh_run",
        &json!({"server_name": "box", "command": "echo traced"}),
    );
    assert_eq!(ran.status, 200, "{}", String::from_utf8_lossy(&ran.body));

    let seen = spans_when(&base, "three calls and their steps", |spans| {
        named(spans, "tool call").len() == 3
            && named(spans, "request").len() == 3
            && !named(spans, "ssh exec").is_empty()
            && !named(spans, "session save").is_empty()
    });
    let spans = seen["spans"].as_array().unwrap();

    // The request continues the caller's trace; every span is in it.
    for s in spans {
        assert_eq!(s["trace_id"], TRACE, "{s}");
        assert!(s["end"].as_u64() >= s["start"].as_u64(), "{s}");
        assert_eq!(s["resource"]["service.name"], "toolgate-under-test");
        assert_eq!(s["resource"]["service.version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(s["scope"]["name"], "toolgate");
    }
    let request = spans
        .iter()
        .find(|s| s["name"] == "request" && s["attributes"]["request_id"] == request_id.as_str())
        .expect("the first call's request span");
    assert_eq!(request["parent_span_id"], CALLER_SPAN);
    assert_eq!(request["kind"], 2, "server");

    // The session call: its tool call, the session's open, the sandbox, the save.
    let tool = child_of(spans, request, "tool call");
    assert_eq!(tool["attributes"]["tool"], "python.execute");
    assert_eq!(tool["attributes"]["transport"], "http");
    assert_eq!(tool["attributes"]["outcome"], "ok");
    assert_eq!(tool["kind"], 1, "internal");
    assert_eq!(tool["status"]["code"], 0, "unset: {tool}");
    child_of(spans, tool, "session open");
    let sandbox = child_of(spans, tool, "sandbox run");
    assert_eq!(sandbox["attributes"]["timed_out"], false);
    child_of(spans, tool, "session save");

    // A refused call is an error span naming the contract's code only.
    let failed = named(spans, "tool call")
        .into_iter()
        .find(|s| s["attributes"]["outcome"] == "invalid_input")
        .expect("the refused call's span");
    assert_eq!(
        failed["status"],
        json!({"code": 2, "message": "invalid_input"})
    );

    // SSH: the connection and the command, as client spans under the call.
    let ssh = named(spans, "tool call")
        .into_iter()
        .find(|s| s["attributes"]["tool"] == "ssh_run")
        .expect("ssh_run's span");
    let connect = child_of(spans, ssh, "ssh connect");
    let exec = child_of(spans, ssh, "ssh exec");
    assert_eq!(connect["kind"], 3);
    assert_eq!(exec["attributes"]["server"], "box");

    // Every export carried the collector's headers, in protobuf's own form.
    for e in seen["exports"].as_array().unwrap() {
        assert_eq!(
            e["headers"]["authorization"],
            format!("Bearer {COLLECTOR_KEY}")
        );
        assert_eq!(e["headers"]["content-type"], "application/x-protobuf");
        assert_eq!(e["canonical"], true, "{e}");
    }

    // Log lines: the request's span still rides on the call's line (the
    // steps are not shown), it names the caller's trace, and the collector's
    // key is nowhere.
    let logs = s.json_logs_when(Duration::from_secs(10), |l| {
        l.iter().filter(|l| l["message"] == "tool call").count() == 3
    });
    let line = logs
        .iter()
        .find(|l| l["message"] == "tool call" && l["span"]["request_id"] == request_id.as_str())
        .unwrap_or_else(|| panic!("the call's line with its request id: {logs:#?}"));
    assert_eq!(line["span"]["traceparent"], traceparent);
    assert_eq!(line["span"]["name"], "request");
    // ssh_run's audit line is written inside the call's steps.
    let audit = logs
        .iter()
        .find(|l| l["message"] == "audit" && l["event"] == "ssh_run")
        .unwrap_or_else(|| panic!("ssh_run's audit line: {logs:#?}"));
    assert_eq!(audit["span"]["name"], "request", "{audit}");
    assert!(audit["span"]["request_id"].is_string(), "{audit}");
    let started = start_up_line(&logs);
    assert_eq!(started["traces"], base);
    assert!(!s.logs().contains(COLLECTOR_KEY), "{}", s.logs());
}

#[test]
fn without_a_trace_header_a_request_starts_a_trace() {
    let (_receiver, base) = receiver();
    let s = Server::start(&[
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            &format!("{base}/v1/traces"),
        ),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ]);
    // A malformed traceparent is the caller's text: not continued, not logged.
    let r = s.request(
        "POST",
        "/tools/python.execute",
        &[
            ("Content-Type", "application/json"),
            ("traceparent", "00-zz-not-hex-01"),
        ],
        json!({"code": "result = 1"}).to_string().as_bytes(),
    );
    assert_eq!(r.status, 200);
    let seen = spans_when(&base, "the call", |spans| {
        !named(spans, "sandbox run").is_empty() && !named(spans, "request").is_empty()
    });
    let spans = seen["spans"].as_array().unwrap();
    let request = named(spans, "request")[0];
    assert_eq!(request["parent_span_id"], "", "a root: {request}");
    assert_ne!(request["trace_id"], "0".repeat(32));
    assert_eq!(request["resource"]["service.name"], "toolgate");
    let tool = child_of(spans, request, "tool call");
    child_of(spans, tool, "sandbox run");
    assert!(!s.logs().contains("not-hex"), "{}", s.logs());
}

/// MCP's trace context propagation (`_meta.traceparent`, issue #57): a
/// `tools/call` continues the MCP client's trace from its tool call down,
/// whatever the HTTP request's own, and the call's log line names it.
#[test]
fn an_mcp_calls_meta_traceparent_continues_the_clients_trace() {
    const CLIENT_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    const CLIENT_SPAN: &str = "b7ad6b7169203331";
    let (_receiver, base) = receiver();
    let s = Server::start(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &base),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ]);
    let meta = format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01");
    let header = format!("00-{TRACE}-{CALLER_SPAN}-01");
    let call = |meta: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "python__execute", "arguments": {"code": "result = 2"},
            "_meta": {"traceparent": meta}}});
        let r = s.request(
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2025-11-25"),
                ("traceparent", &header),
            ],
            body.to_string().as_bytes(),
        );
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    };
    call(&meta);
    // A malformed one is ignored: the call stays in the request's trace.
    call("00-not-a-trace-01");
    let seen = spans_when(&base, "two MCP calls", |spans| {
        named(spans, "sandbox run").len() == 2 && named(spans, "request").len() == 2
    });
    let spans = seen["spans"].as_array().unwrap();
    let tools = named(spans, "tool call");
    let continued = tools
        .iter()
        .find(|t| t["trace_id"] == CLIENT_TRACE)
        .unwrap_or_else(|| panic!("no tool call in the client's trace: {spans:#?}"));
    assert_eq!(continued["parent_span_id"], CLIENT_SPAN, "{continued}");
    assert_eq!(continued["kind"], 2, "server: {continued}");
    assert_eq!(continued["attributes"]["transport"], "mcp");
    let sandbox = child_of(spans, continued, "sandbox run");
    assert_eq!(sandbox["trace_id"], CLIENT_TRACE);
    let other = tools
        .iter()
        .find(|t| t["trace_id"] != CLIENT_TRACE)
        .expect("the second call's span");
    assert_eq!(other["trace_id"], TRACE, "{other}");
    assert_eq!(other["kind"], 1, "internal: {other}");

    let logs = s.json_logs_when(Duration::from_secs(10), |l| {
        l.iter().filter(|l| l["message"] == "tool call").count() == 2
    });
    let lines: Vec<&Value> = logs
        .iter()
        .filter(|l| l["message"] == "tool call")
        .collect();
    assert_eq!(lines[0]["traceparent"], meta, "{:#?}", lines[0]);
    assert!(lines[1].get("traceparent").is_none(), "{:#?}", lines[1]);
    assert!(!s.logs().contains("not-a-trace"), "{}", s.logs());
}

#[test]
fn a_collector_that_is_down_costs_the_calls_nothing_and_is_said_once() {
    let closed_port = toolgate_e2e::peer::ClosedPort::bind();
    let closed = closed_port.port;
    let s = Server::start(&[
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            &format!("http://127.0.0.1:{closed}/secret-path?key=abc"),
        ),
        ("OTEL_BSP_SCHEDULE_DELAY", "50"),
    ]);
    for i in 0..3 {
        let v = s.exec(&format!("result = {i}"));
        assert_eq!(v["result"], i, "{v}");
        std::thread::sleep(Duration::from_millis(150));
    }
    let logs = s.json_logs_when(Duration::from_secs(10), |l| {
        l.iter().any(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("traces: cannot export"))
        })
    });
    let said: Vec<&Value> = logs
        .iter()
        .filter(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("traces: cannot export"))
        })
        .collect();
    assert_eq!(said.len(), 1, "said once: {logs:#?}");
    assert!(
        said[0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot connect")
    );
    assert_eq!(said[0]["endpoint"], format!("http://127.0.0.1:{closed}"));
    assert!(!s.logs().contains("secret-path") && !s.logs().contains("key=abc"));
}

#[test]
fn bad_settings_are_warned_about_and_a_wrong_url_sends_nothing() {
    let s = Server::start(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "api-key"),
    ]);
    let logs = s.json_logs();
    let warned = |needle: &str| {
        logs.iter().any(|l| {
            l["level"] == "WARN" && l["message"].as_str().is_some_and(|m| m.contains(needle))
        })
    };
    assert!(
        warned("OTEL_EXPORTER_OTLP_ENDPOINT is not an http:// or https:// URL"),
        "{logs:#?}"
    );
    let started = start_up_line(&logs);
    assert_eq!(started["traces"], "off");
    assert_eq!(s.exec("result = 2")["result"], 2);
}

/// `toolgate check` says where traces go and whether the collector takes
/// an export (a warning when it does not: the tools work without it).
#[test]
fn check_says_whether_the_collector_takes_exports() {
    use toolgate_e2e::launch::Launch;
    let (_receiver, base) = receiver();
    let report = |endpoint: Option<&str>| -> Value {
        let mut l = Launch::toolgate(&["check", "--json"]);
        if let Some(e) = endpoint {
            l = l.env("OTEL_EXPORTER_OTLP_ENDPOINT", e);
        }
        let out = l.output();
        let v: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["what"] == "traces")
            .unwrap_or_else(|| panic!("no traces finding: {v}"))
            .clone()
    };
    let on = report(Some(&base));
    assert_eq!(on["status"], "ok", "{on}");
    assert_eq!(
        on["detail"],
        format!("{base} takes exports (http/protobuf)")
    );
    assert_eq!(toolgate_e2e::otlp::seen(&base)["exports"][0]["spans"], 0);
    let closed = toolgate_e2e::peer::ClosedPort::bind();
    let down = format!("http://127.0.0.1:{}", closed.port);
    let off = report(Some(&down));
    assert_eq!(off["status"], "warn", "{off}");
    assert_eq!(off["detail"], format!("{down}: cannot connect"));
    let none = report(None);
    assert_eq!(none["detail"], "off (no OTEL_EXPORTER_OTLP_ENDPOINT)");
}

/// Over TLS: the collector's certificate checked against the system's
/// roots (here `SSL_CERT_FILE`, which names the test's own); one the roots
/// do not hold is refused and said.
#[test]
fn traces_go_over_tls_to_a_collector_the_roots_trust() {
    let dir = toolgate_e2e::launch::TempDir::new("toolgate-otlp-tls");
    let (_receiver, base, cert) = toolgate_e2e::otlp::tls_receiver(dir.path());
    let trusted = Server::start(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &base),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("SSL_CERT_FILE", cert.to_str().unwrap()),
    ]);
    assert_eq!(trusted.exec("result = 1")["result"], 1);
    spans_when(&base, "spans over TLS", |spans| {
        !named(spans, "sandbox run").is_empty()
    });
    drop(trusted);
    // The system's own roots do not hold the test's certificate.
    let untrusted = Server::start(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &base),
        ("OTEL_BSP_SCHEDULE_DELAY", "50"),
    ]);
    assert_eq!(untrusted.exec("result = 2")["result"], 2);
    let logs = untrusted.json_logs_when(Duration::from_secs(10), |l| {
        l.iter().any(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("traces: cannot export (TLS"))
        })
    });
    assert!(
        logs.iter().any(|l| l["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("traces: cannot export (TLS"))),
        "{logs:#?}"
    );
}

/// A caller that does not sample its trace gets none sent (the default,
/// parent-based, sampler); a later version's header is continued and
/// logged in version 00's form, never as the caller wrote it.
#[test]
fn an_unsampled_caller_is_not_traced_and_headers_are_logged_rebuilt() {
    const UNSAMPLED: &str = "11111111111111111111111111111111";
    const LATER: &str = "22222222222222222222222222222222";
    let (_receiver, base) = receiver();
    let s = Server::start(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &base),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ]);
    let call = |traceparent: &str| {
        let r = s.request(
            "POST",
            "/tools/python.execute",
            &[
                ("Content-Type", "application/json"),
                ("traceparent", traceparent),
            ],
            json!({"code": "result = 1"}).to_string().as_bytes(),
        );
        assert_eq!(r.status, 200);
    };
    call(&format!("00-{UNSAMPLED}-{CALLER_SPAN}-00"));
    call(&format!("01-{LATER}-{CALLER_SPAN}-01-\" forged=yes"));
    let seen = spans_when(&base, "the later version's trace", |spans| {
        spans
            .iter()
            .any(|s| s["trace_id"] == LATER && s["name"] == "sandbox run")
    });
    let spans = seen["spans"].as_array().unwrap();
    assert!(
        !spans.iter().any(|s| s["trace_id"] == UNSAMPLED),
        "an unsampled trace was sent: {spans:#?}"
    );
    let logs = s.json_logs_when(Duration::from_secs(10), |l| {
        l.iter().filter(|l| l["message"] == "tool call").count() == 2
    });
    assert!(
        logs.iter()
            .any(|l| l["span"]["traceparent"] == format!("00-{LATER}-{CALLER_SPAN}-01")),
        "{logs:#?}"
    );
    assert!(!s.logs().contains("forged"), "{}", s.logs());
}

/// `toolgate serve`'s "listening" line.
fn start_up_line(logs: &[Value]) -> &Value {
    logs.iter()
        .find(|l| {
            l["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("toolgate listening"))
        })
        .expect("the start-up line")
}
