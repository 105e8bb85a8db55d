//! Who may call what: the bearer token names a caller or an approver
//! (`identity`), each allowed on its own routes only. (The loopback `Host`
//! check runs before, in `guard`.)

use axum::{
    extract::{Request, State},
    http::header,
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::identity::{Approver, Bearer, Caller, Route};
use super::router::AppState;
use crate::error::{ErrorCode, ToolError};
use crate::tool::CallContext;

/// An approver's token on a tool route.
pub const APPROVER_ON_TOOLS: &str =
    "This token is an approver's: approvers decide approvals at /inbox, they do not call tools";
/// A caller's token on an approver route.
pub const CALLER_ON_APPROVALS: &str =
    "This route is for approvers: a caller's token cannot decide approvals";
/// No approver's token on an approver route.
pub const SIGN_IN_AS_APPROVER: &str =
    "Sign in as an approver: send Authorization: Bearer <approver token>";

fn refuse(code: ErrorCode, message: &str) -> Response {
    ToolError::new(code, message).into_response()
}

fn challenged(state: &AppState, req: &Request, message: &str, invalid: bool) -> Response {
    let mut r = refuse(ErrorCode::Unauthorized, message);
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        super::resource::challenge(&state.resource, req, invalid),
    );
    r
}

pub(super) async fn auth(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    match admit(&state, req) {
        Ok(req) => next.run(req).await,
        Err(refusal) => {
            let (refused, caller) = *refusal;
            crate::logging::refused(
                refused.status().as_u16(),
                method.as_str(),
                &path,
                caller.as_deref(),
            );
            refused
        }
    }
}

/// A refusal, and the name of the token's holder when it was one of ours
/// (boxed: the common path returns small).
type Refusal = Box<(Response, Option<String>)>;

/// The request with who sent it attached, or its refusal.
fn admit(state: &AppState, mut req: Request) -> Result<Request, Refusal> {
    let route = Route::of(req.method(), req.uri().path());
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let bearer = state.tokens.find(given);
    // The runtime may have named an approver already (Lambda: a JWT group,
    // an IAM user); a client cannot set an extension.
    let runtime_approver = req.extensions().get::<Approver>().is_some();
    match (route, bearer) {
        (Route::Approver, Bearer::Approver(_)) | (Route::Open, _) => {}
        (Route::Approver, _) if runtime_approver => {}
        (Route::Approver, Bearer::Caller(name)) => {
            return Err(Box::new((
                refuse(ErrorCode::Forbidden, CALLER_ON_APPROVALS),
                Some(name.to_owned()),
            )));
        }
        (Route::Approver, _) => {
            // A caller the runtime authenticated (Lambda) is still no approver.
            let runtime_caller = req
                .extensions()
                .get::<CallContext>()
                .is_some_and(|c| c.caller.is_some());
            return Err(Box::new(if runtime_caller {
                (refuse(ErrorCode::Forbidden, CALLER_ON_APPROVALS), None)
            } else {
                (challenged(state, &req, SIGN_IN_AS_APPROVER, false), None)
            }));
        }
        (Route::Tool, Bearer::Approver(name)) => {
            return Err(Box::new((
                refuse(ErrorCode::Forbidden, APPROVER_ON_TOOLS),
                Some(format!("approver {name}")),
            )));
        }
        (Route::Tool, Bearer::Caller(_)) => {}
        (Route::Tool, _) if !state.tokens.has_callers() => {}
        // A 401 says where to learn how to sign in (MCP's authorization).
        (Route::Tool, Bearer::Unknown) => {
            return Err(Box::new((
                challenged(state, &req, "Invalid bearer token", true),
                None,
            )));
        }
        (Route::Tool, Bearer::Missing) => {
            let message = "Missing bearer token: send Authorization: Bearer <token>";
            return Err(Box::new((challenged(state, &req, message, false), None)));
        }
    }
    match bearer {
        Bearer::Caller(name) => {
            let name = name.to_owned();
            // Every reader of the call's context (the HTTP handler, both
            // MCP paths) takes the runtime's when there is one.
            if req.extensions().get::<CallContext>().is_none() {
                let ctx = super::context::call_context_of(Some(name.clone()), req.headers());
                req.extensions_mut().insert(ctx);
            }
            req.extensions_mut().insert(Caller(name));
        }
        Bearer::Approver(name) => {
            req.extensions_mut().insert(Approver {
                id: format!("token:{name}"),
                via: "token",
                person: true,
            });
        }
        Bearer::Missing | Bearer::Unknown => {}
    }
    Ok(req)
}
