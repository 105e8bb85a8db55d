//! The OTLP/HTTP trace receiver on loopback (`support/otlp_receiver.py`):
//! it reads each export with OpenTelemetry's own protobuf bindings and
//! records the spans, the headers, and whether the body was protobuf's
//! canonical form.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::peer::{Peer, tools_dir};
use crate::{support, timing};

/// Starts the receiver; its base URL (`http://127.0.0.1:PORT`).
pub fn receiver() -> (Peer, String) {
    let mut peer = Peer::spawn(
        "OTLP receiver",
        Command::new(tools_dir().join("venv/bin/python"))
            .arg(support("otlp_receiver.py"))
            .arg("0"),
    );
    let port = peer.wait_for_announced_port(Duration::from_secs(20));
    (peer, format!("http://127.0.0.1:{port}"))
}

/// Everything the receiver has recorded: `spans`, `exports`, `refused`.
pub fn seen(base: &str) -> Value {
    let out = crate::launch::Launch::new("python3")
        .args([
            "-c",
            "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1] + '/seen', timeout=10).read().decode())",
            base,
        ])
        .within(Duration::from_secs(20))
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("seen is JSON")
}

/// What the receiver has seen once `done` holds for its spans (30 s at most).
pub fn spans_when(base: &str, what: &str, done: impl Fn(&[Value]) -> bool) -> Value {
    spans_within(base, Duration::from_secs(30), what, done)
}

/// As [`spans_when`], within `limit`.
pub fn spans_within(
    base: &str,
    limit: Duration,
    what: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Value {
    timing::poll(limit, || {
        let s = seen(base);
        done(s["spans"].as_array().unwrap()).then_some(s)
    })
    .unwrap_or_else(|| panic!("{what}: not received in {limit:?}: {:#}", seen(base)))
}

/// The spans called `name`.
pub fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

/// The span called `name` whose parent is `parent`.
pub fn child_of<'a>(spans: &'a [Value], parent: &Value, name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["name"] == name && s["parent_span_id"] == parent["span_id"])
        .unwrap_or_else(|| panic!("no {name:?} under {parent}: {spans:#?}"))
}
