//! What a script that failed prints on stderr, as CPython 3.13 prints it
//! for a file: the exception chain, each `<agent_script>` frame with its
//! source line, build-host paths hidden; and its exit code
//! (docs/contracts.md#output-and-exit-codes).

use rustpython_vm::{
    AsObject, VirtualMachine,
    builtins::{PyBaseExceptionRef, PyInt},
};

use super::vm::{SCRIPT_NAME, Stream, emit};

/// A compiler error (not the parser's) carries no source line, as CPython's
/// does not for a string; the script is a file to its author, and CPython
/// shows a file's line.
pub(super) fn with_source_line(
    vm: &VirtualMachine,
    exc: PyBaseExceptionRef,
    source: &str,
) -> PyBaseExceptionRef {
    let obj = exc.as_object();
    let missing = obj.get_attr("text", vm).is_ok_and(|t| vm.is_none(&t));
    let line = obj
        .get_attr("lineno", vm)
        .ok()
        .and_then(|n| n.try_to_value::<usize>(vm).ok())
        .and_then(|n| source.lines().nth(n.checked_sub(1)?));
    if let (true, Some(line)) = (missing, line) {
        let _ = obj.set_attr("text", vm.ctx.new_str(line), vm);
    }
    exc
}

/// The SystemExit rules of docs/contracts.md#output-and-exit-codes; anything else prints a traceback.
pub(super) fn exit_code_for(vm: &VirtualMachine, exc: &PyBaseExceptionRef, source: &str) -> i64 {
    if exc.fast_isinstance(vm.ctx.exceptions.system_exit) {
        let code = exc
            .as_object()
            .get_attr("code", vm)
            .unwrap_or_else(|_| vm.ctx.none());
        if vm.is_none(&code) {
            return 0;
        }
        if let Some(i) = code.downcast_ref::<PyInt>() {
            use num_traits::ToPrimitive;
            return i.as_bigint().to_i64().unwrap_or(1);
        }
        let msg = code
            .str(vm)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "<unprintable>".into());
        emit(Stream::Stderr, &format!("SystemExit: {msg}\n"));
        return 1;
    }
    let mut w = TracebackWriter::new(source);
    if write_chain(vm, &mut w, exc).is_err() {
        emit(Stream::Stderr, "<exception could not be formatted>\n");
    }
    w.finish();
    1
}

const CAUSE: &str = "\nThe above exception was the direct cause of the following exception:\n";
const CONTEXT: &str = "\nDuring handling of the above exception, another exception occurred:\n";

/// Writes `exc` after its causes and contexts, oldest first, as CPython
/// does: a cause, else a context unless `__suppress_context__` (`raise ...
/// from None`). The chain is walked in a loop; RustPython's own writer
/// recurses once per link, so a long `raise ... from` chain ran it out of
/// stack (and it printed suppressed contexts).
fn write_chain(
    vm: &VirtualMachine,
    w: &mut TracebackWriter<'_>,
    exc: &PyBaseExceptionRef,
) -> Result<(), std::fmt::Error> {
    use rustpython_vm::py_io::Write as _;
    // Newest first: each exception, and how the next (older) one led to it.
    let mut chain: Vec<(PyBaseExceptionRef, &str)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut cur = Some(exc.clone());
    while let Some(e) = cur.take() {
        if !seen.insert(e.get_id()) {
            break;
        }
        let suppressed = e
            .as_object()
            .get_attr("__suppress_context__", vm)
            .is_ok_and(|v| v.is_true(vm).unwrap_or(false));
        let (older, link) = match e.__cause__() {
            Some(c) => (Some(c), CAUSE),
            None if !suppressed => (e.__context__(), CONTEXT),
            None => (None, ""),
        };
        chain.push((e, link));
        cur = older;
    }
    for i in (0..chain.len()).rev() {
        // A function a session's earlier call defined shows that call's line.
        w.earlier = super::state::earlier_lines(vm, &chain[i].0, SCRIPT_NAME).into();
        vm.write_exception_inner(w, &chain[i].0)?;
        if i > 0 {
            writeln!(w, "{}", chain[i - 1].1)?;
        }
    }
    Ok(())
}

