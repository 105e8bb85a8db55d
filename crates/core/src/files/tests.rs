use super::*;

#[test]
fn names_are_relative_paths() {
    for ok in ["a.csv", "data/in.csv", "a b/ü.txt", "..x", "x..y"] {
        assert_eq!(name_problem(ok), None, "{ok}");
    }
    for bad in [
        "",
        "/etc/passwd",
        "../x",
        "a/../b",
        "a//b",
        "./a",
        "a/",
        "a\0b",
    ] {
        assert!(name_problem(bad).is_some(), "{bad:?}");
    }
    assert!(name_problem(&"x".repeat(256)).is_some());
}

#[test]
fn input_is_text_or_base64_within_the_cap() {
    let f = parse_input(
        Some(&json!({"a.txt": "hé", "b.bin": {"base64": "AAH/"}})),
        100,
    )
    .unwrap();
    assert_eq!(f["a.txt"], "hé".as_bytes());
    assert_eq!(f["b.bin"], [0, 1, 255]);
    assert_eq!(
        to_json(&f),
        json!({"a.txt": "hé", "b.bin": {"base64": "AAH/"}})
    );
    assert!(parse_input(None, 0).unwrap().is_empty());
    for (bad, says) in [
        (json!([1]), "must be an object"),
        (json!({"a": 1}), "must be text or"),
        (json!({"a": {"base64": "!!"}}), "base64 is not valid"),
        (json!({"a": {"base64": "AA==", "x": 1}}), "must be text or"),
        (json!({"../a": "x"}), "'..'"),
        (json!({"a": "x", "a/b": "y"}), "also the folder"),
        (json!({"a": "x".repeat(101)}), "the limit"),
        (json!({"a\\b": "x"}), "backslash"),
        (json!({"a\u{202e}b": "x"}), "U+202E"),
        (json!({"aux": "x"}), "reserves"),
        (json!({"README": "x", "readme": "y"}), "differ only in case"),
    ] {
        let e = parse_input(Some(&bad), 100).unwrap_err();
        assert!(e.message.contains(says), "{bad}: {}", e.message);
        assert_eq!(e.code, crate::error::ErrorCode::InvalidInput);
    }
}

#[test]
fn returned_files_are_checked_and_capped() {
    let f: Files = [
        ("a".to_string(), vec![1u8; 10]),
        ("b".to_string(), vec![2u8; 10]),
    ]
    .into();
    assert_eq!(from_wire(to_wire(&f), 100).unwrap(), f);
    assert!(from_wire(to_wire(&f), 15).is_err());
    let mut bad = to_wire(&f);
    bad.insert("/abs".into(), String::new());
    assert!(from_wire(bad, 100).is_err());
    let mut g = f.clone();
    let note = cap_output(&mut g, 15);
    assert_eq!(g.len(), 1);
    assert!(note.contains("\"b\" (10 bytes)"), "{note}");
    assert_eq!(cap_output(&mut f.clone(), 20), "");
}

fn files(names: &[&str]) -> Files {
    names.iter().map(|n| (n.to_string(), vec![])).collect()
}

#[test]
fn what_was_stored_decodes_whatever_its_names() {
    let stored = files(&["a:b", "README", "readme"]);
    assert_eq!(decode_wire(to_wire(&stored)).unwrap(), stored);
    assert!(from_wire(to_wire(&stored), 100).is_err());
    let bad = BTreeMap::from([("x".to_string(), "!!".to_string())]);
    assert!(
        decode_wire(bad)
            .unwrap_err()
            .contains("\"x\" is not base64")
    );
}

#[test]
fn a_union_names_what_the_added_files_break() {
    let base = files(&["a", "d/e", "README"]);
    let problem = |added: &[&str]| {
        union_problem(&base, &files(added), "the session's file", "they").unwrap_or_default()
    };
    assert!(problem(&["a/b"]).contains("file \"a/b\" is under the session's file \"a\""));
    // A file and a folder whose names differ only in case are one name.
    assert!(problem(&["A/b"]).contains("file \"A/b\" is under the session's file \"a\""));
    assert!(problem(&["D"]).contains("file \"D\" is the folder of the session's file \"d/e\""));
    let given = files(&["A", "a/b"]);
    assert!(folder_clash(&given).is_some(), "{given:?}");
    assert!(
        problem(&["x/y", "d"]).contains("file \"d\" is the folder of the session's file \"d/e\"")
    );
    assert!(
        problem(&["readme"]).contains("file \"readme\" and the session's file \"README\" differ")
    );
    assert_eq!(problem(&["a", "README", "b/c", "e"]), "");
    let many: Vec<String> = (0..999).map(|i| format!("f{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert!(problem(&many).contains("they are 1002 files, over the limit of 1000"));
    // A stored set already past a rule is not the call's problem.
    let old = files(&["A", "a"]);
    assert_eq!(union_problem(&old, &files(&["b"]), "x", "y"), None);
}

#[test]
fn returned_twins_and_traps_are_left_out_and_named() {
    let mut f = files(&["A.txt", "a.txt", "c:d", "ok"]);
    let note = keep_returnable(&mut f, 100);
    assert_eq!(f, files(&["A.txt", "ok"]));
    assert!(
        note.contains("[file \"c:d\" not returned: its name contains ':'"),
        "{note}"
    );
    assert!(
            note.contains("[file \"a.txt\" not returned: its name differs from \"A.txt\" only in case or Unicode form]"),
            "{note}"
        );
}

#[test]
fn messages_name_a_huge_name_by_its_start() {
    let long = "n".repeat(1 << 20);
    let e = parse_input(Some(&json!({ long: "x" })), 100).unwrap_err();
    assert!(e.message.len() < 300, "{}", e.message.len());
}
