//! The environment as configuration reads it: every `TOOLGATE_*` (and the
//! data folder's `XDG_DATA_HOME`/`HOME`) goes through the lookup injected
//! into `Config::load`, so tests and the Worker pass their own.

use std::path::PathBuf;
use std::str::FromStr;

use super::ConfigError;

/// A name → value lookup (the process environment, a Worker's bindings, a
/// test's table).
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

#[derive(Clone, Copy)]
pub(super) struct Env<'a>(pub Lookup<'a>);

impl Env<'_> {
    /// The value as set, even when empty.
    pub fn raw(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }

    /// The value trimmed; unset when blank.
    pub fn text(&self, name: &str) -> Option<String> {
        self.raw(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    /// `1/true/yes/on` or `0/false/no/off` (blank is false).
    pub fn flag(&self, name: &'static str) -> Result<Option<bool>, ConfigError> {
        let Some(raw) = self.raw(name) else {
            return Ok(None);
        };
        match raw.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(Some(true)),
            "0" | "false" | "no" | "off" | "" => Ok(Some(false)),
            _ => Err(ConfigError::BadValue {
                name,
                what: "a boolean (1/0, true/false)",
                value: raw,
            }),
        }
    }

    /// A number; `what` says which kind in the error.
    pub fn number<T: FromStr>(
        &self,
        name: &'static str,
        what: &'static str,
    ) -> Result<Option<T>, ConfigError> {
        let Some(raw) = self.raw(name) else {
            return Ok(None);
        };
        raw.trim()
            .parse::<T>()
            .map(Some)
            .map_err(|_| ConfigError::BadValue {
                name,
                what,
                value: raw,
            })
    }

    /// A comma-separated list; blanks are ignored.
    pub fn list(&self, name: &str) -> Option<Vec<String>> {
        self.raw(name).map(|v| split_list(&v))
    }
}

/// A comma-separated list; blanks are ignored.
pub fn split_list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Sets `field` when the variable is set, as a number.
pub(super) fn set_number<T: FromStr>(
    env: Env<'_>,
    field: &mut T,
    name: &'static str,
    what: &'static str,
) -> Result<(), ConfigError> {
    if let Some(v) = env.number(name, what)? {
        *field = v;
    }
    Ok(())
}

/// `TOOLGATE_DATA_DIR`, else `$XDG_DATA_HOME/toolgate`, else
/// `~/.local/share/toolgate`.
pub(super) fn data_dir(env: Env<'_>) -> PathBuf {
    if let Some(d) = env.text("TOOLGATE_DATA_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = env.text("XDG_DATA_HOME") {
        return PathBuf::from(d).join("toolgate");
    }
    PathBuf::from(env.text("HOME").unwrap_or_else(|| "/tmp".into())).join(".local/share/toolgate")
}

