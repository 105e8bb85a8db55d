//! Real headless Chromium (Debian's, through playwright-core) on the
//! clarify page: `support/clarify_page.cjs`.

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
