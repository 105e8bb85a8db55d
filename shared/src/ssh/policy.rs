//! Per-server command policy, checked before connecting: the `readonly`
//! preset, `allow` and `deny` regex lists; and which commands need a
//! person's approval (`approve`, `approve_preset`).
//!
//! The preset is an allowlist ([`super::readonly`]): it passes only
//! commands known to be read-only, whatever way a shell could spell
//! something else. The regex lists are a guard rail against an agent's
//! mistakes, not a security boundary: a shell can spell any command in ways
//! no list of patterns foresees (`python3 -c ...`, variables, base64). Use a
//! restricted remote user for real limits.

pub use super::doc::PolicySpec;
use super::readonly::read_only;
use regex::Regex;

/// A regex from the policy, with its source for messages.
#[derive(Clone, Debug)]
struct Pattern {
    re: Regex,
    source: String,
}

impl Pattern {
    /// `what` names the list in the error (`policy`, `approve`).
    fn compile(source: &str, what: &str) -> Result<Self, String> {
        Regex::new(source)
            .map(|re| Self {
                re,
                source: source.to_owned(),
            })
            .map_err(|e| format!("{what} pattern {source:?} is not a valid regex: {e}"))
    }
}

/// Why the readonly preset does not pass `command`, or `None` when it is
/// known to be read-only.
fn not_read_only(command: &str) -> Option<String> {
    read_only(command)
        .err()
        .map(|why| format!("the readonly preset cannot tell it is read-only: {why}"))
}

/// A server's command policy, compiled; [`Self::check`] applies it.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// `preset = "readonly"`: only commands known to be read-only run.
    readonly: bool,
    allow: Vec<Pattern>,
    deny: Vec<Pattern>,
    approve: Approve,
    /// `approvers = "client"`: the caller's own person may decide.
    client_approves: bool,
}

/// Which commands need a person's approval.
#[derive(Clone, Debug, Default)]
pub struct Approve {
    /// Every command.
    all: bool,
    /// Every command not known to be read-only (`readonly`).
    readonly: bool,
    patterns: Vec<Pattern>,
}

impl Approve {
    /// From a preset (`readonly`, `all`) and patterns; `Err` names a bad one.
    pub fn compile(preset: Option<&str>, patterns: &[String]) -> Result<Self, String> {
        let mut a = Self::default();
        match preset {
            None => {}
            Some("all") => a.all = true,
            Some("readonly") => a.readonly = true,
            Some(other) => {
                return Err(format!(
                    "approve_preset {other:?} is unknown (\"readonly\" or \"all\")"
                ));
            }
        }
        for p in patterns {
            a.patterns.push(Pattern::compile(p, "approve")?);
        }
        Ok(a)
    }

    /// `Some(why)` when `command` needs approval: the server's own
    /// patterns are named first, then the preset.
    pub fn needs(&self, command: &str) -> Option<String> {
        if self.all {
            return Some("every command on this server needs approval".into());
        }
        if let Some(p) = self.patterns.iter().find(|p| p.re.is_match(command)) {
            return Some(format!("it matches approval rule `{}`", p.source));
        }
        if self.readonly {
            return not_read_only(command);
        }
        None
    }
}

impl Policy {
    /// Compiles the policy as written; `Err` names a bad pattern or an unknown
    /// preset.
    pub fn compile(spec: &PolicySpec) -> Result<Self, String> {
        let readonly = match spec.preset.as_deref() {
            None => false,
            Some("readonly") => true,
            Some(other) => {
                return Err(format!(
                    "policy preset {other:?} is unknown (the one preset is \"readonly\")"
                ));
            }
        };
        let compile = |src: &String| Pattern::compile(src, "policy");
        Ok(Self {
            readonly,
            allow: spec.allow.iter().map(compile).collect::<Result<_, _>>()?,
            deny: spec.deny.iter().map(compile).collect::<Result<_, _>>()?,
            approve: Approve::compile(spec.approve_preset.as_deref(), &spec.approve)?,
            client_approves: crate::approvals::client_approves(spec.approvers.as_deref())?,
        })
    }

    /// `Some(why)` when the server's own rules say `command` needs a
    /// person's approval.
    pub fn needs_approval(&self, command: &str) -> Option<String> {
        self.approve.needs(command)
    }

    /// Whether the caller's own person may decide this server's approvals
    /// (`approvers = "client"`).
    pub fn client_approves(&self) -> bool {
        self.client_approves
    }

