//! Real headless Chromium (Debian's, through playwright-core) on the
//! people's pages: the clarify page (`support/clarify_page.cjs`) and the
//! approvers' inbox (`support/inbox_page.cjs`); and on an attacker's page
//! of another site (`support/cross_site.cjs`).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::peer::{run_ok, tools_dir};
use crate::timing::machine_share;

/// Runs `support/{script}` with `args` under node and reads the JSON it
/// prints. Chromium keeps cores busy for seconds, so it holds the machine's
/// share: never beside a test that bounds times.
fn chromium(script: &str, args: &[&str], what: &str) -> Value {
    let _share = machine_share();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("support")
        .join(script);
    let out = run_ok(
        Command::new("node")
            .arg(script)
            .args(args)
            .env("TOOLGATE_TEST_TOOLS", tools_dir()),
        what,
    );
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Opens `url` exactly as given (the `answer_url` a tool returned), clicks
/// option `choice`, and returns what the page showed: `question`,
/// `buttons`, `status`, `dialogs` (a script that ran) and `errors`.
pub fn answer_in_chromium(url: &str, choice: usize) -> Value {
    chromium(
        "clarify_page.cjs",
        &[url, &choice.to_string()],
        "headless Chromium on the clarify page",
    )
}

/// Runs `support/inbox_page.cjs` in `mode` (`approve`, `link` or `choice`)
/// with `args`: what the page showed (the script fails the test itself,
/// with the reason, when the page is wrong).
pub fn inbox_in_chromium(mode: &str, args: &[&str]) -> Value {
    let all: Vec<&str> = std::iter::once(mode).chain(args.iter().copied()).collect();
    chromium(
        "inbox_page.cjs",
        &all,
        "headless Chromium on the inbox page",
    )
}

/// Runs `support/cross_site.cjs`: a page on `http://localhost:<its port>`
/// sends `body` to `target` with a `no-cors` fetch of a `Blob`, as any web
/// page can. Returns what the page's fetch did (`{"fetch": "sent"}` once
/// it settled: its answer is opaque to the page either way).
pub fn cross_site_fetch_in_chromium(target: &str, body: &str) -> Value {
    chromium(
        "cross_site.cjs",
        &[target, body],
        "headless Chromium on a page of another site",
    )
}
