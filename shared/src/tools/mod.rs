//! The tools, one module each, holding each tool's whole contract.

pub mod clarify;
pub mod python_execute;
