//! A waiting script's journal: what it needs to go on from the call it
//! waits on, in a fresh process, on any instance, later. The script runs
//! again from the start; its earlier calls are answered from here (never
//! run twice), in order, each checked against the call the script makes
//! (the tool and a hash of its arguments): a script that takes another
//! path is stopped at the first call that differs.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approvals::{canonical, sha256_hex};

/// The journal's shape; a journal of another is refused.
const VERSION: u32 = 1;

/// One answered call.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// The tool's canonical name.
    pub tool: String,
    /// SHA-256 of its arguments as canonical JSON.
    pub args: String,
    /// The reply the script got: `{"ok": …}` or `{"error": …}`.
    pub answer: Value,
}

/// What the call the script stopped on waits for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum On {
    /// An approval: the call runs under it once approved (its id goes in
    /// the tool's `argument`).
    Approval {
        /// The approval's id.
        id: String,
        /// The tool's argument that names it (`approval`,
        /// `toolgate_approval`).
        argument: String,
        /// The approval as the tool's `approval_required` showed it.
        shown: Value,
        /// The gate's message.
        message: String,
    },
    /// A person's answer to what the call asked (clarify's question).
    Answer {
        /// What the person answers (clarify: the question's id).
        id: String,
        /// The tool's answer, pending.
        shown: Value,
    },
}

/// The call a script stopped on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Wait {
    /// The tool's canonical name.
    pub tool: String,
    /// SHA-256 of its arguments as canonical JSON (without the approval).
    pub args: String,
    /// What it waits for.
    pub on: On,
}

impl Wait {
    /// The `waiting` field of python.execute's answer.
    pub fn shown(&self, tool: &str) -> Value {
        match &self.on {
            On::Approval { shown, message, .. } => serde_json::json!({
                "for": "approval",
                "tool": tool,
                "approval": shown,
                "message": message,
            }),
            On::Answer { shown, .. } => serde_json::json!({
                "for": "answer",
                "tool": tool,
                "clarification": shown,
            }),
        }
    }

    /// The id a person settles.
    pub fn id(&self) -> &str {
        match &self.on {
            On::Approval { id, .. } | On::Answer { id, .. } => id,
        }
    }
}

/// What is kept while a script waits.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Journal {
    /// [`VERSION`].
    pub version: u32,
    /// SHA-256 of the script: a resume must send the same one.
    pub code: String,
    /// SHA-256 of its files as sent (canonical JSON), for the same reason.
    pub files: String,
    /// `random`'s seed, 32 hex digits.
    pub seed: String,
    /// The calls answered before the one it waits on, in order.
    pub calls: Vec<Entry>,
    /// The call it waits on.
    pub waiting: Wait,
}

impl Journal {
    /// The journal of `code` run with `files`, seeded with `seed`, which
    /// made `calls` and waits at `waiting`.
    pub fn new(code: &str, files: &Value, seed: u128, calls: Vec<Entry>, waiting: Wait) -> Self {
        Self {
            version: VERSION,
            code: sha256_hex(code),
            files: files_hash(files),
            seed: format!("{seed:032x}"),
            calls,
            waiting,
        }
    }

    /// As stored.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A stored journal; `None` when it is not one this version reads.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice::<Self>(bytes)
            .ok()
            .filter(|j| j.version == VERSION)
    }

    /// `random`'s seed.
    pub fn seed(&self) -> Option<u128> {
        u128::from_str_radix(&self.seed, 16).ok()
    }

    /// Why a resume of this journal with `code` and `files` is refused:
    /// the script was edited, or its files differ.
    pub fn refuses(&self, code: &str, files: &Value) -> Option<&'static str> {
        if sha256_hex(code) != self.code {
            Some(
                "the code differs from the script that waits (resume with the same code, or run the new script without \"resume\")",
            )
        } else if files_hash(files) != self.files {
            Some("the files differ from the script's that waits (resume with the same files)")
        } else {
            None
        }
    }
}

/// SHA-256 of `files` as canonical JSON.
fn files_hash(files: &Value) -> String {
    sha256_hex(&canonical(files))
}

/// SHA-256 of a call's arguments as canonical JSON.
pub fn args_hash(args: &Value) -> String {
    sha256_hex(&canonical(args))
}

/// Where a resumed script stands against its journal.
#[derive(Debug, Default)]
pub struct Replay {
    /// Recorded calls not yet made again.
    pub left: VecDeque<Entry>,
    /// The call to go on with once they are.
    pub resume: Option<Wait>,
    /// Calls made so far (the journal's first).
    pub made: usize,
}

