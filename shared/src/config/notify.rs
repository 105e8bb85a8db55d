//! `[[clarify.notify]]` and `TOOLGATE_CLARIFY_{WEBHOOK,SLACK,SNS}_*`: the
//! channels people hear of clarifications on (`clarify::notify`).
//!
//! ```toml
//! [[clarify.notify]]
//! kind = "webhook"                 # webhook | slack | sns
//! url = "https://hooks.example/toolgate"
//! secret_env = "OPS_HOOK_SECRET"   # or secret = "..." (at least 16 characters)
//! events = ["created", "expired"]  # default: all four
//! ```
//!
//! The environment adds (or replaces) one channel of each kind, named for
//! it: `TOOLGATE_CLARIFY_WEBHOOK_URL` with `..._WEBHOOK_SECRET`,
//! `TOOLGATE_CLARIFY_SLACK_URL`, `TOOLGATE_CLARIFY_SNS_TOPIC_ARN`, each with
//! an optional `..._EVENTS` (comma-separated).

use serde::Deserialize;

use super::ConfigError;
use super::env::{Env, split_list};
use crate::clarify::notify::Event;

/// One channel.
#[derive(Clone, PartialEq, Eq)]
pub struct NotifyChannel {
    /// Unique; `[a-z0-9_-]`, 1 to 32 characters.
    pub name: String,
    /// Where it delivers.
    pub kind: NotifyKind,
    /// What it hears of.
    pub events: Vec<Event>,
}

/// Where a channel delivers.
#[derive(Clone, PartialEq, Eq)]
pub enum NotifyKind {
    /// A signed webhook.
    Webhook {
        /// Where events are POSTed.
        url: String,
        /// The HMAC key.
        secret: String,
    },
    /// A Slack incoming webhook (its URL is its credential).
    Slack {
        /// The incoming webhook.
        url: String,
    },
    /// An SNS topic.
    Sns {
        /// The topic's ARN.
        topic_arn: String,
    },
}

// Secrets stay out of logs and error messages: a Slack webhook's URL is one.
impl std::fmt::Debug for NotifyChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            NotifyKind::Webhook { url, .. } => format!("webhook {url} (secret hidden)"),
            NotifyKind::Slack { .. } => "slack (URL hidden)".to_owned(),
            NotifyKind::Sns { topic_arn } => format!("sns {topic_arn}"),
        };
        write!(f, "{}: {kind}, events {:?}", self.name, self.events)
    }
}

/// `[[clarify.notify]]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileChannel {
    kind: String,
    name: Option<String>,
    url: Option<String>,
    secret: Option<String>,
    secret_env: Option<String>,
    topic_arn: Option<String>,
    events: Option<Vec<String>>,
}

fn bad(name: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::BadNotify {
        channel: name.to_owned(),
        reason: reason.into(),
    }
}

/// The events `list` names (all four when `None`).
fn events(name: &str, list: Option<Vec<String>>) -> Result<Vec<Event>, ConfigError> {
    let Some(list) = list else {
        return Ok(Event::ALL.to_vec());
    };
    let mut out = Vec::new();
    for e in list {
        let ev = Event::parse(e.trim()).ok_or_else(|| {
            bad(
                name,
                format!("unknown event {e:?} (created, answered, expired, cancelled)"),
            )
        })?;
        if !out.contains(&ev) {
            out.push(ev);
        }
    }
    if out.is_empty() {
        return Err(bad(name, "events is empty: leave it out for all four"));
    }
    Ok(out)
}

fn http_url(name: &str, url: Option<String>) -> Result<String, ConfigError> {
    let url = url.ok_or_else(|| bad(name, "url is required"))?;
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(bad(name, "url must be an http(s):// URL"));
    }
    Ok(url)
}