    /// `Err` says why the command is refused: the preset first, then the
    /// deny list, then the allow list.
    pub fn check(&self, command: &str) -> Result<(), String> {
        if self.readonly
            && let Some(why) = not_read_only(command)
        {
            return Err(why);
        }
        if let Some(p) = self.deny.iter().find(|p| p.re.is_match(command)) {
            return Err(format!("it matches deny rule `{}`", p.source));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|p| p.re.is_match(command)) {
            let list: Vec<String> = self
                .allow
                .iter()
                .map(|p| format!("`{}`", p.source))
                .collect();
            return Err(format!("it matches no allow rule ({})", list.join(", ")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readonly() -> Policy {
        Policy::compile(&PolicySpec {
            preset: Some("readonly".into()),
            ..Default::default()
        })
        .unwrap()
    }

    /// The red team's forms: each ran without a person under the old
    /// pattern preset.
    const EVASIONS: &[&str] = &[
        "env touch x",
        "'touch' x",
        "\\touch x",
        "\"touch\" x",
        "t\"\"ouch x",
        "python3 -c 'import os'",
        "/usr/bin/touch x",
        "A=1 touch x",
    ];

    #[test]
    fn readonly_refuses_what_it_cannot_tell_is_read_only() {
        let p = readonly();
        for bad in EVASIONS.iter().chain(&[
            "rm -rf /tmp/x",
            "ls; rm x",
            "true && sudo reboot",
            "echo hi > /etc/motd",
            "cat a >> b",
            "uptime >&2",
            "systemctl restart nginx",
            "apt-get -y install curl",
            "sed -i s/a/b/ f",
            "find . | xargs rm",
            "echo $(mv a b)",
            "kubectl delete pod x",
            "echo x | tee f",
            "docker ps",
        ]) {
            let err = p.check(bad).expect_err(bad);
            assert!(
                err.starts_with("the readonly preset cannot tell it is read-only: "),
                "{bad}: {err}"
            );
        }
        // The classifier's reason reaches the refusal.
        let err = p.check("env touch x").unwrap_err();
        assert!(err.ends_with("`env` is not on the read-only list"), "{err}");
        let err = p.check("cat x > y").unwrap_err();
        assert!(err.contains("output redirection (>)"), "{err}");
        for ok in [
            "ls -la /var/log",
            "cat /etc/os-release",
            "df -h; free -m",
            "journalctl -u nginx --since today | tail -n 50",
            "systemctl status nginx",
            "ps aux | grep firmware",
            "echo format",
            "uptime; df -h /",
        ] {
            assert_eq!(p.check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn the_preset_and_the_lists_both_apply() {
        let p = Policy::compile(&PolicySpec {
            preset: Some("readonly".into()),
            deny: vec![r"/etc/shadow".into()],
            ..Default::default()
        })
        .unwrap();
        let e = p.check("cat /etc/shadow").unwrap_err();
        assert_eq!(e, "it matches deny rule `/etc/shadow`");
        let e = p.check("rm /etc/shadow").unwrap_err();
        assert!(e.contains("readonly preset"), "{e}");
        assert_eq!(p.check("cat /etc/hosts"), Ok(()));
    }

    #[test]
    fn allow_and_deny_lists_name_the_rule() {
        let p = Policy::compile(&PolicySpec {
            allow: vec![r"^(ls|cat|uptime)\b".into()],
            deny: vec![r"/etc/shadow".into()],
            ..Default::default()
        })
        .unwrap();
        assert_eq!(p.check("uptime"), Ok(()));
        let e = p.check("cat /etc/shadow").unwrap_err();
        assert!(e.contains("deny rule `/etc/shadow`"), "{e}");
        let e = p.check("whoami").unwrap_err();
        assert!(
            e.contains("no allow rule") && e.contains(r"^(ls|cat|uptime)\b"),
            "{e}"
        );
        // Without the preset, anything the lists pass runs.
        assert_eq!(p.check("ls > /tmp/x"), Ok(()));
    }

    #[test]
    fn bad_policies_are_clear_errors() {
        let e = Policy::compile(&PolicySpec {
            deny: vec!["(".into()],
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.contains("not a valid regex"), "{e}");
        let e = Policy::compile(&PolicySpec {
            preset: Some("paranoid".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.contains("unknown"), "{e}");
        let e = Policy::compile(&PolicySpec {
            approve_preset: Some("most".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.contains("approve_preset \"most\""), "{e}");
        let e = Approve::compile(None, &["[".into()]).unwrap_err();
        assert!(e.contains("approve pattern \"[\""), "{e}");
    }

    #[test]
    fn approval_rules_say_why() {
        let p = Policy::compile(&PolicySpec {
            approve_preset: Some("readonly".into()),
            approve: vec!["^sudo ".into()],
            ..Default::default()
        })
        .unwrap();
        assert_eq!(p.needs_approval("uptime"), None);
        assert_eq!(p.needs_approval("ps aux | grep nginx"), None);
        assert_eq!(
            p.check("systemctl restart nginx"),
            Ok(()),
            "approval is not refusal"
        );
        let why = p.needs_approval("systemctl restart nginx").unwrap();
        assert!(
            why.starts_with("the readonly preset cannot tell it is read-only: ")
                && why.contains("`systemctl restart`"),
            "{why}"
        );
        let why = p.needs_approval("sudo -n true").unwrap();
        assert!(why.contains("approval rule `^sudo `"), "{why}");
        let all = Approve::compile(Some("all"), &[]).unwrap();
        assert!(all.needs("ls").is_some());
        assert_eq!(Approve::compile(None, &[]).unwrap().needs("rm -rf /"), None);
    }

    /// `approve_preset = "readonly"` (a server's, or `[ssh]`'s for all)
    /// asks a person for every one of the red team's forms.
    #[test]
    fn approval_catches_the_evasions() {
        let a = Approve::compile(Some("readonly"), &[]).unwrap();
        for bad in EVASIONS {
            let why = a
                .needs(bad)
                .unwrap_or_else(|| panic!("{bad} ran without a person"));
            assert!(why.contains("readonly preset"), "{bad}: {why}");
        }
        assert_eq!(a.needs("free -m && uptime"), None);
    }
}
