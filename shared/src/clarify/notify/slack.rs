//! Slack: an incoming-webhook message in Block Kit. For a new question: the
//! question, each option as a link button to the answer page (which opens
//! with that option picked; a GET never answers, so link previews cannot),
//! a button to answer in one's own words, and the expiry. For the later
//! events, how it ended. The agent's text goes in `plain_text` objects, so
//! it cannot mention `@channel` or format links.
//!
//! An approval (a view with `kind: "approval"`) reads as
//! docs/approvals.md ("What approvers see") says approvers see it: the summary, each field
//! in a labelled box of its own, the whole text (visible markers for
//! invisible characters) up to Slack's limits, and past them how many
//! characters are not shown with a link to the page. With the Slack app's
//! signing secret configured (`interactive`) it carries Approve / Reject
//! buttons that Slack posts to `POST /slack/interactions`
//! (`approvals::slack`); without, a link to the page.

use serde_json::{Value, json};

use super::post::Target;
use super::{Channel, Event, Listener, Sent};

/// Slack's limits: a button's text, a `plain_text` section, the fallback.
const BUTTON_CHARS: usize = 75;
const SECTION_CHARS: usize = 3000;

/// `s` cut to `max` characters, the last an ellipsis when cut.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut t: String = s.chars().take(max - 1).collect();
    t.push('…');
    t
}

/// `&`, `<` and `>` as Slack's `mrkdwn` wants them (the fallback text).
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn plain(text: &str) -> Value {
    json!({"type": "plain_text", "text": cut(text, SECTION_CHARS), "emoji": false})
}

/// The message for `event` (`body` is [`super::event_json`]), with a link
/// to the page for an approval.
pub fn message(event: Event, body: &Value) -> Value {
    message_for(event, body, false)
}

/// The message for `event`; a new approval carries Approve / Reject
/// buttons when `interactive` (the Slack app's signing secret is set, so
/// `POST /slack/interactions` can take their clicks).
pub fn message_for(event: Event, body: &Value, interactive: bool) -> Value {
    if body["kind"] == "approval" {
        // The link this channel is given (in link-holder mode, the
        // capability link), else the inbox.
        let page = body["approval_url"]
            .as_str()
            .or_else(|| body["inbox_url"].as_str())
            .unwrap_or_default();
        return match event {
            Event::Created => approval_message(body, interactive, page),
            _ => approval_event_message(event, body),
        };
    }
    let question = body["question"].as_str().unwrap_or_default();
    let url = body["answer_url"].as_str().unwrap_or_default();
    let expires = body["expires_at"].as_str().unwrap_or_default();
    let mut blocks = vec![json!({"type": "section", "text": plain(question)})];
    let text = match event {
        Event::Created => {
            let mut buttons: Vec<Value> = body["options"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, o)| {
                    json!({
                        "type": "button",
                        "action_id": format!("choice-{i}"),
                        "text": {"type": "plain_text", "text": cut(o.as_str().unwrap_or_default(), BUTTON_CHARS)},
                        "url": format!("{url}?choice={i}"),
                    })
                })
                .collect();
            buttons.push(json!({
                "type": "button",
                "action_id": "answer",
                "style": "primary",
                "text": {"type": "plain_text", "text": "Answer"},
                "url": url,
            }));
            blocks.insert(
                0,
                json!({"type": "section", "text": {"type": "mrkdwn", "text": "*An agent asks you:*"}}),
            );
            blocks.push(json!({"type": "actions", "elements": buttons}));
            blocks.push(json!({
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": format!("Open until {expires}")}],
            }));
            format!("An agent asks: {}", escape(&cut(question, 500)))
        }
        Event::Answered => {
            let answer = body["answer"].as_str().unwrap_or_default();
            blocks.insert(
                0,
                json!({"type": "section", "text": {"type": "mrkdwn", "text": "*Answered:*"}}),
            );
            blocks.push(json!({"type": "section", "text": plain(answer)}));
            format!("Answered: {}", escape(&cut(answer, 500)))
        }
        Event::Expired | Event::Cancelled => {
            let how = if event == Event::Expired {
                "Expired unanswered"
            } else {
                "Withdrawn"
            };
            blocks.insert(
                0,
                json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("*{how}:*")}}),
            );
            format!("{how}: {}", escape(&cut(question, 500)))
        }
    };
    json!({"text": text, "blocks": blocks})
}

