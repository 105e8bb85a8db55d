//! python.execute's `files` (docs/contracts.md#files): what a call may
//! give the script, what it returns, and the form both take between the
//! server and the sandbox. A file is bytes; JSON carries it as text when
//! it is valid UTF-8, else as `{"base64": "..."}`. What makes a name a
//! trap on a client: `names`.

pub mod names;

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use crate::error::ToolError;

/// Total bytes of the files a call may give, and a script return, by
/// default (`TOOLGATE_PYTHON_MAX_FILES_MB`).
pub const DEFAULT_MAX_FILES_MB: u64 = 10;
/// Files one call may give or return.
pub const MAX_COUNT: usize = 1000;
/// A name's length in bytes (a common file system's limit for a whole
/// path is larger; one this long is already no one's file name).
pub const MAX_NAME_BYTES: usize = 255;

/// Files by name, as bytes.
pub type Files = BTreeMap<String, Vec<u8>>;

/// Why `name` is not a file name a call may use: relative, `/`-separated,
/// no empty, `.` or `..` part, no NUL, at most [`MAX_NAME_BYTES`], and no
/// trap on a common client ([`names::trap`]: `\`, `:`, controls,
/// invisible or direction-changing characters, Windows device names).
pub fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("is empty".into());
    }
    if name.len() > MAX_NAME_BYTES {
        return Some("is longer than 255 bytes".into());
    }
    if name.contains('\0') {
        return Some("contains a NUL character".into());
    }
    if name.starts_with('/') {
        return Some("is absolute (names are relative paths, like data/in.csv)".into());
    }
    if name
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Some(
            "has an empty, '.' or '..' part (names are relative paths, like data/in.csv)".into(),
        );
    }
    names::trap(name)
}

/// A file that is also a folder of another (`a` and `a/b`): no file
/// system holds both. Compared as a client that ignores case and
/// normalizes names sees them ([`names::twin_key`]: `A` and `a/b` too).
fn folder_clash(files: &Files) -> Option<(&str, &str)> {
    let keys: BTreeMap<String, &str> = files
        .keys()
        .map(|n| (names::twin_key(n), n.as_str()))
        .collect();
    keys.iter().find_map(|(key, name)| {
        let prefix = format!("{key}/");
        keys.range(prefix.clone()..)
            .next()
            .filter(|(other, _)| other.starts_with(&prefix))
            .map(|(_, other)| (*name, *other))
    })
}

/// Files admitted one by one, as a call gives them and as a sandbox
/// returns them: a name a call may use, the count and the total within
/// their limits, and no file that is also a folder.
struct Admitted {
    files: Files,
    total: u64,
    cap: u64,
}

impl Admitted {
    fn new(count: usize, cap: u64) -> Result<Self, String> {
        if count > MAX_COUNT {
            return Err(format!(
                "\"files\" holds {count} files, over the limit of {MAX_COUNT}"
            ));
        }
        Ok(Self {
            files: Files::new(),
            total: 0,
            cap,
        })
    }

    /// Checked before the content is decoded, so a bad name is named first.
    fn check_name(name: &str) -> Result<(), String> {
        match name_problem(name) {
            Some(why) => Err(format!("file name {} {why}", shown(name))),
            None => Ok(()),
        }
    }

    fn add(&mut self, name: &str, bytes: Vec<u8>) -> Result<(), String> {
        self.total += bytes.len() as u64;
        if self.total > self.cap {
            return Err(format!(
                "\"files\" hold more than {} bytes, the limit (TOOLGATE_PYTHON_MAX_FILES_MB)",
                self.cap
            ));
        }
        self.files.insert(name.to_owned(), bytes);
        Ok(())
    }

    fn finish(self) -> Result<Files, String> {
        if let Some((a, b)) = folder_clash(&self.files) {
            return Err(format!(
                "file {} is also the folder of {}; a name is one or the other",
                shown(a),
                shown(b)
            ));
        }
        if let Some((later, first)) = names::twins(self.files.keys().map(String::as_str)).first() {
            return Err(names::twins_message(first, later));
        }
        Ok(self.files)
    }
}

