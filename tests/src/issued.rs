//! The values the suite's Toolgate processes issued or were given: ids,
//! capabilities, links, task tokens, bearer tokens and secrets, appended to
//! `$TOOLGATE_TEST_LOG_DIR/issued.tsv` (`kind`, `value`, test binary; tab,
//! newline, CR and backslash escaped as `\t`, `\n`, `\r`, `\\`). The scan
//! (`tests/support/scan_logs.py`) fails the run if any of them is in a log
//! ([`crate::logsink`]). The harness records what it sees by itself
//! (responses it parses, tokens in the env and config it builds), so that no
//! test has to remember; [`record`] is for what it cannot see. Unset,
//! nothing is recorded.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

/// Keys whose string values in a response are ids or capabilities. Session
/// ids are capabilities too (docs/contracts.md, "Sessions").
const ID_KEYS: [&str; 7] = [
    "id",
    "approval",
    "capability",
    "task_token",
    "answer_url",
    "approval_url",
    "session",
];

/// The longest value recorded; longer ones are cut.
const MAX_CHARS: usize = 4096;

/// Records `value` as issued (`kind` says what it is), once per process.
pub fn record(kind: &str, value: &str) {
    let Some(dir) = crate::logsink::dir() else {
        return;
    };
    if value.is_empty() {
        return;
    }
    // Nothing Toolgate issues is longer; a hostile test's megabyte header
    // is still found by its start.
    let value = match value.char_indices().nth(MAX_CHARS) {
        Some((i, _)) => &value[..i],
        None => value,
    };
    static SEEN: OnceLock<Mutex<HashSet<(String, String)>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if !seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert((kind.to_owned(), value.to_owned()))
    {
        return;
    }
    let line = format!(
        "{}\t{}\t{}\n",
        escape(kind),
        escape(value),
        crate::logsink::test_binary()
    );
    let path = dir.join("issued.tsv");
    // One append per line: concurrent writers (threads, test binaries) do
    // not split each other's lines.
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .unwrap_or_else(|e| panic!("cannot record to {}: {e}", path.display()));
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\t', "\\t")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

/// Records the id-like values of a parsed response: string values under
/// [`ID_KEYS`], clarification and approval ids inside links, `#cap=`
/// capabilities, and the same within strings that are JSON themselves (an
/// MCP result's text).
pub fn record_json(v: &Value) {
    if crate::logsink::dir().is_none() {
        return;
    }
    walk(v, 0);
}

fn walk(v: &Value, depth: usize) {
    // Deep enough for any real response; a hostile one stops here.
    if depth > 64 {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if let Value::String(s) = v {
                    if ID_KEYS.contains(&k.as_str()) {
                        record(k, s);
                    } else if k == "message" {
                        record_text(s);
                    }
                }
                walk(v, depth + 1);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| walk(v, depth + 1)),
        Value::String(s) => {
            record_links(s);
            let t = s.trim_start();
            if (t.starts_with('{') || t.starts_with('['))
                && let Ok(inner) = serde_json::from_str::<Value>(s)
            {
                walk(&inner, depth + 1);
            }
        }
        _ => {}
    }
}

/// The ids in `/clarifications/<40 hex>`, `/approval-links/<40 hex>` and
/// `/inbox/<40 hex>`, and the capability after `#cap=`, anywhere in `s`.
pub fn record_links(s: &str) {
    for prefix in ["/clarifications/", "/approval-links/", "/inbox/"] {
        for (i, _) in s.match_indices(prefix) {
            let rest = &s[i + prefix.len()..];
            let hex = rest.bytes().take_while(|b| b.is_ascii_hexdigit()).count();
            if hex == 40 {
                record(&format!("id in {prefix}"), &rest[..40]);
            }
        }
    }
    for (i, _) in s.match_indices("#cap=") {
        let rest = &s[i + "#cap=".len()..];
        let n = rest
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || b"-_.~%+/=".contains(b))
            .count();
        record("capability in #cap=", &rest[..n]);
    }
}

/// Records the ids in an answer's prose (an error message: "Approval
/// 3f…9a waits…"): every 40-hex word, and links as [`record_links`] does.
pub fn record_text(s: &str) {
    record_links(s);
    let hex = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
    for word in s.split(|c: char| !c.is_ascii_alphanumeric()) {
        if word.len() == 40 && word.chars().all(hex) {
            record("40-hex id in a message", word);
        }
    }
}

/// Records what a response body holds: JSON, or server-sent events whose
/// `data:` lines are JSON.
pub fn record_body(body: &[u8]) {
    if crate::logsink::dir().is_none() {
        return;
    }
    let text = String::from_utf8_lossy(body);
    let t = text.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        if let Ok(v) = serde_json::from_str::<Value>(t) {
            walk(&v, 0);
        }
        return;
    }
    for data in text.lines().filter_map(|l| l.strip_prefix("data:")) {
        if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
            walk(&v, 0);
        }
    }
    record_links(&text);
}

/// Records the task tokens (Step Functions issued them; Toolgate must not
/// log them either) and `authorization` headers (a Lambda event's) of a
/// request the test sends.
pub fn record_request_json(v: &Value) {
    if crate::logsink::dir().is_none() {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match v {
                    Value::String(s) if k == "task_token" => record(k, s),
                    Value::String(s) => record_header(k, s),
                    _ => record_request_json(v),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(record_request_json),
        _ => {}
    }
}

/// Whether an environment variable or config key names a secret: a token
/// or a secret, but not the name of a variable that holds one (`*_ENV`).
fn secret_key(key: &str) -> bool {
    let k = key.to_ascii_uppercase();
    // `…_ENV` and `…_PARAMETER` name where a secret is, not the secret.
    // An OTLP collector's headers carry its API key.
    (k.contains("TOKEN")
        || k.contains("SECRET")
        || k.contains("PASSWORD")
        || (k.starts_with("OTEL_EXPORTER_OTLP") && k.ends_with("HEADERS")))
        && !k.ends_with("_ENV")
        && !k.ends_with("_PARAMETER")
}

/// Records `value` if `key` (an environment variable) names a secret.
pub fn record_env(key: &str, value: &str) {
    if secret_key(key) {
        record(&format!("env {key}"), value);
    }
}

/// Records the secrets of a TOML config the harness writes or passes:
/// each `token = "…"`, `secret = "…"` and the like (basic strings).
pub fn record_config(text: &str) {
    if crate::logsink::dir().is_none() {
        return;
    }
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        let value = value.trim();
        if !secret_key(key) {
            continue;
        }
        // A basic or literal string, the rest of the line after it ignored.
        let Some(q) = value.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        if let Some(end) = value[1..].find(q) {
            record(&format!("config {key}"), &value[1..1 + end]);
        }
    }
}

/// Records the bearer token of an `Authorization` header.
pub fn record_header(name: &str, value: &str) {
    if name.eq_ignore_ascii_case("authorization") {
        let token = value.split_once(' ').map_or(value, |(_, t)| t).trim();
        record("bearer token", token);
    }
}
