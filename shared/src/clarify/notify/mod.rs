//! Telling people about clarifications: the channels a deployment sets up
//! (`[[clarify.notify]]`, docs/notifications.md) hear of each
//! question's events. Delivery comes after the store write, within a bounded
//! time, and never fails the tool's answer; each channel's outcome is
//! recorded on the clarification (`notified` in `GET /clarifications/{id}`).
//!
//! - `webhook`: the event as JSON, signed with HMAC-SHA256;
//! - `slack`: an incoming-webhook message in Block Kit;
//! - `sns`: an SNS topic's subscribers (email, SMS), on AWS;
//! - `post`: the HTTP POST the first two share, retried with backoff.

pub mod post;
mod setup;
pub mod slack;
pub mod webhook;

pub use setup::from_config;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use super::{Clarification, Status, rfc3339};

/// What happened to a clarification, as channels hear of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Event {
    /// Asked: a person should answer.
    Created,
    /// A person answered.
    Answered,
    /// Nobody answered in time.
    Expired,
    /// The agent or workflow withdrew it.
    Cancelled,
}

impl Event {
    /// Every event, the default a channel hears.
    pub const ALL: [Event; 4] = [
        Event::Created,
        Event::Answered,
        Event::Expired,
        Event::Cancelled,
    ];

    /// `created`, `answered`, `expired` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Answered => "answered",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }

    /// The event [`Self::as_str`] names.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// The event a clarification in `status` has just had.
    pub fn of(status: Status) -> Self {
        match status {
            Status::Pending => Self::Created,
            Status::Answered => Self::Answered,
            Status::Expired => Self::Expired,
            Status::Cancelled => Self::Cancelled,
        }
    }
}

/// What every channel is told: the clarification as `GET` shows it (never
/// its task token), with `type` (`clarification.created`, …), `delivery`
/// (the same for every attempt at this event: receivers drop repeats by
/// it) and `sent_at`.
pub fn event_json(event: Event, c: &Clarification, base_url: &str, now: i64) -> Value {
    let mut v = c.view(now, base_url);
    if let Value::Object(o) = &mut v {
        o.remove("notified");
        o.insert(
            "type".into(),
            format!("clarification.{}", event.as_str()).into(),
        );
        o.insert(
            "delivery".into(),
            format!("{}.{}", c.id, event.as_str()).into(),
        );
        o.insert("sent_at".into(), rfc3339(now).into());
    }
    v
}

/// A channel's delivery: `Ok` once the receiver took it, or the error in
/// words (no URL in it: a Slack webhook's URL is its secret).
pub type Sent<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// What every channel has: its name and the events it hears of.
#[derive(Clone, Debug)]
pub struct Listener {
    /// Its name in `notified` and the logs (`webhook`, `slack`, `sns`, or
    /// the name it was given).
    pub name: String,
    /// The events it hears of.
    pub events: Vec<Event>,
}

/// One place people hear about clarifications.
pub trait Channel: Send + Sync {
    /// Its name and events.
    fn listener(&self) -> &Listener;
    /// Its name in `notified` and the logs.
    fn name(&self) -> &str {
        &self.listener().name
    }
    /// Whether it hears of `event`.
    fn wants(&self, event: Event) -> bool {
        self.listener().events.contains(&event)
    }
    /// Tells it of `event`; `body` is [`event_json`].
    fn send<'a>(&'a self, event: Event, body: &'a Value) -> Sent<'a>;
    /// Where it sends, for `toolgate check` to reach without sending.
    fn address(&self) -> Address<'_> {
        Address::Elsewhere
    }
}

