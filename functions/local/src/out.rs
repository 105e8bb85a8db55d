//! What a one-shot command prints on stdout. A reader that goes away early
//! (`toolgate tools | head`) ends the command quietly, as `cat` would,
//! instead of a panic: Rust ignores SIGPIPE, so `println!` would panic on
//! the broken pipe.

use std::io::Write;

/// Writes `text` to stdout and flushes it; a closed pipe exits the process
/// with status 0, anything else with status 1, saying so.
pub fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        // stderr may be closed too: nothing is left to tell then.
        let _ = writeln!(std::io::stderr(), "toolgate: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// `v` as indented JSON and a newline.
pub fn json(v: &serde_json::Value) {
    print(&format!(
        "{}\n",
        serde_json::to_string_pretty(v).unwrap_or_default()
    ));
}
