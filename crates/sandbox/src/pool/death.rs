//! How a call that sent no good report ended: what its exit code, timeout
//! flag and stderr note say.

use std::time::Duration;

use crate::alloc::EXIT_OUT_OF_MEMORY;
use crate::proto::ChildReport;
use toolgate_core::outcome::{memory_note, timeout_note};

/// A call's ending when the child did not finish the script: the answer's
/// `exit_code`, `timed_out` and the note appended to stderr.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Death {
    pub exit_code: i64,
    pub timed_out: bool,
    pub note: String,
}

/// A child killed from outside before it reported (the OOM killer, an
/// operator), once every try was.
pub(super) const KILLED_OUTSIDE: &str =
    "[the sandbox process was killed from outside before it reported]\n";

impl Death {
    fn failed(note: impl Into<String>) -> Self {
        Self {
            exit_code: 1,
            timed_out: false,
            note: note.into(),
        }
    }

    /// Stopped by its tool host where it waits (code mode); the host's
    /// answer says for what.
    pub fn halted() -> Self {
        Self {
            exit_code: -1,
            timed_out: false,
            note: String::new(),
        }
    }

    pub fn timed_out(timeout: Duration) -> Self {
        Self {
            exit_code: -1,
            timed_out: true,
            note: timeout_note(timeout),
        }
    }

    /// A report other than a finished run's.
    pub fn from_report(report: ChildReport, memory_mb: u64) -> Self {
        match report {
            ChildReport::OutOfMemory => Self::failed(memory_note(memory_mb)),
            ChildReport::Stopped => {
                // Only the server's STOP, sent at the deadline, stops a child.
                tracing::error!("sandbox child stopped before its deadline");
                Self::failed("InternalError: the sandbox stopped the script unasked\n")
            }
            ChildReport::Crashed { message } => {
                let message = first_chars(&message, CRASH_MESSAGE_CHARS);
                tracing::error!(%message, "sandbox child crashed");
                Self::failed(format!(
                    "InternalError: the interpreter failed: {message}\n"
                ))
            }
            ChildReport::StackOverflow => Self::failed(STACK_NOTE),
            // `call::drive` answers requests; one here came where none may.
            ChildReport::ToolRequest { .. } => {
                Self::invalid_report("a tool request where a report was due")
            }
            ChildReport::Done { exit_code, .. } => {
                // The caller handles a finished run; should one come here,
                // it still ends as the script said.
                Self {
                    exit_code,
                    timed_out: false,
                    note: String::new(),
                }
            }
        }
    }

    /// Bytes that are not a report (the child's words, cut).
    pub fn invalid_report(why: &str) -> Self {
        let why = first_chars(why, CRASH_MESSAGE_CHARS);
        tracing::error!(reason = %why, "sandbox child sent an invalid report");
        Self::failed(format!(
            "[the sandbox process sent an invalid report ({why}); what the script printed is kept]\n"
        ))
    }

    /// A child that died without a report, from its wait status (None: the
    /// status never came).
    pub fn from_status(status: Option<i32>, timeout: Duration, memory_mb: u64) -> Self {
        let Some(st) = status else {
            return Self::failed("[the sandbox process died without a report]\n");
        };
        if libc::WIFEXITED(st) {
            if libc::WEXITSTATUS(st) == EXIT_OUT_OF_MEMORY {
                return Self::failed(memory_note(memory_mb));
            }
            return Self::failed(format!(
                "[the sandbox process exited without a report (status {})]\n",
                libc::WEXITSTATUS(st)
            ));
        }
        let sig = libc::WTERMSIG(st);
        match sig {
            // RLIMIT_CPU's signal (the deadline's SIGKILL never comes here).
            libc::SIGXCPU => Self::timed_out(timeout),
            libc::SIGKILL => Self::failed(KILLED_OUTSIDE),
            libc::SIGSYS => Self::failed(
                "[the sandbox blocked a forbidden system call and stopped the script]\n",
            ),
            _ => Self::failed(format!(
                "[the interpreter crashed (signal {sig}, {}); what the script printed is kept]\n",
                signal_name(sig)
            )),
        }
    }
}

/// What a child whose native stack ran out answers, as the Worker does.
const STACK_NOTE: &str =
    "RecursionError: maximum recursion depth exceeded (the interpreter's stack ran out)\n";

/// A crash message or an invalid report's reason is cut to this for the
/// answer and the log: both are the child's words.
const CRASH_MESSAGE_CHARS: usize = 2_000;

fn first_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTRAP => "SIGTRAP",
        _ => "a signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(3);

    #[test]
    fn a_wait_status_names_how_the_child_died() {
        // Raw wait statuses: a signal in the low 7 bits, an exit code in
        // the next byte.
        let killed = Death::from_status(Some(libc::SIGKILL), T, 64);
        assert_eq!(
            (killed.timed_out, killed.note.as_str()),
            (false, KILLED_OUTSIDE)
        );
        assert!(Death::from_status(Some(libc::SIGXCPU), T, 64).timed_out);
        let sys = Death::from_status(Some(libc::SIGSYS), T, 64);
        assert!(sys.note.contains("forbidden system call"), "{}", sys.note);
        let segv = Death::from_status(Some(libc::SIGSEGV), T, 64);
        assert!(segv.note.contains("signal 11, SIGSEGV"), "{}", segv.note);
        let oom = Death::from_status(Some(EXIT_OUT_OF_MEMORY << 8), T, 64);
        assert_eq!(oom.note, memory_note(64));
        let exited = Death::from_status(Some(3 << 8), T, 64);
        assert!(exited.note.contains("(status 3)"), "{}", exited.note);
        assert!(!exited.timed_out && exited.exit_code == 1);
        let unknown = Death::from_status(None, T, 64);
        assert!(unknown.note.contains("died without a report"));
    }

    #[test]
    fn the_childs_words_are_cut() {
        let long = "é".repeat(CRASH_MESSAGE_CHARS + 10);
        let d = Death::from_report(ChildReport::Crashed { message: long }, 64);
        assert!(d.note.ends_with("…\n"), "{}", d.note);
        assert!(d.note.chars().count() < CRASH_MESSAGE_CHARS + 60);
        let d = Death::invalid_report(&"x".repeat(CRASH_MESSAGE_CHARS * 2));
        assert!(d.note.contains("x…);"), "{}", d.note);
    }
}