/// The call's `files`, checked: an object of name → text or
/// `{"base64": "..."}`, at most `cap_bytes` in all. Absent is no files.
pub fn parse_input(value: Option<&Value>, cap_bytes: u64) -> Result<Files, ToolError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(Files::new());
    };
    let obj = value.as_object().ok_or_else(|| {
        r#""files" must be an object of name -> text or {"base64": "..."}"#.to_owned()
    });
    let parsed = obj.and_then(|obj| {
        let mut admitted = Admitted::new(obj.len(), cap_bytes)?;
        for (name, v) in obj {
            Admitted::check_name(name)?;
            let bytes = match v {
                Value::String(text) => text.as_bytes().to_vec(),
                Value::Object(o)
                    if o.len() == 1 && o.get("base64").is_some_and(Value::is_string) =>
                {
                    decode(o["base64"].as_str().unwrap_or_default())
                        .map_err(|e| format!("file {}: base64 is not valid: {e}", shown(name)))?
                }
                _ => {
                    return Err(format!(
                        r#"file {} must be text or {{"base64": "..."}}"#,
                        shown(name)
                    ));
                }
            };
            admitted.add(name, bytes)?;
        }
        admitted.finish()
    });
    parsed.map_err(ToolError::invalid_input)
}

/// Base64, with the line breaks `base64` and MIME wrap it in.
pub fn decode(b64: &str) -> Result<Vec<u8>, base64::DecodeError> {
    // A session's state (megabytes) has none: decode it without a copy.
    if !b64.bytes().any(|b| b.is_ascii_whitespace()) {
        return STANDARD.decode(b64);
    }
    let b64: Vec<u8> = b64.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    STANDARD.decode(b64)
}

/// The output's `files`: text when valid UTF-8, else `{"base64": "..."}`.
pub fn to_json(files: &Files) -> Value {
    let mut obj = Map::new();
    for (name, bytes) in files {
        let v = match std::str::from_utf8(bytes) {
            Ok(text) => Value::String(text.to_owned()),
            Err(_) => json!({ "base64": STANDARD.encode(bytes) }),
        };
        obj.insert(name.clone(), v);
    }
    Value::Object(obj)
}

/// Bytes as standard base64 (a session's state on the wire).
pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Files as the server and the sandbox exchange them: base64 of each.
pub fn to_wire(files: &Files) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(n, b)| (n.clone(), STANDARD.encode(b)))
        .collect()
}

/// Files a sandbox returned, checked as untrusted, as a call's are.
pub fn from_wire(wire: BTreeMap<String, String>, cap_bytes: u64) -> Result<Files, String> {
    let mut admitted = Admitted::new(wire.len(), cap_bytes)?;
    for (name, b64) in wire {
        Admitted::check_name(&name)?;
        let bytes = STANDARD
            .decode(b64)
            .map_err(|e| format!("file {} is not base64: {e}", shown(&name)))?;
        admitted.add(&name, bytes)?;
    }
    admitted.finish()
}

/// Files the server wrote itself (a stored session's, a child's input),
/// only decoded: they were checked when they came in, under the rules of
/// that day, and a rule added since must not make a session's files
/// vanish. A failure is an error, never an empty set.
pub fn decode_wire(wire: BTreeMap<String, String>) -> Result<Files, String> {
    wire.into_iter()
        .map(|(name, b64)| match STANDARD.decode(b64) {
            Ok(bytes) => Ok((name, bytes)),
            Err(e) => Err(format!("file {} is not base64: {e}", shown(&name))),
        })
        .collect()
}