/// Where a channel sends ([`Channel::address`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Address<'a> {
    /// A URL it POSTs to (a credential, for Slack: never shown whole).
    Url(&'a str),
    /// It could not be set up, and why.
    Unusable(&'a str),
    /// Somewhere only its own API reaches (an SNS topic).
    Elsewhere,
}

/// Runs a delivery after the answer has gone (tokio's spawn natively, the
/// Worker's `waitUntil`). Without one, the delivery runs before the answer,
/// within its bounded time: a Lambda function is frozen once it answers.
pub type Spawn = Arc<dyn Fn(Pin<Box<dyn Future<Output = ()> + Send>>) + Send + Sync>;

/// Every configured channel.
pub struct Notifier {
    channels: Vec<Arc<dyn Channel>>,
    spawn: Option<Spawn>,
}

impl Notifier {
    /// `channels` hear of events; `spawn` (see [`Spawn`]) runs deliveries
    /// after the answer where the runtime allows it.
    pub fn new(channels: Vec<Arc<dyn Channel>>, spawn: Option<Spawn>) -> Self {
        Self { channels, spawn }
    }

    /// The names of the channels, in order.
    pub fn names(&self) -> Vec<&str> {
        self.channels.iter().map(|c| c.name()).collect()
    }

    /// Each channel's name and where it sends, in order.
    pub fn addresses(&self) -> Vec<(&str, Address<'_>)> {
        self.channels
            .iter()
            .map(|c| (c.name(), c.address()))
            .collect()
    }

    /// The channels that hear of `event`.
    pub(super) fn listeners(&self, event: Event) -> Vec<Arc<dyn Channel>> {
        self.channels
            .iter()
            .filter(|c| c.wants(event))
            .cloned()
            .collect()
    }

    /// Runs `delivery` as [`Spawn`] says.
    pub(super) async fn run(&self, delivery: Pin<Box<dyn Future<Output = ()> + Send>>) {
        match &self.spawn {
            Some(spawn) => spawn(delivery),
            None => delivery.await,
        }
    }
}

/// Tokio's spawn, for runtimes whose process lives on after the answer.
#[cfg(not(target_arch = "wasm32"))]
pub fn tokio_spawn() -> Spawn {
    Arc::new(|f| {
        tokio::spawn(f);
    })
}

/// A channel that could not be set up (its secret in SSM missing,
/// unreadable, a plain `String` or too short; a Slack URL that is not one).
/// Nothing checks those at deploy time, and the tools of every function
/// that notifies (clarify, ssh, cloud) must not stop over it: the channel
/// stays in place, and each event it should hear of is recorded on the
/// clarification as failed, with why.
struct Unusable {
    listener: Listener,
    why: String,
}

impl Channel for Unusable {
    fn listener(&self) -> &Listener {
        &self.listener
    }

    fn send<'a>(&'a self, _: Event, _: &'a Value) -> Sent<'a> {
        Box::pin(std::future::ready(Err(format!("not set up: {}", self.why))))
    }

    fn address(&self) -> Address<'_> {
        Address::Unusable(&self.why)
    }
}

/// The outcome as `notified` shows it: `ok`, or the error.
pub fn outcome_text(r: &Result<(), String>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(e) => {
            let e: String = e.chars().take(300).collect();
            format!("error: {e}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_has_its_type_and_delivery_and_never_the_task_token() {
        let c = Clarification {
            id: "ab".repeat(20),
            question: "Deploy?".into(),
            options: vec!["yes".into(), "no".into()],
            status: Status::Pending,
            answer: None,
            choice: None,
            created_at: 0,
            expires_at: 86_400_000,
            settled_at: None,
            task_token: Some("secret-token".into()),
            notified: Default::default(),
        };
        let v = event_json(Event::Created, &c, "https://t.example/", 1_000);
        assert_eq!(v["type"], "clarification.created");
        assert_eq!(v["delivery"], format!("{}.created", c.id));
        assert_eq!(v["status"], "pending");
        assert_eq!(
            v["answer_url"],
            format!("https://t.example/clarifications/{}/answer", c.id)
        );
        assert!(!v.to_string().contains("secret-token"));
        assert_eq!(Event::parse("expired"), Some(Event::Expired));
        assert_eq!(Event::parse("Expired"), None);
        assert_eq!(
            outcome_text(&Err("x".repeat(400))).len(),
            "error: ".len() + 300
        );
    }
}
