//! The caller's server scope: which inventory servers `list_servers` and
//! `ssh_run` may use for this call. It comes, in this order, from the JWT
//! claim `toolgate_servers`, the `X-Toolgate-Servers` header, or
//! `scope.servers` in a direct invocation; it only narrows the inventory.

/// The header a trusted agent host sets to narrow a session's servers.
pub const HEADER: &str = "x-toolgate-servers";
/// The JWT claim an authorizer passes through.
pub const CLAIM: &str = "toolgate_servers";

/// Parses a scope written as a JSON array (`["a","b"]`), as API Gateway
/// renders a list claim (`[a b]`), or comma- or space-separated (`a, b`).
/// `*` means "every server configuration allows" (`None`).
pub fn parse(raw: &str) -> Option<Vec<String>> {
    let raw = raw.trim();
    if raw == "*" {
        return None;
    }
    if let Ok(list) = serde_json::from_str::<Vec<String>>(raw) {
        return Some(list.into_iter().map(|s| s.trim().to_owned()).collect());
    }
    let inner = raw
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(raw);
    Some(
        inner
            .split(|c: char| c == ',' || c.is_whitespace())
            .map(|s| s.trim_matches(|c| c == '"' || c == '\''))
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn every_spelling_of_a_list() {
        let ab = Some(vec!["a".to_owned(), "b".to_owned()]);
        for raw in [
            r#"["a","b"]"#,
            "[a b]",
            "a,b",
            " a , b ",
            "a b",
            "['a', 'b']",
        ] {
            assert_eq!(parse(raw), ab, "{raw}");
        }
        assert_eq!(parse("*"), None);
        // Present but empty narrows to nothing, never to everything.
        assert_eq!(parse(""), Some(vec![]));
        assert_eq!(parse("[]"), Some(vec![]));
    }
}
