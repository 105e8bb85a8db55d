//! Deciding approvals from Slack (docs/approvals.md, "Deciding from Slack"):
//! an approval's Slack message carries Approve / Reject buttons
//! (`clarify::notify::slack::approval_message`), and Slack posts each click
//! to the app's Interactivity Request URL, `POST /slack/interactions`, as
//! a form with one field, `payload` (a `block_actions` payload, JSON).
//!
//! Slack signs each request with the app's signing secret:
//! `X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:{timestamp}:{raw body}">`
//! and `X-Slack-Request-Timestamp` (Unix seconds). [`verify`] checks both,
//! [`parse`] reads the click, [`allowed`] asks `[approvals] slack_users`,
//! and [`ack_message`] is what the route posts back to the click's
//! `response_url`. Nothing here does I/O.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::clarify::notify::slack::{
    APPROVE_ACTION, REJECT_ACTION, cut, escape, settled_approval_message, verdict,
};
use crate::error::ToolError;

/// The largest body the route reads; a click's payload is a few KiB.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// How far a request's timestamp may be from now, in seconds (Slack's own
/// advice: five minutes), so a captured request cannot be replayed later.
pub const MAX_SKEW_SECS: i64 = 300;
/// The `via` of an approver from Slack.
pub const VIA: &str = "slack";

/// Why a request is not taken as Slack's: the route answers 401 with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SlackRefusal {
    /// No signing secret: an empty key would let anyone sign.
    #[error("Slack's signing secret is not configured")]
    NoSecret,
    /// `X-Slack-Request-Timestamp` is missing.
    #[error("the request has no X-Slack-Request-Timestamp header")]
    NoTimestamp,
    /// `X-Slack-Signature` is missing.
    #[error("the request has no X-Slack-Signature header")]
    NoSignature,
    /// The timestamp is not Unix seconds.
    #[error("X-Slack-Request-Timestamp is not a Unix time in seconds")]
    BadTimestamp,
    /// The timestamp is more than [`MAX_SKEW_SECS`] from now (seconds off).
    #[error(
        "X-Slack-Request-Timestamp is {0} seconds from now (at most 300 allowed): a stale or replayed request"
    )]
    Stale(i128),
    /// The signature is not `v0=` and 64 hex digits, or does not match.
    #[error("X-Slack-Signature does not match the body signed with the Slack app's signing secret")]
    BadSignature,
}

/// Checks that Slack sent `raw_body` (the bytes as received, before any
/// decoding) at a time within [`MAX_SKEW_SECS`] of `now_unix`: the
/// signature is recomputed with `signing_secret` and compared in constant
/// time.
pub fn verify(
    signing_secret: &[u8],
    timestamp_header: Option<&str>,
    signature_header: Option<&str>,
    raw_body: &[u8],
    now_unix: i64,
) -> Result<(), SlackRefusal> {
    if signing_secret.is_empty() {
        return Err(SlackRefusal::NoSecret);
    }
    let ts = timestamp_header.ok_or(SlackRefusal::NoTimestamp)?.trim();
    let sig = signature_header.ok_or(SlackRefusal::NoSignature)?.trim();
    if ts.is_empty() || ts.len() > 12 || !ts.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SlackRefusal::BadTimestamp);
    }
    let sent: i64 = ts.parse().map_err(|_| SlackRefusal::BadTimestamp)?;
    let skew = (i128::from(now_unix) - i128::from(sent)).abs();
    if skew > i128::from(MAX_SKEW_SECS) {
        return Err(SlackRefusal::Stale(skew));
    }
    let tag = sig
        .strip_prefix("v0=")
        .and_then(hex32)
        .ok_or(SlackRefusal::BadSignature)?;
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(signing_secret)
        .map_err(|_| SlackRefusal::NoSecret)?;
    mac.update(b"v0:");
    mac.update(ts.as_bytes());
    mac.update(b":");
    mac.update(raw_body);
    // `verify_slice` compares in constant time.
    mac.verify_slice(&tag)
        .map_err(|_| SlackRefusal::BadSignature)
}

/// 64 hex digits as 32 bytes.
fn hex32(s: &str) -> Option<[u8; 32]> {
    let s = s.as_bytes();
    if s.len() != 64 {
        return None;
    }
    let digit = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; 32];
    for (i, pair) in s.chunks(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// What a button asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Approve (`toolgate_approve`).
    Approve,
    /// Reject (`toolgate_reject`).
    Reject,
}

impl Decision {
    /// Whether it approves.
    pub fn approves(self) -> bool {
        self == Self::Approve
    }