/// The file's channels, then the environment's, checked.
pub(super) fn load(
    file: Vec<FileChannel>,
    env: Env<'_>,
) -> Result<Vec<NotifyChannel>, ConfigError> {
    let mut out: Vec<NotifyChannel> = Vec::new();
    for f in file {
        let name = f.name.clone().unwrap_or_else(|| f.kind.clone());
        let kind = match f.kind.as_str() {
            "webhook" => {
                let secret = match (f.secret, f.secret_env) {
                    (Some(s), None) => s,
                    (None, Some(var)) => env.text(&var).ok_or_else(|| {
                        bad(&name, format!("secret_env names {var}, which is not set"))
                    })?,
                    (Some(_), Some(_)) => {
                        return Err(bad(&name, "give secret or secret_env, not both"));
                    }
                    (None, None) => return Err(bad(&name, "a webhook needs secret or secret_env")),
                };
                NotifyKind::Webhook {
                    url: http_url(&name, f.url)?,
                    secret,
                }
            }
            "slack" => NotifyKind::Slack {
                url: http_url(&name, f.url)?,
            },
            "sns" => NotifyKind::Sns {
                topic_arn: f
                    .topic_arn
                    .ok_or_else(|| bad(&name, "an sns channel needs topic_arn"))?,
            },
            other => {
                return Err(bad(
                    &name,
                    format!("unknown kind {other:?} (webhook, slack, sns)"),
                ));
            }
        };
        out.push(NotifyChannel {
            events: events(&name, f.events)?,
            name,
            kind,
        });
    }
    let from_env = [
        (
            "webhook",
            "TOOLGATE_CLARIFY_WEBHOOK_URL",
            "TOOLGATE_CLARIFY_WEBHOOK_EVENTS",
        ),
        (
            "slack",
            "TOOLGATE_CLARIFY_SLACK_URL",
            "TOOLGATE_CLARIFY_SLACK_EVENTS",
        ),
        (
            "sns",
            "TOOLGATE_CLARIFY_SNS_TOPIC_ARN",
            "TOOLGATE_CLARIFY_SNS_EVENTS",
        ),
    ];
    for (kind, var, events_var) in from_env {
        let Some(value) = env.text(var) else { continue };
        let kind_value = match kind {
            "webhook" => NotifyKind::Webhook {
                url: http_url(kind, Some(value))?,
                secret: env.text("TOOLGATE_CLARIFY_WEBHOOK_SECRET").ok_or_else(|| {
                    bad(
                        kind,
                        "TOOLGATE_CLARIFY_WEBHOOK_URL needs TOOLGATE_CLARIFY_WEBHOOK_SECRET",
                    )
                })?,
            },
            "slack" => NotifyKind::Slack {
                url: http_url(kind, Some(value))?,
            },
            _ => NotifyKind::Sns { topic_arn: value },
        };
        let events = events(kind, env.raw(events_var).map(|v| split_list(&v)))?;
        out.retain(|c| c.name != kind);
        out.push(NotifyChannel {
            name: kind.to_owned(),
            kind: kind_value,
            events,
        });
    }
    check(&out)?;
    Ok(out)
}

fn check(channels: &[NotifyChannel]) -> Result<(), ConfigError> {
    for (i, c) in channels.iter().enumerate() {
        let n = &c.name;
        if n.is_empty()
            || n.len() > 32
            || !n
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        {
            return Err(bad(n, "a name is 1 to 32 of a-z, 0-9, _ and -"));
        }
        if channels[..i].iter().any(|o| &o.name == n) {
            return Err(bad(n, "two channels have this name: give one a `name`"));
        }
        match &c.kind {
            NotifyKind::Webhook { secret, .. } if secret.chars().count() < 16 => {
                return Err(bad(n, "the secret must be at least 16 characters"));
            }
            NotifyKind::Sns { topic_arn }
                if !(topic_arn.starts_with("arn:") && topic_arn.contains(":sns:")) =>
            {
                return Err(bad(n, format!("{topic_arn:?} is not an SNS topic ARN")));
            }
            _ => {}
        }
    }
    Ok(())
}
