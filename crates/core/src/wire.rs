//! The one call the Cloudflare Worker's dispatcher sends the sandbox Worker
//! (`POST https://sandbox/run`, a JSON [`RunRequest`]) and what comes back
//! (the contract's output, [`crate::outcome::ExecOutput`], checked by
//! `ExecOutput::from_reply` as the native server checks a child's report).
//! Both sides build from this type; [`VERSION`] tells a sandbox Worker
//! deployed apart from its dispatcher that they no longer agree.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The version of [`RunRequest`] this build speaks. A request without one
/// is version 1 (the shape before it was numbered); 2 added code mode
/// (`tools`, `seed`, `exchanges`).
pub const VERSION: u32 = 2;

fn first() -> u32 {
    1
}

/// One script, as the sandbox Worker runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRequest {
    /// [`VERSION`] of the sender.
    #[serde(default = "first")]
    pub version: u32,
    /// The source.
    pub code: String,
    /// Seconds the script may run.
    pub timeout_secs: u64,
    /// The memory it may grow to, in MB.
    pub memory_mb: u64,
    /// The call's files, base64 by name (`files::to_wire`).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// The files the script may return, in bytes in all.
    #[serde(default)]
    pub files_cap: u64,
    /// A session's saved state, base64 (empty: a new session); absent
    /// outside a session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The most state a session may save, in bytes.
    #[serde(default)]
    pub state_cap: u64,
    /// Code mode: the script may call tools (`toolgate` is importable).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tools: bool,
    /// Code mode: `random`'s seed (32 hex digits), the same on every run of
    /// one call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// Code mode: the tool requests an earlier run of this call made, in
    /// order, with their answers. The script runs again from the start;
    /// its first requests are answered from these, and at the first one
    /// past them (or one that differs) it stops, and the reply's
    /// `tool_request` ([`ToolRequest`]) holds it for the dispatcher.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exchanges: Vec<Exchange>,
}

/// One tool request of a script and its answer (both JSON text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// What the script sent.
    pub request: String,
    /// What the server answered.
    pub answer: String,
}

/// A reply's `tool_request`: the script stopped at its request number
/// `index` (from 0), which no exchange answered (`index` = their count) or
/// which differs from the recorded one (`index` below it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRequest {
    /// The request's place among the script's requests.
    pub index: usize,
    /// What the script sent.
    pub request: String,
}

impl RunRequest {
    /// Why this side cannot run `self`: a sender of another version.
    pub fn refusal(&self) -> Option<String> {
        (self.version != VERSION).then(|| {
            format!(
                "the dispatcher speaks sandbox request version {}, this sandbox Worker {VERSION}: deploy the two together",
                self.version
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_and_an_unnumbered_one_is_version_one_and_refused() {
        let r = RunRequest {
            version: VERSION,
            code: "print(1)".into(),
            timeout_secs: 20,
            memory_mb: 256,
            files: BTreeMap::from([("a.txt".into(), "aGk=".into())]),
            files_cap: 10,
            session: None,
            state_cap: 0,
            tools: false,
            seed: None,
            exchanges: Vec::new(),
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(!text.contains("session"), "{text}");
        assert_eq!(serde_json::from_str::<RunRequest>(&text).unwrap(), r);
        let old: RunRequest =
            serde_json::from_str(r#"{"code": "1", "timeout_secs": 1, "memory_mb": 1}"#).unwrap();
        assert_eq!(old.version, 1);
        assert!(old.refusal().unwrap().contains("version 1"));
        let newer = RunRequest { version: 3, ..old };
        assert!(newer.refusal().unwrap().contains("version 3"));
        assert_eq!(
            RunRequest {
                version: VERSION,
                ..newer
            }
            .refusal(),
            None
        );
        // Code mode's fields, when set, read back.
        let with_calls = RunRequest {
            tools: true,
            seed: Some("0f".repeat(16)),
            exchanges: vec![Exchange {
                request: r#"{"call": "clarify"}"#.into(),
                answer: r#"{"ok": 1}"#.into(),
            }],
            ..r
        };
        let text = serde_json::to_string(&with_calls).unwrap();
        assert_eq!(
            serde_json::from_str::<RunRequest>(&text).unwrap(),
            with_calls
        );
    }
}
