#![deny(missing_docs)]
//! Toolgate's contract types, below every other crate: the error codes and
//! errors, a script's outcome, files in and out, truncation, the walls a
//! runtime reports, the module allowlist, and the request the Worker's
//! dispatcher sends its sandbox. No runtime, no I/O.

/// The modules every sandbox allows, and those none may. A file of its own,
/// free of dependencies and of inner docs, because the Worker sandbox's build
/// script includes it.
pub mod allowlist;
pub mod code;
pub mod error;
pub mod files;
pub mod outcome;
pub mod truncate;
pub mod walls;
pub mod wire;
