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

/// Why a character is marked: each kind has its own warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Rlo,
    Bidi,
    Control,
    Invisible,
    Tag,
    Space,
}

impl Kind {
    fn code(self) -> &'static str {
        match self {
            Self::Rlo => "rlo",
            Self::Bidi => "bidi",
            Self::Control => "control",
            Self::Invisible => "invisible",
            Self::Tag => "tag",
            Self::Space => "space",
        }
    }

    fn warning(self) -> &'static str {
        match self {
            Self::Rlo => "holds a right-to-left override",
            Self::Bidi => "holds text-direction controls",
            Self::Control => "holds control characters",
            Self::Invisible => "holds invisible characters",
            Self::Tag => "holds invisible tag characters",
            Self::Space => "holds space characters other than a plain space",
        }
    }
}

/// Characters marked one by one, by kind: code point, short name (empty:
/// the marker shows only `U+XXXX`), Unicode name; each list sorted. C1
/// controls, tag characters and variation selectors are computed
/// ([`special`]); U+202E is the bidi control with a warning of its own.
type List = &'static [(u32, &'static str, &'static str)];
const CONTROLS: List = &[
    (0x00, "NUL", "NULL"),
    (0x01, "SOH", "START OF HEADING"),
    (0x02, "STX", "START OF TEXT"),
    (0x03, "ETX", "END OF TEXT"),
    (0x04, "EOT", "END OF TRANSMISSION"),
    (0x05, "ENQ", "ENQUIRY"),
    (0x06, "ACK", "ACKNOWLEDGE"),
    (0x07, "BEL", "BELL"),
    (0x08, "BS", "BACKSPACE"),
    (0x0B, "VT", "LINE TABULATION"),
    (0x0C, "FF", "FORM FEED"),
    (0x0D, "CR", "CARRIAGE RETURN"),
    (0x0E, "SO", "SHIFT OUT"),
    (0x0F, "SI", "SHIFT IN"),
    (0x10, "DLE", "DATA LINK ESCAPE"),
    (0x11, "DC1", "DEVICE CONTROL ONE"),
    (0x12, "DC2", "DEVICE CONTROL TWO"),
    (0x13, "DC3", "DEVICE CONTROL THREE"),
    (0x14, "DC4", "DEVICE CONTROL FOUR"),
    (0x15, "NAK", "NEGATIVE ACKNOWLEDGE"),
    (0x16, "SYN", "SYNCHRONOUS IDLE"),
    (0x17, "ETB", "END OF TRANSMISSION BLOCK"),
    (0x18, "CAN", "CANCEL"),
    (0x19, "EM", "END OF MEDIUM"),
    (0x1A, "SUB", "SUBSTITUTE"),
    (0x1B, "ESC", "ESCAPE"),
    (0x1C, "FS", "INFORMATION SEPARATOR FOUR"),
    (0x1D, "GS", "INFORMATION SEPARATOR THREE"),
    (0x1E, "RS", "INFORMATION SEPARATOR TWO"),
    (0x1F, "US", "INFORMATION SEPARATOR ONE"),
    (0x7F, "DEL", "DELETE"),
    (0x85, "NEL", "NEXT LINE"),
    (0x9B, "CSI", "CONTROL SEQUENCE INTRODUCER"),
];
const BIDI: List = &[
    (0x061C, "ALM", "ARABIC LETTER MARK"),
    (0x200E, "LRM", "LEFT-TO-RIGHT MARK"),
    (0x200F, "RLM", "RIGHT-TO-LEFT MARK"),
    (0x202A, "LRE", "LEFT-TO-RIGHT EMBEDDING"),
    (0x202B, "RLE", "RIGHT-TO-LEFT EMBEDDING"),
    (0x202C, "PDF", "POP DIRECTIONAL FORMATTING"),
    (0x202D, "LRO", "LEFT-TO-RIGHT OVERRIDE"),
    (0x202E, "RLO", "RIGHT-TO-LEFT OVERRIDE"),
    (0x2066, "LRI", "LEFT-TO-RIGHT ISOLATE"),
    (0x2067, "RLI", "RIGHT-TO-LEFT ISOLATE"),
    (0x2068, "FSI", "FIRST STRONG ISOLATE"),
    (0x2069, "PDI", "POP DIRECTIONAL ISOLATE"),
    (0x206A, "", "INHIBIT SYMMETRIC SWAPPING"),
    (0x206B, "", "ACTIVATE SYMMETRIC SWAPPING"),
];
const INVISIBLE: List = &[
    (0xAD, "SHY", "SOFT HYPHEN"),
    (0x034F, "CGJ", "COMBINING GRAPHEME JOINER"),
    (0x115F, "", "HANGUL CHOSEONG FILLER"),
    (0x1160, "", "HANGUL JUNGSEONG FILLER"),
    (0x17B4, "", "KHMER VOWEL INHERENT AQ"),
    (0x17B5, "", "KHMER VOWEL INHERENT AA"),
    (0x180E, "MVS", "MONGOLIAN VOWEL SEPARATOR"),
    (0x200B, "ZWSP", "ZERO WIDTH SPACE"),
    (0x200C, "ZWNJ", "ZERO WIDTH NON-JOINER"),
    (0x200D, "ZWJ", "ZERO WIDTH JOINER"),
    (0x2028, "LSEP", "LINE SEPARATOR"),
    (0x2029, "PSEP", "PARAGRAPH SEPARATOR"),
    (0x2060, "WJ", "WORD JOINER"),
    (0x2061, "", "FUNCTION APPLICATION"),
    (0x2062, "", "INVISIBLE TIMES"),
    (0x2063, "", "INVISIBLE SEPARATOR"),
    (0x2064, "", "INVISIBLE PLUS"),
    (0x206C, "", "INHIBIT ARABIC FORM SHAPING"),
    (0x206D, "", "ACTIVATE ARABIC FORM SHAPING"),
    (0x206E, "", "NATIONAL DIGIT SHAPES"),
    (0x206F, "", "NOMINAL DIGIT SHAPES"),
    (0x3164, "", "HANGUL FILLER"),
    (0xFEFF, "BOM", "ZERO WIDTH NO-BREAK SPACE"),
    (0xFFA0, "", "HALFWIDTH HANGUL FILLER"),
    (0xFFF9, "", "INTERLINEAR ANNOTATION ANCHOR"),
    (0xFFFA, "", "INTERLINEAR ANNOTATION SEPARATOR"),
    (0xFFFB, "", "INTERLINEAR ANNOTATION TERMINATOR"),
];
const SPACES: List = &[
    (0xA0, "NBSP", "NO-BREAK SPACE"),
    (0x1680, "", "OGHAM SPACE MARK"),
    (0x2000, "", "EN QUAD"),
    (0x2001, "", "EM QUAD"),
    (0x2002, "", "EN SPACE"),
    (0x2003, "", "EM SPACE"),
    (0x2004, "", "THREE-PER-EM SPACE"),
    (0x2005, "", "FOUR-PER-EM SPACE"),
    (0x2006, "", "SIX-PER-EM SPACE"),
    (0x2007, "", "FIGURE SPACE"),
    (0x2008, "", "PUNCTUATION SPACE"),
    (0x2009, "", "THIN SPACE"),
    (0x200A, "", "HAIR SPACE"),
    (0x202F, "NNBSP", "NARROW NO-BREAK SPACE"),
    (0x205F, "MMSP", "MEDIUM MATHEMATICAL SPACE"),
    (0x2800, "", "BRAILLE PATTERN BLANK"),
    (0x3000, "", "IDEOGRAPHIC SPACE"),
];

