//! python.execute's runner for the Cloudflare Worker.
//!
//! A raw wasm32 module (no wasm-bindgen) that the sandbox Worker
//! instantiates afresh for every call and drops afterwards, so that nothing
//! (objects, leaks, a trapped instance) carries over between calls. The
//! build pre-initializes it with Wizer: the module's memory already holds
//! the warm interpreter (every allowlisted module imported, the scrub and
//! the guard done), as the native zygote's does before it forks.
//!
//! - `abi`: the exports the Worker calls (`tg_run` and friends);
//! - `host`: the three imports (clock, randomness, the deadline);
//! - `budget`: the allocator that enforces the memory limit;
//! - `clock`: `time` for a host whose clock only moves between requests.
//!
//! The VM runner itself is `toolgate_pyvm::vm`, the same code the
//! native sandbox runs.

#[cfg(target_arch = "wasm32")]
mod abi;
#[cfg(target_arch = "wasm32")]
mod budget;
#[cfg(target_arch = "wasm32")]
mod clock;
#[cfg(target_arch = "wasm32")]
mod host;

/// The call as the sandbox Worker passes it in: the dispatcher builds the
/// same type.
pub use toolgate_core::wire::RunRequest;