/// Every `TOOLGATE_*` variable some Toolgate binary or script reads (a
/// unit test holds this to the sources). A variable read only on some paths
/// (the Worker's, Lambda's, a store another setting replaces) is still known.
pub const KNOWN: &[&str] = &[
    "TOOLGATE_ADDR",
    "TOOLGATE_ALLOWED_ORIGINS",
    "TOOLGATE_ALLOW_ANONYMOUS",
    "TOOLGATE_APPROVALS_LINK_HOLDER",
    "TOOLGATE_APPROVERS_IAM",
    "TOOLGATE_APPROVERS_JWT_AUDIENCE",
    "TOOLGATE_APPROVERS_JWT_CLAIM",
    "TOOLGATE_APPROVERS_JWT_GROUP",
    "TOOLGATE_APPROVERS_SLACK_USERS",
    "TOOLGATE_APPROVER_TOKEN",
    "TOOLGATE_BODY_TIMEOUT_SECS",
    "TOOLGATE_CLARIFY_DB",
    "TOOLGATE_CLARIFY_EXPIRY_SECS",
    "TOOLGATE_CLARIFY_MAX_PENDING",
    "TOOLGATE_CLARIFY_MAX_PENDING_PER_CALLER",
    "TOOLGATE_CLARIFY_SLACK_EVENTS",
    "TOOLGATE_CLARIFY_SLACK_URL",
    "TOOLGATE_CLARIFY_SLACK_URL_PARAMETER",
    "TOOLGATE_CLARIFY_SNS_EVENTS",
    "TOOLGATE_CLARIFY_SNS_TOPIC_ARN",
    "TOOLGATE_CLARIFY_STEP_FUNCTIONS",
    "TOOLGATE_CLARIFY_SWEEP_SECS",
    "TOOLGATE_CLARIFY_TABLE",
    "TOOLGATE_CLARIFY_WEBHOOK_EVENTS",
    "TOOLGATE_CLARIFY_WEBHOOK_SECRET",
    "TOOLGATE_CLARIFY_WEBHOOK_SECRET_PARAMETER",
    "TOOLGATE_CLARIFY_WEBHOOK_URL",
    "TOOLGATE_CLOUD_APPROVE_TOOLS",
    "TOOLGATE_CLOUD_SSM_PREFIX",
    "TOOLGATE_CLOUD_TIMEOUT_SECS",
    "TOOLGATE_CLOUD_TTL_SECS",
    "TOOLGATE_CODE_MODE",
    "TOOLGATE_CODE_MODE_CALLERS",
    "TOOLGATE_CODE_MODE_MAX_CALLS",
    "TOOLGATE_CODE_MODE_RESUME_TTL",
    "TOOLGATE_CONFIG",
    "TOOLGATE_DATA_DIR",
    "TOOLGATE_HEADER_TIMEOUT_SECS",
    "TOOLGATE_LOG",
    "TOOLGATE_LOG_LEVEL",
    "TOOLGATE_MAX_CONNECTIONS",
    "TOOLGATE_MAX_CONNECTIONS_PER_CLIENT",
    "TOOLGATE_MCP_NAMES",
    "TOOLGATE_MCP_STATE_KEY",
    "TOOLGATE_MCP_STATE_KEY_PARAMETER",
    "TOOLGATE_OAUTH_ISSUER",
    "TOOLGATE_PEER_FUNCTIONS",
    "TOOLGATE_PUBLIC_URL",
    "TOOLGATE_PYTHON_ALLOWED_MODULES",
    "TOOLGATE_PYTHON_MAX_CONCURRENCY",
    "TOOLGATE_PYTHON_MAX_FILES_MB",
    "TOOLGATE_PYTHON_MAX_PER_CALLER",
    "TOOLGATE_PYTHON_MAX_QUEUED_MB",
    "TOOLGATE_PYTHON_MEMORY_MB",
    "TOOLGATE_PYTHON_NAMESPACE",
    "TOOLGATE_PYTHON_REQUIRE_SECCOMP",
    "TOOLGATE_PYTHON_SESSION_IDLE_SECS",
    "TOOLGATE_PYTHON_SESSION_MAX_MB_PER_CALLER",
    "TOOLGATE_PYTHON_SESSION_MAX_PER_CALLER",
    "TOOLGATE_PYTHON_SESSION_MAX_STATE_MB",
    "TOOLGATE_PYTHON_SESSION_MAX_TOTAL_MB",
    "TOOLGATE_PYTHON_SPARE_CHILDREN",
    "TOOLGATE_PYTHON_TIMEOUT",
    "TOOLGATE_PYTHON_ZYGOTE_MAX_AGE_SECS",
    "TOOLGATE_PYTHON_ZYGOTE_MAX_CALLS",
    "TOOLGATE_SESSIONS_TABLE",
    "TOOLGATE_SHUTDOWN_GRACE_SECS",
    "TOOLGATE_SLACK_SIGNING_SECRET",
    "TOOLGATE_SLACK_SIGNING_SECRET_PARAMETER",
    "TOOLGATE_SSH_APPROVE_PRESET",
    "TOOLGATE_SSH_APPROVE_TAGS",
    "TOOLGATE_SSH_CONNECT_TIMEOUT",
    "TOOLGATE_SSH_MAX_OUTPUT_BYTES",
    "TOOLGATE_SSH_MAX_TIMEOUT",
    "TOOLGATE_SSH_SSM_PREFIX",
    "TOOLGATE_SSH_TTL_SECS",
    "TOOLGATE_TASKS_AFTER_MS",
    "TOOLGATE_TASKS_TABLE",
    "TOOLGATE_TOKEN",
    "TOOLGATE_URL",
];

/// Prefixes of variables the repository's scripts and tests read
/// (`scripts/`, `.ci/run`), not the binaries: never warned about.
const SCRIPT_PREFIXES: &[&str] = &[
    "TOOLGATE_TEST_",
    "TOOLGATE_CI_",
    "TOOLGATE_TOOLS",
    "TOOLGATE_PGO_",
    "TOOLGATE_WORKER_PREBUILT",
];

