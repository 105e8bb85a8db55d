//! The HTTP API of docs/contracts.md#http-api, shared by every runtime.
//!
//! - `router`: the routes, their handlers and the state they share;
//! - `guard`: the first layer: the loopback `Host` check (`host`) and the
//!   refusal of other sites' pages (`origin`);
//! - `auth`: who may call what (callers' and approvers' tokens);
//! - `identity`: callers, approvers, and which routes are whose;
//! - `body`: a JSON request body, with the contract's errors;
//! - `serve`: `toolgate serve`'s connections (HTTP/1.1, timeouts, caps);
//! - `context`: a call's context from the request (what a runtime put in
//!   its extensions, else the scope header);
//! - `errors`: `ToolError` as a response, and JSON for axum's own rejections;
//! - `request_id`: one id per request, on its log lines and in its answer.

mod auth;
pub mod body;
pub mod context;
mod errors;
mod guard;
pub mod host;
pub mod identity;
pub mod origin;
pub mod request_id;
pub mod resource;
mod router;
#[cfg(not(target_arch = "wasm32"))]
pub mod serve;
pub mod traceparent;

pub use body::{BodyTimeout, MAX_BODY_BYTES, read_json_body};
pub use context::{call_context, call_context_of, header_scope};
pub use identity::{Approver, Caller, Tokens};
pub use origin::Origins;
pub use router::{AppState, HealthFn, HealthFuture, MetricsFn, router};
