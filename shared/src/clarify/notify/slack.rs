//! Slack: an incoming-webhook message in Block Kit. For a new question: the
//! question, each option as a link button to the answer page (which opens
//! with that option picked; a GET never answers, so link previews cannot),
//! a button to answer in one's own words, and the expiry. For the later
//! events, how it ended. The agent's text goes in `plain_text` objects, so
//! it cannot mention `@channel` or format links.

use serde_json::{Value, json};

use super::post::Target;
use super::{Channel, Event, Listener, Sent};

/// Slack's limits: a button's text, a `plain_text` section, the fallback.
const BUTTON_CHARS: usize = 75;
const SECTION_CHARS: usize = 3000;

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut t: String = s.chars().take(max - 1).collect();
    t.push('…');
    t
}

/// `&`, `<` and `>` as Slack's `mrkdwn` wants them (the fallback text).
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn plain(text: &str) -> Value {
    json!({"type": "plain_text", "text": cut(text, SECTION_CHARS), "emoji": false})
}

/// The message for `event` (`body` is [`super::event_json`]).
pub fn message(event: Event, body: &Value) -> Value {
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

/// A Slack incoming webhook.
pub struct Slack {
    /// Its name and events.
    pub listener: Listener,
    /// The incoming webhook (its URL is its credential).
    pub to: Target,
}

impl Channel for Slack {
    fn listener(&self) -> &Listener {
        &self.listener
    }

    fn send<'a>(&'a self, event: Event, body: &'a Value) -> Sent<'a> {
        Box::pin(async move {
            let bytes = serde_json::to_vec(&message(event, body)).map_err(|e| e.to_string())?;
            self.to.send(&bytes, Vec::new).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
