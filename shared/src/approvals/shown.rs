//! What a person sees of untrusted text (a command, a tool's arguments, an
//! agent's question) before approving or answering: the whole text, with
//! every character that cannot be seen, or that makes the text read
//! differently from what runs, shown as a visible marker (`⟨U+202E RLO⟩`,
//! `⟨1495 spaces⟩`), and a warning naming what was found
//! (docs/approvals.md, "What approvers see").
//!
//! Marked: C0 controls but `\n` and `\t`, DEL, C1 controls, bidi controls,
//! zero-width and other invisible characters, tag characters, spaces that
//! are not U+0020 (they read as a space but a shell does not split on
//! them), line and paragraph separators, variation selectors that follow
//! no emoji-like character (a run of them can carry hidden text), and runs
//! of more than [`MAX_RUN`] spaces, tabs or line breaks.
//!
//! The inbox page does the same in its script (the text arrives there as
//! JSON): [`names_json`] hands it this module's table, and
//! tests/fixtures/visible_cases.json holds cases both must agree on.

/// Longest run of spaces, tabs or line breaks shown as it is.
pub const MAX_RUN: usize = 8;

mod chars;

use chars::{Kind, RANGES, TABLES};

/// How one marked character is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Named {
    short: Option<&'static str>,
    name: &'static str,
    kind: Kind,
}

fn is_variation_selector(c: char) -> bool {
    matches!(c, '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}')
}

/// How `c` is marked, ignoring variation selectors (which depend on the
/// character before) and runs; `None` for a character shown as it is.
fn special(c: char) -> Option<Named> {
    let cp = c as u32;
    for (table, kind) in TABLES {
        if let Ok(i) = table.binary_search_by_key(&cp, |e| e.0) {
            let (_, short, name) = table[i];
            return Some(Named {
                short: Some(short).filter(|s| !s.is_empty()),
                name,
                kind: if cp == 0x202E { Kind::Rlo } else { kind },
            });
        }
    }
    RANGES
        .iter()
        .find(|r| (r.0..=r.1).contains(&cp))
        .map(|&(_, _, name, kind)| Named {
            short: None,
            name,
            kind,
        })
}

/// A variation selector is shown as it is only right after a character
/// that can carry one: not ASCII, not marked, not another selector. Emoji
/// (`❤️`) and CJK variants keep theirs; a run hiding data does not.
fn bare_selector(prev: Option<char>) -> bool {
    match prev {
        Some(p) => p.is_ascii() || is_variation_selector(p) || special(p).is_some(),
        None => true,
    }
}

/// One piece of text as shown.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    /// Shown as it is.
    Text(&'a str),
    /// A marker standing for `chars` characters of the text.
    Mark {
        label: String,
        title: String,
        chars: usize,
    },
}

fn run_marker(c: char, run: &str) -> Option<Piece<'_>> {
    let n = run.chars().count();
    if n <= MAX_RUN {
        return None;
    }
    let label = match c {
        '\n' => format!("{n} line breaks"),
        _ if run.bytes().all(|b| b == b' ') => format!("{n} spaces"),
        _ if run.bytes().all(|b| b == b'\t') => format!("{n} tabs"),
        _ => format!("{n} spaces and tabs"),
    };
    Some(Piece::Mark {
        title: format!("{label} in a row"),
        label: format!("⟨{label}⟩"),
        chars: n,
    })
}

fn char_marker(c: char, named: Option<Named>) -> Piece<'static> {
    let cp = c as u32;
    let name = named.map_or("VARIATION SELECTOR", |n| n.name);
    let label = match named.and_then(|n| n.short) {
        Some(s) => format!("⟨U+{cp:04X} {s}⟩"),
        None => format!("⟨U+{cp:04X}⟩"),
    };
    Piece::Mark {
        label,
        title: format!("U+{cp:04X} {name}"),
        chars: 1,
    }
}

/// `text` cut into pieces shown as they are and markers, with what was
/// found: kinds of marked characters, and the longest run marked.
fn pieces(text: &str) -> (Vec<Piece<'_>>, Vec<Kind>, Option<String>) {
    let mut out = Vec::new();
    let mut kinds = Vec::new();
    let mut longest: Option<(usize, String)> = None;
    let mut plain_from = 0;
    let mut prev: Option<char> = None;
    let mut iter = text.char_indices().peekable();
    while let Some((at, c)) = iter.next() {
        let mut end = at + c.len_utf8();
        let piece = if matches!(c, ' ' | '\t' | '\n') {
            // The whole run of blanks of this sort (spaces and tabs mix).
            let blank = |d: char| {
                if c == '\n' {
                    d == '\n'
                } else {
                    d == ' ' || d == '\t'
                }
            };
            while let Some(&(i, d)) = iter.peek() {
                if !blank(d) {
                    break;
                }
                end = i + d.len_utf8();
                iter.next();
            }
            let run = &text[at..end];
            let marked = run_marker(c, run);
            if let Some(Piece::Mark { chars, title, .. }) = &marked
                && longest.as_ref().is_none_or(|l| *chars > l.0)
            {
                longest = Some((*chars, title.clone()));
            }
            prev = run.chars().next_back();
            marked
        } else {
            let named = special(c);
            let marked = if let Some(n) = named {
                kinds.push(n.kind);
                Some(char_marker(c, named))
            } else if is_variation_selector(c) && bare_selector(prev) {
                kinds.push(Kind::Invisible);
                Some(char_marker(c, None))
            } else {
                None
            };
            prev = Some(c);
            marked
        };
        if let Some(m) = piece {
            if plain_from < at {
                out.push(Piece::Text(&text[plain_from..at]));
            }
            out.push(m);
            plain_from = end;
        }
    }
    if plain_from < text.len() {
        out.push(Piece::Text(&text[plain_from..]));
    }
    kinds.sort();
    kinds.dedup();
    (out, kinds, longest.map(|l| l.1))
}