    /// `approve` or `reject`, as `POST /approvals/{id}/decision` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Reject => "reject",
        }
    }

    /// `Approved` or `Rejected`.
    pub fn verdict(self) -> &'static str {
        match self {
            Self::Approve => "Approved",
            Self::Reject => "Rejected",
        }
    }
}

/// A click on an approval's Approve or Reject button.
#[derive(Clone, PartialEq, Eq)]
pub struct Click {
    /// The workspace (`T…`, or `E…` for an organization-wide install).
    pub team_id: String,
    /// Who clicked (`U…` or `W…`).
    pub user_id: String,
    /// Their Slack username, at most 80 characters (may be empty): shown,
    /// never trusted.
    pub user_name: String,
    /// Approve or Reject.
    pub action: Decision,
    /// The approval's id (40 lowercase hex).
    pub approval_id: String,
    /// Where to post [`ack_message`] (Slack's hooks only): a credential
    /// for the channel for 30 minutes, so never logged.
    pub response_url: Option<String>,
}

impl std::fmt::Debug for Click {
    // No id and no response_url: both decide or post something.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Click")
            .field("team_id", &self.team_id)
            .field("user_id", &self.user_id)
            .field("user_name", &self.user_name)
            .field("action", &self.action)
            .field("approval_id", &crate::logging::id_ref(&self.approval_id))
            .field("response_url", &self.response_url.as_ref().map(|_| "…"))
            .finish()
    }
}

/// The longest Slack username kept.
const NAME_CHARS: usize = 80;

/// Reads the click in a request's body (`payload=<JSON>`, form-encoded):
/// a `block_actions` payload with exactly one action, a button whose
/// `action_id` is `toolgate_approve` or `toolgate_reject` and whose value
/// is an approval id. Anything else is refused in words; a body over
/// [`MAX_BODY_BYTES`] before it is read.
///
/// Slack also posts clicks on link buttons (`toolgate_review`, a
/// question's options): they are refused here too, and the route answers
/// them 200 all the same.
pub fn parse(raw_body: &[u8]) -> Result<Click, String> {
    if raw_body.len() > MAX_BODY_BYTES {
        return Err(format!(
            "the body is {} bytes, over the {MAX_BODY_BYTES} a Slack click may have",
            raw_body.len()
        ));
    }
    let body = std::str::from_utf8(raw_body).map_err(|_| "the body is not UTF-8".to_owned())?;
    let payload = form_field(body, "payload")?;
    let v: Value =
        serde_json::from_str(&payload).map_err(|e| format!("the payload is not JSON: {e}"))?;
    if v["type"] != "block_actions" {
        return Err(format!(
            "the payload is not a button click (type {})",
            shown(&v["type"])
        ));
    }
    let actions = v["actions"]
        .as_array()
        .ok_or("the payload has no actions")?;
    let [action] = actions.as_slice() else {
        return Err(format!(
            "the payload has {} actions; a click has one",
            actions.len()
        ));
    };
    let decision = match action["action_id"].as_str() {
        Some(APPROVE_ACTION) => Decision::Approve,
        Some(REJECT_ACTION) => Decision::Reject,
        _ => {
            return Err(format!(
                "not an approval button (action_id {})",
                shown(&action["action_id"])
            ));
        }
    };
    if action["type"] != "button" {
        return Err(format!(
            "the action is not a button (type {})",
            shown(&action["type"])
        ));
    }
    let approval_id = action["value"].as_str().unwrap_or_default();
    if approval_id.len() != 40
        || !approval_id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err("the button's value is not an approval id (40 lowercase hex)".into());
    }
    let user = &v["user"];
    let user_id = slack_id(&user["id"]).ok_or("the payload has no valid user id")?;
    let team_id = slack_id(&v["team"]["id"])
        .or_else(|| slack_id(&user["team_id"]))
        .ok_or("the payload has no valid team id")?;
    let user_name = user["username"]
        .as_str()
        .or_else(|| user["name"].as_str())
        .unwrap_or_default()
        .chars()
        .take(NAME_CHARS)
        .collect();
    let response_url = v["response_url"]
        .as_str()
        .filter(|u| slack_hook(u))
        .map(str::to_owned);
    Ok(Click {
        team_id,
        user_id,
        user_name,
        action: decision,
        approval_id: approval_id.to_owned(),
        response_url,
    })
}

