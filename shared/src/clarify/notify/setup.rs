//! The channels a configuration sets up, their secrets read through the
//! runtime's backends.

use std::sync::Arc;

use super::{Channel, Listener, Notifier, Spawn, Unusable, post, slack, webhook};

/// The channels `config` sets up, posting with `post` (reqwest natively, the
/// Worker's fetch); deliveries run as `spawn` says ([`Spawn`]). Secrets kept
/// in SSM are read now, once: a channel whose secret cannot be used is
/// logged as an error naming its parameter (never the value) and stays
/// [`Unusable`]. `slack_interactive` puts Approve / Reject buttons on
/// approvals' Slack messages (listed Slack users may decide).
pub async fn from_config(
    config: &[crate::config::NotifyChannel],
    post: Arc<dyn post::Post>,
    nap: crate::clarify::Nap,
    spawn: Option<Spawn>,
    slack_interactive: bool,
    backends: Option<&dyn crate::backends::Backends>,
) -> Result<Notifier, String> {
    use crate::config::NotifyKind;
    let mut channels: Vec<Arc<dyn Channel>> = Vec::new();
    for c in config {
        let listener = Listener {
            name: c.name.clone(),
            events: c.events.clone(),
        };
        let to = |url: String| post::Target {
            url,
            post: post.clone(),
            nap: nap.clone(),
        };
        let usable: Result<Arc<dyn Channel>, String> = match &c.kind {
            NotifyKind::Webhook { url, secret } => match secret.reveal(backends).await {
                Ok(value) if value.chars().count() >= NotifyKind::MIN_SECRET_CHARS => {
                    Ok(Arc::new(webhook::Webhook {
                        listener: listener.clone(),
                        to: to(url.clone()),
                        secret: value,
                    }))
                }
                Ok(_) => Err(format!(
                    "the secret ({}) must be at least {} characters",
                    secret.source(),
                    NotifyKind::MIN_SECRET_CHARS
                )),
                Err(e) => Err(e),
            },
            NotifyKind::Slack { url } => match url.reveal(backends).await {
                Ok(value) if value.starts_with("https://") || value.starts_with("http://") => {
                    Ok(Arc::new(slack::Slack {
                        listener: listener.clone(),
                        to: to(value),
                        interactive: slack_interactive,
                    }))
                }
                Ok(_) => Err(format!(
                    "the Slack webhook ({}) must be an http(s):// URL",
                    url.source()
                )),
                Err(e) => Err(e),
            },
            NotifyKind::Sns { topic_arn } => match backends {
                Some(b) => b.topic(listener.clone(), topic_arn).await,
                None => {
                    return Err(format!(
                        "notification channel {}: {}",
                        listener.name,
                        crate::backends::none_for("an SNS topic")
                    ));
                }
            },
        };
        channels.push(usable.unwrap_or_else(|why| {
            tracing::error!(
                channel = %c.name,
                error = %why,
                "notification channel not set up: its events are recorded as failed; the tools run on"
            );
            Arc::new(Unusable { listener, why })
        }));
    }
    Ok(Notifier::new(channels, spawn))
}
