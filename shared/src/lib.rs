#![deny(missing_docs)]
//! Toolgate's shared crate: the tool contracts, the sandbox, and the HTTP
//! router that every runtime serves.

/// The modules every sandbox allows, and those none may. A file of its own,
/// free of dependencies and of inner docs, because the Worker sandbox's build
/// script includes it.
pub mod allowlist;
pub mod approvals;
pub mod clarify;
pub mod clock;
pub mod cloud;
pub mod config;
#[cfg(feature = "dynamodb")]
mod dynamo;
#[cfg(feature = "lambda")]
pub mod envelope;
pub mod error;
pub mod files;
pub mod http;
pub mod invoke;
#[cfg(feature = "lambda")]
pub mod lambda;
pub mod logging;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod openapi;
pub mod outcome;
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
pub mod truncate;
pub mod walls;
