//! Tests that change the whole process (its heap, its allocator's
//! settings) run in a forked child, which reports by its exit code.

/// Runs `f` in a forked child and returns its exit code: what `f`
/// returned, or the panic's.
pub(super) fn exit_code_of(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: fork in a test; glibc resets its allocator's locks in the
    // child, which runs `f` alone and exits without unwinding. A panic in
    // `f` runs the harness's hook, whose output lock another test thread
    // may have held at the fork: the child could then hang, not fail.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(101);
        // SAFETY: _exit has no preconditions; the child's copy of the test
        // process needs no teardown.
        unsafe { libc::_exit(code) }
    }
    let mut status = 0;
    // SAFETY: reaping our own child with a valid status pointer.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status), "status {status:#x}");
    libc::WEXITSTATUS(status)
}