/// The action id of the Approve button.
pub const APPROVE_ACTION: &str = "toolgate_approve";
/// The action id of the Reject button.
pub const REJECT_ACTION: &str = "toolgate_reject";
/// A link button to the page: Slack posts its clicks too (the route
/// acknowledges and ignores them).
const REVIEW_ACTION: &str = "toolgate_review";

/// Slack's limit on a message's blocks.
const MAX_BLOCKS: usize = 50;
/// The blocks an approval message may have besides its fields: the head,
/// who decided, the summary, the "not shown" line, the buttons, the context.
const FRAME_BLOCKS: usize = 6;
/// The fallback text's length (the notification's preview).
const FALLBACK_CHARS: usize = 500;

/// `text` as approvers see it: invisible and deceptive characters as
/// visible markers, at most `max_chars` characters, and how many of
/// `text`'s characters are not shown.
fn visible(text: &str, max_chars: usize) -> (String, usize) {
    crate::approvals::shown::visible_plain(text, max_chars)
}

/// A label of ours in bold `mrkdwn`, with nothing in it that could
/// format or link.
fn bold(label: &str) -> String {
    let clean: String = escape(label)
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '~' | '`' | '\n'))
        .collect();
    format!("*{}*", clean.trim())
}

fn mrkdwn_section(text: String) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": text}})
}

/// A `plain_text` section of text already within [`SECTION_CHARS`].
fn plain_section(text: &str) -> Value {
    json!({"type": "section", "text": {"type": "plain_text", "text": text, "emoji": false}})
}

