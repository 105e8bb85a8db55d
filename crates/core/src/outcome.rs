//! How one python.execute call ended, in the contract's shape
//! (docs/contracts.md#pythonexecute): the output, the rules its `result`
//! must meet, and the notes added to stderr. Built by the native sandbox,
//! the Worker's sandbox module and the tool alike; a leaf, so that none of
//! them imports another to reach it.

use std::time::Duration;

use serde_json::Value;

/// One finished call, in the contract's shape.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ExecOutput {
    /// What the script printed, its head and tail kept past `truncate::LIMIT`
    /// characters.
    pub stdout: String,
    /// What the script wrote to stderr (its traceback included), cut the same
    /// way, with the sandbox's notes appended.
    pub stderr: String,
    /// 0 on success, 1 on an exception, -1 on timeout; `SystemExit(n)` gives n.
    pub exit_code: i64,
    /// Stopped at its deadline.
    pub timed_out: bool,
    /// The script's `result` variable (its repr as a string when it is not
    /// JSON); `None` when unset or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The files the script created or changed, as the contract writes
    /// them (`files::to_json`); absent when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Value>,
    /// The session the call ran in, to pass back as `session`; absent
    /// outside one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Time the child spent from request to report (not part of the contract).
    #[serde(skip)]
    pub child_us: u64,
    /// A session call's state after the script, for the server to store
    /// (not part of the output); `None` outside a session or when not saved.
    #[serde(skip)]
    pub state: Option<Vec<u8>>,
    /// The script ran to its end and the sandbox reported it (not part of
    /// the output): false for a timeout, a memory or interpreter death,
    /// or no report. Decided by the sandbox, never read from what the
    /// script printed.
    #[serde(skip)]
    pub finished: bool,
}

/// [`ExecOutput`] as another process sends it, the result still raw.
#[derive(serde::Deserialize)]
struct Reply {
    stdout: String,
    stderr: String,
    exit_code: i64,
    timed_out: bool,
    #[serde(default)]
    result: Option<Box<serde_json::value::RawValue>>,
    #[serde(default)]
    files: Option<Value>,
    #[serde(default)]
    session_state: Option<String>,
}

impl ExecOutput {
    /// A failed run with nothing printed, for a note to explain.
    pub fn failed() -> Self {
        Self {
            stdout: String::new(),
            stderr: String::new(),
            exit_code: 1,
            timed_out: false,
            result: None,
            files: None,
            child_us: 0,
            state: None,
            session: None,
            finished: false,
        }
    }

    /// The output another process (the Worker's sandbox) sent as JSON,
    /// checked: the contract's shape, a result that reads back exactly
    /// ([`parse_result`]), files as a call may give them, at most
    /// `files_cap` bytes, a session state (`session_state`, base64) of at
    /// most `state_cap` bytes. The error says what was wrong.
    pub fn from_reply(bytes: &[u8], files_cap: u64, state_cap: u64) -> Result<Self, String> {
        let r: Reply = serde_json::from_slice(bytes).map_err(|e| format!("not an output: {e}"))?;
        let result = match r.result {
            Some(raw) => Some(parse_result(raw.get()).map_err(|why| format!("its result {why}"))?),
            None => None,
        };
        let files = match r.files {
            Some(v) => {
                let f = crate::files::parse_input(Some(&v), files_cap)
                    .map_err(|e| format!("its files: {}", e.message))?;
                (!f.is_empty()).then(|| crate::files::to_json(&f))
            }
            None => None,
        };
        let state = match r.session_state {
            Some(b64) => {
                let s = crate::files::decode(&b64)
                    .map_err(|e| format!("its session state is not base64: {e}"))?;
                if s.len() as u64 > state_cap {
                    return Err(format!("its session state is over {state_cap} bytes"));
                }
                Some(s)
            }
            None => None,
        };
        Ok(Self {
            stdout: crate::truncate::truncate(&r.stdout),
            stderr: crate::truncate::truncate(&r.stderr),
            exit_code: r.exit_code,
            timed_out: r.timed_out,
            result,
            files,
            child_us: 0,
            state,
            session: None,
            // The sandbox Worker replies once the script has ended in its
            // hands; its own timer's answer is a timeout.
            finished: !r.timed_out,
        })
    }

    /// The answer for a script stopped at its deadline, keeping what it printed.
    pub fn timed_out(stdout: String, stderr: String, timeout: Duration) -> Self {
        let mut out = Self {
            stdout,
            stderr,
            exit_code: -1,
            timed_out: true,
            result: None,
            files: None,
            child_us: 0,
            state: None,
            session: None,
            finished: false,
        };
        out.add_note(&timeout_note(timeout));
        out
    }

