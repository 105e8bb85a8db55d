use super::*;

#[test]
fn rfc3339_dates() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339(1_795_945_092_999), "2026-11-29T09:38:12Z");
}

#[test]
fn ids_are_long_and_distinct() {
    let a = new_id().unwrap();
    let b = new_id().unwrap();
    assert_ne!(a, b);
    assert!(valid_id(&a), "{a}");
    assert!(!valid_id("../etc"));
    assert!(!valid_id(&a.to_uppercase()));
}
