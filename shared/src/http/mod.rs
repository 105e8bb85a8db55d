//! The HTTP API of docs/contracts.md#http-api, shared by every runtime.
//!
//! - `router`: the routes, their handlers and the state they share;
//! - `auth`: who may call what (callers' and approvers' tokens) and the
//!   loopback `Host` check;
//! - `identity`: callers, approvers, and which routes are whose;
//! - `body`: a JSON request body, with the contract's errors;
//! - `context`: a call's context from the request (what a runtime put in
//!   its extensions, else the scope header);
//! - `errors`: `ToolError` as a response, and JSON for axum's own rejections.

mod auth;
pub mod body;
pub mod context;
mod errors;
pub mod identity;
mod router;

pub use body::{MAX_BODY_BYTES, read_json_body};
pub use context::{call_context, call_context_of, header_scope};
pub use identity::{Approver, Caller, Tokens};
pub use router::{AppState, HealthFn, HealthFuture, SERVES_MCP, router};
