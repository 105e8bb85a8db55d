#![deny(missing_docs)]
//! The interpreter layer of python.execute's sandbox, the same on every
//! runtime (the native process sandbox in toolgate-sandbox, and the
//! Worker's wasm32 module), innermost first:
//! - `vm`: RustPython with `host_env` off (the capability gap); the
//!   `module_wall`, which lets no module outside the `module_set` (the
//!   allowlist's closure over the stdlib's `imports`) be created; the import
//!   `guard` (the contract's allowlist); the `scrub`; `host_facts` hidden;
//!   `engine_fixes` for RustPython crashes; the `result` as exact JSON;
//!   `stand_ins` where the host was (streams, an `os` with no OS); the
//!   call's `files` behind `open`; the `traceback` as CPython prints it.
//!
//! Feature `process` adds what only the process sandbox takes: the frozen
//! stdlib (the Worker freezes its own set) and the stop signal its
//! watchdog sends.

pub mod code_mode;
mod engine_fixes;
mod files;
pub mod guard;
pub mod host_facts;
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

pub use toolgate_core::outcome::ExecOutput;
pub use toolgate_core::walls::Walls;
