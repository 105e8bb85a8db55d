//! What `toolgate check` reports of clarify and the cloud accounts.

use serde_json::Value;

use crate::check::{Finding, Status};

/// `toolgate check`'s view of clarify: its store answers a read, and which
/// channels will hear of questions (checked at load; this sends nothing).
pub(super) async fn clarify_findings(c: &crate::clarify::Clarify) -> Vec<Finding> {
    let store = c
        .get(&"0".repeat(40))
        .await
        .map(|_| format!("its store answers; answer links start {}", c.base_url()))
        .map_err(|e| format!("its store fails: {}", e.message));
    let mut found = vec![Finding::of("clarify", store)];
    let channels = c.notifier().map(|n| n.addresses()).unwrap_or_default();
    if channels.is_empty() {
        found.push(Finding::new(
            "clarify notifications",
            Status::Ok,
            "none: people answer on the page or with `toolgate clarifications`".to_owned(),
        ));
    }
    for (name, address) in channels {
        found.push(Finding::of(
            format!("notify {name}"),
            reach_channel(address).await,
        ));
    }
    found
}

/// Whether a channel's endpoint takes a connection (TCP, within 5 s),
/// sending nothing; its URL is shown as scheme, host and port only (a
/// Slack webhook's path is its credential).
async fn reach_channel(address: crate::clarify::notify::Address<'_>) -> Result<String, String> {
    use crate::clarify::notify::Address;
    let url = match address {
        Address::Url(u) => u,
        Address::Unusable(why) => return Err(format!("not set up: {why}")),
        Address::Elsewhere => {
            return Ok("sent through its own API when a question comes; not reached here".into());
        }
    };
    let parsed: axum::http::Uri = url
        .parse()
        .map_err(|e| format!("its URL does not parse: {e}"))?;
    let scheme = parsed.scheme_str().unwrap_or("https");
    let port = parsed
        .port_u16()
        .unwrap_or(if scheme == "http" { 80 } else { 443 });
    let Some(host) = parsed.host() else {
        return Err("its URL names no host".into());
    };
    let shown = format!("{scheme}://{host}:{port}");
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::net::TcpStream::connect((host, port)),
    )
    .await
    {
        Ok(Ok(_)) => Ok(format!("{shown} takes a connection (no message sent)")),
        Ok(Err(e)) => Err(format!("{shown}: cannot connect ({e})")),
        Err(_) => Err(format!("{shown}: no connection within 5 s")),
    }
}

/// `toolgate check`'s view of the cloud accounts: each as its listing (at
/// start) or a call since left it.
pub(super) fn cloud_findings(health: &Value) -> Vec<Finding> {
    health["accounts"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(account, state)| {
            let what = format!("cloud {account}");
            match state["error"].as_str() {
                None if state["ok"] == true => {
                    Finding::new(what, Status::Ok, format!("{} tools listed", state["tools"]))
                }
                why => Finding::new(
                    what,
                    Status::Fail,
                    why.unwrap_or("its tools were never listed").to_owned(),
                ),
            }
        })
        .collect()
}