/// Ranges marked whole, first match wins: C1 controls, tags, and the
/// default-ignorable blocks that no table lists one by one (a renderer
/// shows nothing for them, so a run of them beside spaces reads as blank).
const RANGES: &[(u32, u32, &str, Kind)] = &[
    (0x80, 0x9F, "C1 CONTROL", Kind::Control),
    (
        0x180B,
        0x180F,
        "MONGOLIAN FREE VARIATION SELECTOR",
        Kind::Invisible,
    ),
    (
        0x2065,
        0x2065,
        "UNASSIGNED FORMAT CHARACTER",
        Kind::Invisible,
    ),
    (0xFFF0, 0xFFF8, "UNASSIGNED SPECIAL", Kind::Invisible),
    (
        0x13430,
        0x1343F,
        "EGYPTIAN HIEROGLYPH FORMAT CONTROL",
        Kind::Invisible,
    ),
    (
        0x1BCA0,
        0x1BCA3,
        "SHORTHAND FORMAT CONTROL",
        Kind::Invisible,
    ),
    (
        0x1D173,
        0x1D17A,
        "MUSICAL SYMBOL FORMAT CONTROL",
        Kind::Invisible,
    ),
    (0xE0001, 0xE0001, "LANGUAGE TAG", Kind::Tag),
    (0xE007F, 0xE007F, "CANCEL TAG", Kind::Tag),
    (0xE0000, 0xE007F, "TAG CHARACTER", Kind::Tag),
    (
        0xE0080,
        0xE00FF,
        "RESERVED DEFAULT-IGNORABLE",
        Kind::Invisible,
    ),
    (
        0xE01F0,
        0xE0FFF,
        "RESERVED DEFAULT-IGNORABLE",
        Kind::Invisible,
    ),
];

