//! `toolgate check`: whether this configuration and this machine are ready
//! to serve. It reads the configuration as `serve` would, checks the data
//! folder, starts every configured tool and asks each component what it
//! finds (a script run, each SSH server connected to, each cloud account
//! listed, the clarify store read); nothing is sent to a person.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::ExitCode;

use toolgate_shared::check::{Finding, Status};
use toolgate_shared::config::Config;

/// Runs the checks and prints them (`as_json`: one JSON document); exit 1
/// when any failed.
pub async fn run(cfg: &Config, as_json: bool) -> ExitCode {
    let mut found = vec![Finding::new(
        "config",
        Status::Ok,
        match &cfg.file {
            Some(f) => format!("{} and the TOOLGATE_* variables", f.display()),
            None => "no config file: the defaults and the TOOLGATE_* variables".to_owned(),
        },
    )];
    found.extend(
        cfg.warnings
            .iter()
            .map(|w| Finding::new("config", Status::Warn, w.clone())),
    );
    found.push(Finding::of("data folder", data_folder(&cfg.data_dir)));
    found.push(match toolgate_shared::traces::probe().await {
        None => Finding::new(
            "traces",
            Status::Ok,
            "off (no OTEL_EXPORTER_OTLP_ENDPOINT)".to_owned(),
        ),
        Some(Ok(said)) => Finding::new("traces", Status::Ok, said),
        // The tools work without it: a warning, not a failure.
        Some(Err(why)) => Finding::new("traces", Status::Warn, why),
    });
    match crate::build(cfg, false).await {
        Ok(set) => {
            found.extend(set.check().await);
            set.shutdown().await;
        }
        Err(e) => found.push(Finding::new(
            "tools",
            Status::Fail,
            format!("cannot start: {e}"),
        )),
    }
    let failed = found.iter().filter(|f| f.status == Status::Fail).count();
    if as_json {
        crate::out::json(&serde_json::json!({ "ok": failed == 0, "checks": found }));
    } else {
        crate::out::print(&text(&found));
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The findings as aligned lines, then a count.
fn text(found: &[Finding]) -> String {
    let mut out = String::new();
    for f in found {
        let status = match f.status {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        };
        out.push_str(&format!("{status:<5} {}: {}\n", f.what, f.detail));
    }
    let count = |s: Status| found.iter().filter(|f| f.status == s).count();
    out.push_str(&format!(
        "{} ok, {} to look at, {} failed\n",
        count(Status::Ok),
        count(Status::Warn),
        count(Status::Fail)
    ));
    out
}

/// The data folder exists (made if not), is private, and takes a file.
fn data_folder(dir: &Path) -> Result<String, String> {
    let shown = dir.display();
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("{shown} cannot be made: {e} (TOOLGATE_DATA_DIR chooses another)"))?;
    toolgate_shared::sqlite_file::keep_private(dir);
    let probe = dir.join(format!(".toolgate-check-{}", std::process::id()));
    std::fs::write(&probe, b"check")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| format!("{shown} does not take a file: {e}"))?;
    let mode = std::fs::metadata(dir)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0);
    if mode & 0o077 != 0 {
        return Err(format!(
            "{shown} is open to others (mode {mode:o}): its stores hold sessions and answers; \
             give Toolgate a folder of its own"
        ));
    }
    Ok(format!("{shown} (mode {mode:o}, writable)"))
}