    /// Appends a line from the sandbox (timeout, memory) to stderr, on a
    /// line of its own and within the stream's limit.
    pub fn add_note(&mut self, note: &str) {
        if note.is_empty() {
            return;
        }
        if !self.stderr.is_empty() && !self.stderr.ends_with('\n') {
            self.stderr.push('\n');
        }
        self.stderr.push_str(note);
        self.stderr = crate::truncate::truncate(&self.stderr);
    }
}

/// The script's `result` from the JSON text a sandbox reported, checked as
/// the contract needs it: valid JSON that reads back exactly (see
/// [`result_problem`]). The sandbox's own process is not trusted to have
/// checked.
pub fn parse_result(text: &str) -> Result<Value, &'static str> {
    match result_problem(text) {
        Some(why) => Err(why),
        None => serde_json::from_str(text).map_err(|_| "is not valid JSON"),
    }
}

/// Nesting a result may have: every transport wraps it (the reply object,
/// a Lambda payload, the Worker's envelope), and serde_json refuses
/// documents nested past 128, so a result at 127 would pass here and be
/// lost there.
pub const MAX_RESULT_DEPTH: usize = 120;

/// Why JSON `text` would not read back exactly as the contract's JSON, if it
/// would not: every transport holds the result parsed, and parsed JSON here
/// cannot hold an integer beyond 64 bits (it would become an inexact float),
/// a lone surrogate, nesting deeper than [`MAX_RESULT_DEPTH`], or two
/// members with the same key (`{1: 'a', '1': 'b'}` dumps both as `"1"`).
pub fn result_problem(text: &str) -> Option<&'static str> {
    const BIG_INT: &str =
        "holds an integer beyond 64 bits, which JSON would carry as an inexact float";
    const DEEP: &str = "is nested deeper than JSON can carry here (120 levels)";
    let shape = scan(text);
    let parsed = match serde_json::from_str::<Value>(text) {
        Ok(v) => v,
        // serde_json refuses a number past f64's range as a syntax error, so
        // our own scan names the cause first.
        Err(e) => {
            return Some(if shape.big_integer {
                BIG_INT
            } else if shape.depth > MAX_RESULT_DEPTH || e.to_string().contains("recursion limit") {
                DEEP
            } else if has_surrogate_escape(text) {
                "holds a lone surrogate, which JSON text cannot carry"
            } else {
                "is not valid JSON"
            });
        }
    };
    if shape.big_integer {
        Some(BIG_INT)
    } else if shape.depth > MAX_RESULT_DEPTH {
        Some(DEEP)
    } else if shape.members != members(&parsed) {
        Some("has keys that are equal as JSON strings, so JSON would keep only one")
    } else {
        None
    }
}

/// Whether `text` has a `\uD800`–`\uDFFF` escape (only asked of text that
/// failed to parse, where such an escape is the lone half of a pair).
fn has_surrogate_escape(text: &str) -> bool {
    text.as_bytes().windows(4).any(|w| {
        w[0] == b'\\'
            && w[1] == b'u'
            && w[2].eq_ignore_ascii_case(&b'd')
            && matches!(w[3].to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'f')
    })
}

/// What one pass over JSON text finds outside its strings.
#[derive(Debug, Default, PartialEq)]
struct Shape {
    /// An integer literal that fits neither `i64` nor `u64` (a number with
    /// `.`, `e` or `E` is a float).
    big_integer: bool,
    /// The deepest nesting of arrays and objects.
    depth: usize,
    /// Object members written (one `:` each).
    members: usize,
}

fn scan(text: &str) -> Shape {
    let b = text.as_bytes();
    let mut shape = Shape::default();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'[' | b'{' => {
                depth += 1;
                shape.depth = shape.depth.max(depth);
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b':' => {
                shape.members += 1;
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                let token = &text[start..i];
                let float = token.contains(['.', 'e', 'E']);
                if !float && token.parse::<i64>().is_err() && token.parse::<u64>().is_err() {
                    shape.big_integer = true;
                }
            }
            _ => i += 1,
        }
    }
    shape
}

/// Object members in a parsed value (duplicates already merged).
fn members(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.len() + m.values().map(members).sum::<usize>(),
        Value::Array(a) => a.iter().map(members).sum(),
        _ => 0,
    }
}

/// The stderr note of a call stopped at its deadline (docs/contracts.md#sandbox-limits).
pub fn timeout_note(timeout: Duration) -> String {
    format!("[Execution timed out after {}s]", timeout.as_secs().max(1))
}

/// The stderr line of a script stopped at the memory limit.
pub fn memory_note(memory_mb: u64) -> String {
    format!("MemoryError: the script exceeded the sandbox memory limit of {memory_mb} MB\n")
}

#[cfg(test)]
mod tests;
