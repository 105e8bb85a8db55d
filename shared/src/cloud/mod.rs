//! Cloud tools: each cloud account's MCP server (streamable HTTP), its tools
//! listed as `<account>__<tool>` and calls forwarded unchanged.
//!
//! - `account`: what an account is, and where accounts come from (the
//!   config file, or SSM Parameter Store with the `aws` feature);
//! - `names`: the exported name of an account's tool, sanitized and
//!   shortened deterministically;
//! - `proxy`: one MCP session per account, the cached listing, the calls.

pub mod account;
pub mod names;
#[cfg(feature = "native")]
pub mod proxy;
#[cfg(feature = "aws")]
pub mod ssm;

pub use account::{Account, AccountSource, validate_account_id};
#[cfg(feature = "native")]
pub use proxy::{CloudSettings, CloudTools};
