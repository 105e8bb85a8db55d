//! Per-server command policy: `allow` and `deny` regex lists and a
//! `readonly` preset, checked before connecting; and which commands need a
//! person's approval (`approve`, `approve_preset`). This is a guard rail
//! against an agent's mistakes, not a security boundary: a shell can spell
//! any command in ways no list of patterns foresees (`python3 -c ...`,
//! variables, base64). Use a restricted remote user for real limits.

pub use super::doc::PolicySpec;
use regex::Regex;

#[derive(Clone, Debug)]
enum Rule {
    Pattern {
        re: Regex,
        source: String,
    },
    /// Output redirection to anything but `/dev/null` or another descriptor.
    Redirect,
}

/// A server's command policy, compiled; [`Self::check`] applies it.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    allow: Vec<Rule>,
    /// With the preset's rules marked, for messages.
    deny: Vec<(Rule, bool)>,
    approve: Approve,
}

/// Which commands need a person's approval.
#[derive(Clone, Debug, Default)]
pub struct Approve {
    /// Every command.
    all: bool,
    /// With the preset's rules marked, for messages.
    rules: Vec<(Rule, bool)>,
}

impl Approve {
    /// From a preset (`readonly`, `all`) and patterns; `Err` names a bad one.
    pub fn compile(preset: Option<&str>, patterns: &[String]) -> Result<Self, String> {
        let mut a = Self::default();
        match preset {
            None => {}
            Some("all") => a.all = true,
            Some("readonly") => a
                .rules
                .extend(readonly_rules().into_iter().map(|r| (r, true))),
            Some(other) => {
                return Err(format!(
                    "approve_preset {other:?} is unknown (\"readonly\" or \"all\")"
                ));
            }
        }
        for p in patterns {
            let re = Regex::new(p)
                .map_err(|e| format!("approve pattern {p:?} is not a valid regex: {e}"))?;
            a.rules.push((
                Rule::Pattern {
                    re,
                    source: p.clone(),
                },
                false,
            ));
        }
        Ok(a)
    }

    /// `Some(why)` when `command` needs approval.
    pub fn needs(&self, command: &str) -> Option<String> {
        if self.all {
            return Some("every command on this server needs approval".into());
        }
        self.rules
            .iter()
            .find(|(r, _)| r.matches(command))
            .map(|(r, preset)| {
                if *preset {
                    format!("the readonly preset would refuse it ({})", r.describe())
                } else {
                    format!("it matches approval rule {}", r.describe())
                }
            })
    }
}

// Command position: the start, or after a separator, a subshell or `sudo`.
const AT_COMMAND: &str = r"(?:^|[;&|(`]|\$\(|\bsudo\s+|\bxargs\s+)\s*";

fn readonly_rules() -> Vec<Rule> {
    let words = [
        r"(?:rm|rmdir|mv|cp|dd|shred|truncate|touch|mkdir|ln|install|chmod|chown|chgrp|chattr|setfacl)\b",
        r"(?:mkfs(?:\.\w+)?|fdisk|sfdisk|parted|wipefs|mkswap|swapoff|mount|umount|losetup)\b",
        r"(?:kill|pkill|killall|reboot|shutdown|halt|poweroff|init|telinit)\b",
        r"(?:useradd|userdel|usermod|groupadd|groupdel|passwd|chpasswd|visudo|crontab)\b",
        r"(?:iptables|ip6tables|nft|ufw|firewall-cmd)\b",
        r"(?:tee|patch)\b",
        r"systemctl\s+(?:start|stop|restart|reload|enable|disable|mask|kill|isolate|daemon-reload|edit|set-\w+)\b",
        r"service\s+\S+\s+(?:start|stop|restart|reload)\b",
        r"(?:apt|apt-get|aptitude|dpkg|yum|dnf|rpm|apk|zypper|pacman|snap|pip3?|npm|gem)\s+(?:-\S+\s+)*(?:install|remove|purge|upgrade|dist-upgrade|update|erase|uninstall|add|del|-i|-e|-U|-S|-R)\b",
        r"sed\s+(?:-\S*\s+)*-(?:\w*i|-in-place)",
        r"(?:git)\s+(?:push|commit|reset|checkout|clean|rebase|merge|pull|am|apply|stash)\b",
        r"(?:docker|podman)\s+(?:rm|rmi|stop|kill|run|restart|start|exec|prune|system\s+prune|volume\s+rm)\b",
        r"kubectl\s+(?:delete|apply|edit|scale|patch|create|replace|rollout\s+restart|drain|cordon|exec)\b",
    ];
    let mut rules: Vec<Rule> = words
        .iter()
        .map(|w| Rule::Pattern {
            re: Regex::new(&format!("{AT_COMMAND}{w}")).expect("preset patterns are valid"),
            source: (*w).to_owned(),
        })
        .collect();
    rules.push(Rule::Redirect);
    rules
}

