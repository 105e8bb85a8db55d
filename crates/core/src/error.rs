//! The error contract of the HTTP API (docs/contracts.md#error-codes): `{"error":{"code","message"}}`.

use serde::Serialize;

/// The error codes of docs/contracts.md#error-codes, each with its HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// 400: bad arguments, body, query or method; an unknown SSH server.
    InvalidInput,
    /// 401: the bearer token is missing or wrong.
    Unauthorized,
    /// 403: a server out of the caller's scope, a command a server's policy
    /// refuses, or a `Host` that is not loopback.
    Forbidden,
    /// 404: no tool (or no endpoint) has that name.
    UnknownTool,
    /// 413: the request body is over the limit.
    TooLarge,
    /// 500: Toolgate itself failed (never a script: its failure is its output).
    Internal,
    /// A cloud account's MCP server or an SSH server is down, slow past its
    /// timeout, or failed.
    UpstreamUnavailable,
    /// No such clarification.
    NotFound,
    /// The clarification is already answered or cancelled.
    Conflict,
    /// The clarification expired unanswered.
    Expired,
    /// The deployment lacks something it needs to serve (the Worker's
    /// bearer secret).
    NotConfigured,
    /// 428: the call needs a person's approval first; the error carries
    /// the pending approval (`approval`: id, answer_url, expires_at).
    ApprovalRequired,
    /// 429: a per-caller or server-wide quota is used up (live sessions,
    /// stored session bytes, request bytes waiting for the sandbox,
    /// pending clarifications); the message names the bound and its
    /// setting.
    QuotaExceeded,
    /// 503: the server is going away (a call still running when its
    /// shutdown grace ended); the same call may be made again.
    Unavailable,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; 14] = [
        Self::InvalidInput,
        Self::Unauthorized,
        Self::Forbidden,
        Self::UnknownTool,
        Self::TooLarge,
        Self::Internal,
        Self::UpstreamUnavailable,
        Self::NotFound,
        Self::Conflict,
        Self::Expired,
        Self::NotConfigured,
        Self::ApprovalRequired,
        Self::QuotaExceeded,
        Self::Unavailable,
    ];

    /// The HTTP status the code is answered with.
    pub fn status(self) -> u16 {
        match self {
            Self::InvalidInput => 400,
            Self::Unauthorized => 401,
            Self::Forbidden => 403,
            Self::UnknownTool => 404,
            Self::TooLarge => 413,
            Self::Internal => 500,
            Self::UpstreamUnavailable => 502,
            Self::NotFound => 404,
            Self::Conflict => 409,
            Self::Expired => 410,
            Self::NotConfigured => 503,
            Self::ApprovalRequired => 428,
            Self::QuotaExceeded => 429,
            Self::Unavailable => 503,
        }
    }

    /// The code as the contract writes it (`invalid_input`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid_input",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::UnknownTool => "unknown_tool",
            Self::TooLarge => "too_large",
            Self::Internal => "internal",
            Self::UpstreamUnavailable => "upstream_unavailable",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::Expired => "expired",
            Self::NotConfigured => "not_configured",
            Self::ApprovalRequired => "approval_required",
            Self::QuotaExceeded => "quota_exceeded",
            Self::Unavailable => "unavailable",
        }
    }

    /// The code the contract writes as `s` ([`Self::as_str`]'s inverse).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// A failed call: the caller's fault (4xx) or ours (500). A tool's own
/// outcome, such as a script raising, is a result, never a `ToolError`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ToolError {
    /// What kind of failure, and so the HTTP status.
    pub code: ErrorCode,
    /// What went wrong, for the caller to read.
    pub message: String,
    /// More fields of the error object (`approval` for `approval_required`).
    pub details: Option<serde_json::Map<String, serde_json::Value>>,
}

impl ToolError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
        }
    }
    /// The error with `key` added to its JSON object.
    pub fn with_detail(mut self, key: &str, value: serde_json::Value) -> Self {
        self.details
            .get_or_insert_with(Default::default)
            .insert(key.to_owned(), value);
        self
    }
    /// `invalid_input`: the caller's request is wrong.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidInput, message)
    }
    /// `internal`: Toolgate failed, not the caller.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
    /// `quota_exceeded`: a bound on what one caller, or everyone, may
    /// hold at once; `message` names it and its setting.
    pub fn quota(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::QuotaExceeded, message)
    }
    /// `unknown_tool`, naming the name that was asked for.
    pub fn unknown_tool(name: &str) -> Self {
        Self::new(ErrorCode::UnknownTool, format!("Unknown tool: {name:?}"))
    }

    /// The JSON body of the contract.
    pub fn body(&self) -> serde_json::Value {
        let mut e = serde_json::json!({"code": self.code.as_str(), "message": self.message});
        if let (Some(d), serde_json::Value::Object(o)) = (&self.details, &mut e) {
            o.extend(d.clone());
        }
        serde_json::json!({ "error": e })
    }
}

/// The contract's `{"error": {...}}` with its status, as the router answers.
#[cfg(feature = "axum")]
impl axum::response::IntoResponse for ToolError {
    fn into_response(self) -> axum::response::Response {
        let status = axum::http::StatusCode::from_u16(self.code.status())
            .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        (status, axum::Json(self.body())).into_response()
    }
}