/// Every list with the kind of its characters.
const TABLES: [(List, Kind); 4] = [
    (CONTROLS, Kind::Control),
    (BIDI, Kind::Bidi),
    (INVISIBLE, Kind::Invisible),
    (SPACES, Kind::Space),
];

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
mod tests {
    use super::*;

    /// A character no output may hold raw.
    fn hidden(c: char) -> bool {
        special(c).is_some()
    }

    /// The list in docs/approvals.md, "What approvers see", written out apart
    /// from the tables so that a character dropped from them is caught.
    fn in_design_list(c: char) -> bool {
        matches!(c as u32,
            0x00..=0x08 | 0x0B..=0x1F | 0x7F..=0x9F
            | 0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069
            | 0x200B..=0x200D | 0x2060..=0x2064 | 0xFEFF | 0x00AD | 0x180E
            | 0x3164 | 0xFFA0 | 0xE0000..=0xE007F)
    }

    fn all_listed() -> Vec<char> {
        TABLES
            .iter()
            .flat_map(|(t, _)| t.iter().filter_map(|e| char::from_u32(e.0)))
            .collect()
    }

    fn longest_blank_run(s: &str) -> usize {
        let (mut best, mut n, mut last) = (0, 0, None);
        for c in s.chars() {
            let same = matches!(
                (c, last),
                ('\n', Some('\n')) | (' ' | '\t', Some(' ' | '\t'))
            );
            n = if same {
                n + 1
            } else if matches!(c, ' ' | '\t' | '\n') {
                1
            } else {
                0
            };
            best = best.max(n);
            last = Some(c);
        }
        best
    }

    fn assert_nothing_hidden(input: &str) {
        let html = visible_html(input);
        let plain = visible(input);
        for out in [&html, &plain] {
            if let Some(c) = out.chars().find(|&c| hidden(c)) {
                panic!("U+{:04X} raw in {out:?} (from {input:?})", c as u32);
            }
            assert!(longest_blank_run(out) <= MAX_RUN, "{out:?}");
        }
        if input.chars().any(hidden) {
            assert!(!suspicious(input).is_empty(), "{input:?}");
        }
    }

    #[test]
    fn table_is_sorted_and_never_marks_newline_or_tab() {
        for (table, _) in TABLES {
            assert!(table.windows(2).all(|w| w[0].0 < w[1].0));
        }
        assert!(special('\n').is_none() && special('\t').is_none());
    }

    #[test]
    fn red_team_spaces() {
        let cmd = format!("uptime{}; touch X", " ".repeat(1495));
        assert_eq!(visible(&cmd), "uptime⟨1495 spaces⟩; touch X");
        let html = visible_html(&cmd);
        assert_eq!(
            html,
            "uptime<span class=\"ctl\" title=\"1495 spaces in a row\">⟨1495 spaces⟩</span>; touch X"
        );
        assert_eq!(suspicious(&cmd), ["holds 1495 spaces in a row"]);
        assert_eq!(
            warning(&cmd).unwrap(),
            "Look closely: this text holds 1495 spaces in a row (each shown as a ⟨…⟩ marker)."
        );
        // Eight in a row is ordinary; nine is a run.
        assert_eq!(visible("a        b"), "a        b");
        assert_eq!(visible("a         b"), "a⟨9 spaces⟩b");
    }

    /// Default-ignorable characters beside spaces never read as blank: each
    /// is a marker, and the field is flagged (round three's `" \u{180b}"`).
    #[test]
    fn default_ignorables_between_spaces_are_marked() {
        let cmd = format!("uptime{}; touch /tmp/X", " \u{180b}".repeat(700));
        let shown = visible(&cmd);
        assert_eq!(shown.matches("⟨U+180B⟩").count(), 700, "{shown}");
        assert!(warning(&cmd).is_some());
        for c in [
            '\u{180b}',
            '\u{180f}',
            '\u{2065}',
            '\u{fff0}',
            '\u{13430}',
            '\u{1bca0}',
            '\u{1d173}',
            '\u{e0080}',
            '\u{e0fff}',
        ] {
            assert!(special(c).is_some(), "U+{:04X}", c as u32);
        }
        assert!(
            special('\u{e0100}').is_none(),
            "a variation selector, judged by what precedes"
        );
    }

