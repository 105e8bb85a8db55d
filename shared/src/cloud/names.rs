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

/// Whether `name` matches `pattern`, where `*` matches any run of
/// characters (none included) and everything else itself.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else {
        return pattern == name;
    };
    let Some(mut tail) = name.strip_prefix(first) else {
        return false;
    };
    let mut parts: Vec<&str> = rest.split('*').collect();
    let last = parts.pop().unwrap_or_default();
    for part in parts {
        match tail.find(part) {
            Some(i) => tail = &tail[i + part.len()..],
            None => return false,
        }
    }
    tail.len() >= last.len() && tail.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_runs_and_nothing_else() {
        for (p, n, m) in [
            ("delete_*", "delete_bucket", true),
            ("delete_*", "undelete_bucket", false),
            ("*", "anything", true),
            ("echo", "echo", true),
            ("echo", "echo2", false),
            ("*__terminate_*", "aws__terminate_instances", true),
            ("*__terminate_*", "aws__list", false),
            ("a*b*c", "abc", true),
            ("a*b*c", "a-x-b-y-c", true),
            ("a*b*c", "a-c-b", false),
            ("ab*ba", "aba", false),
        ] {
            assert_eq!(glob_match(p, n), m, "{p} {n}");
        }
    }

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
