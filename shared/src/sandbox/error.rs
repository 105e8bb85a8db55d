//! Errors of the process layer of the sandbox, one message per variant.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot start the sandbox zygote {exe}: {source}")]
    SpawnZygote { exe: String, source: io::Error },
    #[error("the sandbox failed to warm up: {0}")]
    WarmUp(String),
    #[error(
        "seccomp is required (TOOLGATE_PYTHON_REQUIRE_SECCOMP=1) but the kernel refused the filter: {0}"
    )]
    SeccompRequired(String),
    #[error("cannot build the seccomp filter: {0}")]
    SeccompBuild(String),
    #[error("cannot install the seccomp filter: {0}")]
    SeccompApply(String),
    #[error("cannot set rlimit {resource}: {source}")]
    Rlimit {
        resource: &'static str,
        source: io::Error,
    },
    #[error("sandbox control channel failed: {0}")]
    Control(io::Error),
    #[error("the sandbox zygote exited")]
    ZygoteGone,
    #[error("no warm sandbox process became available within {0} s")]
    NoChild(u64),
    #[error("a warm sandbox process died or did not seal itself in time")]
    NotSealed,
    #[error("sandbox child channel failed: {0}")]
    Child(io::Error),
}