    #[test]
    fn red_team_rlo() {
        let name = "z\u{202e}gnp.exe";
        assert_eq!(visible(name), "z⟨U+202E RLO⟩gnp.exe");
        assert_eq!(
            visible_html(name),
            "z<span class=\"ctl\" title=\"U+202E RIGHT-TO-LEFT OVERRIDE\">⟨U+202E RLO⟩</span>gnp.exe"
        );
        assert_eq!(suspicious(name), ["holds a right-to-left override"]);
    }

    #[test]
    fn red_team_forged_lines() {
        // A field cannot end itself: a line break stays a line break in
        // its own box, and anything that would break a line elsewhere
        // (CR, NEL, line separator, escape sequences) is a marker.
        let cmd = "ls\rWhy: routine\u{85}Host key: SHA256:x\u{2028}Intent: ok\u{1b}[2K";
        assert_eq!(
            visible(cmd),
            "ls⟨U+000D CR⟩Why: routine⟨U+0085 NEL⟩Host key: SHA256:x⟨U+2028 LSEP⟩Intent: ok⟨U+001B ESC⟩[2K"
        );
        assert_eq!(
            suspicious(cmd),
            ["holds control characters", "holds invisible characters"]
        );
        assert_eq!(visible("a\nWhy: b"), "a\nWhy: b");
    }

    #[test]
    fn everything_together() {
        let cmd = format!(
            "uptime{}; touch X\u{202e}gnp.exe\u{7}\u{200b}",
            " ".repeat(1495)
        );
        assert_eq!(
            suspicious(&cmd),
            [
                "holds a right-to-left override",
                "holds control characters",
                "holds invisible characters",
                "holds 1495 spaces in a row"
            ]
        );
        assert_eq!(
            warning(&cmd).unwrap(),
            "Look closely: this text holds a right-to-left override, control characters, \
             invisible characters and 1495 spaces in a row (each shown as a ⟨…⟩ marker)."
        );
    }

    #[test]
    fn escapes_html_exactly_once() {
        assert_eq!(
            visible_html("<b>&amp;</b> \"'"),
            "&lt;b&gt;&amp;amp;&lt;/b&gt; &quot;&#39;"
        );
        assert_eq!(
            visible_html("<\u{202e}>"),
            "&lt;<span class=\"ctl\" title=\"U+202E RIGHT-TO-LEFT OVERRIDE\">⟨U+202E RLO⟩</span>&gt;"
        );
    }

    #[test]
    fn ordinary_text_round_trips() {
        for t in [
            "",
            "uptime",
            "sudo systemctl restart nginx && journalctl -u nginx -n 50",
            "for f in *.log; do\n\tgzip \"$f\"\ndone",
            "Déployer la version 2 ? 日本語 Ελληνικά עברית العربية 😀 ❤\u{fe0f} 葛\u{e0100}",
            "a\n\n\n\n\n\n\n\nb",
            "        eight leading spaces",
        ] {
            assert_eq!(visible(t), t);
            assert_eq!(visible_plain(t, usize::MAX), (t.to_owned(), 0));
            let mut escaped = String::new();
            escape_into(&mut escaped, t);
            assert_eq!(visible_html(t), escaped);
            assert!(suspicious(t).is_empty(), "{t:?}");
            assert_eq!(warning(t), None);
        }
    }

    #[test]
    fn every_code_point_alone_and_in_runs() {
        for cp in 0..=0x10FFFFu32 {
            let Some(c) = char::from_u32(cp) else {
                continue;
            };
            if is_variation_selector(c) {
                continue;
            }
            let s = format!("a{c}b");
            let plain = visible(&s);
            if in_design_list(c) {
                assert!(hidden(c), "U+{cp:04X} is in the design's list");
            }
            if hidden(c) {
                assert!(plain.contains(&format!("U+{cp:04X}")), "{plain:?}");
                assert!(!plain.contains(c));
            } else {
                assert_eq!(plain, s);
            }
        }
        for c in all_listed() {
            assert_nothing_hidden(&format!("{c}{c}x{c}"));
        }
    }

