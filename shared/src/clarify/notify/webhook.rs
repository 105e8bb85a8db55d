//! The generic webhook: each event POSTed as JSON ([`super::event_json`]),
//! signed so that the receiver can tell it came from this deployment and is
//! fresh:
//!
//! - `Toolgate-Timestamp`: Unix seconds when this attempt was signed;
//! - `Toolgate-Signature`: `v1=` and the hex HMAC-SHA256, keyed with the
//!   shared secret, of `{timestamp}.{body}`;
//! - `Toolgate-Delivery`: the event's `delivery` id (the same on a retry);
//! - `Toolgate-Event`: `clarification.created`, ….
//!
//! A receiver recomputes the signature over the raw body, compares in
//! constant time, refuses a timestamp more than 5 minutes off, and drops a
//! delivery id it has already taken (docs/notifications.md has a snippet).

use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::post::Target;
use super::{Channel, Event, Listener, Sent};

/// `v1=<hex>`: the signature of `body` sent at `timestamp`.
pub fn signature(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("HMAC takes a key of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let tag = mac.finalize().into_bytes();
    let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    format!("v1={hex}")
}

/// A signed webhook.
pub struct Webhook {
    /// Its name and events.
    pub listener: Listener,
    /// Where events are POSTed.
    pub to: Target,
    /// The key of the signature (never logged).
    pub secret: String,
}

impl Channel for Webhook {
    fn listener(&self) -> &Listener {
        &self.listener
    }

    fn address(&self) -> super::Address<'_> {
        super::Address::Url(&self.to.url)
    }

    fn send<'a>(&'a self, event: Event, body: &'a Value) -> Sent<'a> {
        Box::pin(async move {
            let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
            let delivery = body["delivery"].as_str().unwrap_or_default();
            // Signed afresh per attempt: the timestamp is the attempt's.
            let headers = || {
                let ts = crate::clock::unix_ms() / 1000;
                vec![
                    ("toolgate-timestamp".into(), ts.to_string()),
                    (
                        "toolgate-signature".into(),
                        signature(self.secret.as_bytes(), ts, &bytes),
                    ),
                    ("toolgate-delivery".into(), delivery.to_owned()),
                    (
                        "toolgate-event".into(),
                        format!("clarification.{}", event.as_str()),
                    ),
                ]
            };
            self.to.send(&bytes, headers).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_timestamp_dot_body() {
        // Computed independently, as a receiver would:
        // hmac.new(b"Jefe", b"1700000000.{}", "sha256").hexdigest()
        assert_eq!(
            signature(b"Jefe", 1_700_000_000, b"{}"),
            "v1=d3793e2b4103edfbd98cc19591832f5fad701d413db9fcae0ae7dab8184ed207"
        );
        assert_ne!(
            signature(b"Jefe", 1_700_000_001, b"{}"),
            signature(b"Jefe", 1_700_000_000, b"{}")
        );
    }
}
