//! The one call the Cloudflare Worker's dispatcher sends the sandbox Worker
//! (`POST https://sandbox/run`, a JSON [`RunRequest`]) and what comes back
//! (the contract's output, [`crate::outcome::ExecOutput`], checked by
//! `ExecOutput::from_reply` as the native server checks a child's report).
//! Both sides build from this type; [`VERSION`] tells a sandbox Worker
//! deployed apart from its dispatcher that they no longer agree.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The version of [`RunRequest`] this build speaks. A request without one
/// is version 1 (the shape before it was numbered).
pub const VERSION: u32 = 1;

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
    fn a_request_reads_back_and_an_unnumbered_one_is_version_one() {
        let r = RunRequest {
            version: VERSION,
            code: "print(1)".into(),
            timeout_secs: 20,
            memory_mb: 256,
            files: BTreeMap::from([("a.txt".into(), "aGk=".into())]),
            files_cap: 10,
            session: None,
            state_cap: 0,
        };
        let text = serde_json::to_string(&r).unwrap();
        assert!(!text.contains("session"), "{text}");
        assert_eq!(serde_json::from_str::<RunRequest>(&text).unwrap(), r);
        let old: RunRequest =
            serde_json::from_str(r#"{"code": "1", "timeout_secs": 1, "memory_mb": 1}"#).unwrap();
        assert_eq!(old.version, 1);
        assert_eq!(old.refusal(), None);
        let newer = RunRequest { version: 2, ..old };
        assert!(newer.refusal().unwrap().contains("version 2"));
    }
}
