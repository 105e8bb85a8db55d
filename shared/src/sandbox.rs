//! The Python sandbox, as the tools reach it: the interpreter layer
//! (crates/pyvm, feature `python-vm`) and, natively, the process sandbox
//! around it (crates/sandbox, feature `python`).

pub use toolgate_pyvm::*;
#[cfg(feature = "python")]
pub use toolgate_sandbox::*;
