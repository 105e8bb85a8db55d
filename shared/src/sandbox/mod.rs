//! The Python sandbox.
//!
//! Layers, innermost first:
//! - `vm`: RustPython with `host_env` off (the capability gap), the import
//!   `guard` and the `scrub`;
//! - `zygote` and `child`: a warm single-threaded process forks one child per
//!   call; the child closes its descriptors, applies `rlimit`s and the
//!   `seccomp` filter, runs the script and writes output to `outbuf`;
//! - `pool`: the server's side, which keeps children forked ahead of calls
//!   and kills each at its deadline.

pub mod alloc;
mod child;
pub mod error;
pub mod guard;
pub mod outbuf;
pub mod pool;
pub mod proto;
pub mod rlimit;
pub mod scrub;
pub mod seccomp;
pub mod vm;
pub mod zygote;

pub use error::SandboxError;
pub use pool::{ExecOutput, Sandbox, SandboxConfig};
pub use proto::Walls;
pub use zygote::ZygoteConfig;
