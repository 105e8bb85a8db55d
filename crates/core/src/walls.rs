//! What `GET /healthz` reports of the sandbox's walls: one shape on every
//! runtime, each wall as checked where it runs (the zygote natively, the
//! sandbox Worker on Cloudflare), never a literal standing for a check.

use serde::{Deserialize, Serialize};

/// Which walls are active around each call, reported by `GET /healthz`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Walls {
    /// No module that reaches the host is compiled in, and there is no file
    /// I/O.
    pub capability_gap: bool,
    /// The scrub holds: the removed functions are gone and code objects cannot
    /// be built or replaced.
    pub scrub: bool,
    /// Each call runs in a fresh child of its own.
    pub process_per_call: bool,
    /// Each call gets an interpreter no other call ran in: natively the
    /// fresh child's; on the Worker an instance taken as a call takes one,
    /// which refuses a second call.
    pub instance_per_call: bool,
    /// Each spare seals itself with rlimits (address space, CPU, files,
    /// processes); the zygote checked that it may set them.
    pub rlimits: bool,
    /// Each spare seals itself with the seccomp filter: the kernel accepted it
    /// in a probe.
    pub seccomp: bool,
    /// Why seccomp is off, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seccomp_error: Option<String>,
    /// The script is stopped at the next bytecode boundary at its deadline.
    pub stop_at_deadline: bool,
    /// The child is killed (SIGKILL) at its deadline.
    pub kill_at_deadline: bool,
    /// A script's memory cap, in MiB.
    pub memory_mb: u64,
    /// Why the four walls the pool keeps (`process_per_call`,
    /// `instance_per_call`, `stop_at_deadline`, `kill_at_deadline`) read
    /// false natively: not checked yet, or the check failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_error: Option<String>,
    /// Why the walls could not be read, where another process reports them
    /// (the Worker's sandbox); every wall then reads false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_error: Option<String>,
}
