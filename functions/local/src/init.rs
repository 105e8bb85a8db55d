//! `toolgate init`: a commented configuration file to start from, which
//! loads as written and names every section's common settings.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::ExitCode;

/// The file `init` writes.
pub const TEMPLATE: &str = include_str!("init.toml");

/// Writes [`TEMPLATE`] to `path` (`-`: stdout), never over a file unless
/// `force`; readable by its owner only, since tokens may be added to it.
pub fn run(path: &Path, force: bool) -> ExitCode {
    if path == Path::new("-") {
        crate::out::print(TEMPLATE);
        return ExitCode::SUCCESS;
    }
    let mut open = std::fs::OpenOptions::new();
    open.write(true).mode(0o600);
    if force {
        open.create(true).truncate(true);
    } else {
        open.create_new(true);
    }
    // A file replaced with --force keeps its mode otherwise.
    let written = open.open(path).and_then(|mut f| {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        f.write_all(TEMPLATE.as_bytes())
    });
    match written {
        Ok(()) => {
            eprintln!(
                "toolgate: wrote {}; `toolgate check` reads it back, `toolgate serve` serves it",
                path.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => crate::fatal(&format!(
            "{} already exists: left as it is (--force replaces it)",
            path.display()
        )),
        Err(e) => crate::fatal(&format!("cannot write {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_shared::config::Config;

    const ENV: [(&str, &str); 4] = [
        ("AGENT_HOST_TOKEN", "agent-host-token-0123456789"),
        ("WEBHOOK_SIGNING_KEY", "webhook-signing-key-0123456789"),
        ("OPS_APPROVER_TOKEN", "ops-approver-token-0123456789"),
        ("ACME_MCP_TOKEN", "acme-mcp-token"),
    ];

    fn load(text: &str) -> Result<Config, String> {
        let lookup = |k: &str| {
            ENV.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        Config::from_parts(text, "toolgate.toml", &lookup).map_err(|e| e.to_string())
    }

    /// The template with every commented setting and table made live,
    /// except the tables named in `keep`.
    fn uncommented(keep: &[&str]) -> String {
        let mut out = String::new();
        let mut live = true;
        for line in TEMPLATE.lines() {
            let Some(rest) = line.strip_prefix("# ") else {
                out.push_str(line);
                out.push('\n');
                continue;
            };
            let table = rest.starts_with('[');
            let setting = rest
                .split_once(" = ")
                .is_some_and(|(k, _)| k.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
            if table {
                live = !keep.iter().any(|k| rest.starts_with(k));
            }
            if (table || setting) && live {
                out.push_str(rest);
            } else {
                out.push_str(line);
            }
            out.push('\n');
        }
        out
    }

    #[test]
    fn the_template_loads_as_written() {
        let cfg = load(TEMPLATE).unwrap();
        assert_eq!(cfg.server.addr, "127.0.0.1:8080");
        assert_eq!(cfg.python.timeout_secs, 20);
        assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
    }

    #[test]
    fn every_commented_setting_is_one_the_config_takes() {
        // A server table reads its key file at load: all else must load.
        let cfg = load(&uncommented(&["[servers."])).unwrap();
        assert_eq!(cfg.server.tokens.len(), 1);
        assert_eq!(cfg.clarify.notify.len(), 1);
        assert_eq!(cfg.cloud.accounts.len(), 1);
        // With it, the only complaint is about the example's key file (an
        // unknown or misspelt key would be a parse error first).
        let e = load(&uncommented(&[])).unwrap_err();
        assert!(e.starts_with("[servers.web1]: "), "{e}");
        assert!(e.contains("key"), "{e}");
    }
}