/// Streams a traceback to stderr line by line, hiding build-host paths and
/// adding the script's own line under each `<agent_script>` frame, as CPython
/// prints source lines (RustPython only does so for files on disk). Long
/// lines (a 100 MB exception message) pass straight through, uncopied, into
/// the bounded stream.
struct TracebackWriter<'a> {
    source: Vec<&'a str>,
    line: String,
    /// Frames from an earlier call's script: (line, function, its text).
    earlier: std::collections::VecDeque<(usize, String, String)>,
}

/// The frame line of the sandbox's `open` (`files::FILES_PY`).
const FILES_FRAME: &str = "  File \"<toolgate-files>\"";

/// Lines longer than this are not traceback frame lines; flush them as they come.
const FRAME_LINE_MAX: usize = 4096;

impl<'a> TracebackWriter<'a> {
    fn new(source: &'a str) -> Self {
        Self {
            source: source.lines().collect(),
            line: String::new(),
            earlier: Default::default(),
        }
    }

    fn push(&mut self, piece: &str) {
        if self.line.len() + piece.len() > FRAME_LINE_MAX {
            let pending = std::mem::take(&mut self.line);
            emit(Stream::Stderr, &hide_host_paths(&pending));
            emit(Stream::Stderr, piece);
        } else {
            self.line.push_str(piece);
        }
    }

    fn end_line(&mut self) {
        let line = hide_host_paths(&self.line);
        // `open` is built in to CPython: no frame of its own.
        if line.starts_with(FILES_FRAME) {
            self.line.clear();
            return;
        }
        emit(Stream::Stderr, &line);
        emit(Stream::Stderr, "\n");
        let prefix = format!("  File \"{SCRIPT_NAME}\", line ");
        // A frame line (`..., line 3, in f`); a SyntaxError's `File` line
        // has no `, in` and prints its own text.
        let frame = line
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split_once(", in "))
            .and_then(|(n, name)| Some((n.parse::<usize>().ok()?, name)));
        let n = frame.map(|(n, _)| n);
        let earlier = match (frame, self.earlier.front()) {
            (Some((n, name)), Some((m, their, _))) if n == *m && name == their => {
                self.earlier.pop_front().map(|(_, _, text)| text)
            }
            _ => None,
        };
        let text = earlier
            .as_deref()
            .or_else(|| n.and_then(|n| self.source.get(n.wrapping_sub(1))).copied());
        if let Some(text) = text {
            let text = text.trim();
            if !text.is_empty() {
                emit(Stream::Stderr, &format!("    {text}\n"));
            }
        }
        self.line.clear();
    }

    fn finish(mut self) {
        if !self.line.is_empty() {
            let rest = std::mem::take(&mut self.line);
            emit(Stream::Stderr, &hide_host_paths(&rest));
        }
    }
}

impl std::fmt::Write for TracebackWriter<'_> {
    fn write_str(&mut self, mut s: &str) -> std::fmt::Result {
        while let Some(i) = s.find('\n') {
            self.push(&s[..i]);
            self.end_line();
            s = &s[i + 1..];
        }
        if !s.is_empty() {
            self.push(s);
        }
        Ok(())
    }
}

impl rustpython_vm::py_io::Write for TracebackWriter<'_> {
    type Error = std::fmt::Error;
    fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) -> std::fmt::Result {
        std::fmt::Write::write_fmt(self, args)
    }
}

/// Frozen stdlib frames carry the build machine's path to `Lib/`; show them
/// as `<stdlib>/...` instead.
fn hide_host_paths(s: &str) -> String {
    let lib = rustpython_pylib::LIB_PATH;
    let mut out = s.replace(lib, "<stdlib>");
    if let Some(stripped) = lib.strip_suffix("/Lib") {
        out = out.replace(stripped, "<stdlib>");
    }
    out
}
