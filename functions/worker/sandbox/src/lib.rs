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

/// The call as the sandbox Worker passes it in.
#[derive(Debug, serde::Deserialize)]
pub struct RunRequest {
    pub code: String,
    pub timeout_secs: u64,
    pub memory_mb: u64,
    /// The call's files, base64 by name (`files::to_wire`).
    #[serde(default)]
    pub files: std::collections::BTreeMap<String, String>,
    /// The files the script may return, in bytes in all.
    #[serde(default)]
    pub files_cap: u64,
    /// A session's saved state, base64 (empty: a new session); absent
    /// outside a session.
    #[serde(default)]
    pub session: Option<String>,
    /// The most state a session may save, in bytes.
    #[serde(default)]
    pub state_cap: u64,
}