    #[test]
    fn random_mixtures_hide_nothing() {
        let alphabet: Vec<char> = all_listed()
            .into_iter()
            .chain("ab <&>\"'\n\t\u{85}\u{9f}\u{e0041}\u{fe0f}\u{e0100}é日😀".chars())
            .collect();
        // A fixed LCG: the same cases every run, no dependency.
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize % n
        };
        for _ in 0..3000 {
            let len = next(40);
            let mut s = String::new();
            for _ in 0..len {
                let c = alphabet[next(alphabet.len())];
                // Sometimes a long run.
                let times = if next(10) == 0 { 1 + next(20) } else { 1 };
                s.extend(std::iter::repeat_n(c, times));
            }
            assert_nothing_hidden(&s);
            // Every character is either shown or counted as not shown.
            let total = s.chars().count();
            for max in [0, 1, 5, 13, 40] {
                let (cut, left) = visible_plain(&s, max);
                assert!(cut.chars().count() <= max, "{cut:?}");
                assert!(left <= total);
                assert!(visible(&s).starts_with(&cut), "{s:?} {cut:?}");
                if left == 0 {
                    assert_eq!(cut, visible(&s));
                }
            }
        }
    }

    #[test]
    fn variation_selectors() {
        // After an emoji or a CJK character they are part of it.
        assert_eq!(visible("❤\u{fe0f}"), "❤\u{fe0f}");
        // A run of them, or one after ASCII, can carry hidden bytes.
        assert_eq!(visible("😀\u{fe0f}\u{e0101}"), "😀\u{fe0f}⟨U+E0101⟩");
        assert_eq!(visible("a\u{fe01}"), "a⟨U+FE01⟩");
        assert_eq!(suspicious("a\u{fe01}"), ["holds invisible characters"]);
        assert_eq!(
            visible_html("\u{fe0f}"),
            "<span class=\"ctl\" title=\"U+FE0F VARIATION SELECTOR\">⟨U+FE0F⟩</span>"
        );
    }

    #[test]
    fn tags_and_c1_controls() {
        assert_eq!(visible("x\u{e0041}\u{9d}"), "x⟨U+E0041⟩⟨U+009D⟩");
        assert_eq!(
            suspicious("x\u{e0041}\u{9d}"),
            ["holds control characters", "holds invisible tag characters"]
        );
        assert!(visible_html("\u{e007f}").contains("title=\"U+E007F CANCEL TAG\""));
    }

    #[test]
    fn runs_of_tabs_and_line_breaks() {
        assert_eq!(visible(&"\t".repeat(9)), "⟨9 tabs⟩");
        assert_eq!(visible(&" \t".repeat(5)), "⟨10 spaces and tabs⟩");
        assert_eq!(
            visible(&format!("a{}b", "\n".repeat(200))),
            "a⟨200 line breaks⟩b"
        );
        assert_eq!(
            suspicious(&format!("{}{}", "\n".repeat(20), " ".repeat(30))),
            ["holds 30 spaces in a row"],
            "the longest run is named"
        );
    }

    #[test]
    fn cutting_says_how_much_is_not_shown() {
        let cmd = format!("uptime{}; touch X", " ".repeat(1495));
        // 6 + 13 for the marker + 9: all 1510 characters in 28.
        assert_eq!(visible_plain(&cmd, 28), (visible(&cmd), 0));
        assert_eq!(
            visible_plain(&cmd, 27),
            ("uptime⟨1495 spaces⟩; touch ".to_owned(), 1)
        );
        // A marker is never cut: it is left out with what it stands for.
        assert_eq!(visible_plain(&cmd, 10), ("uptime".to_owned(), 1504));
        assert_eq!(visible_plain("abc", 0), (String::new(), 3));
    }

    #[test]
    fn agrees_with_the_shared_cases() {
        let cases: serde_json::Value =
            serde_json::from_str(include_str!("../../../tests/fixtures/visible_cases.json"))
                .unwrap();
        let cases = cases["cases"].as_array().unwrap();
        assert!(cases.len() >= 10);
        for case in cases {
            let input = case["input"].as_str().unwrap();
            assert_eq!(visible(input), case["plain"].as_str().unwrap(), "{case}");
            let want: Vec<String> = serde_json::from_value(case["warnings"].clone()).unwrap();
            assert_eq!(suspicious(input), want, "{case}");
        }
    }

    #[test]
    fn names_for_the_script_parse() {
        let v: serde_json::Value = serde_json::from_str(&names_json()).unwrap();
        assert_eq!(
            v["8238"],
            serde_json::json!(["RLO", "RIGHT-TO-LEFT OVERRIDE", "rlo"])
        );
        assert_eq!(v.as_object().unwrap().len(), all_listed().len());
        let w: serde_json::Value = serde_json::from_str(&warnings_json()).unwrap();
        assert_eq!(
            w[0],
            serde_json::json!(["rlo", "holds a right-to-left override"])
        );
    }
}
