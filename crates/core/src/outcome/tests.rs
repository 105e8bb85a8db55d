use super::*;
use serde_json::json;

#[test]
fn notes_go_on_their_own_line() {
    let mut out = ExecOutput::timed_out("partial".into(), "warn".into(), Duration::from_secs(3));
    assert_eq!(out.stderr, "warn\n[Execution timed out after 3s]");
    assert_eq!((out.exit_code, out.timed_out), (-1, true));
    out.add_note("");
    assert_eq!(out.stderr, "warn\n[Execution timed out after 3s]");
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(json["stdout"], "partial");
    assert!(json.get("result").is_none());
}

fn has_big_integer(text: &str) -> bool {
    scan(text).big_integer
}

#[test]
fn big_integers_are_found_outside_strings_only() {
    assert!(!has_big_integer(
        r#"[1, -9223372036854775808, 18446744073709551615, 1.5e300]"#
    ));
    assert!(has_big_integer("[18446744073709551617]"));
    assert!(has_big_integer(r#"{"a": -9223372036854775809}"#));
    assert!(!has_big_integer(
        r#"["18446744073709551617", "\"99999999999999999999"]"#
    ));
    assert!(!has_big_integer("123456789012345678901234567890.5"));
}

#[test]
fn results_that_cannot_be_carried_exactly_are_refused_with_the_reason() {
    assert_eq!(
        parse_result(r#"{"a": [1, 2.5, "x", null]}"#).unwrap(),
        json!({"a": [1, 2.5, "x", null]})
    );
    assert!(
        parse_result(r#""\ud800""#)
            .unwrap_err()
            .contains("surrogate")
    );
    let deep = "[".repeat(200) + &"]".repeat(200);
    assert!(parse_result(&deep).unwrap_err().contains("nested"));
    assert!(
        parse_result("[18446744073709551617]")
            .unwrap_err()
            .contains("64 bits")
    );
    for garbage in ["", "{", "nan", "[1,]", "\"abc"] {
        assert!(parse_result(garbage).is_err(), "{garbage:?}");
    }
    // 121 levels parse here, and 128 would once wrapped in a reply: the
    // margin is for the wrappers.
    let at = |n: usize| "[".repeat(n) + &"]".repeat(n);
    assert!(parse_result(&at(120)).is_ok());
    assert!(parse_result(&at(121)).unwrap_err().contains("nested"));
    // `{1: 'a', '1': 'b'}` dumps both keys as "1".
    let dup = r#"{"1": "int key", "1": "str key", "x": {"t": 1, "t": 2}}"#;
    assert!(parse_result(dup).unwrap_err().contains("keys"));
    assert!(parse_result(r#"{"a:b": {"c": "d:e"}, "f": [{"g": 1}]}"#).is_ok());
}

/// The sandbox Worker is a peer the dispatcher checks: each way its
/// reply can lie is refused with why, and an honest one reads back.
#[test]
fn a_sandbox_reply_that_lies_is_refused() {
    let base = serde_json::json!({
        "stdout": "hi\n", "stderr": "", "exit_code": 0, "timed_out": false
    });
    let with = |k: &str, v: Value| {
        let mut r = base.clone();
        r[k] = v;
        serde_json::to_vec(&r).unwrap()
    };
    let honest = ExecOutput::from_reply(
        &with("files", serde_json::json!({"out.txt": "hi"})),
        1_000,
        0,
    )
    .unwrap();
    assert_eq!(honest.stdout, "hi\n");
    assert!(honest.files.is_some());
    let state = crate::files::encode(&[7u8; 64]);
    let kept = ExecOutput::from_reply(&with("session_state", state.clone().into()), 0, 64).unwrap();
    assert_eq!(kept.state.as_deref(), Some(&[7u8; 64][..]));

    let lies: [(&str, Vec<u8>, u64, u64, &str); 9] = [
        ("not JSON", b"{\"stdout\": ".to_vec(), 0, 0, "not an output"),
        (
            "no exit code",
            br#"{"stdout":"","stderr":"","timed_out":false}"#.to_vec(),
            0,
            0,
            "not an output",
        ),
        (
            "a result past 64 bits",
            {
                let mut r = serde_json::to_string(&base).unwrap();
                r.pop();
                (r + r#","result":18446744073709551617}"#).into_bytes()
            },
            0,
            0,
            "64 bits",
        ),
        (
            "a result with twin keys",
            {
                let mut r = serde_json::to_string(&base).unwrap();
                r.pop();
                (r + r#","result":{"a":1,"a":2}}"#).into_bytes()
            },
            0,
            0,
            "keys",
        ),
        (
            "files over the cap",
            with("files", serde_json::json!({"big.txt": "x".repeat(2_000)})),
            1_000,
            0,
            "its files",
        ),
        (
            "a file named outside the folder",
            with("files", serde_json::json!({"../etc/passwd": "x"})),
            1_000,
            0,
            "its files",
        ),
        (
            "files not a map",
            with("files", serde_json::json!(["a"])),
            1_000,
            0,
            "its files",
        ),
        (
            "state over the cap",
            with("session_state", state.clone().into()),
            0,
            63,
            "over 63 bytes",
        ),
        (
            "state not base64",
            with("session_state", "@@@".into()),
            0,
            64,
            "not base64",
        ),
    ];
    for (what, reply, files_cap, state_cap, says) in lies {
        let why = ExecOutput::from_reply(&reply, files_cap, state_cap)
            .err()
            .unwrap_or_else(|| panic!("{what}: accepted"));
        assert!(why.contains(says), "{what}: {why}");
    }
    // Outside a session (cap 0) no state is taken.
    assert!(ExecOutput::from_reply(&with("session_state", state.into()), 0, 0).is_err());
}
