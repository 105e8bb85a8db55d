//! The Python sandbox.
//!
//! Layers, innermost first:
//! - `vm`: RustPython with `host_env` off (the capability gap), the import
//!   `guard` and the `scrub`;
//! - `zygote` and `child`: a warm single-threaded process forks one child per
//!   call; the child closes its descriptors, applies `rlimit`s and the
//!   `seccomp` filter, runs the script and writes output to `outbuf`;
//! - `pool`: the server's side, which keeps children forked ahead of calls
//!   and, at each call's deadline, stops the script in the VM (the child's
//!   watchdog), then kills the child.
//!
//! `vm`, `guard` and `scrub` (feature `python-vm`) are all the Worker's
//! wasm32 build takes; the rest is the process sandbox (feature `python`).

pub mod guard;
pub mod scrub;
pub mod vm;

#[cfg(feature = "python")]
pub mod alloc;
#[cfg(feature = "python")]
mod child;
#[cfg(feature = "python")]
pub mod error;
#[cfg(feature = "python")]
pub mod outbuf;
#[cfg(feature = "python")]
pub mod pool;
#[cfg(feature = "python")]
pub mod proto;
#[cfg(feature = "python")]
pub mod rlimit;
#[cfg(feature = "python")]
pub mod seccomp;
#[cfg(feature = "python")]
pub mod zygote;

pub use crate::tools::python_execute::ExecOutput;
#[cfg(feature = "python")]
pub use error::SandboxError;
#[cfg(feature = "python")]
pub use pool::{Sandbox, SandboxConfig};
#[cfg(feature = "python")]
pub use proto::Walls;
#[cfg(feature = "python")]
pub use zygote::ZygoteConfig;