/// Escapes text for HTML element content and quoted attributes, onto `out`.
pub fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
}

/// `text` as HTML (escaped once), every invisible or deceptive character a
/// `<span class="ctl" title="U+202E RIGHT-TO-LEFT OVERRIDE">⟨U+202E RLO⟩</span>`.
/// Line breaks and tabs stay: show it where `white-space: pre-wrap` holds.
pub fn visible_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for p in pieces(text).0 {
        match p {
            Piece::Text(t) => escape_into(&mut out, t),
            Piece::Mark { label, title, .. } => {
                out.push_str("<span class=\"ctl\" title=\"");
                escape_into(&mut out, &title);
                out.push_str("\">");
                escape_into(&mut out, &label);
                out.push_str("</span>");
            }
        }
    }
    out
}

/// What `text` holds that a person should look at twice, one line each
/// (`holds a right-to-left override`, `holds 1495 spaces in a row`,
/// `holds control characters`); empty for ordinary text.
pub fn suspicious(text: &str) -> Vec<String> {
    let (_, kinds, longest) = pieces(text);
    let mut out: Vec<String> = kinds.iter().map(|k| k.warning().to_owned()).collect();
    if let Some(run) = longest {
        out.push(format!("holds {run}"));
    }
    out
}

/// One warning line for a field holding `text`, naming all
/// [`suspicious`] found; `None` for ordinary text.
pub fn warning(text: &str) -> Option<String> {
    let found = suspicious(text);
    let items: Vec<&str> = found
        .iter()
        .map(|s| s.strip_prefix("holds ").unwrap_or(s))
        .collect();
    let list = match items.as_slice() {
        [] => return None,
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    Some(format!(
        "Look closely: this text holds {list} (each shown as a ⟨…⟩ marker)."
    ))
}

/// `text` with the same markers as plain text (Slack, SNS, email, a
/// terminal), at most `max_chars` characters of it; a marker is never cut.
/// Returns the text and how many characters of `text` it does not show
/// (0 when all of it is): a caller that cuts says so.
pub fn visible_plain(text: &str, max_chars: usize) -> (String, usize) {
    let mut out = String::new();
    let mut room = max_chars;
    let mut left = text.chars().count();
    for p in pieces(text).0 {
        match p {
            Piece::Text(t) => {
                let n = t.chars().count();
                if n <= room {
                    out.push_str(t);
                    room -= n;
                    left -= n;
                } else {
                    out.extend(t.chars().take(room));
                    left -= room;
                    break;
                }
            }
            Piece::Mark { label, chars, .. } => {
                let n = label.chars().count();
                if n > room {
                    break;
                }
                out.push_str(&label);
                room -= n;
                left -= chars;
            }
        }
    }
    (out, left)
}

/// `text` with the same markers as plain text, whole.
pub fn visible(text: &str) -> String {
    visible_plain(text, usize::MAX).0
}

/// The marker table as JSON for the inbox page's script:
/// `{"8238": ["RLO", "RIGHT-TO-LEFT OVERRIDE", "rlo"], …}` (short name or
/// null, Unicode name, kind), by decimal code point.
pub fn names_json() -> String {
    let mut items = Vec::new();
    for (table, _) in TABLES {
        for &(cp, ..) in table {
            let Some(n) = char::from_u32(cp).and_then(special) else {
                continue;
            };
            let short = n.short.map_or("null".to_owned(), |s| format!("\"{s}\""));
            items.push(format!(
                "\"{cp}\":[{short},\"{}\",\"{}\"]",
                n.name,
                n.kind.code()
            ));
        }
    }
    format!("{{{}}}", items.join(","))
}

/// [`RANGES`] for the inbox page's script: `[[first, last, name, kind], …]`.
pub fn ranges_json() -> String {
    let items: Vec<String> = RANGES
        .iter()
        .map(|&(a, b, name, kind)| format!("[{a},{b},\"{name}\",\"{}\"]", kind.code()))
        .collect();
    format!("[{}]", items.join(","))
}

/// The warning for each kind, for the inbox page's script.
pub fn warnings_json() -> String {
    let kinds = [
        Kind::Rlo,
        Kind::Bidi,
        Kind::Control,
        Kind::Invisible,
        Kind::Tag,
        Kind::Space,
    ];
    let items: Vec<String> = kinds
        .iter()
        .map(|k| format!("[\"{}\",\"{}\"]", k.code(), k.warning()))
        .collect();
    format!("[{}]", items.join(","))
}

#[cfg(test)]
mod tests;