impl Rule {
    fn matches(&self, command: &str) -> bool {
        match self {
            Self::Pattern { re, .. } => re.is_match(command),
            Self::Redirect => writes_by_redirection(command),
        }
    }
    fn describe(&self) -> String {
        match self {
            Self::Pattern { source, .. } => format!("`{source}`"),
            Self::Redirect => "output redirection to a file".into(),
        }
    }
}

/// `>` or `>>` to a file: not `2>&1`, `>&2`, or `/dev/null`. Quotes are not
/// parsed (a `>` inside quotes is refused too: the guard rail errs safe).
fn writes_by_redirection(command: &str) -> bool {
    let b = command.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'>' {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'>' || b[j] == b'|') {
            j += 1;
        }
        if j < b.len() && b[j] == b'&' {
            i = j + 1;
            continue;
        }
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        let target = &command[j..];
        let target = target.split(|c: char| c.is_whitespace() || ";&|)".contains(c));
        if target.clone().next() != Some("/dev/null") {
            return true;
        }
        i = j;
    }
    false
}

impl Policy {
    /// Compiles the policy as written; `Err` names a bad pattern or an unknown
    /// preset.
    pub fn compile(spec: &PolicySpec) -> Result<Self, String> {
        let compile = |src: &String| {
            Regex::new(src)
                .map(|re| Rule::Pattern {
                    re,
                    source: src.clone(),
                })
                .map_err(|e| format!("policy pattern {src:?} is not a valid regex: {e}"))
        };
        let mut deny = Vec::new();
        match spec.preset.as_deref() {
            None => {}
            Some("readonly") => deny.extend(readonly_rules().into_iter().map(|r| (r, true))),
            Some(other) => {
                return Err(format!(
                    "policy preset {other:?} is unknown (the one preset is \"readonly\")"
                ));
            }
        }
        for d in &spec.deny {
            deny.push((compile(d)?, false));
        }
        let allow = spec.allow.iter().map(compile).collect::<Result<_, _>>()?;
        let approve = Approve::compile(spec.approve_preset.as_deref(), &spec.approve)?;
        Ok(Self {
            allow,
            deny,
            approve,
        })
    }

    /// `Some(why)` when the server's own rules say `command` needs a
    /// person's approval.
    pub fn needs_approval(&self, command: &str) -> Option<String> {
        self.approve.needs(command)
    }

    /// `Err` says why the command is refused.
    pub fn check(&self, command: &str) -> Result<(), String> {
        for (rule, preset) in &self.deny {
            if rule.matches(command) {
                let origin = if *preset {
                    " of the readonly preset"
                } else {
                    ""
                };
                return Err(format!("it matches deny rule {}{origin}", rule.describe()));
            }
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|r| r.matches(command)) {
            let list: Vec<String> = self.allow.iter().map(Rule::describe).collect();
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

    #[test]
    fn readonly_refuses_mutations_and_keeps_reads() {
        let p = readonly();
        for bad in [
            "rm -rf /tmp/x",
            "ls; rm x",
            "true && sudo reboot",
            "echo hi > /etc/motd",
            "cat a >> b",
            "systemctl restart nginx",
            "apt-get -y install curl",
            "sed -i s/a/b/ f",
            "find . | xargs rm",
            "echo $(mv a b)",
            "kubectl delete pod x",
            "echo x | tee f",
        ] {
            let err = p.check(bad).expect_err(bad);
            assert!(err.contains("readonly preset"), "{bad}: {err}");
        }
        for ok in [
            "ls -la /var/log",
            "cat /etc/os-release",
            "df -h; free -m",
            "journalctl -u nginx --since today 2>&1 | tail -n 50",
            "grep -r error /var/log > /dev/null && echo found",
            "systemctl status nginx",
            "ps aux | grep firmware",
            "echo format",
            "docker ps",
            "uptime >&2",
        ] {
            assert_eq!(p.check(ok), Ok(()), "{ok}");
        }
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
        assert_eq!(
            p.check("systemctl restart nginx"),
            Ok(()),
            "approval is not refusal"
        );
        let why = p.needs_approval("systemctl restart nginx").unwrap();
        assert!(why.contains("readonly preset would refuse"), "{why}");
        let why = p.needs_approval("sudo -n true").unwrap();
        assert!(why.contains("approval rule `^sudo `"), "{why}");
        let all = Approve::compile(Some("all"), &[]).unwrap();
        assert!(all.needs("ls").is_some());
    }
}
