//! Who a request comes from: a caller (who calls tools) or an approver (who
//! decides approvals), never both with one token; and which routes are for
//! whom. The auth layer (`auth`) puts the identity in the request's
//! extensions; handlers read [`Caller`] and [`Approver`] from there.

use std::fmt;

use axum::http::Method;
use sha2::{Digest, Sha256};

use crate::config::NamedToken;

/// A caller, by the name its token goes by (`[[server.tokens]]`'s `name`,
/// or `token-<digest>` for the single token). A request extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller(pub String);

/// Someone allowed to decide approvals. A request extension, put there by
/// the auth layer (tokens) or the runtime (Lambda's JWT or IAM identity).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approver {
    /// `token:<name>`, `jwt:<sub>`, `iam:<arn>`, `slack:<team>/<user>`,
    /// `local:<user>` or `link holder`.
    pub id: String,
    /// How they proved it: `token`, `jwt`, `iam`, `slack`, `cli`, `link`.
    pub via: &'static str,
    /// Proved with a credential no agent holds: an approver token (callers'
    /// tokens are never approvers'), or a JWT issued to an app client people
    /// sign in with. Only such a person may decide their own agent's call,
    /// where policy lets them (`approvers = "client"`).
    pub person: bool,
}

/// Who a route is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// No token needed: `/healthz`, a clarification by its id (the id is
    /// the capability), the inbox page, capability links, Slack's signed
    /// payloads.
    Open,
    /// Approvers only: `/approvals`, `/approvals/*`, `GET /clarifications`.
    Approver,
    /// Callers: the tools, `/mcp`, `/openapi.json`, and every other path.
    Tool,
}

impl Route {
    /// The route `path` is, for `method`.
    pub fn of(method: &Method, path: &str) -> Self {
        let under = |prefix: &str| {
            path.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        let listing = method == Method::GET || method == Method::HEAD;
        if path == "/healthz"
            || under(super::resource::WELL_KNOWN)
            || path.starts_with("/clarifications/")
            || under("/inbox")
            || path.starts_with("/approval-links/")
            || path == "/slack/interactions"
        {
            Self::Open
        } else if under("/approvals") || (path == "/clarifications" && listing) {
            Self::Approver
        } else {
            Self::Tool
        }
    }
}

/// Whose token a request carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bearer<'a> {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A token this server does not know.
    Unknown,
    /// A caller's, by name.
    Caller(&'a str),
    /// An approver's, by name.
    Approver(&'a str),
}

struct Entry {
    name: String,
    digest: [u8; 32],
}

/// The bearer tokens a server knows, kept as digests. `Debug` shows names
/// only.
#[derive(Default)]
pub struct Tokens {
    callers: Vec<Entry>,
    approvers: Vec<Entry>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |l: &[Entry]| l.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
        f.debug_struct("Tokens")
            .field("callers", &names(&self.callers))
            .field("approvers", &names(&self.approvers))
            .finish()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Equal digests, compared without an early exit.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Tokens {
    /// The callers' and the approvers' tokens (`ServerConfig::tokens`,
    /// `ApprovalsConfig::approvers`).
    pub fn new(callers: &[NamedToken], approvers: &[NamedToken]) -> Self {
        let entries = |l: &[NamedToken]| {
            l.iter()
                .map(|t| Entry {
                    name: t.name.clone(),
                    digest: digest(&t.token),
                })
                .collect()
        };
        Self {
            callers: entries(callers),
            approvers: entries(approvers),
        }
    }

    /// Whether tool routes need a caller's token.
    pub fn has_callers(&self) -> bool {
        !self.callers.is_empty()
    }

    /// Whose `given` token is. The given token's digest is compared with
    /// every token of both lists, each comparison in constant time, so the
    /// time taken tells neither how much of a guess was right nor which
    /// list it matched.
    pub fn find(&self, given: Option<&str>) -> Bearer<'_> {
        let Some(given) = given else {
            return Bearer::Missing;
        };
        let d = digest(given);
        let mut found = Bearer::Unknown;
        for e in &self.callers {
            if same(&e.digest, &d) {
                found = Bearer::Caller(&e.name);
            }
        }
        for e in &self.approvers {
            if same(&e.digest, &d) {
                found = Bearer::Approver(&e.name);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(name: &str, token: &str) -> NamedToken {
        NamedToken {
            name: name.into(),
            token: token.into(),
        }
    }

    #[test]
    fn tokens_are_found_in_their_list() {
        let t = Tokens::new(
            &[
                token("a", "caller-a-token-123"),
                token("b", "caller-b-token-123"),
            ],
            &[token("boss", "approver-token-123")],
        );
        assert!(t.has_callers());
        assert_eq!(t.find(None), Bearer::Missing);
        assert_eq!(t.find(Some("caller-b-token-123")), Bearer::Caller("b"));
        assert_eq!(t.find(Some("approver-token-123")), Bearer::Approver("boss"));
        assert_eq!(t.find(Some("caller-b-token-12")), Bearer::Unknown);
        assert_eq!(t.find(Some("")), Bearer::Unknown);
        let shown = format!("{t:?}");
        assert!(
            shown.contains("boss") && !shown.contains("approver-token"),
            "{shown}"
        );
        assert!(!Tokens::default().has_callers());
    }

    #[test]
    fn routes() {
        let get = Method::GET;
        for (path, route) in [
            ("/healthz", Route::Open),
            ("/.well-known/oauth-protected-resource", Route::Open),
            ("/.well-known/oauth-protected-resource/mcp", Route::Open),
            ("/.well-known/oauth-protected-resourcex", Route::Tool),
            ("/clarifications/abc", Route::Open),
            ("/clarifications/abc/answer", Route::Open),
            ("/inbox", Route::Open),
            ("/inbox/abc", Route::Open),
            ("/approval-links/abc", Route::Open),
            ("/slack/interactions", Route::Open),
            ("/approvals", Route::Approver),
            ("/approvals/abc/decision", Route::Approver),
            ("/clarifications", Route::Approver),
            ("/tools", Route::Tool),
            ("/tools/python.execute", Route::Tool),
            ("/mcp", Route::Tool),
            ("/openapi.json", Route::Tool),
            ("/inboxes", Route::Tool),
            ("/approvalsx", Route::Tool),
            ("/slack/interactions/x", Route::Tool),
            ("/", Route::Tool),
        ] {
            assert_eq!(Route::of(&get, path), route, "{path}");
        }
        assert_eq!(Route::of(&Method::HEAD, "/clarifications"), Route::Approver);
        assert_eq!(Route::of(&Method::POST, "/clarifications"), Route::Tool);
        assert_eq!(
            Route::of(&Method::POST, "/approvals/x/decision"),
            Route::Approver
        );
    }
}
