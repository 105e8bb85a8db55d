//! Errors of the process layer of the sandbox, one message per variant.

use std::io;

/// Why the sandbox could not start or run a call. A script's own failure is
/// never one: that is its output.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The zygote, or the thread that watches it, could not be started.
    #[error("cannot start the sandbox zygote {exe}: {source}")]
    SpawnZygote {
        /// What could not be started: the binary's path, or the step that
        /// failed.
        exe: String,
        /// The system's error.
        source: io::Error,
    },
    /// The zygote failed to warm up (an allowed module it cannot import, say);
    /// its message.
    #[error("the sandbox failed to warm up: {0}")]
    WarmUp(String),
    /// Seccomp is required and the kernel refused the filter; the kernel's
    /// error.
    #[error(
        "seccomp is required (TOOLGATE_PYTHON_REQUIRE_SECCOMP=1) but the kernel refused the filter: {0}"
    )]
    SeccompRequired(String),
    /// The seccomp filter could not be built.
    #[error("cannot build the seccomp filter: {0}")]
    SeccompBuild(String),
    /// The seccomp filter could not be installed.
    #[error("cannot install the seccomp filter: {0}")]
    SeccompApply(String),
    /// A resource limit could not be set.
    #[error("cannot set rlimit {resource}: {source}")]
    Rlimit {
        /// The limit, as `RLIMIT_*`.
        resource: &'static str,
        /// The system's error.
        source: io::Error,
    },
    /// The server ⇄ zygote channel could not be made or used.
    #[error("sandbox control channel failed: {0}")]
    Control(io::Error),
    /// The zygote exited (or the sandbox is shutting down): no child can be
    /// had.
    #[error("the sandbox zygote exited")]
    ZygoteGone,
    /// No warm child became available within this many seconds.
    #[error("no warm sandbox process became available within {0} s")]
    NoChild(u64),
    /// A warm child died, or did not seal itself in time.
    #[error("a warm sandbox process died or did not seal itself in time")]
    NotSealed,
    /// A child was killed from outside (not by the server) before it
    /// reported; what it answers if no other try is left.
    #[error("a sandbox process was killed from outside before it reported")]
    KilledFromOutside(Box<toolgate_core::outcome::ExecOutput>),
    /// The socket to a child failed, or the request could not be encoded.
    #[error("sandbox child channel failed: {0}")]
    Child(io::Error),
}
