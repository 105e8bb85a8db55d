//! Resource limits: set in each spare child before it waits for a script,
//! except the CPU cap, which the server sets per call.

use std::io;

use super::error::SandboxError;

/// Sets one limit on process `pid` (0: this process). `prlimit` serves both
/// the child sealing itself and the server capping a child's CPU.
fn set(
    pid: libc::pid_t,
    resource: libc::__rlimit_resource_t,
    name: &'static str,
    soft: u64,
    hard: u64,
) -> Result<(), SandboxError> {
    let lim = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: `lim` is a valid, initialized rlimit that outlives the call;
    // prlimit only reads it, and a null old-limit pointer asks for nothing
    // back.
    let rc = unsafe { libc::prlimit(pid, resource, &lim, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(SandboxError::Rlimit {
            resource: name,
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// The child's current virtual size, from `/proc/self/statm`.
pub fn current_vm_bytes() -> io::Result<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unreadable statm"))?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Ok(pages * page.max(4096) as u64)
}

/// Caps every spare carries while it waits, so that sealing costs a call
/// nothing:
/// - Address space: the warm image the child inherited plus `memory_mb`, so
///   the cap measures what the script allocates.
/// - No new files, no processes, no file writes, no core dumps.
///
/// The CPU cap depends on the call's timeout; the server lowers it with
/// [`limit_cpu`] just before it sends the script. Until then it is the
/// longest timeout there can be, so that a host that forbids `prlimit` still
/// has a backstop.
pub fn apply(base_vm_bytes: u64, memory_mb: u64) -> Result<(), SandboxError> {
    let as_bytes = base_vm_bytes.saturating_add(memory_mb << 20);
    set(0, libc::RLIMIT_AS, "RLIMIT_AS", as_bytes, as_bytes)?;
    let cpu = CPU_CEILING_SECS;
    set(0, libc::RLIMIT_CPU, "RLIMIT_CPU", cpu, cpu + 1)?;
    // fd 3 (the report socket) stays usable; nothing new can be opened.
    set(0, libc::RLIMIT_NOFILE, "RLIMIT_NOFILE", 4, 4)?;
    set(0, libc::RLIMIT_NPROC, "RLIMIT_NPROC", 0, 0)?;
    set(0, libc::RLIMIT_FSIZE, "RLIMIT_FSIZE", 0, 0)?;
    set(0, libc::RLIMIT_CORE, "RLIMIT_CORE", 0, 0)?;
    Ok(())
}

/// Whether this process may set its limits at all (the zygote asks before
/// it says the wall is up): no core dumps, which it wants anyway.
pub fn probe() -> Result<(), SandboxError> {
    set(0, libc::RLIMIT_CORE, "RLIMIT_CORE", 0, 0)
}

/// A spare's CPU cap until a call lowers it: the longest timeout (docs/contracts.md#sandbox-limits
/// clamps it to 1200 s) plus slack.
pub const CPU_CEILING_SECS: u64 = 1201;

/// CPU seconds for the child `pid`: the timeout plus slack, a backstop
/// should the server never kill it. Set from the server (same user, only
/// lowering), since the sealed child may not call setrlimit itself. Fails
/// only for a child that is gone (ESRCH); where `prlimit` is refused the
/// spare's ceiling stays, and the kill at the deadline still holds.
pub fn limit_cpu(pid: i32, timeout_secs: u64) -> Result<(), SandboxError> {
    let cpu = timeout_secs.saturating_add(1);
    match set(
        pid,
        libc::RLIMIT_CPU,
        "RLIMIT_CPU",
        cpu,
        cpu.saturating_add(1),
    ) {
        Err(SandboxError::Rlimit { source, .. }) if source.raw_os_error() != Some(libc::ESRCH) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                tracing::warn!(error = %source, "prlimit refused: each script keeps the spare's CPU cap of {CPU_CEILING_SECS} s");
            });
            Ok(())
        }
        other => other,
    }
}
