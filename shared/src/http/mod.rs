//! The HTTP API of docs/contracts.md#http-api, shared by every runtime.
//!
//! - `router`: the routes, their handlers and the state they share;
//! - `auth`: the bearer token and the loopback `Host` check;
//! - `body`: a JSON request body, with the contract's errors;
//! - `context`: a call's context from the request (what a runtime put in
//!   its extensions, else the scope header);
//! - `errors`: `ToolError` as a response, and JSON for axum's own rejections.

mod auth;
pub mod body;
pub mod context;
mod errors;
mod router;

pub use body::{MAX_BODY_BYTES, read_json_body};
pub use context::{call_context, header_scope};
pub use router::{AppState, HealthFn, HealthFuture, SERVES_MCP, router};
