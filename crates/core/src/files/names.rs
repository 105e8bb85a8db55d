//! File names that are traps on common clients (docs/contracts.md#files):
//! a name the server would hand back must mean the same file wherever the
//! client saves it. A backslash or a colon is a folder or drive separator
//! on Windows, a device name (`CON`, `aux.txt`) opens the device, a
//! control or direction-changing character makes a name read as another
//! (`z\u{202e}gnp.exe` shows as `zexe.png`), and two names that differ only
//! in case or Unicode form are one file where the file system ignores case
//! or normalizes names (Windows, macOS).

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

/// Whether `c` is invisible or changes the direction text reads in: bidi
/// controls, zero-width and other invisible characters, line and
/// paragraph separators, tag characters (the classes the approver pages
/// mark, spaces aside). Controls are [`char::is_control`].
pub fn hides(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x034F
            | 0x061C
            | 0x115F
            | 0x1160
            | 0x17B4
            | 0x17B5
            | 0x180E
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFEFF
            | 0xFFA0
            | 0xFFF9..=0xFFFB
            | 0xE0000..=0xE007F
    )
}

/// Names Windows keeps for devices, in any case, with or without an
/// extension (`COM¹`: the superscript digits count too).
const DEVICES: [&str; 6] = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];

/// The device a part of a name opens on Windows, if any: its stem (up to
/// the first dot, trailing spaces and dots dropped as Windows drops them)
/// is a device name.
fn device(part: &str) -> bool {
    let part = part.trim_end_matches(['.', ' ']);
    let stem = part.split('.').next().unwrap_or(part).trim_end_matches(' ');
    let upper = stem.to_ascii_uppercase();
    if DEVICES.contains(&upper.as_str()) {
        return true;
    }
    let Some(rest) = upper
        .strip_prefix("COM")
        .or_else(|| upper.strip_prefix("LPT"))
    else {
        return false;
    };
    let mut digits = rest.chars();
    matches!(
        (digits.next(), digits.next()),
        (Some('0'..='9' | '\u{b9}' | '\u{b2}' | '\u{b3}'), None)
    )
}

/// Why `name`, already a relative path of non-empty parts, is a trap on a
/// common client; `None` when it is not. The first rule it breaks.
pub fn trap(name: &str) -> Option<String> {
    if name.contains('\\') {
        return Some("contains a backslash (a folder separator on Windows; use \"/\")".into());
    }
    if name.contains(':') {
        return Some("contains ':' (a drive or stream separator on Windows)".into());
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Some(format!("contains a control character (U+{:04X})", c as u32));
    }
    if let Some(c) = name.chars().find(|&c| hides(c)) {
        return Some(format!(
            "contains an invisible or direction-changing character (U+{:04X}) that makes a name \
             show as another",
            c as u32
        ));
    }
    if let Some(part) = name.split('/').find(|p| p.ends_with(['.', ' '])) {
        return Some(format!(
            "has a part {part:?} that ends in a dot or a space (Windows drops them, so it would \
             name another file)"
        ));
    }
    if let Some(part) = name.split('/').find(|p| device(p)) {
        return Some(format!(
            "has a part {part:?} that Windows reserves for a device"
        ));
    }
    None
}