/// A JSON value in an error message: short, and its control characters
/// escaped (it may reach a log line).
fn shown(v: &Value) -> String {
    let s = match v {
        Value::Null => return "none".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    format!("{:?}", cut(&s, 64))
}

/// A Slack id: `T…`, `E…`, `U…`, `W…`: letters and digits, nothing that
/// could break `slack:<team>/<user>`.
fn slack_id(v: &Value) -> Option<String> {
    let s = v.as_str()?;
    (!s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| s.to_owned())
}

/// Whether `url` is one of Slack's response hooks (the route posts there,
/// and only there).
fn slack_hook(url: &str) -> bool {
    ["https://hooks.slack.com/", "https://hooks.slack-gov.com/"]
        .iter()
        .any(|p| url.starts_with(p))
        && url.len() <= 2048
        && url.bytes().all(|b| b.is_ascii_graphic())
}

/// The one value named `name` in a form-encoded body, decoded; refused if
/// it is missing, repeated, or badly encoded.
fn form_field(body: &str, name: &str) -> Result<String, String> {
    let mut found = None;
    for pair in body.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if form_decode(k)? != name {
            continue;
        }
        if found.is_some() {
            return Err(format!("the body has more than one `{name}` field"));
        }
        found = Some(form_decode(v)?);
    }
    found.ok_or_else(|| format!("the body has no `{name}` field"))
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a
/// byte; the bytes must be UTF-8.
fn form_decode(s: &str) -> Result<String, String> {
    let bad = || "the body is not form-encoded (a bad % escape)".to_owned();
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = b.get(i + 1..i + 3).ok_or_else(bad)?;
                let hex = std::str::from_utf8(hex).map_err(|_| bad())?;
                if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                    return Err(bad());
                }
                out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| "the body's payload is not UTF-8".into())
}

/// The approver a click is: `slack:<team_id>/<user_id>`.
pub fn approver_id(click: &Click) -> String {
    format!("slack:{}/{}", click.team_id, click.user_id)
}

/// The approver as people read it: `@name (slack:T…/U…)`, or the id alone
/// when Slack sent no name.
pub fn approver_display(click: &Click) -> String {
    let id = approver_id(click);
    if click.user_name.is_empty() {
        id
    } else {
        format!("@{} ({id})", click.user_name)
    }
}

/// Whether `[approvals] slack_users` lets `user_id` decide: it lists the
/// id, or `*` (anyone whose click Slack signs).
pub fn allowed(slack_users: &[String], user_id: &str) -> bool {
    slack_users.iter().any(|u| u == "*" || u == user_id)
}

/// The JSON to post to a click's `response_url`, from how deciding it
/// went (`outcome`: the approval's view once decided, or the refusal):
///
/// - decided: the message it was clicked in is replaced
///   (`replace_original`) by the approval as it now stands, without
///   buttons, saying what was decided and by whom ([`approver_display`]);
/// - refused because the approval is no longer pending (the refusal
///   carries its view under `approval`: decided elsewhere, expired,
///   withdrawn): replaced likewise by how it ended;
/// - any other refusal (the user may not decide, the approver is the
///   caller, …): told only to the person who clicked (`ephemeral`), the
///   buttons left for an approver.
///
/// Everything a person or an agent wrote is `plain_text`.
pub fn ack_message(click: &Click, outcome: &Result<Value, ToolError>) -> Value {
    let page = |view: &Value| view["inbox_url"].as_str().unwrap_or_default().to_owned();
    match outcome {
        Ok(view) => replacing(settled_approval_message(
            view,
            click.action.verdict(),
            Some(&approver_display(click)),
            &page(view),
        )),
        Err(e) => {
            let closed = e
                .details
                .as_ref()
                .and_then(|d| d.get("approval"))
                .filter(|v| v["status"].as_str().is_some_and(|s| s != "pending"));
            match closed {
                Some(view) => {
                    let (verdict, by) = verdict(view);
                    replacing(settled_approval_message(view, verdict, by, &page(view)))
                }
                None => refusal(&e.message),
            }
        }
    }
}

fn replacing(mut message: Value) -> Value {
    message["replace_original"] = json!(true);
    message
}

/// A message only the person who clicked sees, saying why nothing changed.
fn refusal(reason: &str) -> Value {
    let reason = cut(
        if reason.trim().is_empty() {
            "refused"
        } else {
            reason
        },
        3000,
    );
    json!({
        "response_type": "ephemeral",
        "replace_original": false,
        "text": format!("Your click was not recorded: {}", escape(&cut(&reason, 500))),
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": "*Your click was not recorded*"}},
            {"type": "section", "text": {"type": "plain_text", "text": reason, "emoji": false}},
        ],
    })
}

#[cfg(test)]
mod tests;
