//! Configuration as read from a file and an environment.

use super::*;

use std::collections::BTreeMap;

fn with_env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| m.get(k).cloned()
}

#[test]
fn timeout_parsing_falls_back_and_clamps() {
    assert_eq!(parse_timeout("30"), 30);
    assert_eq!(parse_timeout(" 7 "), 7);
    assert_eq!(parse_timeout("abc"), 20);
    assert_eq!(parse_timeout(""), 20);
    assert_eq!(parse_timeout("1.5"), 20);
    assert_eq!(parse_timeout("0"), 1);
    assert_eq!(parse_timeout("-5"), 1);
    assert_eq!(parse_timeout("99999"), 1200);
    assert_eq!(parse_timeout("99999999999999999999999"), 20);
}

#[test]
fn env_overrides_file() {
    let toml = "[python]\ntimeout = 5\nallowed_modules = [\"html\"]\n";
    let c = Config::from_parts(
        toml,
        "t.toml",
        &with_env(&[("TOOLGATE_PYTHON_TIMEOUT", "9")]),
    )
    .unwrap();
    assert_eq!(c.python.timeout_secs, 9);
    assert_eq!(c.python.extra_modules, vec!["html"]);
    let c = Config::from_parts(toml, "t.toml", &with_env(&[])).unwrap();
    assert_eq!(c.python.timeout_secs, 5);
    let c = Config::from_parts("[python]\ntimeout = 5000\n", "t", &with_env(&[])).unwrap();
    assert_eq!(c.python.timeout_secs, 1200);
}

#[test]
fn module_lists_are_parsed_and_merged() {
    assert_eq!(
        env::split_list(" html, ,xml.dom ,"),
        vec!["html", "xml.dom"]
    );
    let c = Config::from_parts(
        "",
        "",
        &with_env(&[("TOOLGATE_PYTHON_ALLOWED_MODULES", "html,math")]),
    )
    .unwrap();
    let all = c.python.allowed_modules();
    assert_eq!(all.len(), 34, "math is a default and is not doubled");
    assert!(all.contains(&"html".to_string()));
    assert!(all.windows(2).all(|w| w[0] < w[1]), "sorted");
}

#[test]
fn dangerous_or_malformed_modules_are_refused() {
    for bad in [
        "os",
        "sys",
        "os.path",
        "subprocess",
        "ctypes",
        "importlib.util",
        "builtins",
    ] {
        let e = Config::from_parts(
            "",
            "",
            &with_env(&[("TOOLGATE_PYTHON_ALLOWED_MODULES", bad)]),
        )
        .unwrap_err();
        assert_eq!(e, ConfigError::ForbiddenModule(bad.into()), "{bad}");
    }
    for bad in ["1abc", "a-b", "a..b", "a b"] {
        let e = Config::from_parts(
            "",
            "",
            &with_env(&[("TOOLGATE_PYTHON_ALLOWED_MODULES", bad)]),
        )
        .unwrap_err();
        assert_eq!(e, ConfigError::BadModuleName(bad.into()), "{bad}");
    }
}

#[test]
fn namespace_and_defaults() {
    let c = Config::from_parts("", "", &with_env(&[])).unwrap();
    assert_eq!(c.python.tool_name(), "python.execute");
    assert_eq!(c.python.memory_mb, 256);
    assert_eq!(c.server.addr, "127.0.0.1:8080");
    let c = Config::from_parts("", "", &with_env(&[("TOOLGATE_PYTHON_NAMESPACE", "py")])).unwrap();
    assert_eq!(c.python.tool_name(), "py.execute");
    let e =
        Config::from_parts("", "", &with_env(&[("TOOLGATE_PYTHON_NAMESPACE", "a.b")])).unwrap_err();
    assert!(matches!(e, ConfigError::BadNamespace(_)));
}

