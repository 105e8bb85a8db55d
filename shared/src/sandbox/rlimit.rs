//! Resource limits applied in the child before it runs a script.

use std::io;

use super::error::SandboxError;

fn set(
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
    // setrlimit only reads it.
    let rc = unsafe { libc::setrlimit(resource, &lim) };
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

/// Caps for one script.
/// - Address space: the warm image the child inherited plus `memory_mb`, so
///   the cap measures what the script allocates.
/// - CPU: the timeout plus slack, a backstop should the parent never kill it.
/// - No new files, no processes, no file writes, no core dumps.
pub fn apply(base_vm_bytes: u64, memory_mb: u64, timeout_secs: u64) -> Result<(), SandboxError> {
    let as_bytes = base_vm_bytes.saturating_add(memory_mb << 20);
    set(libc::RLIMIT_AS, "RLIMIT_AS", as_bytes, as_bytes)?;
    let cpu = timeout_secs.saturating_add(1);
    set(libc::RLIMIT_CPU, "RLIMIT_CPU", cpu, cpu.saturating_add(1))?;
    // fd 3 (the report socket) stays usable; nothing new can be opened.
    set(libc::RLIMIT_NOFILE, "RLIMIT_NOFILE", 4, 4)?;
    set(libc::RLIMIT_NPROC, "RLIMIT_NPROC", 0, 0)?;
    set(libc::RLIMIT_FSIZE, "RLIMIT_FSIZE", 0, 0)?;
    set(libc::RLIMIT_CORE, "RLIMIT_CORE", 0, 0)?;
    Ok(())
}
