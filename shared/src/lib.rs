#![deny(missing_docs)]
//! Toolgate's shared crate: the tool contracts, the sandbox, and the HTTP
//! router that every runtime serves.

pub mod approvals;
// The contract types live below every crate (crates/core); the old paths
// (`toolgate_shared::error`, `crate::files`, …) stay.
pub use toolgate_core::{allowlist, error, files, outcome, truncate, walls};
pub mod clarify;
pub mod clock;
pub mod cloud;
pub mod config;
#[cfg(feature = "dynamodb")]
mod dynamo;
#[cfg(feature = "lambda")]
pub mod envelope;
pub mod http;
pub mod invoke;
#[cfg(feature = "lambda")]
pub mod lambda;
pub mod logging;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod openapi;
#[cfg(all(feature = "aws", feature = "lambda"))]
pub mod peers;
pub mod registry;
pub mod response_limit;
#[cfg(feature = "python-vm")]
pub mod sandbox;
pub mod scope;
pub mod sessions;
pub mod spec_export;
#[cfg(feature = "native")]
pub mod sqlite_file;
pub mod ssh;
#[cfg(feature = "aws")]
pub mod ssm;
pub mod tool;
pub mod tools;
#[cfg(feature = "native")]
pub mod toolset;
