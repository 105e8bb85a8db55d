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
//!
//! On AWS a secret never sits in a function's environment (anyone who may
//! read the function's configuration reads it there, and so does Terraform's
//! state): `TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER` and
//! `TOOLGATE_CLARIFY_SLACK_URL_PARAMETER` name SSM SecureStrings instead,
//! read once at start ([`Secret::reveal`], from the backends).

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
        secret: Secret,
    },
    /// A Slack incoming webhook (its URL is its credential).
    Slack {
        /// The incoming webhook.
        url: Secret,
    },
    /// An SNS topic.
    Sns {
        /// The topic's ARN.
        topic_arn: String,
    },
}

impl NotifyKind {
    /// The shortest webhook secret taken (one in SSM is checked when read).
    pub const MIN_SECRET_CHARS: usize = 16;
}

// Secrets stay out of logs and error messages: a Slack webhook's URL is one.
impl std::fmt::Debug for NotifyChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.kind {
            NotifyKind::Webhook { url, secret } => format!("webhook {url} (secret {secret:?})"),
            NotifyKind::Slack { url } => format!("slack (URL {url:?})"),
            NotifyKind::Sns { topic_arn } => format!("sns {topic_arn}"),
        };
        write!(f, "{}: {kind}, events {:?}", self.name, self.events)
    }
}

/// A credential as configured: its value, or the name of the SSM
/// SecureString that holds it (the backends read it), read by [`Secret::reveal`]
/// when the service starts. The value is never shown, the parameter's name
/// may be.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// The value itself (a file's `secret`, or a plain variable).
    Value(String),
    /// The name of an SSM SecureString parameter (`/toolgate/hook-secret`).
    Parameter(String),
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self::Value(value.to_owned())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Value(_) => f.write_str("hidden"),
            Self::Parameter(name) => write!(f, "in SSM parameter {name}"),
        }
    }
}

impl Secret {
    /// Where the value comes from, for messages: `SSM parameter NAME`, or
    /// `the configured value` (never the value).
    pub fn source(&self) -> String {
        match self {
            Self::Value(_) => "the configured value".into(),
            Self::Parameter(name) => format!("SSM parameter {name}"),
        }
    }

    /// The value: as given, or read from SSM with decryption. An unreadable
    /// parameter is an error that names it (never a value).
    pub async fn reveal(
        &self,
        backends: Option<&dyn crate::backends::Backends>,
    ) -> Result<String, String> {
        match (self, backends) {
            (Self::Value(v), _) => Ok(v.clone()),
            (Self::Parameter(name), Some(b)) => b.secret(name).await,
            (Self::Parameter(name), None) => Err(format!(
                "SSM parameter {name}: {}",
                crate::backends::none_for("a secret in SSM")
            )),
        }
    }
}

