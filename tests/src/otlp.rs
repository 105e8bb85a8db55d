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

/// The receiver over TLS, with a certificate for 127.0.0.1 made for it
/// (openssl); its base URL (`https://127.0.0.1:PORT`) and the certificate
/// file, for `SSL_CERT_FILE`.
pub fn tls_receiver(dir: &std::path::Path) -> (Peer, String, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let out = crate::launch::Launch::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    assert!(out.status.success(), "openssl: {out:?}");
    let mut peer = Peer::spawn(
        "OTLP receiver (TLS)",
        Command::new(tools_dir().join("venv/bin/python"))
            .arg(support("otlp_receiver.py"))
            .arg("0")
            .arg(&cert)
            .arg(&key),
    );
    let port = peer.wait_for_announced_port(Duration::from_secs(20));
    (peer, format!("https://127.0.0.1:{port}"), cert)
}

/// Everything the receiver has recorded: `spans`, `exports`, `refused`.
pub fn seen(base: &str) -> Value {
    // A TLS receiver's certificate is its own: the test reads it unverified.
    let out = crate::launch::Launch::new("python3")
        .args([
            "-c",
            "import ssl, sys, urllib.request; print(urllib.request.urlopen(sys.argv[1] + '/seen', timeout=10, context=ssl._create_unverified_context()).read().decode())",
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
