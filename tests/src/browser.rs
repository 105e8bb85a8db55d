//! Real headless Chromium (Debian's, through playwright-core) on the
//! people's pages: the clarify page (`support/clarify_page.cjs`) and the
//! approvers' inbox (`support/inbox_page.cjs`); and on an attacker's page
//! of another site (`support/cross_site.cjs`).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::peer::{run_ok, tools_dir};

/// Opens `url` exactly as given (the `answer_url` a tool returned), clicks
/// option `choice`, and returns what the page showed: `question`,
/// `buttons`, `status`, `dialogs` (a script that ran) and `errors`.
pub fn answer_in_chromium(url: &str, choice: usize) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("support/clarify_page.cjs");
    let out = run_ok(
        Command::new("node")
            .arg(script)
            .arg(url)
            .arg(choice.to_string())
            .env("TOOLGATE_TEST_TOOLS", tools_dir()),
        "headless Chromium on the clarify page",
    );
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Runs `support/inbox_page.cjs` in `mode` (`approve`, `link` or `choice`)
/// with `args`: what the page showed (the script fails the test itself,
/// with the reason, when the page is wrong).
pub fn inbox_in_chromium(mode: &str, args: &[&str]) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("support/inbox_page.cjs");
    let out = run_ok(
        Command::new("node")
            .arg(script)
            .arg(mode)
            .args(args)
            .env("TOOLGATE_TEST_TOOLS", tools_dir()),
        "headless Chromium on the inbox page",
    );
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Runs `support/cross_site.cjs`: a page on `http://localhost:<its port>`
/// sends `body` to `target` with a `no-cors` fetch of a `Blob`, as any web
/// page can. Returns what the page's fetch did (`{"fetch": "sent"}` once
/// it settled: its answer is opaque to the page either way).
pub fn cross_site_fetch_in_chromium(target: &str, body: &str) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("support/cross_site.cjs");
    let out = run_ok(
        Command::new("node")
            .arg(script)
            .arg(target)
            .arg(body)
            .env("TOOLGATE_TEST_TOOLS", tools_dir()),
        "headless Chromium on a page of another site",
    );
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}