/// A warning for each `TOOLGATE_*` name in `set` that is neither
/// [`KNOWN`] nor in `asked` (names this configuration read, such as a
/// cloud account's `token_env`), with the closest known name when one is
/// near (a misspelling).
pub fn unknown_variables<'a>(
    set: impl Iterator<Item = &'a str>,
    asked: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    let mut unknown: Vec<&str> = set
        .filter(|k| k.starts_with("TOOLGATE_"))
        .filter(|k| !KNOWN.contains(k) && !asked.contains(*k))
        .filter(|k| !SCRIPT_PREFIXES.iter().any(|p| k.starts_with(p)))
        .collect();
    unknown.sort_unstable();
    unknown
        .into_iter()
        .map(|k| {
            let closest = KNOWN
                .iter()
                .map(|known| (edit_distance(k, known), *known))
                .min()
                .filter(|(d, _)| *d <= 3.max(k.len() / 8));
            match closest {
                Some((_, known)) => {
                    format!("{k} is set but no setting has that name: did you mean {known}?")
                }
                None => format!(
                    "{k} is set but no setting has that name (docs/configuration.md lists them)"
                ),
            }
        })
        .collect()
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_numbers_and_lists_are_read_strictly() {
        let lookup = |k: &str| match k {
            "YES" => Some(" On ".to_owned()),
            "BLANK" => Some(String::new()),
            "MAYBE" => Some("perhaps".to_owned()),
            "N" => Some(" 42 ".to_owned()),
            "LIST" => Some(" a, ,b ,".to_owned()),
            _ => None,
        };
        let env = Env(&lookup);
        assert_eq!(env.flag("YES"), Ok(Some(true)));
        assert_eq!(env.flag("BLANK"), Ok(Some(false)));
        assert_eq!(env.flag("UNSET"), Ok(None));
        assert!(env.flag("MAYBE").unwrap_err().to_string().contains("MAYBE"));
        assert_eq!(env.number::<u64>("N", "n"), Ok(Some(42)));
        assert!(env.number::<u64>("MAYBE", "a count").is_err());
        assert_eq!(env.text("BLANK"), None);
        assert_eq!(env.list("LIST"), Some(vec!["a".into(), "b".into()]));
    }

    #[test]
    fn a_misspelt_variable_is_named_with_the_closest_known_one() {
        let asked = std::collections::BTreeSet::from(["TOOLGATE_MY_CLOUD_TOKEN".to_owned()]);
        let set = [
            "TOOLGATE_PYTHN_TIMEOUT",
            "TOOLGATE_PYTHON_TIMEOUT",
            "TOOLGATE_MY_CLOUD_TOKEN",
            "TOOLGATE_TEST_TOOLS",
            "TOOLGATE_TOOLS",
            "HOME",
            "TOOLGATE_SOMETHING_ELSE_ENTIRELY",
        ];
        assert_eq!(
            unknown_variables(set.into_iter(), &asked),
            [
                "TOOLGATE_PYTHN_TIMEOUT is set but no setting has that name: did you mean \
                 TOOLGATE_PYTHON_TIMEOUT?",
                "TOOLGATE_SOMETHING_ELSE_ENTIRELY is set but no setting has that name \
                 (docs/configuration.md lists them)",
            ]
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    /// Every `"TOOLGATE_…"` name the binaries' sources read is in [`KNOWN`]
    /// (else setting it would draw a warning that it is unknown), and every
    /// name there is still read somewhere.
    #[test]
    fn known_names_are_the_ones_the_sources_read() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut found = std::collections::BTreeSet::new();
        let mut stack: Vec<std::path::PathBuf> = ["shared/src", "crates", "functions"]
            .iter()
            .map(|d| root.join(d))
            .collect();
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if path.is_dir() {
                    if !["target", "node_modules", "tests"].contains(&name.as_str()) {
                        stack.push(path);
                    }
                    continue;
                }
                if !name.ends_with(".rs") || name == "tests.rs" {
                    continue;
                }
                let mut text = std::fs::read_to_string(&path).unwrap();
                // Unit tests and this list are not readers.
                if let Some(at) = text.find("#[cfg(test)]\nmod tests") {
                    text.truncate(at);
                }
                if let (Some(from), true) = (
                    text.find("pub const KNOWN"),
                    path.ends_with("config/env.rs"),
                ) {
                    let to = from + text[from..].find("];").unwrap();
                    text.replace_range(from..to, "");
                }
                for (at, _) in text.match_indices("\"TOOLGATE_") {
                    let rest = &text[at + 1..];
                    let end = rest
                        .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                        .unwrap_or(rest.len());
                    if rest[end..].starts_with('"') && !rest[..end].ends_with('_') {
                        found.insert(rest[..end].to_owned());
                    }
                }
            }
        }
        found.retain(|k: &String| !SCRIPT_PREFIXES.iter().any(|p| k.starts_with(p)));
        let known: std::collections::BTreeSet<String> =
            KNOWN.iter().map(|k| k.to_string()).collect();
        let unlisted: Vec<_> = found.difference(&known).collect();
        let unread: Vec<_> = known.difference(&found).collect();
        assert!(
            unlisted.is_empty() && unread.is_empty(),
            "read but not in KNOWN: {unlisted:?}; in KNOWN but read nowhere: {unread:?}"
        );
    }
}
