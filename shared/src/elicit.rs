//! A person asked through the agent's own MCP client (MCP 2026-07-28's
//! multi round-trip requests): what the client declared it can ask (form
//! or URL elicitation), and what its retry brought back, carried to the
//! tool in its call context. A tool that needs an answer
//! returns [`input_required`]; the MCP adapter answers that as an
//! `InputRequiredResult`, and the client calls again with the person's
//! answer and the sealed [`state`] it was given. Nothing is kept between
//! the two calls but the state and what the tool stores anyway, so any
//! instance can take the retry.

use serde_json::{Map, Value, json};

pub mod state;

/// `resultType` of a tool's value that asks for input instead of being a
/// result; only a tool whose context has an [`Elicit`] returns one.
pub const INPUT_REQUIRED: &str = "input_required";

/// A retry's refusal where the key that opens its state cannot be had (a
/// store outage; a deployment that seals none).
pub const STATE_UNREADABLE: &str = "\"requestState\" cannot be opened here now: this deployment's MCP state key is unavailable; call again with it later";

/// How long a retry whose person opened a URL request's page waits for
/// them to act there before asking again.
pub const LINK_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// What such a retry leaves of its transport's deadline for the call.
const RUN_MARGIN: std::time::Duration = std::time::Duration::from_secs(10);

/// [`LINK_WAIT`], less what a transport ending at `deadline` leaves (the
/// call needs the rest).
pub fn link_wait(deadline: Option<crate::clock::Instant>) -> std::time::Duration {
    let Some(deadline) = deadline else {
        return LINK_WAIT;
    };
    let left = deadline.saturating_duration_since(crate::clock::Instant::now());
    LINK_WAIT.min(left.saturating_sub(RUN_MARGIN))
}

/// What the caller's MCP client can ask its person, and what it answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Elicit {
    /// It shows forms (`elicitation.form`, or `elicitation: {}`).
    pub form: bool,
    /// It opens links (`elicitation.url`).
    pub url: bool,
    /// The retry's `inputResponses`, by the keys the tool asked under.
    pub responses: Option<Map<String, Value>>,
    /// The retry's `requestState`, as the client echoed it.
    pub state: Option<String>,
}

impl Elicit {
    /// The response to the request the tool made under `key`, if the
    /// client sent one.
    pub fn response(&self, key: &str) -> Option<&Value> {
        self.responses.as_ref()?.get(key)
    }
}

/// A tool's value asking the client for input: `requests` (each key's
/// `elicitation/create` parameters) and the sealed `state` to echo back.
pub fn input_required(requests: Vec<(&str, Value)>, state: String) -> Value {
    let requests: Map<String, Value> = requests
        .into_iter()
        .map(|(key, params)| {
            (
                key.to_owned(),
                json!({"method": "elicitation/create", "params": params}),
            )
        })
        .collect();
    json!({
        "resultType": INPUT_REQUIRED,
        "inputRequests": requests,
        "requestState": state,
    })
}

/// Whether a tool's value asks for input ([`input_required`]'s).
pub fn is_input_required(v: &Value) -> bool {
    v.get("resultType").and_then(Value::as_str) == Some(INPUT_REQUIRED)
}

/// What a person did with an elicitation (its result's `action`).
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Submitted, with the form's `content` (none in URL mode: the person
    /// went to the link, which says nothing of what they did there).
    Accept(Map<String, Value>),
    /// Refused to answer.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

impl Reply {
    /// An `ElicitResult` as the client sent it; `None` when it is not one.
    pub fn parse(v: &Value) -> Option<Self> {
        match v.get("action")?.as_str()? {
            "accept" => Some(Self::Accept(
                v.get("content")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            )),
            "decline" => Some(Self::Decline),
            "cancel" => Some(Self::Cancel),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_read_from_the_clients_result() {
        assert_eq!(
            Reply::parse(&json!({"action": "accept", "content": {"choice": "yes"}})),
            Some(Reply::Accept(
                json!({"choice": "yes"}).as_object().unwrap().clone()
            ))
        );
        assert_eq!(
            Reply::parse(&json!({"action": "accept"})),
            Some(Reply::Accept(Map::new()))
        );
        assert_eq!(
            Reply::parse(&json!({"action": "decline"})),
            Some(Reply::Decline)
        );
        assert_eq!(
            Reply::parse(&json!({"action": "cancel"})),
            Some(Reply::Cancel)
        );
        assert_eq!(Reply::parse(&json!({"action": "maybe"})), None);
        assert_eq!(Reply::parse(&json!("accept")), None);
    }

    #[test]
    fn input_required_is_mcps_shape() {
        let v = input_required(vec![("answer", json!({"mode": "form"}))], "s".into());
        assert!(is_input_required(&v));
        assert_eq!(
            v,
            json!({"resultType": "input_required",
                   "inputRequests": {"answer": {"method": "elicitation/create", "params": {"mode": "form"}}},
                   "requestState": "s"})
        );
        assert!(!is_input_required(&json!({"status": "pending"})));
    }
}
