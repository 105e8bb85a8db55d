//! The notification receiver on loopback (`support/webhook_receiver.py`):
//! it verifies webhook signatures with docs/notifications.md's snippet and records what
//! the webhook, Slack and SNS channels deliver.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::peer::{Peer, run_ok};
use crate::support;

/// Starts the receiver, checking signatures with `secret`; its base URL.
pub fn receiver(secret: &str) -> (Peer, String) {
    let mut peer = Peer::spawn(
        "webhook receiver",
        Command::new("python3")
            .arg(support("webhook_receiver.py"))
            .arg("0")
            .arg(secret),
    );
    let port = peer.wait_for_announced_port(Duration::from_secs(20));
    (peer, format!("http://127.0.0.1:{port}"))
}

/// Everything the receiver has recorded.
pub fn seen(base: &str) -> Value {
    let out = run_ok(
        Command::new("python3").args([
            "-c",
            "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1] + '/seen').read().decode())",
            base,
        ]),
        "GET /seen",
    );
    serde_json::from_str(out.trim()).expect("seen is JSON")
}

/// Polls the receiver until `ready` holds (up to 20 s).
pub fn wait_for(base: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let s = seen(base);
        if ready(&s) {
            return s;
        }
        assert!(Instant::now() < until, "{what}: not seen in 20 s: {s:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The event types the webhook got for clarification `id`, in order.
pub fn events(base_seen: &Value, id: &str) -> Vec<String> {
    base_seen["hook"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["body"]["id"] == id)
        .map(|e| e["body"]["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}
