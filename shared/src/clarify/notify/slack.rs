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

    fn send<'a>(&'a self, event: Event, body: &'a Value) -> Sent<'a> {
        Box::pin(async move {
            let bytes = serde_json::to_vec(&message_for(event, body, self.interactive))
                .map_err(|e| e.to_string())?;
            self.to.send(&bytes, Vec::new).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef01234567";
    const PAGE: &str = "https://t.example/inbox/0123456789abcdef0123456789abcdef01234567";

    fn units(v: &Value) -> usize {
        v.as_str().unwrap().encode_utf16().count()
    }

    /// Slack's documented limits on what these messages use: the caller
    /// of every test below checks its messages with this.
    fn within_slacks_limits(m: &Value) {
        assert!(!m["text"].as_str().unwrap().is_empty());
        let blocks = m["blocks"].as_array().unwrap();
        assert!(blocks.len() <= MAX_BLOCKS, "{} blocks", blocks.len());
        let mut ids = std::collections::HashSet::new();
        for b in blocks {
            match b["type"].as_str().unwrap() {
                "section" => {
                    let t = &b["text"]["text"];
                    assert!(units(t) <= SECTION_CHARS, "a section of {}", units(t));
                    assert!(!t.as_str().unwrap().trim().is_empty(), "an empty section");
                }
                "context" => {
                    let e = b["elements"].as_array().unwrap();
                    assert!(!e.is_empty() && e.len() <= 10);
                }
                "actions" => {
                    let e = b["elements"].as_array().unwrap();
                    assert!(!e.is_empty() && e.len() <= 25);
                    for button in e {
                        assert!(ids.insert(button["action_id"].as_str().unwrap().to_owned()));
                        assert!((1..=75).contains(&units(&button["text"]["text"])));
                        if let Some(u) = button.get("url") {
                            assert!(units(u) <= 3000);
                        }
                        if let Some(v) = button.get("value") {
                            assert!((1..=2000).contains(&units(v)));
                        }
                        if let Some(c) = button.get("confirm") {
                            assert!(units(&c["title"]["text"]) <= 100);
                            assert!(units(&c["text"]["text"]) <= 300);
                            assert!(units(&c["confirm"]["text"]) <= 30);
                            assert!(units(&c["deny"]["text"]) <= 30);
                        }
                    }
                }
                other => panic!("unexpected block {other}"),
            }
        }
    }

    fn approval(command: &str) -> Value {
        json!({
            "id": ID, "kind": "approval", "status": "pending",
            "summary": "Run a command on web-1 (deploy@10.0.0.5)",
            "tool": "ssh_run", "target": "web-1", "caller": "token-0123456789ab",
            "details": [
                {"label": "Command", "text": command, "code": true},
                {"label": "Intent", "text": "Restart the app"},
                {"label": "Needs approval because", "text": "policy: restarts"},
                {"label": "Host key", "text": "SHA256:abc"},
            ],
            "expires_at": "2026-12-03T00:00:00Z", "ref": "ref:0123456789abcdef",
            "inbox_url": PAGE,
        })
    }

    /// Every `plain_text` section's text after the block whose text is
    /// `*{label}*`…, up to the next label: a field's text as shown.
    fn field_text(m: &Value, label: &str) -> String {
        let blocks = m["blocks"].as_array().unwrap();
        let start = blocks
            .iter()
            .position(|b| {
                b["text"]["type"] == "mrkdwn"
                    && b["text"]["text"]
                        .as_str()
                        .unwrap()
                        .starts_with(&format!("*{label}*"))
            })
            .unwrap();
        blocks[start + 1..]
            .iter()
            .take_while(|b| b["text"]["type"] == "plain_text")
            .map(|b| b["text"]["text"].as_str().unwrap())
            .collect()
    }

    fn buttons(m: &Value) -> Vec<Value> {
        m["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "actions")
            .flat_map(|b| b["elements"].as_array().unwrap().clone())
            .collect()
    }

    #[test]
    fn an_approval_carries_approve_and_reject_or_a_link_to_the_page() {
        let mut v = approval("systemctl restart app");
        v["summary"] = json!("<!channel> *Run* <https://evil|this>");
        let m = message_for(Event::Created, &v, true);
        within_slacks_limits(&m);
        assert_eq!(
            m["text"],
            "Approval needed: &lt;!channel&gt; *Run* &lt;https://evil|this&gt;"
        );
        assert_eq!(m["blocks"][1]["text"]["type"], "plain_text");
        assert_eq!(field_text(&m, "Command"), "systemctl restart app");
        assert_eq!(field_text(&m, "Needs approval because"), "policy: restarts");
        let b = buttons(&m);
        assert_eq!(b.len(), 2);
        assert_eq!(
            (&b[0]["action_id"], &b[0]["value"], &b[0]["style"]),
            (&json!(APPROVE_ACTION), &json!(ID), &json!("primary"))
        );
        assert_eq!(
            (&b[1]["action_id"], &b[1]["value"], &b[1]["style"]),
            (&json!(REJECT_ACTION), &json!(ID), &json!("danger"))
        );
        assert_eq!(b[1]["confirm"]["confirm"]["text"], "Reject");
        assert!(b.iter().all(|b| b.get("url").is_none()));
        // Anything a caller wrote is plain text, never mrkdwn.
        let s = m.to_string();
        assert_eq!(s.matches("<!channel>").count(), 1);

        let m = message(Event::Created, &v);
        within_slacks_limits(&m);
        let b = buttons(&m);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0]["text"]["text"], "Review and decide");
        assert_eq!(b[0]["url"], PAGE);
        // The link the channel was given wins (link-holder mode's).
        let mut linked = v.clone();
        linked["approval_url"] = json!(format!("{PAGE}#cap=c4f3"));
        let m = message(Event::Created, &linked);
        assert_eq!(buttons(&m)[0]["url"], format!("{PAGE}#cap=c4f3"));
        assert!(!m.to_string().contains(APPROVE_ACTION));

        // The reason, kept apart from the fields, gets a box of its own.
        let mut v = approval("ls");
        v["details"].as_array_mut().unwrap().remove(2);
        v["why"] = json!("policy: restarts\nHost key: fake");
        let m = approval_message(&v, true, PAGE);
        within_slacks_limits(&m);
        assert_eq!(
            field_text(&m, "Needs approval because"),
            "policy: restarts\nHost key: fake"
        );
    }

    #[test]
    fn a_long_command_is_shown_whole_across_sections() {
        let command: String = (0..2000)
            .map(|i| format!("echo {i:05};"))
            .collect::<Vec<_>>()
            .join(" ");
        let m = approval_message(&approval(&command), true, PAGE);
        within_slacks_limits(&m);
        assert!(command.chars().count() > 3 * SECTION_CHARS);
        assert_eq!(field_text(&m, "Command"), command);
        assert!(!m.to_string().contains("not shown"));
        assert_eq!(buttons(&m)[0]["action_id"], APPROVE_ACTION);

        // Characters beyond the basic plane count twice where Slack counts
        // UTF-16: still within a section's limit, still whole.
        let emoji = "😀".repeat(4000);
        let m = approval_message(&approval(&emoji), true, PAGE);
        within_slacks_limits(&m);
        assert_eq!(field_text(&m, "Command"), emoji);
    }

    #[test]
    fn past_slacks_limits_it_says_how_much_is_not_shown_and_links_the_page() {
        let command = "x".repeat(200_000);
        let m = approval_message(&approval(&command), true, PAGE);
        within_slacks_limits(&m);
        assert_eq!(m["blocks"].as_array().unwrap().len(), MAX_BLOCKS - 1);
        let shown = field_text(&m, "Command").chars().count();
        assert!(shown > 100_000, "{shown}");
        let hidden = 200_000 - shown;
        let s = m.to_string();
        assert!(
            s.contains(&format!("*{hidden} characters are not shown here* (Slack's limits): review the whole request on the page before deciding.")),
            "{s:.600}"
        );
        assert!(s.contains(&format!(
            "_{hidden} of its 200000 characters are not shown here._"
        )));
        // The later fields keep their boxes.
        assert_eq!(field_text(&m, "Host key"), "SHA256:abc");
        // Approve only what is shown whole: review on the page, or reject.
        let b = buttons(&m);
        let ids: Vec<&str> = b.iter().map(|b| b["action_id"].as_str().unwrap()).collect();
        assert_eq!(ids, [REVIEW_ACTION, REJECT_ACTION]);
        assert_eq!(b[0]["url"], PAGE);

        // Without interactivity: the same line, and the link.
        let m = approval_message(&approval(&command), false, PAGE);
        within_slacks_limits(&m);
        assert_eq!(buttons(&m).len(), 1);
        assert!(m.to_string().contains("characters are not shown here"));

        // Many fields: each keeps its box while blocks last.
        let mut v = approval("ls");
        v["details"] = json!(
            (0..40)
                .map(|i| json!({"label": format!("F{i}"), "text": "y".repeat(5000)}))
                .collect::<Vec<_>>()
        );
        let m = approval_message(&v, true, PAGE);
        within_slacks_limits(&m);
        assert!(m.to_string().contains("characters are not shown here"));
    }

    #[test]
    fn invisible_characters_are_marked_and_warned_of() {
        let command = "echo safe\u{202E}\u{200B}; rm -rf /\u{7}";
        let m = approval_message(&approval(command), true, PAGE);
        within_slacks_limits(&m);
        let shown = field_text(&m, "Command");
        assert!(
            !shown.contains('\u{202E}') && !shown.contains('\u{200B}') && !shown.contains('\u{7}')
        );
        assert!(
            shown.contains("⟨U+202E") && shown.contains("⟨U+200B") && shown.contains("⟨U+0007"),
            "{shown}"
        );
        let s = m.to_string();
        assert_eq!(s.matches("Look closely: this text holds").count(), 1, "{s}");
        let head = m["blocks"][2]["text"]["text"].as_str().unwrap();
        assert!(
            head.starts_with("*Command*\n:warning: _Look closely"),
            "{head}"
        );
        // Nothing is cut: approving stays possible.
        assert_eq!(buttons(&m)[0]["action_id"], APPROVE_ACTION);
    }

    #[test]
    fn later_events_say_how_the_approval_ended() {
        let mut v = approval("ls");
        v["status"] = json!("approved");
        v["approver"] = json!("slack:T1/U2");
        let m = message_for(Event::Answered, &v, true);
        within_slacks_limits(&m);
        assert_eq!(
            m["text"],
            "Approved: Run a command on web-1 (deploy@10.0.0.5)"
        );
        assert_eq!(m["blocks"][0]["text"]["text"], "*Approved*:");
        assert_eq!(m["blocks"][2]["elements"][0]["text"], "by slack:T1/U2");
        v["status"] = json!("rejected");
        let m = message(Event::Answered, &v);
        assert_eq!(m["blocks"][0]["text"]["text"], "*Rejected*:");
        for (event, status, head) in [
            (Event::Expired, "expired", "*Expired undecided*:"),
            (Event::Cancelled, "withdrawn", "*Withdrawn*:"),
        ] {
            v["status"] = json!(status);
            let m = message(event, &v);
            within_slacks_limits(&m);
            assert_eq!(m["blocks"][0]["text"]["text"], head);
            assert!(buttons(&m).is_empty());
        }
        // Settled in place of the clicked message: no buttons, who decided.
        v["status"] = json!("approved");
        let m = settled_approval_message(&v, "Approved", Some("@amy (slack:T1/U2)"), PAGE);
        within_slacks_limits(&m);
        assert!(buttons(&m).is_empty());
        assert_eq!(
            m["blocks"][1]["elements"][0]["text"],
            "by @amy (slack:T1/U2)"
        );
        assert_eq!(field_text(&m, "Command"), "ls");
    }

    #[test]
    fn hostile_text_stays_plain_and_within_slacks_limits() {
        let body = json!({
            "question": "<!channel> *deploy* <https://evil|click>",
            "options": ["x".repeat(200), "no"],
            "answer_url": "https://t.example/clarifications/ab/answer",
            "expires_at": "2026-12-03T00:00:00Z",
        });
        let m = message(Event::Created, &body);
        assert_eq!(
            m["text"],
            "An agent asks: &lt;!channel&gt; *deploy* &lt;https://evil|click&gt;"
        );
        assert_eq!(m["blocks"][1]["text"]["type"], "plain_text");
        let buttons = m["blocks"][2]["elements"].as_array().unwrap();
        assert_eq!(buttons.len(), 3);
        assert_eq!(
            buttons[0]["text"]["text"].as_str().unwrap().chars().count(),
            75
        );
        assert_eq!(
            buttons[1]["url"],
            "https://t.example/clarifications/ab/answer?choice=1"
        );
    }
}