/// `text` in pieces of at most [`SECTION_CHARS`] UTF-16 units (how Slack
/// may count), at character boundaries.
fn sections_of(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut start, mut units) = (0, 0);
    for (i, c) in text.char_indices() {
        if units + c.len_utf16() > SECTION_CHARS {
            pieces.push(&text[start..i]);
            (start, units) = (i, 0);
        }
        units += c.len_utf16();
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// The labelled fields of an approval view: `details`, and `why` when no
/// field holds it.
fn fields(view: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = view["details"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| {
            let text = d["text"].as_str()?;
            let label = d["label"].as_str().filter(|l| !l.trim().is_empty());
            Some((label.unwrap_or("Detail").to_owned(), text.to_owned()))
        })
        .collect();
    if let Some(why) = view["why"].as_str().filter(|w| !w.is_empty())
        && !out.iter().any(|(_, t)| t == why)
    {
        out.push(("Needs approval because".into(), why.to_owned()));
    }
    out
}

/// The fields' boxes within `budget` blocks: each a bold label, then its
/// whole visible text in as many `plain_text` sections as it needs and
/// the budget allows; and how many characters are not shown.
fn field_blocks(fields: &[(String, String)], budget: usize) -> (Vec<Value>, usize) {
    let (mut blocks, mut not_shown, mut left) = (Vec::new(), 0, budget);
    for (i, (label, text)) in fields.iter().enumerate() {
        if left < 2 {
            not_shown += text.chars().count();
            continue;
        }
        // Every later field keeps room for its label and one section.
        let later = 2 * (fields.len() - i - 1);
        let room = left.saturating_sub(1 + later).max(1);
        let (shown, mut rest) = visible(text, room * SECTION_CHARS);
        let mut pieces = sections_of(&shown);
        for dropped in pieces.split_off(pieces.len().min(room)) {
            rest += dropped.chars().count();
        }
        let mut head = bold(label);
        if let Some(w) = crate::approvals::shown::warning(text) {
            // Ours, from a fixed table: safe as mrkdwn once escaped.
            head.push_str(&format!("\n:warning: _{}_", escape(&w).replace('_', " ")));
        }
        if rest > 0 {
            let total = text.chars().count();
            head.push_str(&format!(
                "\n_{rest} of its {total} characters are not shown here._"
            ));
        }
        blocks.push(mrkdwn_section(head));
        let pieces: Vec<&str> = pieces
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .collect();
        if pieces.is_empty() {
            let what = if text.is_empty() { "empty" } else { "blank" };
            blocks.push(mrkdwn_section(format!("_({what})_")));
        }
        left -= 1 + pieces.len().max(1);
        blocks.extend(pieces.into_iter().map(plain_section));
        not_shown += rest;
    }
    (blocks, not_shown)
}

fn link_button(text: &str, url: &str) -> Value {
    json!({
        "type": "button",
        "action_id": REVIEW_ACTION,
        "text": {"type": "plain_text", "text": text},
        "url": url,
    })
}

/// How an approval that is no longer pending ended, from its view: the
/// verdict (`Approved`, …) and who decided.
pub fn verdict(view: &Value) -> (&'static str, Option<&str>) {
    let by = view["approver"].as_str();
    match view["status"].as_str().unwrap_or_default() {
        "approved" => ("Approved", by),
        "rejected" => ("Rejected", by),
        "expired" => ("Expired undecided", None),
        "withdrawn" => ("Withdrawn", None),
        "pending" => ("Pending", None),
        _ => ("Closed", by),
    }
}

/// The approval message: `pending` carries the buttons (or, when not
/// `interactive`, a link to `page_url`); a settled one says
/// `verdict` and `by` instead.
fn approval_blocks(
    view: &Value,
    page_url: &str,
    settled: Option<(&str, Option<&str>)>,
    interactive: bool,
) -> Value {
    let (summary, summary_rest) = visible(
        view["summary"].as_str().unwrap_or("An agent's call"),
        SECTION_CHARS,
    );
    let fallback_summary = cut(&summary, FALLBACK_CHARS);
    let mut blocks = vec![match settled {
        None => mrkdwn_section("*An agent's call needs a person's approval*".into()),
        Some((verdict, _)) => mrkdwn_section(bold(verdict)),
    }];
    if let Some((_, Some(by))) = settled {
        let by = visible(by, 200).0;
        blocks.push(json!({
            "type": "context",
            "elements": [{"type": "plain_text", "text": format!("by {by}"), "emoji": false}],
        }));
    }
    blocks.push(plain_section(if summary.trim().is_empty() {
        "(no summary)"
    } else {
        &summary
    }));
    let (boxes, fields_rest) = field_blocks(&fields(view), MAX_BLOCKS - FRAME_BLOCKS);
    blocks.extend(boxes);
    let not_shown = summary_rest + fields_rest;
    let pending = settled.is_none();
    if not_shown > 0 {
        let where_ = if page_url.is_empty() {
            "in Toolgate's inbox"
        } else {
            "on the page"
        };
        let then = if pending { " before deciding" } else { "" };
        blocks.push(mrkdwn_section(format!(
            "*{not_shown} characters are not shown here* (Slack's limits): \
             review the whole request {where_}{then}."
        )));
    }
    let mut buttons = Vec::new();
    let id = view["id"].as_str().unwrap_or_default();
    if pending && interactive {
        // Approve only what the message shows whole.
        if not_shown == 0 {
            buttons.push(json!({
                "type": "button",
                "action_id": APPROVE_ACTION,
                "text": {"type": "plain_text", "text": "Approve"},
                "style": "primary",
                "value": id,
            }));
        } else if !page_url.is_empty() {
            buttons.push(link_button("Review on the page", page_url));
        }
        buttons.push(json!({
            "type": "button",
            "action_id": REJECT_ACTION,
            "text": {"type": "plain_text", "text": "Reject"},
            "style": "danger",
            "value": id,
            "confirm": {
                "title": {"type": "plain_text", "text": "Reject this call?"},
                "text": {"type": "plain_text", "text": "The agent's call will not run."},
                "confirm": {"type": "plain_text", "text": "Reject"},
                "deny": {"type": "plain_text", "text": "Cancel"},
                "style": "danger",
            },
        }));
    } else if !page_url.is_empty() && (pending || not_shown > 0) {
        let text = if pending {
            "Review and decide"
        } else {
            "Review on the page"
        };
        let mut b = link_button(text, page_url);
        if pending {
            b["style"] = json!("primary");
        }
        buttons.push(b);
    }
    if !buttons.is_empty() {
        blocks.push(json!({"type": "actions", "elements": buttons}));
    }
    let mut context = Vec::new();
    if let Some(caller) = view["caller"].as_str().filter(|c| !c.is_empty()) {
        let caller = visible(caller, 200).0;
        context.push(
            json!({"type": "plain_text", "text": format!("Requested by {caller}"), "emoji": false}),
        );
    }
    if pending && let Some(expires) = view["expires_at"].as_str() {
        context.push(json!({"type": "mrkdwn", "text": format!("Open until {}", escape(expires))}));
    }
    if let Some(r) = view["ref"].as_str().filter(|r| !r.is_empty()) {
        context.push(json!({"type": "mrkdwn", "text": escape(r)}));
    }
    if !context.is_empty() {
        blocks.push(json!({"type": "context", "elements": context}));
    }
    let text = match settled {
        None => format!("Approval needed: {}", escape(&fallback_summary)),
        Some((verdict, _)) => format!("{verdict}: {}", escape(&fallback_summary)),
    };
    json!({"text": text, "blocks": blocks})
}

/// A new approval's message, from its view (docs/approvals.md, "What approvers see"):
/// the summary, each field in a box of its own, the whole text up to
/// Slack's limits (past them, how many characters are not shown and a link
/// to `page_url`). With `interactive`, Approve and Reject buttons carrying
/// the approval's id (Approve only when nothing is cut); without, one link
/// button to `page_url`, where approvers sign in to decide.
pub fn approval_message(view: &Value, interactive: bool, page_url: &str) -> Value {
    approval_blocks(view, page_url, None, interactive)
}

/// The approval message once decided, expired or withdrawn: as
/// [`approval_message`] without buttons, headed by `verdict` (`Approved`,
/// …) and `by` (who decided). It replaces the message its buttons were
/// clicked in (`approvals::slack::ack_message`).
pub fn settled_approval_message(
    view: &Value,
    verdict: &str,
    by: Option<&str>,
    page_url: &str,
) -> Value {
    approval_blocks(view, page_url, Some((verdict, by)), false)
}

/// A later event of an approval, in the shape of a question's: how it
/// ended, the summary, and who decided.
fn approval_event_message(event: Event, view: &Value) -> Value {
    let (verdict, by) = match event {
        Event::Expired => ("Expired undecided", None),
        Event::Cancelled => ("Withdrawn", None),
        Event::Created | Event::Answered => verdict(view),
    };
    let summary = view["summary"].as_str().unwrap_or_default();
    let (shown, _) = visible(summary, SECTION_CHARS);
    let mut blocks = vec![
        mrkdwn_section(format!("{}:", bold(verdict))),
        plain_section(if shown.trim().is_empty() {
            "(no summary)"
        } else {
            &shown
        }),
    ];
    if let Some(by) = by {
        let by = visible(by, 200).0;
        blocks.push(json!({
            "type": "context",
            "elements": [{"type": "plain_text", "text": format!("by {by}"), "emoji": false}],
        }));
    }
    let fallback = cut(&shown, FALLBACK_CHARS);
    json!({"text": format!("{verdict}: {}", escape(&fallback)), "blocks": blocks})
}

/// A Slack incoming webhook.
pub struct Slack {
    /// Its name and events.
    pub listener: Listener,
    /// The incoming webhook (its URL is its credential).
    pub to: Target,
    /// Approvals carry Approve / Reject buttons: a Slack app with
    /// interactivity lets the listed Slack users decide.
    pub interactive: bool,
}

impl Channel for Slack {
    fn listener(&self) -> &Listener {
        &self.listener
    }

    fn address(&self) -> super::Address<'_> {
        super::Address::Url(&self.to.url)
    }

    fn send<'a>(&'a self, event: Event, body: &'a Value) -> Sent<'a> {
        Box::pin(async move {
            let bytes = serde_json::to_vec(&message_for(event, body, self.interactive))
                .map_err(|e| e.to_string())?;
            self.to.send(&bytes, Vec::new).await
        })
    }
}

#[cfg(test)]
mod tests;