/// Why `added` cannot join `base` (a session's files and a call's, or
/// those a call saw and those its script wrote), naming the files: more
/// than [`MAX_COUNT`] in all (`count_is` says which sets), a file that is
/// a folder of the other side's, or names that differ only in case or
/// Unicode form ([`names::twin_key`]). `base_is` names a file of `base`
/// ("the session's file"). Only what `added` brings counts: a base that
/// already breaks a rule (stored before it existed) is left as it is.
pub fn union_problem(base: &Files, added: &Files, base_is: &str, count_is: &str) -> Option<String> {
    let total = base.len() + added.keys().filter(|n| !base.contains_key(*n)).count();
    if total > MAX_COUNT && total > base.len() {
        return Some(format!(
            "{count_is} are {total} files, over the limit of {MAX_COUNT}"
        ));
    }
    let either = "a name is a file or a folder, not both";
    // As a client that ignores case and normalizes names sees them.
    let keys: BTreeMap<String, &str> = base
        .keys()
        .map(|n| (names::twin_key(n), n.as_str()))
        .collect();
    for name in added.keys() {
        let key = names::twin_key(name);
        let folders = key.match_indices('/').map(|(i, _)| &key[..i]);
        if let Some(folder) = folders.into_iter().find_map(|f| keys.get(f)) {
            return Some(format!(
                "file {} is under {base_is} {}; {either}",
                shown(name),
                shown(folder)
            ));
        }
        let prefix = format!("{key}/");
        if let Some((_, inner)) = keys.range(prefix.clone()..).next()
            && names::twin_key(inner).starts_with(&prefix)
        {
            return Some(format!(
                "file {} is the folder of {base_is} {}; {either}",
                shown(name),
                shown(inner)
            ));
        }
    }
    added
        .keys()
        .filter(|n| !base.contains_key(*n))
        .find_map(|n| Some((n, *keys.get(&names::twin_key(n))?)))
        .map(|(name, twin)| {
            format!(
                "file {} and {base_is} {} differ only in case or Unicode form; a client that \
                 ignores case or normalizes names would keep one",
                shown(name),
                shown(twin)
            )
        })
}

/// A name as a message or a note shows it: the first 80 characters,
/// quoted and escaped.
pub fn shown(name: &str) -> String {
    let cut: String = name.chars().take(80).collect();
    if cut.len() < name.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

/// What a script may return of the files it wrote: names a call could
/// give, within `cap_bytes`. The note (empty when nothing was left out)
/// names each file left out.
pub fn keep_returnable(files: &mut Files, cap_bytes: u64) -> String {
    let mut notes = Vec::new();
    files.retain(|name, _| match name_problem(name) {
        Some(why) => {
            notes.push(format!(
                "[file {} not returned: its name {why}]\n",
                shown(name)
            ));
            false
        }
        None => true,
    });
    while let Some((_, inner)) = folder_clash(files) {
        let inner = inner.to_owned();
        files.remove(&inner);
        notes.push(format!(
            "[file {} not returned: its folder is also a file]\n",
            shown(&inner)
        ));
    }
    let twins: Vec<(String, String)> = names::twins(files.keys().map(String::as_str))
        .into_iter()
        .map(|(later, first)| (later.to_owned(), first.to_owned()))
        .collect();
    for (later, first) in twins {
        files.remove(&later);
        notes.push(format!(
            "[file {} not returned: its name differs from {} only in case or Unicode form]\n",
            shown(&later),
            shown(&first)
        ));
    }
    if files.len() > MAX_COUNT {
        let extra: Vec<String> = files.keys().skip(MAX_COUNT).cloned().collect();
        for name in &extra {
            files.remove(name);
        }
        notes.push(format!(
            "[{} files not returned: a call returns at most {MAX_COUNT} files]\n",
            extra.len()
        ));
    }
    notes.push(cap_output(files, cap_bytes));
    notes.concat()
}

/// Keeps the files a script returns within `cap_bytes`, in name order;
/// the note names each one left out.
pub fn cap_output(files: &mut Files, cap_bytes: u64) -> String {
    let mut total = 0u64;
    let mut dropped = Vec::new();
    files.retain(|name, bytes| {
        total += bytes.len() as u64;
        if total > cap_bytes {
            total -= bytes.len() as u64;
            dropped.push(format!("{} ({} bytes)", shown(name), bytes.len()));
            false
        } else {
            true
        }
    });
    if dropped.is_empty() {
        return String::new();
    }
    format!(
        "[files not returned: {}; the files returned are limited to {cap_bytes} bytes in all]\n",
        dropped.join(", ")
    )
}

#[cfg(test)]
mod tests;
