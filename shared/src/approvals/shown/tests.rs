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
    let cases: serde_json::Value = serde_json::from_str(include_str!(
        "../../../../tests/fixtures/visible_cases.json"
    ))
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
