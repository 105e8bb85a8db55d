use super::*;
use serde_json::json;

#[test]
fn an_id_no_session_could_have_is_not_found_and_named_by_its_start() {
    let id = "0123456789abcdef0123456789abcdef01234567";
    assert_eq!(
        parse(Some(&json!(id))).unwrap(),
        Some(SessionArg::Resume(id.into()))
    );
    for bad in [id.to_uppercase(), format!("{id}0"), "a\nb".repeat(1 << 18)] {
        let e = parse(Some(&json!(bad))).unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound);
        assert!(e.message.len() < 200, "{}", e.message);
    }
    assert_eq!(parse(Some(&json!(""))).unwrap_err().message, SESSION_SHAPE);
}

#[test]
fn a_call_that_brings_a_clash_or_too_many_files_is_refused_or_not_saved() {
    let saved: Files = [("a".to_string(), b"x".to_vec())].into();
    let e = with_files(&saved, [("a/b".to_string(), vec![])].into(), 100).unwrap_err();
    assert!(
        e.message.contains("is under the session's file \"a\""),
        "{}",
        e.message
    );
    let seen = with_files(&saved, [("b".to_string(), vec![])].into(), 100).unwrap();
    assert_eq!(seen.len(), 2);
    let why = after_call(seen.clone(), Some(&json!({"B": "y"}))).unwrap_err();
    assert!(why.contains("differ only in case"), "{why}");
    let kept = after_call(seen, Some(&json!({"c": "z"}))).unwrap();
    assert_eq!(kept.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert!(nothing_saved(&why).starts_with("[session: nothing was saved: file \"B\""));
}

#[test]
fn idle_lives_read_as_words() {
    assert_eq!(idle_words(Duration::from_secs(3600)), "1 hour");
    assert_eq!(idle_words(Duration::from_secs(1800)), "30 minutes");
    assert_eq!(idle_words(Duration::from_secs(90)), "90 seconds");
}

#[test]
fn an_expired_session_answers_expired_for_a_day_then_reads_as_missing() {
    use store::{Claim, FORGET_AFTER_MS};
    let now = 10 * FORGET_AFTER_MS;
    let refused = |expires_at: i64| Claim::refused(Some(("alice", expires_at)), "alice", now);
    assert!(matches!(refused(now + 1), Claim::Busy));
    assert!(matches!(refused(now), Claim::Expired));
    assert!(matches!(refused(now - FORGET_AFTER_MS + 1), Claim::Expired));
    assert!(matches!(refused(now - FORGET_AFTER_MS), Claim::NotFound));
    assert!(matches!(
        Claim::refused(Some(("bob", now + 1)), "alice", now),
        Claim::NotFound
    ));
    assert!(matches!(
        Claim::refused(None, "alice", now),
        Claim::NotFound
    ));
}
