//! One clarification as it is kept and shown: its status, its fields and
//! times, its unguessable id and the page it is answered on.

use serde_json::{Value, json};

use crate::error::ToolError;

/// Where a clarification stands. A pending one past its expiry reads as expired
/// before the store says so ([`Clarification::status_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Asked, waiting for an answer.
    Pending,
    /// A person answered it.
    Answered,
    /// Nobody answered it before its expiry.
    Expired,
    /// Withdrawn before anyone answered it.
    Cancelled,
}

impl Status {
    /// The status as the contract and the stores write it (`pending`,
    /// `answered`, `expired`, `cancelled`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Answered => "answered",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }
    /// The status [`Self::as_str`] names; `None` for any other text.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "answered" => Self::Answered,
            "expired" => Self::Expired,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }
}

/// One question put to a person, and where it stands, as the store keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Clarification {
    /// 40 lowercase hex characters (160 random bits): whoever holds it may read
    /// and answer.
    pub id: String,
    /// The agent's question: untrusted text, escaped wherever it is shown.
    pub question: String,
    /// The choices offered, possibly none; a person may also answer in their
    /// own words.
    pub options: Vec<String>,
    /// As stored; [`Self::status_at`] is what a reader sees.
    pub status: Status,
    /// The answer's text once answered (the option's text when the person only
    /// picked one).
    pub answer: Option<String>,
    /// The index in `options` of the choice picked, when one was.
    pub choice: Option<usize>,
    /// Unix milliseconds.
    pub created_at: i64,
    /// When it expires unanswered, in Unix milliseconds.
    pub expires_at: i64,
    /// When it was answered, cancelled or expired, in Unix milliseconds.
    pub settled_at: Option<i64>,
    /// A Step Functions task token; never shown to readers.
    pub task_token: Option<String>,
    /// How telling each channel went, by channel then event: `ok` or
    /// `error: …` (see `notify`).
    pub notified: Notified,
}

/// Outcomes of notifications: channel, then event, then `ok` or the error.
pub type Notified = std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>;

impl Clarification {
    /// The status a reader sees now: a pending one past its expiry is expired.
    pub fn status_at(&self, now: i64) -> Status {
        if self.status == Status::Pending && now >= self.expires_at {
            Status::Expired
        } else {
            self.status
        }
    }

    /// The state as `GET /clarifications/{id}` returns it.
    pub fn view(&self, now: i64, base_url: &str) -> Value {
        let status = self.status_at(now);
        let mut v = json!({
            "status": status.as_str(),
            "id": self.id,
            "question": self.question,
            "options": self.options,
            "answer_url": answer_url(base_url, &self.id),
            "expires_at": rfc3339(self.expires_at),
        });
        if status == Status::Answered {
            v["answer"] = json!(self.answer);
            v["choice"] = json!(self.choice);
            v["answered_at"] = json!(self.settled_at.map(rfc3339));
        }
        if status == Status::Cancelled {
            v["cancelled_at"] = json!(self.settled_at.map(rfc3339));
        }
        if !self.notified.is_empty() {
            v["notified"] = json!(self.notified);
        }
        v
    }
}

/// The link a person answers at: `{base_url}/clarifications/{id}/answer`.
pub fn answer_url(base_url: &str, id: &str) -> String {
    format!(
        "{}/clarifications/{id}/answer",
        base_url.trim_end_matches('/')
    )
}

/// The time now in Unix milliseconds (0 for a clock set before 1970).
pub fn now_ms() -> i64 {
    crate::clock::unix_ms()
}

/// `2026-11-30T12:00:00Z` (UTC, whole seconds) from Unix milliseconds.
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// 160 random bits, hex: the id is the capability to read and answer.
pub fn new_id() -> Result<String, ToolError> {
    random_hex::<20>()
}

/// 256 random bits, hex: a secret a store keeps for the deployment.
pub fn new_secret() -> Result<String, ToolError> {
    random_hex::<32>()
}

fn random_hex<const N: usize>() -> Result<String, ToolError> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|e| ToolError::internal(format!("no randomness: {e}")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Whether `id` has the shape of a clarification id (40 lowercase hex).
pub fn valid_id(id: &str) -> bool {
    id.len() == 40
        && id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}
