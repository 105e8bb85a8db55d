//! Copies of every Toolgate process's log for the suite-wide scan
//! (`tests/support/scan_logs.py`, run by scripts/test): no log line may
//! carry an id, capability, token or link (issue #50). When
//! `TOOLGATE_TEST_LOG_DIR` is set, each Toolgate process the harness starts
//! gets a file `<test binary>-<pid>-<what>.log` in that folder, written line
//! by line as the process writes, beside whatever the test does with the
//! output. Unset, nothing is written.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// The folder the run collects logs in, if it does.
pub fn dir() -> Option<PathBuf> {
    std::env::var_os("TOOLGATE_TEST_LOG_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// This test binary's name without cargo's hash (`clarify`, not
/// `clarify-0a1b2c3d4e5f6a7b`).
pub fn test_binary() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "unknown".into());
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            name.to_owned()
        }
        _ => stem,
    }
}

/// What `cmd` is, for a file name, when it runs Toolgate's own code: the
/// `toolgate*` binaries (`toolgate-serve`, `toolgate-bench`) and `cargo
/// lambda watch` (which runs the function binaries). None for third-party
/// programs, whose logs are not Toolgate's, and for `cargo lambda invoke`,
/// whose output is a function's answer.
pub fn toolgate_process(cmd: &Command) -> Option<String> {
    let program = Path::new(cmd.get_program())
        .file_name()?
        .to_string_lossy()
        .into_owned();
    let first = |n: usize| -> Vec<String> {
        cmd.get_args()
            .take(n)
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    };
    if program == "cargo" {
        let args = first(2);
        return (args == ["lambda", "watch"]).then(|| "cargo-lambda-watch".to_owned());
    }
    if !program.starts_with("toolgate") || program == "toolgate-hostile-zygote" {
        return None;
    }
    // The subcommand of `toolgate` (serve, call, tools); not a flag.
    match first(1).first() {
        Some(sub) if program == "toolgate" && !sub.starts_with('-') => {
            Some(format!("{program}-{sub}"))
        }
        _ => Some(program),
    }
}

/// One process's log copy; clones write to the same file.
#[derive(Clone)]
pub struct Sink(Arc<Mutex<File>>);

impl Sink {
    /// The copy for process `pid`, described by `what`; None when the run
    /// collects no logs. Panics if the file cannot be made: a scan of a
    /// folder the logs never reached would pass for the wrong reason.
    pub fn open(pid: u32, what: &str) -> Option<Sink> {
        let dir = dir()?;
        let what: String = what
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let path = dir.join(format!("{}-{pid}-{what}.log", test_binary()));
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("cannot write the log copy {}: {e}", path.display()));
        Some(Sink(Arc::new(Mutex::new(file))))
    }

    /// Appends one line (a newline is added).
    pub fn line(&self, line: &str) {
        self.bytes(line.as_bytes());
    }

    /// Appends `text`, ending it with a newline if it has none; one write,
    /// so that lines from two pipes of one process do not interleave.
    pub fn bytes(&self, text: &[u8]) {
        if text.is_empty() {
            return;
        }
        let mut buf = Vec::with_capacity(text.len() + 1);
        buf.extend_from_slice(text);
        if !text.ends_with(b"\n") {
            buf.push(b'\n');
        }
        let mut f = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f.write_all(&buf).expect("write the log copy");
    }
}

/// Reads `pipe` to its end, a line at a time (bytes, so that output that is
/// not UTF-8 neither stops the reading nor blocks the writer on a full
/// pipe), handing each line, without its newline, to `each`.
pub fn pump(pipe: impl Read, mut each: impl FnMut(&[u8])) {
    let mut r = BufReader::new(pipe);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let end = line.len() - usize::from(line.ends_with(b"\n"));
                each(&line[..end]);
            }
        }
    }
}