#[test]
fn bad_file_and_bad_numbers_are_clear_errors() {
    let e =
        Config::from_parts("[python]\ntimeout = \"x\"\n", "f.toml", &with_env(&[])).unwrap_err();
    assert!(matches!(e, ConfigError::Parse { .. }));
    assert!(e.to_string().contains("f.toml"));
    let e = Config::from_parts("[pyhton]\n", "f.toml", &with_env(&[])).unwrap_err();
    assert!(e.to_string().contains("pyhton"), "{e}");
    // Where, but not the line itself: it may hold a token.
    let e = Config::from_parts(
        "[server]\naddr = \"127.0.0.1:1\"\ntokn = \"secret-token-value-1\"\n",
        "f.toml",
        &with_env(&[]),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("tokn") && e.to_string().contains("line 3, column 1"),
        "{e}"
    );
    assert!(!e.to_string().contains("secret-"), "{e}");
    let ok = Config::from_parts("[clarify]\n", "f.toml", &with_env(&[]));
    assert!(ok.is_ok(), "other tools' tables are accepted");
    let e = Config::from_parts("[python]\ntimout = 3\n", "f.toml", &with_env(&[])).unwrap_err();
    assert!(e.to_string().contains("timout"));
    let e = Config::from_parts("", "", &with_env(&[("TOOLGATE_PYTHON_MEMORY_MB", "lots")]))
        .unwrap_err();
    assert!(e.to_string().contains("TOOLGATE_PYTHON_MEMORY_MB"));
    // The sweep's period: a number of seconds from 1 to an hour.
    let sweep = |file: &str, env: &[(&str, &str)]| {
        Config::from_parts(file, "f.toml", &with_env(env)).map(|c| c.clarify.sweep_secs)
    };
    assert_eq!(sweep("", &[]).unwrap(), 30);
    assert_eq!(sweep("[clarify]\nsweep_secs = 5\n", &[]).unwrap(), 5);
    let env = [("TOOLGATE_CLARIFY_SWEEP_SECS", "2")];
    assert_eq!(sweep("[clarify]\nsweep_secs = 5\n", &env).unwrap(), 2);
    for bad in ["0", "3601", "soon"] {
        let e = sweep("", &[("TOOLGATE_CLARIFY_SWEEP_SECS", bad)]).unwrap_err();
        assert!(
            e.to_string().to_lowercase().contains("sweep_secs"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn a_callers_share_defaults_to_three_quarters_and_is_checked() {
    let c = Config::from_parts("", "", &with_env(&[])).unwrap();
    assert_eq!(c.python.per_caller(), 12, "3/4 of the default 16");
    let c =
        Config::from_parts("[python]\nmax_concurrency = 1\n", "f.toml", &with_env(&[])).unwrap();
    assert_eq!(c.python.per_caller(), 1, "never below one place");
    let c = Config::from_parts(
        "",
        "",
        &with_env(&[("TOOLGATE_PYTHON_MAX_PER_CALLER", "16")]),
    )
    .unwrap();
    assert_eq!(
        c.python.per_caller(),
        16,
        "a share of all turns fairness off"
    );
    for bad in ["0", "17"] {
        let e = Config::from_parts(
            "",
            "",
            &with_env(&[("TOOLGATE_PYTHON_MAX_PER_CALLER", bad)]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("max_per_caller"), "{bad}: {e}");
    }
}

// The whole table is checked where the SSH tools are built in.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn server_tables_are_checked_at_load() {
    let dir = std::env::temp_dir().join(format!("toolgate-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A throwaway ed25519 key, generated for this test only.
    let key = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACDjqux70ylHyacqbt3+L/Xc8e/1M3tdKd8tlJTn/de9JAAAAIiKXDo0ilw6
NAAAAAtzc2gtZWQyNTUxOQAAACDjqux70ylHyacqbt3+L/Xc8e/1M3tdKd8tlJTn/de9JA
AAAECpXrnlppClY/PkrhQGsx4VmnlE3b/Rp/qWoz8ubaJ55OOq7HvTKUfJpypu3f4v9dzx
7/Uze10p3y2UlOf9170kAAAABHRlc3QB
-----END OPENSSH PRIVATE KEY-----
";
    std::fs::write(dir.join("id"), key).unwrap();
    let cfg_path = dir.join("toolgate.toml");
    let cfg_path = cfg_path.to_str().unwrap();
    let table = |extra: &str| {
        format!(
            "[servers.web]\nhost = \"10.0.0.5\"\nusername = \"ops\"\nhost_key = \"{}\"\n{extra}",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOOq7HvTKUfJpypu3f4v9dzx7/Uze10p3y2UlOf9170k"
        )
    };
    // key_file relative to the config file.
    let c = Config::from_parts(&table("key_file = \"id\"\n"), cfg_path, &with_env(&[])).unwrap();
    let servers = c.ssh.servers().unwrap();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].port, 22);
    assert!(
        !format!("{c:?}").contains("PRIVATE KEY"),
        "the key never shows in Debug"
    );
    for (text, says) in [
        (table(""), "key_file is required"),
        (table("key_file = \"nope\"\n"), "key_file"),
        (
            table("key_file = \"id\"\n[servers.web.policy]\npreset = \"strict\"\n"),
            "preset",
        ),
        (
            table("key_file = \"id\"\n[servers.web.policy]\ndeny = [\"(\"]\n"),
            "not a valid regex",
        ),
        (
            table("key_file = \"id\"\n").replace("AAAAC3", "AAAAC4"),
            "host_key",
        ),
        (
            table("key_file = \"id\"\n").replace("[servers.web]", "[servers.\"a b\"]"),
            "server name",
        ),
        (
            table("key_file = \"id\"\nmax_sessions = 0\n"),
            "max_sessions",
        ),
    ] {
        // Read at load, checked whole where the SSH tools start.
        let e = match Config::from_parts(&text, cfg_path, &with_env(&[])) {
            Ok(c) => c.ssh.servers().unwrap_err(),
            Err(e) => e,
        };
        assert!(e.to_string().contains(says), "{text}\n=> {e}");
    }
    let e =
        Config::from_parts("[servers.web]\nhost = \"h\"\n", "f.toml", &with_env(&[])).unwrap_err();
    assert!(e.to_string().contains("username"), "{e}");
    let e =
        Config::from_parts("", "", &with_env(&[("TOOLGATE_SSH_MAX_TIMEOUT", "0")])).unwrap_err();
    assert!(e.to_string().contains("max_timeout"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn notification_channels_from_the_file_and_the_environment() {
    use crate::clarify::notify::Event;
    let toml = r#"
[[clarify.notify]]
kind = "webhook"
name = "ops"
url = "https://hooks.example/t"
secret_env = "OPS_SECRET"
events = ["created", "expired", "created"]

[[clarify.notify]]
kind = "slack"
url = "https://hooks.slack.com/services/T/B/secretpart"
"#;
    let env = [
        ("OPS_SECRET", "0123456789abcdef"),
        (
            "TOOLGATE_CLARIFY_SNS_TOPIC_ARN",
            "arn:aws:sns:eu-west-1:123456789012:ask",
        ),
        ("TOOLGATE_CLARIFY_SNS_EVENTS", "created, answered"),
    ];
    let c = Config::from_parts(toml, "f.toml", &with_env(&env)).unwrap();
    let n = &c.clarify.notify;
    assert_eq!(n.len(), 3);
    assert_eq!(n[0].name, "ops");
    assert_eq!(n[0].events, [Event::Created, Event::Expired]);
    assert!(
        n[0].kind
            == NotifyKind::Webhook {
                url: "https://hooks.example/t".into(),
                secret: "0123456789abcdef".into()
            }
    );
    assert_eq!(n[1].name, "slack");
    assert_eq!(n[1].events, Event::ALL);
    assert_eq!(n[2].name, "sns");
    assert_eq!(n[2].events, [Event::Created, Event::Answered]);
    let shown = format!("{:?}", c.clarify);
    assert!(!shown.contains("0123456789abcdef"), "{shown}");
    assert!(!shown.contains("secretpart"), "{shown}");

    // The environment's webhook replaces a file channel of the same name.
    let c = Config::from_parts(
        "[[clarify.notify]]\nkind = \"webhook\"\nurl = \"https://a.example\"\nsecret = \"aaaaaaaaaaaaaaaa\"\n",
        "f.toml",
        &with_env(&[
            ("TOOLGATE_CLARIFY_WEBHOOK_URL", "http://127.0.0.1:9/hook"),
            ("TOOLGATE_CLARIFY_WEBHOOK_SECRET", "bbbbbbbbbbbbbbbb"),
        ]),
    )
    .unwrap();
    assert_eq!(c.clarify.notify.len(), 1);
    assert!(
        matches!(&c.clarify.notify[0].kind, NotifyKind::Webhook { url, .. } if url == "http://127.0.0.1:9/hook")
    );
}

#[test]
fn bad_notification_channels_are_clear_errors_without_secrets() {
    let cases: &[(&str, &str)] = &[
        ("kind = \"pager\"", "unknown kind \"pager\""),
        (
            "kind = \"webhook\"\nurl = \"https://x\"",
            "needs secret or secret_env",
        ),
        (
            "kind = \"webhook\"\nurl = \"https://x\"\nsecret = \"short-secret\"",
            "at least 16",
        ),
        (
            "kind = \"webhook\"\nurl = \"https://x\"\nsecret_env = \"NOPE\"",
            "NOPE, which is not set",
        ),
        ("kind = \"slack\"\nurl = \"ftp://x\"", "http(s)://"),
        (
            "kind = \"slack\"\nurl = \"https://x\"\nevents = [\"opened\"]",
            "unknown event \"opened\"",
        ),
        (
            "kind = \"slack\"\nurl = \"https://x\"\nevents = []",
            "events is empty",
        ),
        (
            "kind = \"slack\"\nurl = \"https://x\"\nname = \"Ops Room\"",
            "a name is 1 to 32",
        ),
        (
            "kind = \"sns\"\ntopic_arn = \"arn:aws:sqs:r:1:q\"",
            "not an SNS topic ARN",
        ),
        (
            "kind = \"slack\"\nurl = \"https://x\"\ncolour = \"red\"",
            "colour",
        ),
    ];
    for (table, want) in cases {
        let toml = format!("[[clarify.notify]]\n{table}\n");
        let e = Config::from_parts(&toml, "f.toml", &with_env(&[])).unwrap_err();
        assert!(e.to_string().contains(want), "{table}: {e}");
        assert!(!e.to_string().contains("short-secret"), "{e}");
    }
    let two = "[[clarify.notify]]\nkind = \"slack\"\nurl = \"https://x\"\n\
               [[clarify.notify]]\nkind = \"slack\"\nurl = \"https://y\"\n";
    let e = Config::from_parts(two, "f.toml", &with_env(&[])).unwrap_err();
    assert!(e.to_string().contains("two channels have this name"), "{e}");
    let e = Config::from_parts(
        "",
        "",
        &with_env(&[("TOOLGATE_CLARIFY_WEBHOOK_URL", "https://x")]),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("TOOLGATE_CLARIFY_WEBHOOK_SECRET"),
        "{e}"
    );
}

#[test]
fn caller_tokens_are_named_and_the_single_token_is_a_digest() {
    let toml = "[[server.tokens]]\nname = \"ci\"\ntoken = \"ci-token-0123456789\"\n\
                [[server.tokens]]\nname = \"alice@example.com\"\ntoken_env = \"ALICE_TOKEN\"\n";
    let mut c = Config::from_parts(
        toml,
        "f.toml",
        &with_env(&[
            ("ALICE_TOKEN", "alice-token-0123456789"),
            ("TOOLGATE_TOKEN", "short"),
        ]),
    )
    .unwrap();
    let names: Vec<&str> = c.server.tokens.iter().map(|t| t.name.as_str()).collect();
    let short = single_token_name("short");
    assert_eq!(names, ["ci", "alice@example.com", short.as_str()]);
    assert_eq!(c.server.tokens[1].token, "alice-token-0123456789");
    assert!(short.starts_with("token-") && short.len() == 18, "{short}");
    // `--token` takes the single token's place.
    c.set_caller_token("from-the-command-line").unwrap();
    let names: Vec<&str> = c.server.tokens.iter().map(|t| t.name.as_str()).collect();
    let cli = single_token_name("from-the-command-line");
    assert_eq!(names, ["ci", "alice@example.com", cli.as_str()]);
    // The file's single token, when the environment sets none.
    let c = Config::from_parts("[server]\ntoken = \"file-token\"\n", "f", &with_env(&[])).unwrap();
    assert_eq!(c.server.tokens[0].name, single_token_name("file-token"));
    assert!(
        !format!("{c:?}").contains("file-token"),
        "Debug shows no token"
    );
    let c = Config::from_parts("", "", &with_env(&[("TOOLGATE_TOKEN", "")])).unwrap();
    assert!(c.server.tokens.is_empty());
    assert!(!c.server.allow_anonymous);
    let c = Config::from_parts("", "", &with_env(&[("TOOLGATE_ALLOW_ANONYMOUS", "true")])).unwrap();
    assert!(c.server.allow_anonymous);
}

#[test]
fn bad_token_tables_are_clear_errors_without_tokens() {
    let entry = |body: &str| format!("[[server.tokens]]\n{body}\n");
    let cases: &[(String, &str)] = &[
        (
            entry("name = \"a b\"\ntoken = \"secret-token-value-1\""),
            "must match",
        ),
        (
            entry("name = \"\"\ntoken = \"secret-token-value-1\""),
            "must match",
        ),
        (
            entry("name = \"ci\"\ntoken = \"secret-short\""),
            "at least 16",
        ),
        (
            entry("name = \"ci\"\ntoken = \"secret token value 1\""),
            "printable ASCII",
        ),
        (entry("name = \"ci\""), "give token or token_env"),
        (
            entry("name = \"ci\"\ntoken = \"secret-token-value-1\"\ntoken_env = \"X\""),
            "not both",
        ),
        (
            entry("name = \"ci\"\ntoken_env = \"NOPE\""),
            "NOPE, which is not set",
        ),
        (
            entry("name = \"ci\"\ntokn = \"secret-token-value-1\""),
            "tokn",
        ),
        (
            entry("name = \"ci\"\ntoken = \"secret-token-value-1\"")
                + &entry("name = \"ci\"\ntoken = \"secret-token-value-2\""),
            "two entries have this name",
        ),
        (
            entry("name = \"a\"\ntoken = \"secret-token-value-1\"")
                + &entry("name = \"b\"\ntoken = \"secret-token-value-1\""),
            "same token as \"a\"",
        ),
        (
            "[server]\ntoken = \"secret-token-value-1\"\n".to_owned()
                + &entry("name = \"a\"\ntoken = \"secret-token-value-1\""),
            "keep one of them",
        ),
        (
            "[[approvals.approvers]]\nname = \"boss\"\ntoken = \"secret-short\"\n".into(),
            "[[approvals.approvers]] \"boss\": the token must be at least 16",
        ),
        (
            entry("name = \"agent\"\ntoken = \"secret-token-value-1\"")
                + "[[approvals.approvers]]\nname = \"boss\"\ntoken = \"secret-token-value-1\"\n",
            "also the token of caller \"agent\"",
        ),
    ];
    for (toml, want) in cases {
        let e = Config::from_parts(toml, "f.toml", &with_env(&[])).unwrap_err();
        assert!(e.to_string().contains(want), "{toml}: {e}");
        assert!(!e.to_string().contains("secret-"), "{e}");
    }
    // The same through the environment, and through `--token`.
    let both = [
        ("TOOLGATE_TOKEN", "secret-token-value-1"),
        ("TOOLGATE_APPROVER_TOKEN", "secret-token-value-1"),
    ];
    let e = Config::from_parts("", "", &with_env(&both)).unwrap_err();
    assert!(e.to_string().contains("approver \"approver\""), "{e}");
    let e = Config::from_parts(
        "",
        "",
        &with_env(&[("TOOLGATE_APPROVER_TOKEN", "secret-short")]),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("TOOLGATE_APPROVER_TOKEN: the token must be at least 16"),
        "{e}"
    );
    let mut c = Config::from_parts(
        "",
        "",
        &with_env(&[("TOOLGATE_APPROVER_TOKEN", "secret-token-value-1")]),
    )
    .unwrap();
    let e = c.set_caller_token("secret-token-value-1").unwrap_err();
    assert!(
        e.to_string()
            .contains("an approver needs a token no caller holds"),
        "{e}"
    );
    let e = Config::from_parts(
        "[[approvals.approvers]]\nname = \"approver\"\ntoken = \"secret-token-value-2\"\n",
        "f",
        &with_env(&[("TOOLGATE_APPROVER_TOKEN", "secret-token-value-1")]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("two entries have this name"), "{e}");
}

#[test]
fn approvals_from_the_file_and_the_environment() {
    let c = Config::from_parts("", "", &with_env(&[])).unwrap();
    assert_eq!(c.approvals, ApprovalsConfig::default());
    assert_eq!(c.approvals.jwt_claim, "cognito:groups");
    assert!(!c.approvals.link_holder);
    let toml = "[approvals]\nlink_holder = true\njwt_group = \"ops\"\n\
                iam_approvers = [\"arn:aws:iam::123456789012:user/alice\"]\nslack_users = [\"U012ABCDEF\"]\n\
                [[approvals.approvers]]\nname = \"alice\"\ntoken = \"alice-approves-1234\"\n";
    let c = Config::from_parts(
        toml,
        "f",
        &with_env(&[("TOOLGATE_APPROVER_TOKEN", "env-approver-token-1")]),
    )
    .unwrap();
    let a = &c.approvals;
    assert!(a.link_holder);
    assert_eq!(a.jwt_group.as_deref(), Some("ops"));
    assert_eq!(a.iam_approvers, ["arn:aws:iam::123456789012:user/alice"]);
    assert_eq!(a.slack_users, ["U012ABCDEF"]);
    let names: Vec<&str> = a.approvers.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["alice", "approver"]);
    let c = Config::from_parts(
        toml,
        "f",
        &with_env(&[
            ("TOOLGATE_APPROVALS_LINK_HOLDER", "false"),
            ("TOOLGATE_APPROVERS_JWT_GROUP", "approvers"),
            ("TOOLGATE_APPROVERS_JWT_CLAIM", "groups"),
            (
                "TOOLGATE_APPROVERS_IAM",
                "arn:aws:iam::123456789012:user/a, arn:aws:iam::123456789012:user/b",
            ),
            ("TOOLGATE_APPROVERS_SLACK_USERS", "*"),
        ]),
    )
    .unwrap();
    let a = &c.approvals;
    assert!(!a.link_holder);
    assert_eq!(a.jwt_group.as_deref(), Some("approvers"));
    assert_eq!(a.jwt_claim, "groups");
    assert_eq!(a.iam_approvers.len(), 2);
    assert_eq!(a.slack_users, ["*"]);
    for (k, v, want) in [
        ("TOOLGATE_APPROVERS_IAM", "alice", "iam_approvers"),
        (
            "TOOLGATE_APPROVERS_IAM",
            "arn:aws:sts::123456789012:assumed-role/Ops/alice",
            "iam_approvers",
        ),
        (
            "TOOLGATE_APPROVERS_IAM",
            "arn:aws:iam::1:user/a",
            "iam_approvers",
        ),
        ("TOOLGATE_APPROVERS_SLACK_USERS", "u01abc", "slack_users"),
        (
            "TOOLGATE_APPROVALS_LINK_HOLDER",
            "maybe",
            "TOOLGATE_APPROVALS_LINK_HOLDER",
        ),
    ] {
        let e = Config::from_parts("", "", &with_env(&[(k, v)])).unwrap_err();
        assert!(e.to_string().contains(want), "{k}={v}: {e}");
    }
    let e =
        Config::from_parts("[approvals]\njwt_claim = \" \"\n", "f", &with_env(&[])).unwrap_err();
    assert!(e.to_string().contains("jwt_claim"), "{e}");
}

#[test]
fn the_data_folder_is_named_by_the_environment() {
    let c = Config::from_parts("", "", &with_env(&[("TOOLGATE_DATA_DIR", "/srv/tg")])).unwrap();
    assert_eq!(c.data_dir, std::path::PathBuf::from("/srv/tg"));
    assert_eq!(
        c.clarify.db_path,
        std::path::PathBuf::from("/srv/tg/clarify.sqlite3")
    );
}
