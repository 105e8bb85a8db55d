//! The Python sandbox.
//!
//! Layers, innermost first:
//! - `vm`: RustPython with `host_env` off (the capability gap); the
//!   `module_wall`, which lets no module outside the `module_set` (the
//!   allowlist's closure over the stdlib's `imports`) be created; the import
//!   `guard` (the contract's allowlist); the `scrub`; `host_facts` hidden;
//!   `engine_fixes` for RustPython crashes; the `result` as exact JSON;
//!   `stand_ins` where the host was (streams, an `os` with no OS); the
//!   call's `files` behind `open`; the `traceback` as CPython prints it;
//! - `zygote` and `child`: a warm single-threaded process forks one child per
//!   call; the child closes its descriptors, applies `rlimit`s and the
//!   `seccomp` filter, runs the script and writes output to `outbuf`;
//! - `control` and `proto`: the server's messages with the zygote and with
//!   a child, each one codec for both sides;
//! - `pool`: the server's side, which admits calls fairly between callers
//!   (`admission`), which keeps children forked ahead of calls
//!   and, at each call's deadline, stops the script in the VM (the child's
//!   watchdog), then kills the child.
//!
//! The interpreter layer (feature `python-vm`) is all the Worker's wasm32
//! build takes; the rest is the process sandbox (feature `python`).

mod engine_fixes;
mod files;
pub mod guard;
mod host_facts;
/// The stdlib's import graph, read from source, and the closure of a set of
/// roots over it (see `module_set`). Build scripts `include!` the file, so it
/// carries no inner docs.
pub mod imports;
pub mod module_set;
pub mod module_wall;
mod result;
pub mod scrub;
mod stand_ins;
mod state;
mod traceback;
pub mod vm;

pub use crate::walls::Walls;

#[cfg(feature = "python")]
mod admission;
#[cfg(feature = "python")]
pub mod alloc;
#[cfg(feature = "python")]
mod child;
#[cfg(feature = "python")]
pub mod control;
#[cfg(feature = "python")]
pub mod error;
#[cfg(feature = "python")]
pub mod heap_drain;
#[cfg(feature = "python")]
mod heap_reserve;
#[cfg(feature = "python")]
mod hot_pages;
#[cfg(feature = "python")]
mod huge_heap;
#[cfg(feature = "python")]
mod huge_text;
#[cfg(all(test, feature = "python"))]
mod in_a_fork;
#[cfg(feature = "python")]
pub mod outbuf;
#[cfg(feature = "python")]
pub mod pool;
#[cfg(feature = "python")]
mod proc_maps;
#[cfg(feature = "python")]
pub mod proto;
#[cfg(feature = "python")]
pub mod rlimit;
#[cfg(feature = "python")]
pub mod seccomp;
#[cfg(all(test, feature = "python"))]
mod sre_fuzz_tests;
#[cfg(all(test, feature = "python"))]
mod vendored_vm_tests;
#[cfg(feature = "python")]
pub mod zygote;

pub use crate::outcome::ExecOutput;
#[cfg(feature = "python")]
pub use error::SandboxError;
#[cfg(feature = "python")]
pub use pool::{Recycle, Sandbox, SandboxConfig};
#[cfg(feature = "python")]
pub use zygote::ZygoteConfig;
