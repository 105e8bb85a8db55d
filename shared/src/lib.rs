#![deny(missing_docs)]
//! Toolgate's shared crate: the tool contracts, the sandbox, and the HTTP
//! router that every runtime serves.

pub mod approvals;
pub mod backends;
pub mod check;
// The contract types live below every crate (crates/core); the old paths
// (`toolgate_shared::error`, `crate::files`, …) stay.
pub use toolgate_core::{allowlist, code, error, files, outcome, truncate, walls, wire};
pub mod clarify;
pub mod clock;
pub mod cloud;
pub mod config;
pub mod elicit;
pub mod http;
pub mod invoke;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod openapi;
pub mod registry;
pub mod response_limit;
pub mod scope;
pub mod sessions;
pub mod spec_export;
#[cfg(not(target_arch = "wasm32"))]
pub mod sqlite_file;
pub mod ssh;
pub mod tasks;
pub mod tool;
pub mod tools;
#[cfg(not(target_arch = "wasm32"))]
pub mod toolset;
#[cfg(not(target_arch = "wasm32"))]
pub mod traces;
