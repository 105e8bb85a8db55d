//! The tools, one module each, holding each tool's whole contract.

pub mod clarify;
#[cfg(feature = "ssh")]
pub mod list_servers;
pub mod python_execute;
#[cfg(feature = "ssh")]
pub mod ssh_run;