/// The secret one of two variables gives: `plain` holds the value (for
/// `toolgate serve`), `parameter` names an SSM SecureString (AWS). Both set
/// is an error; a build without backends refuses `parameter` when it
/// reads the secret.
pub(super) fn secret_from_env(
    env: Env<'_>,
    plain: &str,
    parameter: &str,
) -> Result<Option<Secret>, String> {
    match (env.text(plain), env.text(parameter)) {
        (Some(_), Some(_)) => Err(format!(
            "set {plain} or {parameter}, not both (on AWS, {parameter}: the environment is no place for a secret)"
        )),
        (Some(v), None) => Ok(Some(Secret::Value(v))),
        (None, Some(name)) => Ok(Some(Secret::Parameter(name))),
        (None, None) => Ok(None),
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
                    (Some(s), None) => Secret::Value(s),
                    (None, Some(var)) => Secret::Value(env.text(&var).ok_or_else(|| {
                        bad(&name, format!("secret_env names {var}, which is not set"))
                    })?),
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
                url: Secret::Value(http_url(&name, f.url)?),
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
        let kind_value = match kind {
            "webhook" => {
                let Some(url) = env.text(var) else { continue };
                let secret = secret_from_env(
                    env,
                    "TOOLGATE_CLARIFY_WEBHOOK_SECRET",
                    "TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER",
                )
                .map_err(|e| bad(kind, e))?
                .ok_or_else(|| {
                    bad(
                        kind,
                        "TOOLGATE_CLARIFY_WEBHOOK_URL needs TOOLGATE_CLARIFY_WEBHOOK_SECRET \
                         (or, on AWS, TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER)",
                    )
                })?;
                NotifyKind::Webhook {
                    url: http_url(kind, Some(url))?,
                    secret,
                }
            }
            // The URL is the credential: from SSM too.
            "slack" => {
                let url = secret_from_env(env, var, "TOOLGATE_CLARIFY_SLACK_URL_PARAMETER")
                    .map_err(|e| bad(kind, e))?;
                match url {
                    Some(Secret::Value(url)) => NotifyKind::Slack {
                        url: Secret::Value(http_url(kind, Some(url))?),
                    },
                    Some(url) => NotifyKind::Slack { url },
                    None => continue,
                }
            }
            _ => {
                let Some(topic_arn) = env.text(var) else {
                    continue;
                };
                NotifyKind::Sns { topic_arn }
            }
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
            NotifyKind::Webhook {
                secret: Secret::Value(secret),
                ..
            } if secret.chars().count() < NotifyKind::MIN_SECRET_CHARS => {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn channels(vars: &[(&str, &str)]) -> Result<Vec<NotifyChannel>, ConfigError> {
        let lookup = |k: &str| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| (*v).to_owned())
        };
        load(Vec::new(), Env(&lookup))
    }

    #[test]
    fn secrets_from_ssm_are_named_never_held() {
        let got = channels(&[
            ("TOOLGATE_CLARIFY_WEBHOOK_URL", "https://hooks.example/t"),
            (
                "TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER",
                "/toolgate/hook-secret",
            ),
            (
                "TOOLGATE_CLARIFY_SLACK_URL_PARAMETER",
                "/toolgate/slack-url",
            ),
        ]);
        let got = got.unwrap();
        // NotifyKind has no Debug: it holds secrets.
        assert!(
            got[0].kind
                == NotifyKind::Webhook {
                    url: "https://hooks.example/t".into(),
                    secret: Secret::Parameter("/toolgate/hook-secret".into()),
                }
        );
        assert!(
            got[1].kind
                == NotifyKind::Slack {
                    url: Secret::Parameter("/toolgate/slack-url".into())
                }
        );
        let shown = format!("{got:?}");
        assert!(
            shown.contains("secret in SSM parameter /toolgate/hook-secret")
                && shown.contains("URL in SSM parameter /toolgate/slack-url"),
            "{shown}"
        );
    }

    #[test]
    fn a_secret_comes_from_one_place() {
        let e = channels(&[
            ("TOOLGATE_CLARIFY_WEBHOOK_URL", "https://hooks.example/t"),
            ("TOOLGATE_CLARIFY_WEBHOOK_SECRET", "0123456789abcdef"),
            ("TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER", "/x"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("not both"), "{e}");
        assert!(!e.contains("0123456789abcdef"), "{e}");
        let e = channels(&[
            ("TOOLGATE_CLARIFY_SLACK_URL", "https://hooks.slack.com/x"),
            ("TOOLGATE_CLARIFY_SLACK_URL_PARAMETER", "/y"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("not both") && !e.contains("hooks.slack.com"),
            "{e}"
        );

        // Plain values keep working (`toolgate serve`), and are never shown.
        let got = channels(&[
            ("TOOLGATE_CLARIFY_WEBHOOK_URL", "https://hooks.example/t"),
            ("TOOLGATE_CLARIFY_WEBHOOK_SECRET", "0123456789abcdef"),
            (
                "TOOLGATE_CLARIFY_SLACK_URL",
                "https://hooks.slack.com/secretpart",
            ),
        ])
        .unwrap();
        assert!(
            got[0].kind
                == NotifyKind::Webhook {
                    url: "https://hooks.example/t".into(),
                    secret: "0123456789abcdef".into(),
                }
        );
        let shown = format!("{got:?}");
        assert!(
            !shown.contains("0123456789abcdef") && !shown.contains("secretpart"),
            "{shown}"
        );
    }
}