/// What a call the script makes meets in its replay.
#[derive(Debug)]
pub enum Step {
    /// Not replaying (or past it): run the call.
    Live,
    /// Answered from the journal.
    Recorded(Entry),
    /// The call it waited on: go on with it.
    Resume(Wait),
    /// The script took another path here.
    Diverged(String),
}

impl Replay {
    pub fn of(journal: Journal) -> Self {
        Self {
            left: journal.calls.into(),
            resume: Some(journal.waiting),
            made: 0,
        }
    }

    /// The next call the script makes, `tool` with arguments hashing to
    /// `args`, against the journal.
    pub fn step(&mut self, tool: &str, args: &str) -> Step {
        let n = self.made + 1;
        if let Some(e) = self.left.pop_front() {
            self.made = n;
            return if e.tool == tool && e.args == args {
                Step::Recorded(e)
            } else {
                Step::Diverged(diverged(n, tool, &e.tool, e.tool == tool))
            };
        }
        match self.resume.take() {
            Some(w) if w.tool == tool && w.args == args => {
                self.made = n;
                Step::Resume(w)
            }
            Some(w) => Step::Diverged(diverged(n, tool, &w.tool, w.tool == tool)),
            None => Step::Live,
        }
    }

    /// Why a script that ended here took another path: it never reached
    /// the call it waited on.
    pub fn unfinished(&self) -> Option<String> {
        let next = self
            .left
            .front()
            .map(|e| e.tool.as_str())
            .or(self.resume.as_ref().map(|w| w.tool.as_str()))?;
        Some(format!(
            "The resumed script took another path: it ended after {} tool calls, where the journal has call {} ({next}) next; nothing after the journal ran",
            self.made,
            self.made + 1
        ))
    }
}

fn diverged(n: usize, tool: &str, recorded: &str, same_tool: bool) -> String {
    let what = if same_tool {
        format!("{tool} with other arguments than the journal's")
    } else {
        format!("{tool} where the journal has {recorded}")
    };
    format!(
        "The resumed script took another path at tool call {n}: it called {what}; \
         calls before it were answered from the journal, nothing after it ran"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wait() -> Wait {
        Wait {
            tool: "ssh_run".into(),
            args: args_hash(&json!({"server_name": "a", "command": "x"})),
            on: On::Approval {
                id: "i".into(),
                argument: "approval".into(),
                shown: json!({}),
                message: String::new(),
            },
        }
    }

    fn entry(tool: &str, args: Value) -> Entry {
        Entry {
            tool: tool.into(),
            args: args_hash(&args),
            answer: json!({"ok": 1}),
        }
    }

    #[test]
    fn a_replay_answers_the_same_calls_and_stops_at_the_first_that_differs() {
        let j = Journal::new(
            "print(1)",
            &json!({}),
            7,
            vec![
                entry("list_servers", json!({})),
                entry("ssh_run", json!({"a": 1})),
            ],
            wait(),
        );
        let back = Journal::from_bytes(&j.to_bytes()).unwrap();
        assert_eq!(back, j);
        assert_eq!(back.seed(), Some(7));
        assert!(back.refuses("print(1)", &json!({})).is_none());
        assert!(back.refuses("print(2)", &json!({})).is_some());
        assert!(back.refuses("print(1)", &json!({"f": "eA=="})).is_some());

        let mut r = Replay::of(j.clone());
        assert!(matches!(
            r.step("list_servers", &args_hash(&json!({}))),
            Step::Recorded(_)
        ));
        // Key order does not matter; values do.
        assert!(matches!(
            r.step("ssh_run", &args_hash(&json!({"a": 1}))),
            Step::Recorded(_)
        ));
        assert!(r.unfinished().is_some(), "it has not reached its wait");
        let w = r.step(
            "ssh_run",
            &args_hash(&json!({"command": "x", "server_name": "a"})),
        );
        assert!(matches!(w, Step::Resume(_)));
        assert!(matches!(r.step("clarify", "h"), Step::Live));
        assert!(r.unfinished().is_none());

        let mut r = Replay::of(j.clone());
        let Step::Diverged(why) = r.step("ssh_run", &args_hash(&json!({}))) else {
            panic!("a different first call must diverge");
        };
        assert!(
            why.contains("tool call 1") && why.contains("where the journal has list_servers"),
            "{why}"
        );
        let mut r = Replay::of(j);
        r.step("list_servers", &args_hash(&json!({})));
        let Step::Diverged(why) = r.step("ssh_run", &args_hash(&json!({"a": 2}))) else {
            panic!("other arguments must diverge");
        };
        assert!(
            why.contains("tool call 2") && why.contains("other arguments"),
            "{why}"
        );
        assert!(Journal::from_bytes(b"{}").is_none());
        assert!(Journal::from_bytes(b"").is_none());
    }
}
