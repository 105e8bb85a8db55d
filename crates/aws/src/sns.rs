//! SNS on AWS: each event published to a topic, for its email and SMS
//! subscribers (one message per protocol: the email has the question, the
//! options and the link; the SMS is short). The `event` message attribute
//! lets a subscription's filter policy choose its events.

use aws_sdk_sns::Client;
use aws_sdk_sns::types::MessageAttributeValue;
use serde_json::{Value, json};

use toolgate_shared::clarify::notify::{Channel, Event, Listener, Sent};

/// An SNS topic.
pub struct Sns {
    /// Its name and events.
    pub listener: Listener,
    /// The topic published to.
    pub topic_arn: String,
    client: Client,
}

impl Sns {
    /// A client from the environment's AWS config, for `topic_arn`.
    pub async fn from_env(listener: Listener, topic_arn: String) -> Self {
        let conf = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Self {
            listener,
            topic_arn,
            client: Client::new(&conf),
        }
    }
}

/// The most of one field an approval's email shows; the page shows all.
const EMAIL_FIELD_CHARS: usize = 20_000;

/// An approval's subject and messages: the summary and every field, made
/// visible (controls and bidi overrides as markers) and never cut without
/// saying so, and the link to review it.
fn approval_messages(event: Event, body: &Value) -> (&'static str, Value) {
    let summary = body["summary"].as_str().unwrap_or_default();
    let url = body["approval_url"].as_str().unwrap_or_default();
    let status = body["status"].as_str().unwrap_or_default();
    let mut text = format!("{summary}\n\n");
    for f in body["details"].as_array().into_iter().flatten() {
        let (shown, left) = toolgate_shared::approvals::shown::visible_plain(
            f["text"].as_str().unwrap_or_default(),
            EMAIL_FIELD_CHARS,
        );
        text.push_str(&format!(
            "{}:\n{shown}\n",
            f["label"].as_str().unwrap_or_default()
        ));
        if left > 0 {
            text.push_str(&format!("[{left} more characters: see the page]\n"));
        }
        text.push('\n');
    }
    let short: String = summary.chars().take(100).collect();
    let (subject, email, sms) = match event {
        Event::Created => (
            "Toolgate: a call waits for your approval",
            format!(
                "A call waits for an approver:\n\n{text}Review and decide: {url}\nOpen until {}.\n",
                body["expires_at"].as_str().unwrap_or_default()
            ),
            format!("Toolgate approval: {short} Review: {url}"),
        ),
        _ => (
            "Toolgate: an approval was settled",
            format!(
                "{status} ({}):\n\n{text}",
                body["approver"].as_str().unwrap_or("no approver")
            ),
            format!("Toolgate: {status}: {short}"),
        ),
    };
    (
        subject,
        json!({"default": email, "email": email, "sms": sms}),
    )
}

/// The subject (fixed text: SNS allows no line breaks, under 100 chars) and
/// the per-protocol messages for `event`.
pub fn messages(event: Event, body: &Value) -> (&'static str, Value) {
    if body["kind"] == "approval" {
        return approval_messages(event, body);
    }
    let q = body["question"].as_str().unwrap_or_default();
    let url = body["answer_url"].as_str().unwrap_or_default();
    let short: String = q.chars().take(100).collect();
    let (subject, email, sms) = match event {
        Event::Created => {
            let options: Vec<String> = body["options"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|o| format!("  - {o}"))
                .collect();
            let choices = if options.is_empty() {
                String::new()
            } else {
                format!("\nOptions:\n{}\n", options.join("\n"))
            };
            (
                "Toolgate: an agent asks you a question",
                format!(
                    "An agent asks:\n\n{q}\n{choices}\nAnswer here: {url}\nOpen until {}.\n",
                    body["expires_at"].as_str().unwrap_or_default()
                ),
                format!("Toolgate question: {short} Answer: {url}"),
            )
        }
        Event::Answered => {
            let a = body["answer"].as_str().unwrap_or_default();
            (
                "Toolgate: a question was answered",
                format!("The question\n\n{q}\n\nwas answered: {a}\n"),
                format!(
                    "Toolgate: answered: {}",
                    a.chars().take(100).collect::<String>()
                ),
            )
        }
        Event::Expired => (
            "Toolgate: a question expired unanswered",
            format!("Nobody answered in time:\n\n{q}\n"),
            format!("Toolgate: expired unanswered: {short}"),
        ),
        Event::Cancelled => (
            "Toolgate: a question was withdrawn",
            format!("Withdrawn:\n\n{q}\n"),
            format!("Toolgate: withdrawn: {short}"),
        ),
    };
    (
        subject,
        json!({"default": email, "email": email, "sms": sms}),
    )
}

impl Channel for Sns {
    fn listener(&self) -> &Listener {
        &self.listener
    }

    fn send<'a>(&'a self, event: Event, body: &'a Value) -> Sent<'a> {
        Box::pin(async move {
            let (subject, message) = messages(event, body);
            let attr = MessageAttributeValue::builder()
                .data_type("String")
                .string_value(event.as_str())
                .build()
                .map_err(|e| e.to_string())?;
            self.client
                .publish()
                .topic_arn(&self.topic_arn)
                .subject(subject)
                .message_structure("json")
                .message(message.to_string())
                .message_attributes("event", attr)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    format!(
                        "SNS publish: {}",
                        aws_sdk_sns::error::DisplayErrorContext(e)
                    )
                })
        })
    }
}
