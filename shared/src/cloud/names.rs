//! Exported names of cloud tools: `<account>__<tool>`, within the
//! function-calling limit `^[a-zA-Z0-9_-]{1,64}$`.

/// The limit every function-calling format shares.
pub const NAME_MAX: usize = 64;

/// FNV-1a: a stable hash (std's hasher is randomly seeded per process, and
/// names must not change between processes or restarts).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The exported name of `tool` on `account` (an id already validated). Other
/// characters become `_`; a name over 64 characters keeps its first 55 and
/// ends with `_` and 8 hex digits of a hash of the original, so it is
/// deterministic and two long names stay apart.
pub fn exported(account: &str, tool: &str) -> String {
    let raw = format!("{account}__{tool}");
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.len() <= NAME_MAX {
        return clean;
    }
    with_hash(&clean[..NAME_MAX - 9], &raw)
}

/// `name` shortened as needed and suffixed with a hash of `original`: used
/// when two tools of one account would otherwise export the same name.
pub fn with_hash(name: &str, original: &str) -> String {
    let keep = name.len().min(NAME_MAX - 9);
    format!("{}_{:08x}", &name[..keep], fnv1a(original) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(n: &str) -> bool {
        (1..=NAME_MAX).contains(&n.len())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_are_prefixed() {
        assert_eq!(
            exported("aliyun-prod", "DescribeInstances"),
            "aliyun-prod__DescribeInstances"
        );
        assert_eq!(exported("cf", "zones-list"), "cf__zones-list");
    }

    #[test]
    fn other_characters_become_underscores() {
        assert_eq!(exported("cf", "zones.list/all v2"), "cf__zones_list_all_v2");
        assert_eq!(exported("cf", "é"), "cf___");
    }

    #[test]
    fn long_names_are_shortened_deterministically() {
        let long = "x".repeat(100);
        let a = exported("acct", &long);
        assert!(valid(&a), "{a}");
        assert_eq!(a.len(), NAME_MAX);
        assert_eq!(a, exported("acct", &long), "same input, same name");
        let other = exported("acct", &format!("{long}y"));
        assert_ne!(a, other, "different tools keep different names");
        assert!(a.starts_with("acct__xxx"));
    }

    #[test]
    fn collisions_get_a_hash() {
        let a = with_hash(&exported("cf", "a.b"), "a.b");
        let b = with_hash(&exported("cf", "a_b"), "a_b");
        assert_ne!(a, b);
        assert!(valid(&a) && valid(&b));
    }
}
