//! What a finished process said, kept for the log scan: a Toolgate
//! process's stderr goes to the sink ([`crate::logsink`]), the ids in its
//! answer are recorded ([`crate::issued`]).

use std::process::{Command, Output, Stdio};

use crate::logsink;

/// `cmd.output()` (stdin from /dev/null, stdout and stderr captured), with
/// the stderr of a Toolgate process copied to the sink once it exits. Its
/// stdout is its answer, not its log: the ids in it are recorded
/// ([`crate::issued`]), as are those of the error `toolgate call` answers
/// with on its last stderr line (which is then not copied).
pub fn output(cmd: &mut Command) -> std::io::Result<Output> {
    let what = logsink::toolgate_process(cmd);
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id();
    let out = child.wait_with_output()?;
    if let Some(what) = what {
        record_finished(pid, &what, &out);
    }
    Ok(out)
}

/// What [`output`] does with a finished Toolgate process's output, for a
/// test that ran it itself (`wait_with_output`): `what` as
/// [`toolgate_process`] names it.
pub fn record_finished(pid: u32, what: &str, out: &Output) {
    if logsink::dir().is_none() {
        return;
    }
    crate::issued::record_body(&out.stdout);
    let mut log: &[u8] = &out.stderr;
    if what == "toolgate-call" {
        let trimmed = log.strip_suffix(b"\n").unwrap_or(log);
        let start = trimmed
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&trimmed[start..])
            && v.get("error").is_some()
        {
            crate::issued::record_json(&v);
            log = &log[..start];
        }
    }
    if let Some(sink) = logsink::Sink::open(pid, what) {
        sink.bytes(log);
    }
}
