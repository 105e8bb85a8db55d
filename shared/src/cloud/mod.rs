//! Cloud tools: each cloud account's MCP server (streamable HTTP), its tools
//! listed as `<account>__<tool>` and calls forwarded unchanged.
//!
//! - `account`: what an account is, and where accounts come from (the
//!   config file, or SSM Parameter Store through the backends);
//! - `names`: the exported name of an account's tool, sanitized and
//!   shortened deterministically;
//! - `proxy`: one MCP session per account, the cached listing, the calls.

pub mod account;
pub mod names;
#[cfg(not(target_arch = "wasm32"))]
pub mod proxy;

pub use account::{Account, AccountSource, validate_account_id};
#[cfg(not(target_arch = "wasm32"))]
pub use proxy::{CloudSettings, CloudTools};