/// What a name is on a client that ignores case and normalizes Unicode:
/// each part in NFC, case-folded (upper then lower case, so that `ſ` and
/// `s`, `µ` and `μ` meet), without the trailing dots and spaces Windows
/// drops or characters that show as nothing (variation selectors among
/// them). Two names with one key are one file there, or look like one.
pub fn twin_key(name: &str) -> String {
    let parts = name.split('/').map(|p| p.trim_end_matches(['.', ' ']));
    if name.is_ascii() {
        return parts
            .map(str::to_ascii_lowercase)
            .collect::<Vec<_>>()
            .join("/");
    }
    parts
        .map(|p| {
            let seen: String = p.nfc().filter(|&c| !shows_as_nothing(c)).collect();
            let folded = seen.to_uppercase().to_lowercase();
            folded.nfc().collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Characters a name may hold that show as nothing: those [`hides`] refuses
/// and the variation selectors and format marks it lets through.
fn shows_as_nothing(c: char) -> bool {
    hides(c)
        || matches!(
            c as u32,
            0x180B..=0x180F
                | 0xFE00..=0xFE0F
                | 0x1BCA0..=0x1BCA3
                | 0x1D173..=0x1D17A
                | 0xE0100..=0xE01EF
        )
}

/// Twins among `names`: each name after the first of its key (in the
/// order given), with that first one.
pub fn twins<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<(&'a str, &'a str)> {
    let mut seen: HashMap<String, &str> = HashMap::new();
    let mut found = Vec::new();
    for name in names {
        match seen.entry(twin_key(name)) {
            std::collections::hash_map::Entry::Occupied(first) => found.push((name, *first.get())),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(name);
            }
        }
    }
    found
}

/// The message for two names given together that are twins.
pub fn twins_message(first: &str, second: &str) -> String {
    format!(
        "file names {} and {} differ only in case or Unicode form; a client that ignores case or \
         normalizes names would keep one",
        super::shown(first),
        super::shown(second)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traps_are_named() {
        for (name, says) in [
            ("a\\b", "backslash"),
            ("c:x", "':'"),
            ("a\u{7}b", "U+0007"),
            ("a\nb", "U+000A"),
            ("a\u{7f}", "U+007F"),
            ("a\u{85}", "U+0085"),
            ("z\u{202e}gnp.exe", "U+202E"),
            ("a\u{200b}b", "U+200B"),
            ("a\u{e0041}", "U+E0041"),
            ("CON", "\"CON\" that Windows reserves"),
            ("d/aux.txt", "\"aux.txt\""),
            ("nul.tar.gz", "reserves"),
            ("Com1", "reserves"),
            ("lpt\u{b9}.log", "reserves"),
            ("prn .txt", "reserves"),
            ("con.", "ends in a dot"),
            ("x..", "ends in a dot"),
            ("a /b", "ends in a dot or a space"),
            ("d/.. ", "ends in a dot or a space"),
            ("CONIN$", "reserves"),
        ] {
            let why = trap(name).unwrap_or_default();
            assert!(why.contains(says), "{name:?}: {why}");
        }
        for ok in [
            "a.csv",
            "data/in.csv",
            "a b/ü.txt",
            ".bashrc",
            "console.txt",
            "com10",
            "lpt",
            "auxiliary/x",
            "❤️.txt",
            "<>|?*\".txt",
            "naïve/Café.md",
        ] {
            assert_eq!(trap(ok), None, "{ok:?}");
        }
    }

    #[test]
    fn twins_differ_only_in_case_form_or_trailing_dots() {
        assert_eq!(twin_key("README"), twin_key("readme"));
        assert_eq!(twin_key("Caf\u{e9}"), twin_key("Cafe\u{301}"));
        assert_eq!(twin_key("x.."), twin_key("x"));
        assert_eq!(twin_key("A/b "), twin_key("a/B"));
        assert_ne!(twin_key("a/b"), twin_key("ab"));
        assert_eq!(
            twins(["README", "a", "readme", "b", "A"]),
            [("readme", "README"), ("A", "a")]
        );
        assert!(twins(["a", "b", "a/b"]).is_empty());
        // Case folding, not lower case; what shows as nothing is nothing.
        assert_eq!(twin_key("s.txt"), twin_key("\u{17f}.txt"));
        assert_eq!(twin_key("\u{b5}.txt"), twin_key("\u{3bc}.txt"));
        assert_eq!(twin_key("report.pdf"), twin_key("report\u{fe0e}.pdf"));
        let m = twins_message("README", "readme");
        assert!(m.contains("differ only in case or Unicode form"), "{m}");
    }
}
