//! What the router's handlers learn of an HTTP event: the invocation's
//! deadline (API Gateway's, when it is nearer), the authorizer's identity
//! as the caller, and as an approver where the config says so.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::Response,
};
use lambda_http::Context;
use lambda_http::request::RequestContext;

use super::deadline;
use toolgate_shared::config::ApprovalsConfig;
use toolgate_shared::http::Approver;
use toolgate_shared::response_limit::LAMBDA_RESPONSE_BYTES;
use toolgate_shared::tool::CallContext;

/// API Gateway answers 503 to the client when an integration takes longer
/// than this, whatever the function's own timeout; Function URLs do not.
const API_GATEWAY_LIMIT: Duration = Duration::from_secs(30);
/// A REST API's (v1) default integration timeout.
const REST_API_LIMIT: Duration = Duration::from_secs(29);
/// Kept back from API Gateway's limit for the answer's way back to it.
const REPLY_MARGIN: Duration = Duration::from_secs(1);

/// When API Gateway stops waiting for a request it took at `received` (ms
/// since the epoch, its `timeEpoch`): a cold start and init count too. A
/// time from the future (clocks differ) counts from now, and so does one
/// older than the limit itself (a stored test event: API Gateway would no
/// longer be waiting).
fn api_gateway_deadline(received: Option<i64>, limit: Duration) -> Instant {
    let limit = limit - REPLY_MARGIN;
    let now = crate::envelope::epoch_ms(Instant::now());
    let limit_ms = limit.as_millis() as u64;
    match received.and_then(|r| u64::try_from(r).ok()) {
        Some(r) if r.saturating_add(limit_ms) > now => {
            crate::envelope::instant_at(r.min(now) + limit_ms)
        }
        _ => Instant::now() + limit,
    }
}

/// Puts the invocation's deadline and the authorizer's identity where the
/// router's tool handler finds them, and the identity as an approver when
/// `approvals` says it is one.
pub(super) async fn call_context(
    State(approvals): State<Arc<ApprovalsConfig>>,
    mut req: Request,
    next: Next,
) -> Response {
    let mut deadline = req.extensions().get::<Context>().and_then(deadline);
    let request_context = req.extensions().get::<RequestContext>();
    let via_api_gateway = match request_context {
        Some(RequestContext::ApiGatewayV2(c)) => c
            .domain_name
            .as_deref()
            .is_none_or(|d| !d.contains(".lambda-url."))
            .then_some((c.time_epoch, API_GATEWAY_LIMIT)),
        Some(RequestContext::ApiGatewayV1(c)) => Some((c.request_time_epoch, REST_API_LIMIT)),
        _ => None,
    };
    if let Some((received, limit)) = via_api_gateway {
        let gateway = api_gateway_deadline(Some(received), limit);
        deadline = Some(deadline.map_or(gateway, |d| d.min(gateway)));
    }
    let authorizer = request_context.and_then(RequestContext::authorizer);
    let claims = authorizer.and_then(|a| a.jwt.as_ref()).map(|j| &j.claims);
    let sub = claims.and_then(|c| c.get("sub").cloned());
    let user_arn = authorizer.and_then(|a| a.iam.as_ref()?.user_arn.clone());
    let approver = match (&approvals.jwt_group, claims, &sub, &user_arn) {
        (Some(group), Some(claims), Some(sub), _)
            if claims
                .get(&approvals.jwt_claim)
                .is_some_and(|v| claim_values(v).iter().any(|g| g == group)) =>
        {
            // Issued to an app client people sign in with: a person's
            // token, which the agent's (another audience) never is.
            let person = ["aud", "client_id"].iter().any(|k| {
                claims.get(*k).is_some_and(|v| {
                    claim_values(v)
                        .iter()
                        .any(|a| approvals.jwt_audience.contains(a))
                })
            });
            Some(Approver {
                id: format!("jwt:{sub}"),
                via: "jwt",
                person,
            })
        }
        (_, _, _, Some(arn)) if approvals.iam_approvers.contains(arn) => Some(Approver {
            id: format!("iam:{arn}"),
            via: "iam",
            // The same credential calls tools: never its own approver.
            person: false,
        }),
        _ => None,
    };
    let caller = sub.or(user_arn);
    // A claim set by the identity provider outranks the caller's header.
    let servers = match claims.and_then(|c| c.get(toolgate_shared::scope::CLAIM)) {
        Some(raw) => toolgate_shared::scope::parse(raw),
        None => toolgate_shared::http::context::header_scope(req.headers()),
    };
    if let Some(a) = approver {
        req.extensions_mut().insert(a);
    }
    req.extensions_mut().insert(CallContext {
        deadline,
        caller,
        servers,
        transport: None,
        response_limit: Some(LAMBDA_RESPONSE_BYTES),
        ..CallContext::default()
    });
    next.run(req).await
}

/// A claim's values: a JSON array, or API Gateway's flattening of one
/// (`[a b]`: split at spaces only, which Cognito group names cannot hold),
/// or else the one value as it is. Never split at commas: a group named
/// `eng,ops` must not make its members `ops`.
pub(super) fn claim_values(raw: &str) -> Vec<String> {
    let raw = raw.trim();
    if let Ok(list) = serde_json::from_str::<Vec<String>>(raw) {
        return list;
    }
    match raw.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        Some(inner) => inner.split_whitespace().map(str::to_owned).collect(),
        None if raw.is_empty() => Vec::new(),
        None => vec![raw.to_owned()],
    }
}
