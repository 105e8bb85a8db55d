#![deny(missing_docs)]
//! python.execute's process sandbox, around the interpreter layer
//! (toolgate-pyvm):
//! - `zygote` and `child`: a warm single-threaded process forks one child per
//!   call; the child closes its descriptors, applies `rlimit`s and the
//!   `seccomp` filter, runs the script and writes output to `outbuf`;
//! - `control` and `proto`: the server's messages with the zygote and with
//!   a child, each one codec for both sides;
//! - `pool`: the server's side, which admits calls fairly between callers
//!   (`admission`), which keeps children forked ahead of calls
//!   and, at each call's deadline, stops the script in the VM (the child's
//!   watchdog), then kills the child;
//! - page placement (`hot_pages`, `huge_text`, `huge_heap`, `heap_reserve`,
//!   `heap_drain`, `proc_maps`): where the warm interpreter's pages lie, so
//!   that a fork copies and faults as little as it can.

mod admission;
pub mod alloc;
mod child;
pub mod control;
pub mod error;
pub mod heap_drain;
mod heap_reserve;
mod hot_pages;
mod huge_heap;
mod huge_text;
#[cfg(test)]
mod in_a_fork;
pub mod outbuf;
pub mod pool;
mod proc_maps;
pub mod proto;
pub mod rlimit;
pub mod seccomp;
pub mod seccomp_bpf;
#[cfg(test)]
mod sre_fuzz_tests;
#[cfg(test)]
mod vendored_vm_tests;
pub mod zygote;

pub use error::SandboxError;
pub use pool::{Recycle, Sandbox, SandboxConfig};
pub use zygote::ZygoteConfig;
